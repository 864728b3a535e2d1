"""What changed since an index was built: a document (asked by `rlhelper info` and by every answer
about the documents it cites, whose line numbers may be off: one stat, and the content hash only
when size or mtime moved), or the code and settings that shape entries (the fingerprint in every
document's hash, so a parser change re-parses without a version number to bump)."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from ..errors import DocumentError

DEFAULT_MAX_TOKENS = 400  # a section's size in tokens before it is cut into parts (setting max_tokens)
# Source files whose code decides what entries and tokens come out of a document.
SHAPING_MODULES = ("ingest/parse/*.py", "ingest/entries.py", "tokens.py", "index/lexical.py", "ingest/github/entries.py")


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



@lru_cache(maxsize=1)
def parser_fingerprint() -> str:
    """Hash of the code that turns a document into entries and tokens."""
    package = Path(__file__).resolve().parent.parent  # rlhelper/
    digest = hashlib.sha256()
    for pattern in SHAPING_MODULES:
        for file in sorted(package.glob(pattern)):
            digest.update(file.relative_to(package).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def shaping_settings(embedder_id: str, max_tokens: int) -> dict:
    from ..index import embed, lexical  # numpy: not for `info` or a sync with nothing new

    return {"parser": parser_fingerprint(), "tokenizer": lexical.TOKENIZER_VERSION, "max_tokens": max_tokens,
            "embedder": embedder_id, "recipe": embed.RECIPE}


def doc_hash(settings: dict, collection: str, doc: str, meta: dict, content_sha256: str) -> str:
    header = json.dumps({"settings": settings, "collection": collection, "doc": doc, "meta": meta},
                        sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(f"{header}\0{content_sha256}".encode()).hexdigest()
