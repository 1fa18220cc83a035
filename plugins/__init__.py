"""kbwatch's built-in plugins: every stage, parser and scanner.

Each top-level module here (name not starting with ``_``) is registered with
the plugin manager exactly as a third-party plugin would be; modules starting
with ``_`` are shared helpers.
"""
