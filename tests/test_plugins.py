"""The plugin system: built-ins as plugins, entry points, TOML plugins, config errors."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys

import pytest

from conftest import REPO, kbwatch


@pytest.fixture(scope="module")
def example_site(tmp_path_factory):
    """The example plugin package installed (pip, real entry point) into a private folder."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--quiet",
         "--target", str(target), str(REPO / "examples" / "kbwatch-example-parser")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return target


def test_example_plugin_installed_through_entry_point(example_site, root):
    env = {"PYTHONPATH": str(example_site), "KBWATCH_DISABLE_ENTRYPOINTS": ""}
    kbwatch("init", "talks", root=root, env=env, check=True)
    listing = json.loads(kbwatch("plugins", "--json", root=root, env=env, check=True).stdout)
    assert [p["name"] for p in listing["plugins"]] == ["example-parser"]
    assert "kb_parse" in listing["plugins"][0]["hooks"]
    by_name = {p["name"]: p for p in listing["parsers"]}
    assert by_name["webvtt"]["extensions"] == [".vtt"]
    assert by_name["log-summary"]["priority"] == 150
    src = root / "talks" / "sources"
    (src / "keynote.vtt").write_text("WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nWelcome to the keynote.\n\n"
                                     "00:01:02.500 --> 00:01:05.000\nLet us talk about archives.\n", encoding="utf-8")
    (src / "server.log").write_text("2026-01-01 INFO start\n2026-01-01 ERROR disk full\n", encoding="utf-8")
    result = kbwatch("ingest", root=root, env=env)
    assert result.returncode == 0, result.stderr
    vtt = (root / "talks" / "parsed" / "keynote.md").read_text(encoding="utf-8")
    assert "<!-- cue: 00:01:02.500 -->" in vtt and "Let us talk about archives." in vtt
    log = (root / "talks" / "parsed" / "server.md").read_text(encoding="utf-8")
    assert "Log summary: 1 INFO, 1 ERROR." in log  # the plugin took .log over from the text parser
    # without the entry point the built-in parser serves .log again, and .vtt is unsupported
    human = kbwatch("plugins", "--all", root=root, check=True).stdout
    assert "example-parser" not in human and re.search(r"text\s+priority 100 .*\.log", human)


def test_plugin_from_toml_path_adds_a_stage(root):
    (root / "stamp.py").write_text(
        "from kbwatch.pipeline import hookimpl\n"
        "class Stamp:\n"
        "    name = 'stamp'\n"
        "    def run(self, ctx):\n"
        "        (ctx.project.path / 'stamped.txt').open('a').write(ctx.name + '\\n')\n"
        "@hookimpl\n"
        "def kb_stages():\n"
        "    return [Stamp()]\n", encoding="utf-8")
    (root / "kbwatch.toml").write_text(
        '[pipeline]\nplugins = ["stamp.py"]\n'
        'stages = ["conflict", "parse", "stamp", "archive", "manifest", "project_md", "knowledge"]\n'
        '[stages.stamp]\nanything = "free-form options for a third-party stage"\n', encoding="utf-8")
    kbwatch("init", "p", root=root, check=True)
    (root / "p" / "sources" / "a.md").write_text("# A\n")
    kbwatch("ingest", root=root, check=True)
    assert (root / "p" / "stamped.txt").read_text() == "a\n"
    assert "stamp" in json.loads(kbwatch("plugins", "--json", root=root).stdout)["stages"]


@pytest.mark.parametrize("toml, message", [
    ('[service]\nsettle_seconds = "soon"\n', "service.settle_seconds: expected a number"),
    ('[service]\nsettle_secs = 2\n', "service.settle_secs: unknown configuration key"),
    ('[nonsense]\nx = 1\n', "nonsense: unknown configuration key"),
    ('[pipeline]\nstages = ["conflict", "parse", "frobnicate"]\n', "pipeline.stages: unknown stage 'frobnicate'"),
    ('[pipeline]\nplugins = ["no_such_module_xyz"]\n', "pipeline.plugins: cannot load 'no_such_module_xyz'"),
    ('[retry]\nmax_attempts = 0\n', "retry.max_attempts: must be at least 1"),
    ("[service\n", "invalid TOML"),
])
def test_bad_config_is_one_line_exit_2(root, toml, message):
    (root / "kbwatch.toml").write_text(toml, encoding="utf-8")
    (root / "p" / "sources").mkdir(parents=True)
    result = kbwatch("ingest", root=root)
    assert result.returncode == 2
    err = result.stderr.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_bad_arguments_exit_2(root):
    assert kbwatch("ingest", "no-such-project", root=root).returncode == 2
    assert kbwatch("runs", "--outcome", "sideways", root=root).returncode == 2
    proc = subprocess.run([sys.executable, str(REPO / "run.py"), "status", "--root", str(root / "missing")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no such directory" in proc.stderr


def test_default_toml_is_the_whole_declaration():
    """config/default.toml validates against itself and every option carries a comment."""
    from kbwatch.pipeline.config import load_defaults, merge

    defaults = load_defaults()
    assert merge(defaults, defaults, "self") == defaults
    lines = (REPO / "config" / "default.toml").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^[a-z_]+ = ", line):
            assert "#" in line or lines[i - 1].startswith("#"), f"option without a comment: {line}"


def test_core_names_no_stage():
    """The core must not import a built-in stage or parser by name."""
    for path in (REPO / "pipeline").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) plugins\.", text, re.M), path


def test_every_hookspec_is_documented():
    from kbwatch.pipeline import hookspecs

    specs = [f for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("kb_")]
    assert {f.__name__ for f in specs} >= {"kb_stages", "kb_parse", "kb_scan", "kb_summarize", "kb_run_finished"}
    for fn in specs:
        doc = inspect.getdoc(fn) or ""
        assert doc, fn.__name__
        for param in inspect.signature(fn).parameters:
            assert f":param {param}:" in doc or fn.__name__ == "kb_register_commands", (fn.__name__, param)


def test_misspelled_hook_is_rejected(root):
    (root / "typo.py").write_text("from kbwatch.pipeline import hookimpl\n@hookimpl\ndef kb_stagez():\n    return []\n")
    (root / "kbwatch.toml").write_text('[pipeline]\nplugins = ["typo.py"]\n')
    result = kbwatch("plugins", root=root)
    assert result.returncode == 2 and "kb_stagez" in result.stderr


def test_run_finished_hook_sees_every_run(root):
    (root / "observer.py").write_text(
        "import json\nfrom pipeline import hookimpl\n"
        "@hookimpl\n"
        "def kb_run_finished(run):\n"
        "    with open(run.record_path.split('/')[0] + '.seen', 'a') as fh:\n"
        "        fh.write(json.dumps([run.source, run.outcome]) + '\\n')\n")
    (root / "kbwatch.toml").write_text('[pipeline]\nplugins = ["observer.py"]\n')
    kbwatch("init", "p", root=root, check=True)
    (root / "p" / "sources" / "a.md").write_text("# A\n")
    (root / "p" / "sources" / "b.zzz").write_text("?")
    proc = subprocess.run([sys.executable, str(REPO / "run.py"), "ingest", "--root", str(root)],
                          cwd=root, capture_output=True, text=True)
    assert proc.returncode == 1
    seen = sorted(json.loads(l) for l in (root / "p.seen").read_text().splitlines())
    assert seen == [["sources/a.md", "done"], ["sources/b.zzz", "failed"]]
