"""Errors a user can hit. Each message says what happened and what to run next.

The library raises these; the CLI and the web app turn them into one-line
messages (no traceback for the user).
"""


class RlhelperError(Exception):
    """Base class for every error rlhelper reports to a user."""


class IndexMissingError(RlhelperError):
    """No index where one was expected."""


class IndexCorruptError(RlhelperError):
    """An index file is unreadable or inconsistent with its manifest."""


class IndexStaleError(RlhelperError):
    """The index was built by an rlhelper that tokenized text differently; re-ingest updates it."""


class EmbedderMismatchError(RlhelperError):
    """The index was built with another embedder than the one asked for."""


class IndexLockedError(RlhelperError):
    """Another ingest holds the index lock."""


class QueryError(RlhelperError):
    """The query cannot be searched (empty, binary, ...)."""


class DocumentError(RlhelperError):
    """A source document cannot be read or parsed; ingest warns and goes on."""


class EmbedderError(RlhelperError):
    """An embedder cannot be loaded (missing package, unknown model, no network)."""


class ConfigError(RlhelperError):
    """A setting has a value rlhelper cannot use."""


class UserBankError(RlhelperError):
    """The user's question bank (or a file given to import) cannot be read or changed."""


class GitHubError(RlhelperError):
    """GitHub's API (or a saved export of it) cannot give the threads asked for."""


class GitSourceError(RlhelperError):
    """A git repository cannot give the docs asked for (unreachable, credentials, a rewritten history,
    a path gone); the index is left as it was."""
