"""Names that look the same but are written with other code points are one name to people.

``café.md`` saved on macOS is ``cafe`` + U+0301 (decomposed, NFD); the same name
typed on Windows or Linux is ``caf`` + U+00E9 (composed, NFC). Before, the two
became two documents with rows that look identical in project.md, in
manifest.json and in every answer's citations. Now the second is a
``conflict`` with its reason, until one is renamed. Real ``kbwatch ingest``
subprocesses on a real root.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from conftest import kbwatch

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    kbwatch("init", "p", root=root, check=True)
    return root


def _drop(root: Path, stem: str, text: str, folder: str = "") -> Path:
    path = root / "p" / "sources" / folder / f"{stem}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {text}\n\n{text} body\n", encoding="utf-8")
    return path


def _documents(root: Path) -> list[str]:
    data = json.loads((root / "p" / "manifest.json").read_text(encoding="utf-8"))
    return sorted(f["name"] for f in data["files"] if not f.get("removed"))


def _runs(root: Path) -> list[dict]:
    return json.loads(kbwatch("runs", "--json", root=root, check=True).stdout)


def test_two_twins_in_one_folder_are_both_refused_until_one_is_renamed(tmp_path):
    root = _root(tmp_path)
    assert NFC != NFD and len(NFD) == len(NFC) + 1
    composed = _drop(root, NFC, "composed")
    _drop(root, NFD, "decomposed")
    result = kbwatch("ingest", root=root)
    assert result.returncode == 1
    assert _documents(root) == []
    conflicts = [r for r in _runs(root) if r["outcome"] == "conflict"]
    assert len(conflicts) == 2 and all("look the same" in r["error"] for r in conflicts), conflicts
    composed.rename(composed.with_name("cafe-composed.md"))
    assert kbwatch("ingest", root=root).returncode == 0
    assert _documents(root) == sorted(["cafe-composed", NFD])


def test_a_twin_of_a_document_in_the_manifest_is_refused(tmp_path):
    root = _root(tmp_path)
    _drop(root, NFC, "first")
    kbwatch("ingest", root=root, check=True)
    assert _documents(root) == [NFC]
    twin = _drop(root, NFD, "second")
    result = kbwatch("ingest", root=root)
    assert result.returncode == 1 and "looks the same as the document" in result.stderr, result.stderr
    assert _documents(root) == [NFC] and twin.exists()  # nothing added, nothing lost
    # saved under the document's own name it is the next version of that document
    twin.rename(twin.with_name(f"{NFC}.md"))
    assert kbwatch("ingest", root=root).returncode == 0
    data = json.loads((root / "p" / "manifest.json").read_text(encoding="utf-8"))
    assert [len(f["versions"]) for f in data["files"]] == [2]


def test_names_that_only_resemble_each_other_are_not_twins(tmp_path):
    root = _root(tmp_path)
    names = ["cafe", NFC, "Café", "合同", "合同 2024", "résumé"]
    for i, name in enumerate(names):
        _drop(root, name, f"doc {i}")
    _drop(root, NFD, "in another folder", folder="archive-2023")  # another folder, another name
    kbwatch("ingest", root=root, check=True)
    assert _documents(root) == sorted([*names, f"archive-2023/{NFD}"])
