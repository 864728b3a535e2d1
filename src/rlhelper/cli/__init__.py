"""The `rlhelper` command: ask, search, chat, ingest, serve, eval and bench from a terminal."""

from .main import main

__all__ = ["main"]
