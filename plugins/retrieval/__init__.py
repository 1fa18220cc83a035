"""kbwatch retrieval library: tokeniser, chunker, search index, fenced pack.

Not a plugin (the leading underscore keeps it out of auto-registration); the
``index`` stage and the ``ask`` command use it.

    from kbwatch.plugins.retrieval import SearchIndex, build_pack, tokenize, chunk_markdown
"""

import importlib

# name -> the submodule that defines it; imported on first use (PEP 562), so that loading the
# plugins (every CLI command does) does not import numpy and the stemmer for commands that
# never touch the index
_WHERE = {
    "Chunk": "chunker", "chunk_markdown": "chunker", "document_title": "chunker",
    "DocHit": "index", "Hit": "index", "SearchIndex": "index",
    "Pack": "pack", "build_pack": "pack", "escape_attr": "pack", "neutralize_fence": "pack",
    "parse_explicit_refs": "pack", "run_status_for": "pack", "validate_record_keys": "pack",
    "TOKENIZER_VERSION": "tokenizer", "tokenize": "tokenizer",
}


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Chunk",
    "DocHit",
    "Hit",
    "Pack",
    "SearchIndex",
    "TOKENIZER_VERSION",
    "build_pack",
    "chunk_markdown",
    "document_title",
    "escape_attr",
    "neutralize_fence",
    "parse_explicit_refs",
    "run_status_for",
    "tokenize",
    "validate_record_keys",
]
