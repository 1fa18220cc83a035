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


def kind_tests(attacks: dict[str, list[str]], benign: list[str]):
    """The two parametrized tests a per-pass kind file runs: every sentence of ``attacks`` (kind → sentences)
    triggers an injection rule, and none of ``benign`` does. Bind them to ``test_*`` names in the module."""
    import pytest

    @pytest.mark.parametrize("text", [t for texts in attacks.values() for t in texts])
    def kinds_are_found(text):
        assert rules(text), text

    @pytest.mark.parametrize("text", benign)
    def look_alikes_stay_clean(text):
        assert not rules(text), (text, rules(text))

    return kinds_are_found, look_alikes_stay_clean
