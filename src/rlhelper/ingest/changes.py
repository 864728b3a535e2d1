"""Has a document changed since the index was built from it? Asked by `rlhelper info` and by
every answer about the documents it cites (their line numbers may be off), so the usual
check is one stat; the content hash decides only when size or mtime moved, as ingest would."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import DocumentError


def content_sha256(text: str) -> str:
    """The hash of a document's text as read (`read_document`) that the manifest records."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def changed_since_build(record: dict) -> str | None:
    """"gone" or "changed" when the document a manifest record describes is so since the build."""
    source = record.get("source")
    if not source:
        return None
    if not Path(source).is_file():
        return "gone"
    return "changed" if document_changed(Path(source), record) else None


def document_changed(file: Path, record: dict) -> bool:
    """Whether `file` differs from its manifest record: re-read only when its size or mtime moved
    (then the content hash decides, as ingest would), so the usual check costs one stat."""
    try:
        stat = file.stat()
    except OSError:
        return True
    if stat.st_size == record.get("size") and stat.st_mtime == record.get("mtime"):
        return False
    from .entries import read_document  # the parsers: not on a query's path unless a file moved

    try:
        return content_sha256(read_document(file)) != record.get("content_sha256")
    except DocumentError:
        return True
