"""kbwatch core: config, plugin manager, runner, journal, watcher and file formats.

Built-in and third-party plugins both write ``from pipeline import hookimpl``.
Nothing is loaded at import time.
"""

import pluggy

__version__ = "0.1.0"

PROJECT_NAME = "kbwatch"
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["hookimpl", "__version__", "PROJECT_NAME"]
