"""The scanning library the risk scanners share (not a plugin).

Modules: options (settings, allowlist), findings (positions, masking, excerpts),
normalise (the matching view), decoders (smuggled text), patterns (anchored pattern sets),
wordscan (one word-start scan shared by pattern sets), required (literals a pattern needs),
alternation (keyword alternations regrouped by first character).
Names used across plugins are re-exported here."""

from .options import *  # noqa: F401,F403
from .findings import *  # noqa: F401,F403
from .normalise import *  # noqa: F401,F403
from .decoders import *  # noqa: F401,F403
from .patterns import *  # noqa: F401,F403
