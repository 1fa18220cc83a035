"""Choosing and calling parsers: ``kb_parse`` in declared priority order.

``parse_file`` is what the parse stage calls, in the calling process or, for
isolation, inside a worker process through ``parse_in_worker`` (which builds
its own plugin manager from the same settings once per process).
"""

from __future__ import annotations

import functools
from pathlib import Path

from pipeline.errors import PermanentError
from pipeline.model import ParsedDocument, ParserInfo
from pipeline.plugins import PluginSet, build_plugin_manager

_WORKER_PLUGINS: dict[str, PluginSet] = {}


def parse_file(plugins: PluginSet, path: Path, ext: str, settings: dict) -> ParsedDocument:
    """Try the parsers claiming ``ext``, highest priority first; first non-None wins."""
    candidates = plugins.parsers_for(ext)
    if not candidates:
        raise PermanentError(
            f"unsupported file type {ext or '(no extension)'}: no parser claims it (kbwatch plugins lists parsers)",
            reason="unsupported",
        )
    tried = set()
    for info in candidates:
        key = id(info.plugin)
        if key in tried:
            continue
        tried.add(key)
        fn = getattr(info.plugin, "kb_parse", None)
        if fn is None:
            continue
        result = _call(fn, path=path, ext=ext.lower(), settings=settings)
        if result is not None:
            if not result.parser:
                result.parser = info.name
            return result
    raise PermanentError(f"no parser accepted this {ext} file", reason="unsupported")


def _call(fn, **kwargs):
    params = _params(fn)
    return fn(**{k: v for k, v in kwargs.items() if k in params})


@functools.lru_cache(maxsize=256)
def _params(fn) -> frozenset[str]:
    """The argument names a hook implementation takes (it may take fewer than offered)."""
    import inspect

    return frozenset(inspect.signature(fn).parameters)


def choose_parser(plugins: PluginSet, ext: str) -> ParserInfo | None:
    found = plugins.parsers_for(ext)
    return found[0] if found else None


def isolated(info: ParserInfo, settings: dict) -> bool:
    """Whether a file this parser takes is parsed in a worker process (``[stages.parse] isolate``)."""
    isolate = settings["stages"]["parse"]["isolate"]
    return isolate is True or (isolate == "auto" and not info.inprocess)


def _worker_plugins(settings: dict) -> PluginSet:
    key = repr((settings.get("_root"), settings["pipeline"]["plugins"], settings["pipeline"].get("disable")))
    plugins = _WORKER_PLUGINS.get(key)
    if plugins is None:
        plugins = _WORKER_PLUGINS[key] = build_plugin_manager(settings)
    return plugins


def parse_in_worker(path: str, ext: str, settings: dict) -> ParsedDocument:
    return parse_file(_worker_plugins(settings), Path(path), ext, settings)


def worker_warmup(settings: dict) -> None:
    """Run in each new worker process: load the plugins and let them warm up."""
    _worker_plugins(settings).hook.kb_worker_started(settings=settings)
