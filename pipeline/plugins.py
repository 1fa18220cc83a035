"""The plugin manager: built-ins by name, then entry points, then TOML.

Order of registration (as tox and pytest do it):

1. the modules named in :data:`BUILTIN_PLUGINS` (the built-in stages, parsers,
   scanners and commands), unless named in ``[pipeline] disable``; each is
   registered under its short name (``knowledge``), the name ``kbwatch
   plugins`` prints and ``disable`` takes (the dotted ``kbwatch.plugins.knowledge``
   is accepted too). A built-in that fails to import is logged once (one
   warning line), skipped and shown by ``kbwatch plugins``, like a broken
   third-party plugin: everything else keeps working;
2. the entry-point group ``kbwatch`` (skipped when ``KBWATCH_DISABLE_ENTRYPOINTS``
   is set); a broken third-party plugin is logged, skipped and shown by
   ``kbwatch plugins``;
3. ``[pipeline] plugins``: dotted module names or ``.py`` paths (relative to the
   root); a broken one is a configuration error.

``check_pending()`` rejects hook implementations with no specification (typos).
``KBWATCH_TRACE_PLUGINS=1`` prints every hook call to stderr.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from kbwatch.pipeline import PROJECT_NAME, hookspecs
from kbwatch.pipeline.errors import ConfigError
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.model import ParserInfo

BUILTIN_PACKAGE = "kbwatch.plugins"
ENTRY_POINT_GROUP = "kbwatch"

# The built-in plugins, by short name (module ``kbwatch.plugins.<name>``), in registration
# order (as pytest's ``default_plugins`` and datasette's ``DEFAULT_PLUGINS``).
# A plugin never imports another one: what several of them need is a hook
# (kbwatch.pipeline.hookspecs) or a core service. Modules starting with ``_`` are
# libraries the plugins use, not plugins.
BUILTIN_PLUGINS: tuple[str, ...] = (  # alphabetical: the order pluggy has always seen
    "archive", "ask", "conflict", "index", "knowledge", "manifest", "mcp_server", "notify", "parse",
    "parse_image", "parse_pdf", "parse_pptx", "parse_text", "parse_unstructured", "parse_xlsx",
    "project_md", "rebuild", "remove", "review",
    "scan", "scan_format", "scan_injection", "scan_pii", "scan_secrets", "scan_unicode",
    "summarize",
)

_reported: set[tuple[str, str]] = set()  # broken plugins already logged by this process


def _report_broken(ps: "PluginSet", name: str, exc: BaseException) -> None:
    """Record a plugin that failed to load; log it once per process (one warning line)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    ps.broken[name] = text
    if (name, text) not in _reported:
        _reported.add((name, text))
        logger.warning("plugin {} failed to load and is skipped: {}", name, text)


@dataclass
class PluginSet:
    """A plugin manager plus what was learnt while loading it."""

    pm: pluggy.PluginManager
    settings: dict
    builtin: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    broken: dict[str, str] = field(default_factory=dict)
    # built-ins not loaded (disabled in the config, or broken): their stages are left out of
    # ``[pipeline] stages`` instead of being an unknown-stage error
    unloaded: set[str] = field(default_factory=set)
    _stages: dict[str, Any] | None = None
    _parsers: list[ParserInfo] | None = None

    @property
    def hook(self):
        return self.pm.hook

    # -- stages ----------------------------------------------------------
    def stages(self) -> dict[str, Any]:
        """All contributed stages by name."""
        if self._stages is None:
            found: dict[str, Any] = {}
            for batch in self.pm.hook.kb_stages():
                for stage in batch or []:
                    name = getattr(stage, "name", None)
                    if not name:
                        raise ConfigError(f"a plugin contributed a stage without a name: {stage!r}")
                    found.setdefault(name, stage)
            self._stages = found
        return self._stages

    def configured_stages(self) -> list[Any]:
        """The stages named in ``[pipeline] stages``, in that order.

        A stage whose built-in plugin is disabled (or failed to load) is left out."""
        available = self.stages()
        chosen = []
        for name in self.settings["pipeline"]["stages"]:
            if name not in available and name in self.unloaded:
                continue
            if name not in available:
                known = ", ".join(sorted(available)) or "none"
                raise ConfigError(
                    f"pipeline.stages: unknown stage {name!r} (available: {known})"
                )
            chosen.append(available[name])
        return chosen

    # -- parsers ---------------------------------------------------------
    def parsers(self) -> list[ParserInfo]:
        """Every declared parser, highest priority first (ties: third-party first)."""
        if self._parsers is None:
            infos: list[ParserInfo] = []
            for impl in self.pm.hook.kb_parser_info.get_hookimpls():
                for info in impl.function() or []:
                    if info.plugin is None:
                        info.plugin = impl.plugin
                    infos.append(info)
            builtin_objs = {id(self.pm.get_plugin(n)) for n in self.builtin}
            infos.sort(key=lambda i: (-i.priority, id(i.plugin) in builtin_objs, i.name))
            self._parsers = infos
        return self._parsers

    def parsers_for(self, ext: str) -> list[ParserInfo]:
        ext = ext.lower()
        return [p for p in self.parsers() if ext in p.extensions or "*" in p.extensions]

    def plugin_name(self, plugin: Any) -> str:
        return self.pm.get_name(plugin) or repr(plugin)


def is_disabled(name: str, disabled: set[str]) -> bool:
    """True when ``[pipeline] disable`` names built-in ``name`` (short or dotted form)."""
    # the short name kbwatch plugins prints, the installed module name, or the pre-0.2 ``plugins.<name>``
    return name in disabled or f"{BUILTIN_PACKAGE}.{name}" in disabled or f"plugins.{name}" in disabled


def _import_path(path: Path) -> Any:
    mod_name = f"kbwatch_local_{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


def build_plugin_manager(settings: dict, load_entrypoints: bool | None = None) -> PluginSet:
    """Create a fresh plugin manager for these settings (no global state)."""
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    ps = PluginSet(pm=pm, settings=settings)
    disabled = set(settings["pipeline"].get("disable", []))

    for name in BUILTIN_PLUGINS:
        if is_disabled(name, disabled):
            ps.unloaded.add(name)
            continue
        try:
            module = importlib.import_module(f"{BUILTIN_PACKAGE}.{name}")
        except Exception as exc:  # reported like a broken third-party plugin; the rest works
            ps.unloaded.add(name)
            _report_broken(ps, name, exc)
            continue
        pm.register(module, name=name)
        ps.builtin.append(name)

    if load_entrypoints is None:
        load_entrypoints = not os.environ.get("KBWATCH_DISABLE_ENTRYPOINTS")
    if load_entrypoints:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in disabled or ep.value in disabled:
                continue
            try:
                plugin = ep.load()
                if pm.get_plugin(ep.name) is None:
                    pm.register(plugin, name=ep.name)
                    ps.external.append(ep.name)
            except Exception as exc:  # a third-party plugin must not crash the service
                _report_broken(ps, ep.name, exc)

    root = Path(settings.get("_root", "."))
    for entry in settings["pipeline"]["plugins"]:
        try:
            if entry.endswith(".py"):
                path = Path(entry)
                path = path if path.is_absolute() else root / path
                plugin = _import_path(path)
            else:
                plugin = importlib.import_module(entry)
        except Exception as exc:
            raise ConfigError(f"pipeline.plugins: cannot load {entry!r}: {type(exc).__name__}: {exc}") from None
        if pm.get_plugin(entry) is None:
            pm.register(plugin, name=entry)
            ps.external.append(entry)

    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise ConfigError(f"plugin error: {exc}") from None

    if os.environ.get("KBWATCH_TRACE_PLUGINS"):
        def before(hook_name, hook_impls, kwargs):
            print(f"[kbwatch] hook {hook_name} -> {[i.plugin_name for i in hook_impls]}", file=sys.stderr)

        def after(outcome, hook_name, hook_impls, kwargs):
            print(f"[kbwatch] hook {hook_name} done", file=sys.stderr)

        pm.add_hookcall_monitoring(before, after)
    return ps
