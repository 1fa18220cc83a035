"""[stages.scan] settings read defensively (defaults declared once in config/default.toml) and the one allowlist rule (fnmatch on rule ids, exact fingerprints)."""

from __future__ import annotations

import copy
import fnmatch
from typing import Any

from kbwatch.pipeline.config import stage_options
from kbwatch.pipeline.model import Finding


__all__ = ['allowed', 'fingerprint_allowed', 'rule_allowed', 'scan_options']

# --------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------

# id(settings) -> (settings, its [stages.scan] table, a copy of it, its [scan] table, a copy, the options):
# every scanner asks once per document (six times a file); the answer is kept while the settings object
# and both tables are the same objects with the same contents
_CACHE: dict[int, tuple] = {}
_CACHE_MAX = 32


def _tables(settings: dict) -> tuple[Any, Any]:
    stages = settings.get("stages")
    return (stages.get("scan") if isinstance(stages, dict) else None), settings.get("scan")


def scan_options(settings: Any) -> dict[str, Any]:
    """``[stages.scan]`` over its defaults (declared once, in config/default.toml); a
    ``[scan]`` table, if a caller passes one, is read last. The dict returned may be shared
    between calls with the same settings: read it, don't change it."""
    if isinstance(settings, dict):
        hit = _CACHE.get(id(settings))
        if hit is not None and hit[0] is settings:
            st, sc = _tables(settings)
            if st is hit[1] and sc is hit[3] and st == hit[2] and sc == hit[4]:
                return hit[5]
    out = stage_options(settings, "scan")
    if isinstance(settings, dict) and isinstance(settings.get("scan"), dict):
        out.update(settings["scan"])
    if isinstance(settings, dict) and settings:  # not the {} a caller without settings makes afresh each time
        st, sc = _tables(settings)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[id(settings)] = (settings, st, copy.deepcopy(st), sc, copy.deepcopy(sc), out)
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


