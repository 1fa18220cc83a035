"""kbwatch installs only under the ``kbwatch`` name (issue #13, item 1 and 7).

A real wheel is built from this checkout, its top-level names checked, and it
is installed into a fresh virtual environment beside a throwaway distribution
that ships top-level ``pipeline`` and ``plugins`` packages (the generic names
kbwatch used to install). Both must keep working side by side. The venv sees
the site-packages of the interpreter running the tests (the README's
``.venv``, or wherever kbwatch's dependencies are) for kbwatch's dependencies
(installing unstructured into a venv per test run would take minutes); that
kbwatch itself comes from the venv's wheel, not the checkout, is asserted.
Both wheels are built by the running interpreter, so the new venv needs no
build tools of its own (a bare Python's ``setuptools`` may lack ``bdist_wheel``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert proc.returncode == 0, (cmd, proc.stdout[-2000:], proc.stderr[-4000:])
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # built from a copy: setuptools writes build/ and *.egg-info/ next to the sources
    src = tmp_path_factory.mktemp("src") / "kbwatch"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "tests", "bench", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".kbwatch", "demo-kb"))
    # --no-build-isolation: build with the setuptools already here (no index needed)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)])
    [whl] = out.glob("kbwatch-*.whl")
    return whl


def _neighbour(tmp: Path) -> Path:
    """A distribution that ships top-level ``pipeline`` and ``plugins``, as PyPI's ``pipeline`` does."""
    src = tmp / "neighbour"
    for pkg in ("pipeline", "plugins"):
        (src / pkg).mkdir(parents=True)
        (src / pkg / "__init__.py").write_text(f"WHO = 'neighbour-{pkg}'\n", encoding="utf-8")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "neighbour-generic-names"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["pipeline", "plugins"]\n', encoding="utf-8")
    out = tmp / "neighbour-dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)])
    [whl] = out.glob("neighbour_generic_names-*.whl")
    return whl


def _see_these_dependencies(venv: Path) -> None:
    """Let ``venv`` import what the running interpreter imports, after its own packages (a ``.pth``)."""
    py = venv / "bin" / "python"
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "zz_kbwatch_test_dependencies.pth").write_text("".join(f"{d}\n" for d in sorted(ours)),
                                                                  encoding="utf-8")


def test_wheel_holds_only_the_kbwatch_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    dist_info = {t for t in top if t.endswith(".dist-info")}
    assert top - dist_info == {"kbwatch"}, sorted(top)
    assert "kbwatch/__main__.py" in names and "kbwatch/pipeline/cli.py" in names
    assert "kbwatch/pipeline/_config/default.toml" in names
    assert not any(n.startswith("kbwatch/__init__") for n in names), "kbwatch is a namespace package"
    assert not any(n.startswith(("kbwatch/tests/", "kbwatch/bench/")) for n in names)
    [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
    metadata = zipfile.ZipFile(wheel).read(meta).decode()
    from kbwatch.pipeline import __version__

    assert f"\nVersion: {__version__}\n" in metadata  # the version is written in one place
    assert "\nLicense-Expression: MIT\n" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "tomli" not in metadata
    unstructured = [line for line in metadata.splitlines() if line.startswith("Requires-Dist: unstructured")]
    assert unstructured and "xlsx" not in unstructured[0] and "csv" not in unstructured[0], unstructured


def test_wheel_installs_beside_a_distribution_with_generic_names(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    _see_these_dependencies(venv)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--disable-pip-version-check"]
    _run([*pip, str(_neighbour(tmp_path))], env=env, cwd=tmp_path)
    _run([*pip, str(wheel)], env=env, cwd=tmp_path)

    where = _run([str(py), "-c", "import kbwatch.pipeline, pipeline, plugins; "
                  "print(kbwatch.pipeline.__file__); print(pipeline.WHO, plugins.WHO)"], env=env, cwd=tmp_path)
    kb_file, neighbours = where.stdout.splitlines()
    assert kb_file.startswith(str(venv)), f"kbwatch did not come from the wheel: {kb_file}"
    assert neighbours == "neighbour-pipeline neighbour-plugins"  # the neighbour still imports its own

    from kbwatch.pipeline import __version__

    assert __version__ in _run([str(py), "-m", "kbwatch", "--version"], env=env, cwd=tmp_path).stdout
    kbwatch = str(venv / "bin" / "kbwatch")
    root = tmp_path / "kb"
    root.mkdir()
    _run([kbwatch, "init", "tea", "--root", str(root)], env=env, cwd=tmp_path)
    (root / "tea" / "sources" / "green.md").write_text("# Green tea\n\nSencha is steamed, not roasted.\n",
                                                      encoding="utf-8")
    _run([kbwatch, "ingest", "--root", str(root)], env=env, cwd=tmp_path)
    assert (root / "tea" / "parsed" / "green.md").exists()
    answer = _run([kbwatch, "ask", "tea", "steamed sencha", "--json", "--root", str(root)], env=env, cwd=tmp_path)
    record = json.loads(answer.stdout)
    [pack] = record["activated_packs"]
    assert pack["selected_files"] == ["parsed/green.md"], answer.stdout[:2000]
    # the neighbour is untouched by all this
    again = _run([str(py), "-c", "import pipeline, plugins; print(pipeline.WHO, plugins.WHO)"], env=env, cwd=tmp_path)
    assert again.stdout.strip() == "neighbour-pipeline neighbour-plugins"


def test_public_plugin_api_is_lazy_and_complete():
    """Everything in ``kbwatch.pipeline.__all__`` resolves; importing the module loads none of it."""
    code = ("import sys, kbwatch.pipeline as p; heavy = [m for m in sys.modules if m.startswith('kbwatch.pipeline.')]; "
            "print(len(heavy)); [getattr(p, n) for n in p.__all__]; print('ok')")
    out = _run([sys.executable, "-c", code]).stdout.split()
    assert out == ["0", "ok"], out


def test_example_plugin_uses_only_the_public_module():
    import ast

    import kbwatch.pipeline as public

    src = REPO / "examples" / "kbwatch-example-parser" / "kbwatch_example_parser" / "__init__.py"
    imported = []
    for node in ast.walk(ast.parse(src.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kbwatch"):
            imported.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("kbwatch") for a in node.names)
    assert imported and all(mod == "kbwatch.pipeline" for mod, _ in imported), imported
    assert all(name in public.__all__ for _, names in imported for name in names)
