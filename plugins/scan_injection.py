"""Prompt-injection scanner (English and Chinese), kind ``injection``: the plugin.

The rules, views and findings are :mod:`kbwatch.plugins.scanning.injection_scan` (its
docstring lists the rules). That module is imported on the first scan, not when this plugin
is registered: its tables take ~1 s of CPU to build, and every process registers every
built-in plugin (each CLI command, the MCP server, each parse worker), most of them never
scanning. The engine's names stay reachable from here (``scan_injection.scan_text``) for
code written against the old single module.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl

_engine = None


def engine():
    """The scanning engine, imported on first use (the import lock makes this thread-safe)."""
    global _engine
    if _engine is None:
        from kbwatch.plugins.scanning.build_cache import cached_build

        with cached_build("injection"):  # its patterns and plans as an earlier process made them
            from kbwatch.plugins.scanning import injection_scan
        _engine = injection_scan
    return _engine


@hookimpl
def kb_scan(document, settings):
    return engine().scan_text(document.markdown or "", settings)


def __getattr__(name: str):  # PEP 562: ``scan_injection.scan_text`` and the other engine names
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(engine(), name)
