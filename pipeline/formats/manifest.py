"""manifest.json (DESIGN §3): versions of every document of a project.

Kept in memory as a dict shaped exactly like the file; an index by name is
built once per load so lookups stay O(1) with thousands of documents.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kbwatch.pipeline.errors import PermanentError

HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


class Manifest:
    def __init__(self, data: dict[str, Any]):
        self.data = data
        self._rendered: dict[str, str] = {}  # name -> its entry as indented JSON, until it changes
        self._by_name: dict[str, dict] = {f["name"]: f for f in data["files"]}
        self._by_lower: dict[str, list[dict]] = {}
        for f in data["files"]:
            self._by_lower.setdefault(f["name"].casefold(), []).append(f)

    # -- io --------------------------------------------------------------
    @classmethod
    def new(cls, project: str, created_at: str) -> "Manifest":
        return cls({"project": project, "created_at": created_at, "last_ingest": None, "files": []})

    @classmethod
    def load(cls, path: Path, project: str, created_at: str) -> "Manifest":
        if not path.exists():
            return cls.new(project, created_at)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PermanentError(f"{path}: not valid JSON ({exc}); fix or restore it", reason="bad manifest") from exc
        problems = validate(data)
        if problems:
            raise PermanentError(f"{path}: {problems[0]}", reason="bad manifest")
        return cls(data)

    def dumps(self) -> str:
        """The file's text: ``json.dumps(data, indent=2)`` exactly, but entries
        that did not change since the last call are not encoded again (json's
        fast C encoder does not indent; thousands of entries add up)."""
        parts = []
        for key, value in self.data.items():
            if key != "files" or not value:
                parts.append(f"  {json.dumps(key)}: " + json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  "))
                continue
            entries = []
            for f in value:
                text = self._rendered.get(f["name"])
                if text is None:
                    text = "    " + json.dumps(f, ensure_ascii=False, indent=2).replace("\n", "\n    ")
                    self._rendered[f["name"]] = text
                entries.append(text)
            parts.append('  "files": [\n' + ",\n".join(entries) + "\n  ]")
        return "{\n" + ",\n".join(parts) + "\n}\n"

    # -- queries ---------------------------------------------------------
    def get(self, name: str) -> dict | None:
        return self._by_name.get(name)

    def latest_hash(self, name: str) -> str | None:
        entry = self._by_name.get(name)
        if not entry or not entry["versions"]:
            return None
        return entry["versions"][-1]["hash"]

    def files(self) -> list[dict]:
        return self.data["files"]

    def active_files(self) -> list[dict]:
        return [f for f in self.data["files"] if not f.get("removed")]

    # -- updates ---------------------------------------------------------
    def add_version(self, name: str, ext: str, parsed: str, archived: str, sha256: str, when: str) -> str:
        """Record a version; returns "new" or "version"."""
        version = {"archived": archived, "hash": f"sha256:{sha256}", "ingested_at": when}
        entry = self._by_name.get(name)
        event = "version"
        if entry is None:
            entry = {"name": name, "ext": ext, "parsed": parsed, "versions": []}
            self.data["files"].append(entry)
            self._by_name[name] = entry
            self._by_lower.setdefault(name.casefold(), []).append(entry)
            event = "new"
        if any(v["archived"] == archived for v in entry["versions"]):
            return "unchanged"
        self._rendered.pop(name, None)
        entry["ext"] = ext
        entry["parsed"] = parsed
        entry.pop("removed", None)
        entry["versions"].append(version)
        self.data["last_ingest"] = when
        return event

    def mark_removed(self, name: str, when: str) -> bool:
        entry = self._by_name.get(name)
        if entry is None or entry.get("removed"):
            return False
        entry["removed"] = when
        self._rendered.pop(name, None)
        return True


def validate(data: Any) -> list[str]:
    """Problems with a manifest's shape (empty list when valid)."""
    problems: list[str] = []
    if not isinstance(data, dict):
        return ["manifest is not a JSON object"]
    for key in ("project", "created_at", "files"):
        if key not in data:
            problems.append(f"missing key {key!r}")
    files = data.get("files")
    if not isinstance(files, list):
        return problems + ["'files' is not a list"]
    seen = set()
    for i, f in enumerate(files):
        if not isinstance(f, dict):
            problems.append(f"files[{i}] is not an object")
            continue
        for key in ("name", "ext", "parsed", "versions"):
            if key not in f:
                problems.append(f"files[{i}] lacks {key!r}")
        if f.get("name") in seen:
            problems.append(f"files[{i}]: duplicate name {f.get('name')!r}")
        seen.add(f.get("name"))
        for j, v in enumerate(f.get("versions") or []):
            if not isinstance(v, dict) or not HASH_RE.match(str(v.get("hash", ""))):
                problems.append(f"files[{i}].versions[{j}]: bad hash")
            elif "archived" not in v or "ingested_at" not in v:
                problems.append(f"files[{i}].versions[{j}]: lacks archived/ingested_at")
    return problems


def session_manifest(session) -> Manifest:
    """The project's manifest, loaded once per session and shared by all stages."""
    from kbwatch.pipeline.fsutil import iso_minute, now_local

    return session.cached_file(
        "manifest.json",
        lambda: Manifest.load(session.path / "manifest.json", session.name, iso_minute(now_local())),
    )


def defer_manifest_write(session) -> None:
    manifest = session_manifest(session)
    session.defer_write("manifest.json", manifest.dumps)
