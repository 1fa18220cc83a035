"""Which files the runner keeps out of its ordinary lane.

A large text file is parsed, scanned and indexed in the service's own
process (plain-text parsers are ``inprocess``) and keeps a runner thread busy
for a minute or more. Two of them at once would occupy every runner thread
(``workers + 1``) and hold two whole texts in memory, so a small file in
another project would wait for them. The runner therefore gives such files
their own lane: one thread that takes them one at a time, while the ordinary
threads keep serving everything else. Rich formats are parsed in worker
processes and stay in the ordinary lane.
"""

from __future__ import annotations

import os
from pathlib import Path

from kbwatch.pipeline.parsing import choose_parser, isolated
from kbwatch.pipeline.sources import split_name

LARGE_TEXT_BYTES = 4 * 1024 * 1024


def is_large_text(plugins, settings: dict, path: Path) -> bool:
    """True for a file of at least ``LARGE_TEXT_BYTES`` that is parsed in this process."""
    try:
        if os.lstat(path).st_size < LARGE_TEXT_BYTES:
            return False
    except OSError:
        return False
    info = choose_parser(plugins, split_name(path.name)[1])
    return info is not None and not isolated(info, settings)
