"""What each setting may hold: one rule per key of config/default.toml.

Types come from the defaults (``kbwatch.pipeline.config.merge``); the rules here check
values: choices, ranges, and the logging options loguru must accept. Every
key of default.toml has a rule or is listed in :data:`FREE_FORM` (a test keeps
it so), so a new key cannot slip in unchecked. A rule returns None when the
value is good, else the words saying what is allowed.

Log levels, rotation and retention are checked by loguru itself (a level
lookup, and a sink added with ``delay=True`` so no file is created), not by a
copy of its grammar.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from typing import Any, Callable

Rule = Callable[[Any], "str | None"]


def _words(values) -> str:
    return ", ".join(str(v).lower() if isinstance(v, bool) else f'"{v}"' for v in values)


def one_of(*allowed) -> Rule:
    def rule(value):
        ok = any(value is a if isinstance(a, bool) else (not isinstance(value, bool) and value == a) for a in allowed)
        return None if ok else f"expected one of {_words(allowed)}"
    return rule


def at_least(low: float, meaning: str = "") -> Rule:
    def rule(value):
        return None if value >= low else f"must be at least {low:g}{meaning}"
    return rule


def positive(value) -> str | None:
    return None if value > 0 else "must be more than 0"


def between(low: float, high: float) -> Rule:
    def rule(value):
        return None if low <= value <= high else f"must be between {low:g} and {high:g}"
    return rule


def non_empty(value) -> str | None:
    return None if value.strip() else "must not be empty"


def executor_spec(value) -> str | None:
    from kbwatch.pipeline.executors import parse_spec

    try:
        parse_spec(value)
    except ValueError as exc:
        return str(exc)
    return None


def absolute_or_empty(value) -> str | None:
    return None if value == "" or os.path.isabs(value) else "must be an absolute path or empty"


def distinct_names(value) -> str | None:
    if not value:
        return "must list at least one stage"
    if any(not v.strip() for v in value):
        return "must not contain an empty name"
    dupes = sorted({v for v in value if value.count(v) > 1})
    return f"lists {_words(dupes)} more than once" if dupes else None


# Agent Knowledge `type` (anchor standards v0.4–v0.7), or custom:<namespace>
KNOWLEDGE_TYPES = (
    "personal-profile", "brand-product", "organization-knowhow", "domain-reference", "research-wiki",
    "brand-persona", "content-operations", "private-domain-operations", "live-commerce-operations",
    "campaign-operations", "growth-strategy", "content-ontology",
)
CUSTOM_TYPE_RE = re.compile(r"^custom:[a-z0-9][a-z0-9._-]*$")


def knowledge_type(value) -> str | None:
    if value in KNOWLEDGE_TYPES or CUSTOM_TYPE_RE.match(value):
        return None
    return f"expected one of {_words(KNOWLEDGE_TYPES)} or \"custom:<namespace>\""


OCR_LANGUAGES_RE = re.compile(r"^[A-Za-z0-9_/-]+(\+[A-Za-z0-9_/-]+)*$")


def ocr_languages(value) -> str | None:
    return None if OCR_LANGUAGES_RE.match(value) else 'expected tesseract language names joined by "+", e.g. "chi_sim+eng"'


LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL")


def log_level(value) -> str | None:
    if type(value) is str and value in LOG_LEVELS:  # loguru's own levels: answered without importing it
        return None
    from loguru import logger

    try:
        logger.level(value)
    except (ValueError, TypeError):
        return f"expected a log level: {_words(LOG_LEVELS)}"
    return None


# a size loguru surely takes ("10 MB", "500 KB", "1 GB"): answered without asking it
# (tests/test_settings_checked.py checks the pattern against loguru itself)
PLAIN_SIZE = re.compile(r"[1-9][0-9]{0,5} ?[KMG]B")


def _loguru_accepts(**option) -> bool:
    """Whether loguru takes this rotation/retention (a sink that never opens its file). Asking
    costs ~18 ms (``logger.add`` reads the interpreter's install paths), and every command checks
    its settings: each value is asked about once per process, and a whole number of files or a
    plain size is answered without asking."""
    (name, value), = option.items()
    if (name == "retention" and type(value) is int) or (
            name == "rotation" and isinstance(value, str) and PLAIN_SIZE.fullmatch(value)):
        return True
    try:
        return _ask_loguru(name, type(value), value)
    except TypeError:  # a value that cannot be a cache key (a list, a table): asked each time
        return _ask_loguru.__wrapped__(name, type(value), value)


@functools.lru_cache(maxsize=64)
def _ask_loguru(name: str, _type: type, value) -> bool:  # (the type in the key: 1 and True are equal)
    from loguru import logger

    path = os.path.join(tempfile.gettempdir(), "kbwatch-config-check.log")
    try:
        handler = logger.add(path, delay=True, format="{message}", **{name: value})
    except (ValueError, TypeError):
        return False
    logger.remove(handler)
    return True


def log_rotation(value) -> str | None:
    if _loguru_accepts(rotation=value):
        return None
    return 'expected a loguru rotation: a size ("10 MB"), an interval ("1 week", "daily") or a time ("00:00")'


def log_retention(value) -> str | None:
    if value < 0:
        return "must be 0 or more (the number of rotated log files kept)"
    return None if _loguru_accepts(retention=value) else "expected a number of files"


AUTO_OR_BOOL = one_of("auto", True, False)


def http_address(value) -> str | None:
    """``""`` or ``HOST:PORT`` (``[::1]:8765`` for IPv6)."""
    if value == "":
        return None
    from kbwatch.pipeline.web.address import parse_address

    try:
        parse_address(value)
    except ValueError as exc:
        return str(exc)
    return None


def web_urls(value) -> str | None:
    bad = [v for v in value if not re.match(r"^https?://[^\s/]+", v)]
    return f"expected http:// or https:// URLs, not {_words(bad)}" if bad else None


def notify_events(value) -> str | None:
    allowed = ("failed", "review", "done")
    bad = [v for v in value if v not in allowed]
    return f"expected a list of {_words(allowed)}" if bad else None


def mail_addresses(value) -> str | None:
    bad = [v for v in value if "@" not in v or any(c.isspace() for c in v)]
    return f"expected e-mail addresses, not {_words(bad)}" if bad else None

RULES: dict[str, Rule] = {
    "project.language": one_of("zh", "en"),
    "project.type": knowledge_type,
    "project.trust": one_of("unreviewed", "user-confirmed", "official", "external"),
    "project.grounding": one_of("none", "recommended", "required"),
    "project.stale_after_documents": at_least(0, " (0 = the overview never counts as stale)"),
    "service.settle_seconds": at_least(0),
    "service.locked_patience_seconds": at_least(0),
    "service.polling": AUTO_OR_BOOL,
    "service.poll_interval_seconds": positive,
    "service.rescan_seconds": at_least(0, " (0 turns the rescan off)"),
    "service.workers": at_least(0, " (0 = one per CPU core)"),
    "service.compute_workers": at_least(0, " (0 = one per CPU core)"),
    "service.state_dir": non_empty,
    "service.heartbeat_seconds": positive,
    "service.commit_batch": at_least(1),
    "service.commit_interval_seconds": at_least(0, " (0 = commit at every tick)"),
    "service.worker_idle_seconds": at_least(0, " (0 stops a worker as soon as it is idle)"),
    "service.http": http_address,
    "notify.webhooks": web_urls,
    "notify.events": notify_events,
    "notify.batch_seconds": at_least(0, " (0 = send each run at once)"),
    "notify.timeout_seconds": positive,
    "notify.max_attempts": at_least(1),
    "notify.backoff_max_seconds": positive,
    "notify.smtp_port": between(1, 65535),
    "notify.mail_from": lambda v: mail_addresses([v]),
    "notify.mail_to": mail_addresses,
    "pipeline.stages": distinct_names,  # each name is checked against the loaded plugins
    "stages.parse.max_file_mb": positive,
    "stages.parse.timeout_seconds": positive,
    "stages.parse.memory_mb": at_least(0, " (0 = no cap)"),
    "stages.parse.isolate": AUTO_OR_BOOL,
    "stages.parse.executor": executor_spec,
    "stages.parse.ship_max_mb": at_least(0, " (0 = never ship bytes)"),
    "stages.parse.shared_path_prefix": absolute_or_empty,
    "stages.parse.max_worker_deaths": at_least(1),
    "stages.parse.cluster_unavailable": one_of("local", "wait"),
    "stages.parse.max_uncompressed_mb": positive,
    "stages.parse.max_compression_ratio": positive,
    "stages.parse.max_zip_members": at_least(1),
    "stages.parse.max_table_rows": at_least(1),
    "stages.parse.max_pages": at_least(1),
    "stages.parse.ocr_languages": ocr_languages,
    "stages.parse.ocr_dpi": between(50, 1200),
    "stages.parse.ocr_min_chars": at_least(0, " (0 = never treat a page as scanned)"),
    "stages.parse.ocr_timeout_seconds": positive,
    "stages.parse.ocr_min_confidence": between(0, 100),
    "stages.scan.excerpt_context": at_least(0),
    "stages.scan.entropy_min_length": at_least(1),
    "stages.scan.max_line_chars": at_least(1),
    "stages.scan.max_paragraph_chars": at_least(1),
    "stages.scan.max_blob_chars": at_least(1),
    "stages.scan.max_repeated_lines": at_least(1),
    "stages.scan.max_char_run": at_least(1),
    "stages.scan.max_document_chars": at_least(1),
    "stages.scan.injection_model_threshold": between(0, 1),
    "stages.index.max_chars": at_least(0, " (0 = index all of each document)"),
    "stages.index.cache_mb": at_least(1),
    "stages.rebuild.every_n_ingests": at_least(0, " (0 = never)"),
    "stages.archive.timezone": one_of("local", "utc"),
    "retry.max_attempts": at_least(1),
    "retry.backoff_initial_seconds": positive,
    "retry.backoff_max_seconds": positive,
    "logging.level": log_level,
    "logging.file_level": log_level,
    "logging.rotation": log_rotation,
    "logging.retention": log_retention,
}

# Keys whose type check (from the defaults) is all there is to check.
FREE_FORM = {
    "ignore.patterns": "any fnmatch patterns",
    "pipeline.plugins": "checked when the plugins load",
    "pipeline.disable": "plugin names as kbwatch plugins --all prints them (the dotted plugins.<name> also works); an unknown name disables nothing",
    "stages.parse.ocr": "true or false",
    "stages.scan.redact": "true or false",
    "stages.scan.injection_model": "true or false",
    "stages.scan.ahead": "true or false",
    "ask.record_runs": "true or false",
    "stages.scan.allow_rules": "rule ids or patterns",
    "stages.scan.allow_fingerprints": "finding fingerprints",
    "notify.smtp_host": "a host name or address (\"\" = no e-mail)",
    "notify.smtp_starttls": "true or false",
    "notify.smtp_ssl": "true or false",
    "notify.smtp_user": "any user name",
    "notify.smtp_password_env": "an environment variable name",
}

# Checked across keys, after each key's own rule.
def _cross_checks(get) -> tuple[str, str] | None:
    if get("retry.backoff_max_seconds") < get("retry.backoff_initial_seconds"):
        return "retry.backoff_max_seconds", "must be at least retry.backoff_initial_seconds"
    return None


def _get(settings: dict, dotted: str):
    node: Any = settings
    for part in dotted.split("."):
        node = node[part]
    return node


def problems(settings: dict) -> list[tuple[str, Any, str]]:
    """(key, value, what is allowed) for every value a rule refuses, in table order."""
    out = []
    for key, rule in RULES.items():
        try:
            value = _get(settings, key)
        except KeyError:
            continue
        allowed = rule(value)
        if allowed:
            out.append((key, value, allowed))
    if not out:
        cross = _cross_checks(lambda k: _get(settings, k))
        if cross:
            out.append((cross[0], _get(settings, cross[0]), cross[1]))
    return out


def normalise(settings: dict) -> None:
    """Accept log level names in any case (loguru's are upper case)."""
    for key in ("level", "file_level"):
        value = settings.get("logging", {}).get(key)
        if isinstance(value, str) and value.upper() in LOG_LEVELS:
            settings["logging"][key] = value.upper()
