"""Archive names (DESIGN §2): ``<name>_YYYYMMDDHHmm<ext>``, then seconds, then -2, -3…"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

ARCHIVE_RE = re.compile(r"^(.+)_(\d{12})(\d{2})?(-\d+)?(\.[^./]+)$")


def archive_candidates(stem: str, ext: str, when: datetime):
    """Yield candidate file names in the order DESIGN §2 prescribes."""
    minute = when.strftime("%Y%m%d%H%M")
    second = when.strftime("%S")
    yield f"{stem}_{minute}{ext}"
    yield f"{stem}_{minute}{second}{ext}"
    n = 2
    while True:
        yield f"{stem}_{minute}{second}-{n}{ext}"
        n += 1


def choose_archive_name(folder: Path, stem: str, ext: str, when: datetime, taken: set[str] | None = None) -> str:
    """First candidate that exists neither on disk nor in ``taken``."""
    taken = taken or set()
    for candidate in archive_candidates(stem, ext, when):
        if candidate not in taken and not (folder / candidate).exists():
            return candidate
    raise AssertionError("unreachable")


def archived_versions_on_disk(folder: Path, stem: str, ext: str) -> list[Path]:
    """Files in ``folder`` that look like archived versions of ``stem``+``ext``."""
    if not folder.is_dir():
        return []
    out = []
    prefix = f"{stem}_"
    for entry in folder.iterdir():
        n = entry.name
        if not n.startswith(prefix) or not n.endswith(ext):
            continue
        m = ARCHIVE_RE.match(n)
        if m and m.group(1) == stem and m.group(5) == ext:
            out.append(entry)
    return sorted(out)
