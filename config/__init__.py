"""The documented default configuration (``default.toml``), shipped as package data
(installed as ``kbwatch.pipeline._config``)."""
