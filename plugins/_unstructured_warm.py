"""Imported once in the template process parse workers are forked from.

Importing this module makes ``unstructured`` safe offline, imports its
partitioners and builds its sentence tokenizer, so that every forked worker
starts warm (see ``kb_worker_preload`` in ``plugins/parse_unstructured.py``).
"""

from kbwatch.plugins._offline import ensure_offline

ensure_offline()

from kbwatch.plugins.parse_unstructured import kb_worker_started  # noqa: E402

try:
    kb_worker_started(settings={})
except Exception:  # warming up is an optimisation only
    pass
