"""Review decisions: ``<project>/reviews.json``, keyed by finding fingerprint.

A fingerprint is a hash of (rule, matched text), so re-ingesting the same
content does not ask again. The file is the source of truth; the journal's
``findings.decision`` column mirrors it.
"""

from __future__ import annotations

import json
from pathlib import Path

from kbwatch.pipeline.fsutil import atomic_write

REVIEWS_FILE = "reviews.json"


def load_decisions(project: Path) -> dict[str, dict]:
    path = project / REVIEWS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}
    return data.get("decisions", {}) if isinstance(data, dict) else {}


def save_decisions(project: Path, decisions: dict[str, dict]) -> None:
    body = {"decisions": dict(sorted(decisions.items()))}
    atomic_write(project / REVIEWS_FILE, json.dumps(body, ensure_ascii=False, indent=2) + "\n")
