"""Which ``unstructured`` partitioner reads which extension, and the warm-up that
imports them and builds the sentence tokenizer once per parse worker.

Shared by the ``parse_unstructured`` plugin and the worker template
(:mod:`kbwatch.plugins.parsing.warm`); only explicit partitioners, never
``partition()`` with ``auto``/``hi_res``.
"""

from __future__ import annotations

from kbwatch.plugins.parsing.offline import ensure_offline


def partitioner(ext: str):
    """The partitioner function for ``ext`` (imported on first use)."""
    if ext == ".docx":
        from unstructured.partition.docx import partition_docx as fn
    elif ext == ".odt":
        from unstructured.partition.odt import partition_odt as fn
    elif ext == ".rtf":
        from unstructured.partition.rtf import partition_rtf as fn
    elif ext == ".epub":
        from unstructured.partition.epub import partition_epub as fn
    elif ext in (".html", ".htm"):
        from unstructured.partition.html import partition_html as fn
    elif ext == ".eml":
        from unstructured.partition.email import partition_email as fn
    elif ext == ".msg":
        from unstructured.partition.msg import partition_msg as fn
    elif ext == ".doc":
        from unstructured.partition.doc import partition_doc as fn
    else:
        from unstructured.partition.ppt import partition_ppt as fn
    return fn



def warm_up() -> None:
    """Make unstructured safe offline, import the partitioners, build the tokenizer."""
    ensure_offline()
    from unstructured.partition.html import partition_html

    partitioner(".docx")
    partition_html(text="<h1>Warm-up</h1><p>This sentence loads the tokenizer once.</p>")
