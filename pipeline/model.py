"""Plain data objects passed between the core and plugins."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from kbwatch.pipeline.fsutil import printable

Settings = dict  # the resolved configuration: a nested dict (see kbwatch.pipeline.config)


@dataclass
class ParserInfo:
    """A parser's claim on extensions, declared through ``kb_parser_info``.

    ``inprocess``: the parser is cheap and bounded (plain text), so with
    ``[stages.parse] isolate = "auto"`` it runs in the calling process instead
    of a worker process.
    ``priority``: built-ins use 100 (fallbacks less); a plugin takes over an
    extension by claiming it with a higher number. ``extensions`` are
    lower-case with the dot; ``"*"`` claims every extension (a fallback).
    """

    name: str
    extensions: tuple[str, ...]
    priority: int = 100
    plugin: Any = None  # the plugin object whose kb_parse serves this claim
    description: str = ""
    inprocess: bool = False  # cheap and bounded (plain text): no worker process needed


@dataclass
class ParsedDocument:
    """What a parser returns.

    ``markdown`` is the body (without kbwatch's header comments). ``title`` is
    used as the ``# heading`` when the body has none. ``locations`` names the
    marker kind the body carries (``page``, ``slide``, ``sheet``) if any.
    """

    markdown: str
    parser: str = ""
    title: str | None = None
    locations: str | None = None
    warnings: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


SEVERITIES = ("low", "medium", "high")
FINDING_KINDS = ("injection", "secret", "pii", "hidden-unicode", "format")


def location(path: str, line: int, column: int) -> str:
    """Where a finding is, for people: ``parsed/a.md:12:5``, or for one in the file's name
    (``line`` 0) ``parsed/a.md (in the file name, column 5)``."""
    path = printable(path)  # a name may hold an ESC or a U+202E: never printed raw
    return f"{path} (in the file name, column {column})" if line == 0 else f"{path}:{line}:{column}"


@dataclass
class Finding:
    """One risk found in parsed text, or in the file's name.

    ``line`` and ``column`` are 1-based; ``offset`` is a 0-based character
    offset into the scanned text. ``line`` 0 is the file's name (its path
    under sources/): ``column`` and ``offset`` count its characters. ``excerpt`` is already masked (never more
    than 6 characters of a secret). ``match`` is the raw matched text, used
    only to compute ``fingerprint`` and for redaction; it is never stored.
    """

    kind: str
    rule: str
    severity: str
    line: int
    column: int
    offset: int
    excerpt: str
    length: int = 0
    match: str = field(default="", repr=False)
    redact: bool = False  # replace the match by [REDACTED:<rule>] in parsed/
    message: str = ""

    @property
    def fingerprint(self) -> str:
        raw = f"{self.rule}\x00{self.match or self.excerpt}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(raw).hexdigest()[:16]

    def public(self) -> dict[str, Any]:
        """The shape of ``scan --json`` findings."""
        return {
            "kind": self.kind,
            "rule": self.rule,
            "severity": self.severity,
            "line": self.line,
            "column": self.column,
            "excerpt": self.excerpt,
        }


@dataclass
class RunRecord:
    """A finished run as seen by ``kb_run_finished`` observers."""

    run_id: str
    project: str
    source: str
    name: str
    outcome: str
    status: str
    error: str | None
    started_at: str
    finished_at: str
    record_path: str
    findings: list[Finding] = field(default_factory=list)
