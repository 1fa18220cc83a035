"""[stages.scan] settings read defensively (defaults declared once in config/default.toml) and the one allowlist rule (fnmatch on rule ids, exact fingerprints)."""

from __future__ import annotations

import fnmatch
from typing import Any

from kbwatch.pipeline.config import stage_options
from kbwatch.pipeline.model import Finding


__all__ = ['allowed', 'fingerprint_allowed', 'rule_allowed', 'scan_options']

# --------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------

def scan_options(settings: Any) -> dict[str, Any]:
    """``[stages.scan]`` over its defaults (declared once, in config/default.toml); a
    ``[scan]`` table, if a caller passes one, is read last."""
    out = stage_options(settings, "scan")
    if isinstance(settings, dict) and isinstance(settings.get("scan"), dict):
        out.update(settings["scan"])
    return out


def rule_allowed(opts: dict[str, Any], rule: str) -> bool:
    """True when ``allow_rules`` names ``rule``: the one allowlist rule of kbwatch.

    Each entry is an fnmatch pattern matched case-sensitively against the whole rule
    id: ``"pii.email"`` names one rule, ``"format.*"`` a family, ``"*.email"`` any family's."""
    return any(fnmatch.fnmatchcase(rule, pattern) for pattern in opts.get("allow_rules") or ())


def fingerprint_allowed(opts: dict[str, Any], fingerprint: str) -> bool:
    """True when ``allow_fingerprints`` lists ``fingerprint``."""
    return fingerprint in set(opts.get("allow_fingerprints") or ())


def allowed(opts: dict[str, Any], finding: Finding) -> bool:
    """True when the config allowlists ``finding`` (its rule or its fingerprint)."""
    return rule_allowed(opts, finding.rule) or fingerprint_allowed(opts, finding.fingerprint)


