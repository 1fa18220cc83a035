"""Names derived from a document's name (DESIGN §2): archive and parsed file names.

Archive copies are ``<stem>_YYYYMMDDHHmm<ext>``, then seconds, then -2, -3…;
the newest text is ``parsed/<sub>/<stem>.md``.

A file system takes names of at most 255 bytes, so a stem that is already
close to that (83 Chinese characters are 249 bytes) cannot take the
timestamp. Such a stem is shortened, the same way every time
(:func:`fit_stem`): cut at a UTF-8 character boundary and followed by ``~``
and the first 8 hex digits of the SHA-256 of the whole stem, so that the
longest archive name ``<stem>_YYYYMMDDHHmmSS-99999<ext>`` and the parsed name
both fit. One short stem serves both names; the manifest keeps the full
document name. Two long names that share their first 200 bytes still get
different short stems (their hashes differ).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from datetime import datetime
from pathlib import Path

ARCHIVE_RE = re.compile(r"^(.+)_(\d{12})(\d{2})?(-\d+)?(\.[^./]+)$")

NAME_MAX = 255  # bytes in one file name (ext4, xfs, btrfs, NTFS/SMB in UTF-16 units ≥ this)
ARCHIVE_SUFFIX_MAX = len("_YYYYMMDDHHmmSS-99999")  # the longest timestamp an archive name takes
PARSED_EXT = ".md"
HASH_CHARS = 8
SHORTENED_RE = re.compile(r"~[0-9a-f]{8}$")  # how a shortened stem ends


class NameTooLong(ValueError):
    """No stem fits: the extension alone leaves no room for a name."""


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that is at most ``max_bytes`` in UTF-8, cut between characters."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", "ignore")


def stem_budget(ext: str) -> int:
    """Bytes a stem may have so that its archive and parsed names stay within NAME_MAX."""
    return NAME_MAX - ARCHIVE_SUFFIX_MAX - max(_utf8_len(ext), len(PARSED_EXT))


def fit_stem(stem: str, ext: str) -> str:
    """``stem`` itself when its derived names fit, else its shortened form (see the module doc).

    Raises :class:`NameTooLong` when even a shortened stem cannot fit (an
    extension of more than ~220 bytes).
    """
    budget = stem_budget(ext)
    if _utf8_len(stem) <= budget:
        return stem
    keep = budget - 1 - HASH_CHARS
    head = cut_utf8(stem, keep)
    if keep < 1 or not head:
        raise NameTooLong(f"the extension {ext[:40]!r}… is too long to make an archive name; rename the file")
    digest = hashlib.sha256(stem.encode("utf-8", "surrogateescape")).hexdigest()[:HASH_CHARS]
    return f"{head}~{digest}"


def parsed_path(name: str, ext: str) -> str:
    """Project-relative ``parsed/<sub>/<stem>.md`` of the document ``name`` (``sub/stem``)."""
    sub, _, stem = name.rpartition("/")
    short = fit_stem(stem, ext)
    return f"parsed/{sub}/{short}{PARSED_EXT}" if sub else f"parsed/{short}{PARSED_EXT}"


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


def choose_archive_name(folder: Path, stem: str, ext: str, when: datetime, taken: Collection[str] | None = None) -> str:
    """First candidate that exists neither on disk nor in ``taken``."""
    taken = taken or ()
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
