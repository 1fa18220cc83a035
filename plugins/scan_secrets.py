"""Secrets scanner, kind ``secret``: the plugin.

The rules and their validation are :mod:`kbwatch.plugins.scanning.secrets_scan` (its
docstring lists the rules). That module is imported on the first scan, not when this plugin
is registered: compiling its ~140 patterns took ~90 ms of CPU, paid by every process that
registers the built-in plugins (each CLI command, the MCP server, each parse worker), most
of them never scanning. On that first scan the patterns, and the ~250 of the gitleaks rules,
come from the build cache (:mod:`kbwatch.plugins.scanning.build_cache`) when an earlier
process compiled them: ~0.15 s of CPU less for each process that scans. The engine's names
stay reachable from here (``scan_secrets.scan_text``) for code written against the old single
module.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl

_engine = None


def engine():
    """The scanning engine, imported on first use (the import lock makes this thread-safe)."""
    global _engine
    if _engine is None:
        from kbwatch.plugins.scanning.build_cache import cached_build

        with cached_build("secrets"):  # its ~400 patterns as an earlier process compiled them
            from kbwatch.plugins.scanning import gitleaks, secrets_scan

            gitleaks.load()
        _engine = secrets_scan
    return _engine


@hookimpl
def kb_scan(document, settings):
    return engine().scan_text(document.markdown or "", settings)


def __getattr__(name: str):  # PEP 562: ``scan_secrets.scan_text`` and the other engine names
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(engine(), name)
