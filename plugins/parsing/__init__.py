"""The library the parser plugins share (not a plugin).

Modules: common (parse options, container checks, byte decoding), offline
(the shim that keeps ``unstructured`` off the network), partitioners (which
unstructured partitioner reads which extension; the worker warm-up), warm
(imported by the parse workers' template process), rendering (unstructured
elements as citable Markdown), ocr (tesseract).
"""
