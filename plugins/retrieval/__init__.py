"""kbwatch retrieval library: tokeniser, chunker, search index, fenced pack.

Not a plugin (the leading underscore keeps it out of auto-registration); the
``index`` stage and the ``ask`` command use it.

    from kbwatch.plugins.retrieval import SearchIndex, build_pack, tokenize, chunk_markdown
"""

from .chunker import Chunk, chunk_markdown, document_title
from .index import DocHit, Hit, SearchIndex
from .pack import (
    Pack,
    build_pack,
    escape_attr,
    neutralize_fence,
    parse_explicit_refs,
    run_status_for,
    validate_record_keys,
)
from .tokenizer import TOKENIZER_VERSION, tokenize

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
