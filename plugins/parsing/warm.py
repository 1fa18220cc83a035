"""Imported once in the template process parse workers are forked from.

Importing this module makes ``unstructured`` safe offline, imports its
partitioners and builds its sentence tokenizer, so that every forked worker
starts warm (see ``kb_worker_preload`` in ``plugins/parse_unstructured.py``).
"""

from kbwatch.plugins.parsing.partitioners import warm_up

try:
    warm_up()
except Exception:  # warming up is an optimisation only
    pass
