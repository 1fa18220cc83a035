"""What the Chinese injection kind tests share: the injection rules a text triggers, the learned
model off (the rules are under test; the model is measured in test_scan_injection_model.py)."""

from __future__ import annotations

from kbwatch.pipeline import ParsedDocument
from kbwatch.plugins import scan_injection

NO_MODEL = {"scan": {"injection_model": False}}


def rules(text: str, settings=None) -> set[str]:
    """The injection rules ``text`` triggers (``settings`` default: the model off)."""
    found = scan_injection.kb_scan(document=ParsedDocument(markdown=text), settings=settings or NO_MODEL)
    return {f.rule for f in found if f.kind == "injection"}
