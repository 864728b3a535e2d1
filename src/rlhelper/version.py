"""The package version, apart from `rlhelper/__init__` so that any layer may read it."""

__version__ = "0.1.0"
