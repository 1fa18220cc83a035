"""kbwatch core, and the public module for plugin authors.

Installed as ``kbwatch.pipeline`` (the repository's ``pipeline/``). A plugin
imports only the names listed in ``__all__`` below, from this module::

    from kbwatch.pipeline import hookimpl, ParsedDocument, ParserInfo, PermanentError

These names are public and stable: they keep their meaning across minor
releases, and a change is announced one minor release ahead. Every other
module of ``kbwatch.pipeline`` and ``kbwatch.plugins`` is internal and may
change at any release. Hook signatures are documented in
``kbwatch.pipeline.hookspecs``.

Nothing heavy is loaded at import time: the names are resolved on first use
(PEP 562), so ``import kbwatch.pipeline`` stays cheap in parse workers.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

import pluggy

__version__ = "0.2.0"  # the one place the version is written (pyproject.toml reads it)

PROJECT_NAME = "kbwatch"
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

# public name -> module that defines it (relative to this package)
_PUBLIC: dict[str, str] = {
    # a stage: its class and the per-run context handed to it
    "Stage": "stage",
    "RunContext": "stage",
    # what parsers and scanners return
    "ParsedDocument": "model",
    "ParserInfo": "model",
    "Finding": "model",
    # how a stage or parser fails
    "PermanentError": "errors",
    "TransientError": "errors",
    "ConfigError": "errors",
    "ParseAs": "parsing",
    # helpers a plugin may call
    "stage_options": "config",
    "atomic_write": "fsutil",
    # the Python API of a knowledge-base root (kbwatch ask and kbwatch mcp call it)
    "Knowledge": "api",
    "should_use_knowledge_base": "should_use",
}

__all__ = ["hookimpl", "__version__", "PROJECT_NAME", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from .api import Knowledge
    from .should_use import should_use_knowledge_base
    from .config import stage_options
    from .errors import ConfigError, PermanentError, TransientError
    from .fsutil import atomic_write
    from .model import Finding, ParsedDocument, ParserInfo
    from .parsing import ParseAs
    from .stage import RunContext, Stage
