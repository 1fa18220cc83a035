"""The one parse path: bounds checked once, the claiming parsers called through ``kb_parse``.

Owns:

- :func:`parse_document`: what the parse stage (``ingest``, ``watch``) and
  ``kbwatch scan`` call. In order: the size bound (``too large``) and the
  empty file, checked once by the core before any parser runs; the extension
  claim (``unsupported`` when no parser declares it); the parse itself, in a
  worker process when ``[stages.parse] isolate`` says so (:func:`isolated`)
  and the caller can offload (the file goes as a
  :class:`~kbwatch.pipeline.executors.ShippedFile`, so an executor on other
  machines can ship it; where it ran lands in ``doc.metadata["parsed_on"]``
  when that was not the local pool), else in the calling thread; the ``no text``
  rule (:mod:`kbwatch.pipeline.text_presence`), once for every parser.
- :func:`call_parsers`: the ``kb_parse`` hook call for one extension;
  :func:`parse_file`: that call in this process after the size bound.
- :func:`parse_in_worker` / :func:`worker_warmup`: the worker-process side.
- :class:`ParseAs`: a parser's "this file is really a ``.pptx``" hand-over.

Why the pluggy hook and not parser objects the core dispatches: plugin
authors already write ``kb_parse`` implementations (README, the example
plugin), and through the hook ``firstresult``, hook wrappers (a plugin that
times or post-processes every parse) and ``KBWATCH_TRACE_PLUGINS`` apply with
no second mechanism. pluggy alone cannot give the documented order, though:
it calls implementations by registration order and ``tryfirst``/``trylast``,
while kbwatch's order is the priority each plugin declares *per extension*
(``kb_parser_info``; one plugin may take over ``.log`` at 150 and add
``.vtt`` at 100). So for each extension the core takes
``pm.subset_hook_caller("kb_parse", remove_plugins=<plugins not claiming
it>)`` (wrappers are kept), orders the claimants by declared priority (ties:
third-party first) and runs that list through the plugin manager's own hook
executor, exactly as a pluggy hook call does. Parsers therefore only ever see
extensions they claim, lower-cased, and files within the size bound: they do
not check either again.
"""

from __future__ import annotations

import functools
import os
import weakref
from pathlib import Path

import pluggy

from kbwatch.pipeline.errors import PermanentError, StageError
from kbwatch.pipeline.executors import ShippedFile, last_placement, set_placement
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.model import ParsedDocument, ParserInfo
from kbwatch.pipeline.plugins import PluginSet, build_plugin_manager
from kbwatch.pipeline.text_presence import has_text

_WORKER_PLUGINS: dict[str, PluginSet] = {}


class ParseAs(Exception):
    """Raised inside ``kb_parse``: the file is really of another format (``ext``).

    The core parses it again, once, through the parsers claiming ``ext`` (a
    ``.pptx`` saved under a ``.ppt`` name goes to whichever parser takes
    ``.pptx``), so no parser needs to import another.
    """

    def __init__(self, ext: str):
        super().__init__(ext)
        self.ext = ext.lower()


# ----------------------------------------------------------------- the one path


def parse_document(plugins: PluginSet, path: Path, ext: str, settings: dict, *, size: int | None = None,
                   offload=None, text_required: bool = True) -> ParsedDocument:
    """Parse one file the way every command does (see the module docstring).

    ``size``: the file's size when the caller knows it (the parse stage's
    snapshot), else it is looked up. ``offload(fn, *args, timeout=...)`` runs
    a function in a worker process (``RunContext.offload``,
    ``WorkerPool.call``); without it everything runs here. ``text_required``
    (on for ingest and watch) fails empty files as ``empty`` and parses that
    hold no text as ``no text``; ``kbwatch scan`` turns it off (nothing to
    scan is a clean result there).
    """
    path = Path(path)
    size = os.stat(path).st_size if size is None else size
    check_size(size, settings)
    if size == 0 and text_required:
        raise PermanentError("the file is empty", reason="empty")
    info = choose_parser(plugins, ext)
    if info is None:
        raise PermanentError(
            f"unsupported file type {ext or '(no extension)'}: no parser claims it",
            reason="unsupported",
        )
    if offload is not None and isolated(info, settings):
        set_placement(None)
        doc = offload(parse_in_worker, ShippedFile(path), ext, settings,
                      timeout=settings["stages"]["parse"]["timeout_seconds"] or None)
        where = last_placement()
        if where and where.get("executor") != "local" or where and where.get("fallback"):
            doc.metadata["parsed_on"] = where  # the run says where it was parsed
    else:
        doc = _in_process(plugins, path, ext, settings)
    if text_required and not has_text(doc.markdown):
        raise PermanentError(_no_text_message(doc), reason="no text")
    return doc


def parse_file(plugins: PluginSet, path: Path, ext: str, settings: dict) -> ParsedDocument:
    """In this process, no ``empty``/``no text`` rules: the size bound, then the parsers
    (tests and ``bench/parse.py`` measure the parsers with it)."""
    check_size(os.stat(path).st_size, settings)
    return _in_process(plugins, Path(path), ext, settings)


def check_size(size: int, settings: dict) -> None:
    """``[stages.parse] max_file_mb``: a larger file fails as ``too large`` without being opened."""
    limit_mb = _max_file_mb(settings)
    if limit_mb and size > limit_mb * 1024 * 1024:
        raise PermanentError(
            f"the file is {size / 1048576:.1f} MB, over the {limit_mb} MB limit (stages.parse.max_file_mb)",
            reason="too large",
        )


def _max_file_mb(settings) -> float:
    try:
        return settings["stages"]["parse"]["max_file_mb"]
    except (KeyError, TypeError):  # partial settings (a test's {}): the shipped default
        return _default_max_file_mb()


@functools.lru_cache(maxsize=1)
def _default_max_file_mb() -> float:
    from kbwatch.pipeline.config import load_defaults

    return load_defaults()["stages"]["parse"]["max_file_mb"]


def _no_text_message(doc: ParsedDocument) -> str:
    """Why nothing was kept: what OCR did (or why it could not run), in the parser's words."""
    why = [w for w in doc.warnings if w != "the document has no text"]
    if "<!-- ocr:" in doc.markdown:
        why.insert(0, "OCR found no text either")
    detail = f" ({'; '.join(why)})" if why else ""
    return f"no text could be extracted from the file{detail}"


# ------------------------------------------------------------------ the hook call


def call_parsers(plugins: PluginSet, path: Path, ext: str, settings: dict) -> ParsedDocument:
    """``kb_parse`` of the parsers claiming ``ext``, highest priority first; first non-None wins.

    A :class:`ParseAs` hand-over is followed once.
    """
    ext = ext.lower()
    try:
        return _hook_call(plugins, path, ext, settings)
    except ParseAs as again:
        if again.ext == ext:
            raise PermanentError(f"the {ext} parser handed the file back to itself", reason="parser error")
        try:
            return _hook_call(plugins, path, again.ext, settings)
        except ParseAs:
            raise PermanentError(f"the parsers handed this {ext} file over twice", reason="parser error")


def _in_process(plugins: PluginSet, path: Path, ext: str, settings: dict) -> ParsedDocument:
    """:func:`call_parsers` here: an exception a parser did not mean (anything but a
    ``StageError``) fails the file as ``parser error``, as it does in a worker process
    (:mod:`kbwatch.pipeline.workers`), with the traceback in the debug log."""
    try:
        return call_parsers(plugins, path, ext, settings)
    except (StageError, MemoryError):
        raise
    except Exception as exc:
        logger.opt(exception=True).debug("a parser failed on {}", path)
        raise PermanentError(f"parser error: {type(exc).__name__}: {exc}", reason="parser error") from None


def _hook_call(plugins: PluginSet, path: Path, ext: str, settings: dict) -> ParsedDocument:
    impls = _claimant_impls(plugins, ext)
    if impls is None:
        raise PermanentError(
            f"unsupported file type {ext or '(no extension)'}: no parser claims it (kbwatch plugins lists parsers)",
            reason="unsupported",
        )
    caller = plugins.pm.hook.kb_parse
    # what HookCaller.__call__ does, with the implementations in declared-priority order
    result = caller._hookexec(caller.name, impls, {"path": path, "ext": ext, "settings": settings}, True)
    if result is None:
        raise PermanentError(f"no parser accepted this {ext} file", reason="unsupported")
    return result


# pm -> ext -> the hook implementations to run (None: no parser claims ext)
_IMPLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _claimant_impls(plugins: PluginSet, ext: str) -> list[pluggy.HookImpl] | None:
    pm = plugins.pm
    by_ext = _IMPLS.get(pm)
    if by_ext is None:
        by_ext = _IMPLS[pm] = {}
    if ext not in by_ext:
        by_ext[ext] = _order_claimants(plugins, ext)
    return by_ext[ext]


def _order_claimants(plugins: PluginSet, ext: str) -> list[pluggy.HookImpl] | None:
    """pluggy runs a hook's list from its end and keeps wrappers last (outermost): the
    claimants go in lowest priority first, each tagging the document with its parser
    name when it left that empty, then every wrapper in pluggy's order."""
    claims: dict[int, ParserInfo] = {}
    for info in plugins.parsers_for(ext):  # highest priority first
        claims.setdefault(id(info.plugin), info)
    if not claims:
        return None
    pm = plugins.pm
    not_claiming = [i.plugin for i in pm.hook.kb_parse.get_hookimpls()
                    if not (i.wrapper or i.hookwrapper) and id(i.plugin) not in claims]
    impls = pm.subset_hook_caller("kb_parse", remove_plugins=not_claiming).get_hookimpls()
    wrappers = [i for i in impls if i.wrapper or i.hookwrapper]
    parsers = {id(i.plugin): i for i in impls if not (i.wrapper or i.hookwrapper)}
    ordered = [_named(parsers[key], info.name) for key, info in claims.items() if key in parsers]
    return ordered[::-1] + wrappers


def _named(impl: pluggy.HookImpl, name: str) -> pluggy.HookImpl:
    """``impl`` (same plugin, name and options, so tracing shows it) whose document
    gets ``parser = name`` when the parser left it empty."""
    fn = impl.function

    def parse(*args):
        doc = fn(*args)
        if doc is not None and not getattr(doc, "parser", ""):
            doc.parser = name
        return doc

    copy = pluggy.HookImpl(impl.plugin, impl.plugin_name, fn, impl.opts)
    copy.function = parse  # argnames were read from the parser's own signature
    return copy


# --------------------------------------------------------------- parser choice


def choose_parser(plugins: PluginSet, ext: str) -> ParserInfo | None:
    found = plugins.parsers_for(ext)
    return found[0] if found else None


def isolated(info: ParserInfo, settings: dict) -> bool:
    """Whether a file this parser takes is parsed in a worker process (``[stages.parse] isolate``)."""
    isolate = settings["stages"]["parse"]["isolate"]
    return isolate is True or (isolate == "auto" and not info.inprocess)


# ------------------------------------------------------------------ worker side


def worker_plugins(settings: dict) -> PluginSet:
    """In a worker process: the plugin set these settings load, built once per process."""
    key = repr((settings.get("_root"), settings["pipeline"]["plugins"], settings["pipeline"].get("disable")))
    plugins = _WORKER_PLUGINS.get(key)
    if plugins is None:
        plugins = _WORKER_PLUGINS[key] = build_plugin_manager(settings)
    return plugins


def parse_in_worker(path: str, ext: str, settings: dict) -> ParsedDocument:
    """In a worker process: the parsers only (the caller checked the bounds; the worker
    turns an unexpected exception into ``parser error``)."""
    return call_parsers(worker_plugins(settings), Path(path), ext, settings)


def worker_warmup(settings: dict) -> None:
    """Run in each new worker process: load the plugins and let them warm up."""
    worker_plugins(settings).hook.kb_worker_started(settings=settings)


def compute_warmup(settings: dict) -> None:
    """Run in each new compute worker: load the plugins only (no parser warms up there). The
    worker logs nothing itself: what its tasks log comes back with their results, for the
    service to log (to its log file too, which a worker does not write)."""
    from kbwatch.pipeline.lazylog import when_loaded

    # no sink at all: the ones inherited when forked, or those a set-up still waiting to add them
    # (forked before the service first logged) would add at this worker's first log
    when_loaded("setup", lambda real: real.remove())
    worker_plugins(settings)


def compute_pool(settings: dict):
    """A pool of ``[service] compute_workers`` compute workers (started on first use), each
    capped like a parse worker (``[stages.parse] memory_mb``) and loading the plugins only:
    where stages send CPU-heavy work on large texts (``RunContext.compute``)."""
    from kbwatch.pipeline.workers import WorkerPool

    return WorkerPool(settings["service"]["compute_workers"], memory_mb=settings["stages"]["parse"].get("memory_mb", 0),
                      warmup=functools.partial(compute_warmup, settings), kind="compute")
