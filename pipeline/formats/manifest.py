"""manifest.json (DESIGN §3): versions of every document of a project.

In memory, each entry (one document) is kept as the exact text the file
holds for it (indented JSON, UTF-8 bytes, ~0.4 KB), keyed by its name, not
as a tree of dicts and strings (~1.5 KB): a service keeps every project's
manifest for as long as it runs, so what one document costs adds up
(issue 12, the soak). An entry is decoded when asked for (``get``,
``files``: one C ``json.loads``) and encoded again only when it changes
(``add_version``, ``mark_removed`` hold it as a dict until the next
``dumps``), so writing a manifest of 10,000 documents re-encodes only the
entries that changed. The file's bytes are the same as
``json.dumps(data, ensure_ascii=False, indent=2)`` + newline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kbwatch.pipeline import confine
from kbwatch.pipeline.errors import BAD_MANIFEST, PermanentError

HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_UTF8 = "surrogatepass"  # a name json holds with a lone surrogate survives the round trip


def _render(entry: dict) -> bytes:
    """An entry as the file holds it (indented by 4 under "files"), encoded."""
    text = "    " + json.dumps(entry, ensure_ascii=False, indent=2).replace("\n", "\n    ")
    return text.encode("utf-8", _UTF8)


_EXTS: dict[str, str] = {}  # one string per extension, shared by every entry's memo (active_paths)


class Manifest:
    def __init__(self, data: dict[str, Any]):
        # the top-level keys in file order ("files" holds its place, its value is _entries)
        self.head: dict[str, Any] = {k: (None if k == "files" else v) for k, v in data.items()}
        # name -> the entry: rendered bytes, or a dict (just loaded, or changed since the last dumps)
        self._entries: dict[str, bytes | dict] = {f["name"]: f for f in data["files"]}
        self._removed: set[str] = {f["name"] for f in data["files"] if f.get("removed")}
        self._paths_memo: dict[str, tuple[bytes, str | None, str]] = {}  # name -> (entry, parsed, ext)

    # -- io --------------------------------------------------------------
    @classmethod
    def new(cls, project: str, created_at: str) -> "Manifest":
        return cls({"project": project, "created_at": created_at, "last_ingest": None, "files": []})

    @classmethod
    def load(cls, path: Path, project: str, created_at: str) -> "Manifest":
        if not path.exists():
            return cls.new(project, created_at)
        try:
            data = json.loads(confine.read_text(path))
        except confine.HardLinkedFile as exc:  # another name of it planted somewhere (sources/ …)
            raise PermanentError(f"{path}: {exc.strerror}; remove its other name (find -samefile) or replace "
                                 "it with a copy", reason=BAD_MANIFEST) from None
        except (confine.Escape, confine.NotRegularFile) as exc:  # a link or a FIFO planted in its place
            raise PermanentError(f"{path}: {exc.strerror}; restore the real file", reason=BAD_MANIFEST) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PermanentError(f"{path}: not valid JSON ({exc}); fix or restore it", reason=BAD_MANIFEST) from exc
        problems = validate(data)
        if problems:
            raise PermanentError(f"{path}: {problems[0]}", reason=BAD_MANIFEST)
        return cls(data)

    def dumps(self) -> str:
        """The file's text: ``json.dumps(data, ensure_ascii=False, indent=2)`` exactly, but
        entries that did not change since the last call are not encoded again (json's
        fast C encoder does not indent; thousands of entries add up)."""
        parts = []
        for key, value in self.head.items():
            if key == "files":
                if self._entries:
                    entries = self._entries
                    for name, entry in entries.items():
                        if isinstance(entry, dict):
                            entries[name] = _render(entry)
                    body = b",\n".join(entries.values()).decode("utf-8", _UTF8)
                    parts.append('  "files": [\n' + body + "\n  ]")
                    continue
                value = []
            parts.append(f"  {json.dumps(key)}: " + json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  "))
        return "{\n" + ",\n".join(parts) + "\n}\n"

    @property
    def data(self) -> dict[str, Any]:
        """The whole manifest as one dict shaped like the file (decoded afresh: read it, don't change it)."""
        return {k: (self.files() if k == "files" else v) for k, v in self.head.items()}

    # -- queries ---------------------------------------------------------
    def get(self, name: str) -> dict | None:
        """The entry of ``name`` (a copy once it was written: change entries through
        :meth:`add_version` and :meth:`mark_removed`)."""
        entry = self._entries.get(name)
        return json.loads(entry) if isinstance(entry, bytes) else entry

    def latest_hash(self, name: str) -> str | None:
        entry = self.get(name)
        if not entry or not entry["versions"]:
            return None
        return entry["versions"][-1]["hash"]

    def names(self) -> list[str]:
        return list(self._entries)

    def active_paths(self) -> list[tuple[str, str]]:
        """``(parsed, ext)`` of every document not removed, in file order. The navigation files are
        rewritten at every commit from this: an entry already written (bytes) is decoded once, not
        at every commit (decoding every entry made ~1 KB of short-lived objects per document per
        commit, issue 12); what is kept for it is its parsed path (~100 bytes a document)."""
        memo, fresh = self._paths_memo, {}
        out = []
        for name, entry in self._entries.items():
            if isinstance(entry, bytes):
                hit = memo.get(name)
                if hit is None or hit[0] is not entry:
                    f = json.loads(entry)
                    hit = (entry, None, "") if f.get("removed") else (entry, f["parsed"], _EXTS.setdefault(f["ext"], f["ext"]))
                fresh[name] = hit
                if hit[1] is not None:
                    out.append((hit[1], hit[2]))
            elif not entry.get("removed"):  # being changed in this batch: read as it is now
                out.append((entry["parsed"], entry["ext"]))
        self._paths_memo = fresh
        return out

    def active_names(self) -> list[str]:
        """Names of the documents not removed, in file order (nothing is decoded)."""
        removed = self._removed
        return [n for n in self._entries if n not in removed] if removed else list(self._entries)

    def files(self) -> list[dict]:
        """Every entry, in file order, decoded (written ones in one ``json.loads``)."""
        values = list(self._entries.values())
        if all(isinstance(v, bytes) for v in values):
            return json.loads(b"[" + b",".join(values) + b"]") if values else []
        return [json.loads(v) if isinstance(v, bytes) else v for v in values]

    def active_files(self) -> list[dict]:
        return [f for f in self.files() if not f.get("removed")]

    # -- updates ---------------------------------------------------------
    def _editable(self, name: str) -> dict | None:
        entry = self._entries.get(name)
        if isinstance(entry, bytes):
            entry = self._entries[name] = json.loads(entry)  # encoded again at the next dumps
        return entry

    def add_version(self, name: str, ext: str, parsed: str, archived: str, sha256: str, when: str) -> str:
        """Record a version; returns "new", "version" or "unchanged"."""
        entry = self._entries.get(name)
        if isinstance(entry, bytes) and archived.encode("utf-8", _UTF8) in entry:
            current = json.loads(entry)
            if any(v["archived"] == archived for v in current["versions"]):
                return "unchanged"
        entry = self._editable(name)
        event = "version"
        if entry is None:
            entry = self._entries[name] = {"name": name, "ext": ext, "parsed": parsed, "versions": []}
            event = "new"
        if any(v["archived"] == archived for v in entry["versions"]):
            return "unchanged"
        entry["ext"] = ext
        entry["parsed"] = parsed
        entry.pop("removed", None)
        self._removed.discard(name)
        entry["versions"].append({"archived": archived, "hash": f"sha256:{sha256}", "ingested_at": when})
        self.head["last_ingest"] = when
        return event

    def mark_removed(self, name: str, when: str) -> bool:
        entry = self._entries.get(name)
        if entry is None or name in self._removed:
            return False
        entry = self._editable(name)
        entry["removed"] = when
        self._removed.add(name)
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
            elif key != "versions" and not isinstance(f[key], str):  # (a number here broke the commit)
                problems.append(f"files[{i}].{key} is not a string")
        versions = f.get("versions")
        if versions is not None and not isinstance(versions, list):
            problems.append(f"files[{i}].versions is not a list")
            versions = None
        name = f.get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(f"files[{i}]: duplicate name {name!r}")
            seen.add(name)
        for j, v in enumerate(versions or []):
            if not isinstance(v, dict) or not HASH_RE.match(str(v.get("hash", ""))):
                problems.append(f"files[{i}].versions[{j}]: bad hash")
            elif not isinstance(v.get("archived"), str) or "ingested_at" not in v:
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
