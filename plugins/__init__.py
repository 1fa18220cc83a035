"""kbwatch's built-in plugins: every stage, parser and scanner.

The built-ins are the modules named in ``kbwatch.pipeline.plugins.BUILTIN_PLUGINS``;
each is registered with the plugin manager exactly as a third-party plugin
would be. The subpackages are libraries the plugins share, not plugins:
``retrieval`` (chunking, the search index, the fenced pack, navigation
files), ``scanning`` (options, findings and masking, normalisation,
decoders, pattern sets, injection rules, sanitising) and ``parsing``
(offline shim, partitioners, rendering, OCR, common checks).
"""
