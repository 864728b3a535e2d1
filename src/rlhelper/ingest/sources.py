"""Finding the documents to ingest: the shipped collections, folders (described by a collection
manifest.json, or walked for document files without following links out of them) and single
files, each as a SourceDoc with its collection and its path inside it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import config
from ..errors import ConfigError
from ..schema import Entry

DOC_SUFFIXES = (".md", ".mdx", ".markdown", ".rst", ".rest", ".txt")


@dataclass
class SourceDoc:
    collection: str
    doc: str  # POSIX path inside the collection, as entries and citations show it
    path: Path
    meta: dict
    # A document that is no file of its own (a GitHub thread, github/entries.py): its text (or
    # what reads it when the pipeline gets to it, so 10k threads are never all held at once),
    # and what turns that text into entries (build_entries' signature).
    text: str | None = None
    build: Callable[..., tuple[list[Entry], list[str]]] | None = None
    read: Callable[[], str] | None = None


@dataclass
class Sources:
    docs: list[SourceDoc] = field(default_factory=list)
    replaced: set[str] = field(default_factory=set)  # collections read whole: unseen docs are dropped
    collections: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    not_followed: list[tuple[str, str]] = field(default_factory=list)  # as IngestReport.not_followed


def find_sources(sources: Sequence[Path] | None, collection: str | None = None) -> Sources:
    """The documents to ingest. None: the shipped collections under `config.corpus_dir()`."""
    found = Sources()
    if sources is None:
        root = config.corpus_dir()
        for name in config.DEFAULT_COLLECTIONS:
            folder = root / name
            if folder.is_dir():
                _add_folder(found, folder, name)
            else:
                found.failed.append((str(folder), "collection folder not found"))
        if not found.docs:
            raise ConfigError(
                f"No shipped collections under {root}: check the corpus_dir setting "
                "(RLHELPER_CORPUS_DIR), or pass folders to ingest: `rlhelper ingest PATH...`."
            )
        return found
    for source in sources:
        source = Path(source)
        if source.is_dir():
            _add_folder(found, source, collection)
        elif source.is_file():
            name = collection or source.resolve().parent.name
            if source.suffix.lower() in DOC_SUFFIXES:
                found.docs.append(SourceDoc(name, source.name, source, {}))
                found.collections.setdefault(name, {"title": name, "source": str(source.resolve().parent),
                                                    "whole_folder": False})
            else:
                found.notes.append(f"{source}: ignored, not a .md, .mdx, .rst or .txt document")
        else:
            found.failed.append((str(source), "no such file or folder"))
    return found


def _add_folder(found: Sources, folder: Path, collection: str | None) -> None:
    """A collection folder: its manifest.json lists the documents (with metadata), or every
    document file below it is one (hidden folders skipped)."""
    manifest = _read_collection_manifest(found, folder)
    name = collection or (manifest or {}).get("collection") or folder.resolve().name
    found.replaced.add(name)
    info = found.collections.setdefault(name, {"title": name, "source": str(folder.resolve())})
    info["whole_folder"] = True
    if manifest is not None:
        info["title"] = manifest.get("title") or name
        for record in manifest.get("documents") or []:
            rel = record.get("path") if isinstance(record, dict) else None
            if not rel:
                found.failed.append((str(folder / "manifest.json"), f"a document record without a path: {record!r}"))
                continue
            if not (folder / rel).resolve().is_relative_to(folder.resolve()):
                found.not_followed.append((str(folder / rel), f"listed in manifest.json but outside {folder}: not read"))
                continue
            found.docs.append(SourceDoc(name, Path(rel).as_posix(), folder / rel, dict(record)))
        return
    ignored = []
    for path in sorted(files_below(folder, found)):
        rel = path.relative_to(folder)
        if path.suffix.lower() in DOC_SUFFIXES:
            found.docs.append(SourceDoc(name, rel.as_posix(), path, {}))
        else:
            ignored.append(rel.as_posix())
    if ignored:
        shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
        found.notes.append(f"{folder}: ignored {len(ignored)} file(s) that are not .md/.mdx/.rst/.txt: {shown}")


def files_below(folder: Path, found: Sources, root: Path | None = None) -> Iterator[Path]:
    """Files below `folder`, hidden ones and hidden folders aside, read only inside `root` (default:
    the folder itself; a git checkout's paths are read inside the whole checkout).

    A docs folder is someone else's: a link `passwd.md -> /etc/passwd` in it must not put the
    system's files in the index (and in answers). A link to a file inside the folder is read,
    unless it leads into a hidden file or folder (a git checkout's `.git`: the operator's git
    identity, remotes and log); a link leaving the folder, a link loop and a folder that cannot be
    read are named in `found.not_followed`. Links to folders are never followed (that is also what ends loops).
    """
    root = (root or folder).resolve()

    def unreadable(err: OSError) -> None:
        found.not_followed.append((str(err.filename), f"folder not readable ({err.strerror}): skipped"))

    for here, subfolders, files in os.walk(folder, onerror=unreadable):  # followlinks=False
        here = Path(here)
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        for name in subfolders:
            if (here / name).is_symlink():
                found.not_followed.append((str(here / name), f"a link to a folder ({os.readlink(here / name)}): "
                                                              "not followed"))
        for name in files:
            path = here / name
            if name.startswith("."):
                continue
            problem = link_problem(path, root) if path.is_symlink() else None
            if problem:
                found.not_followed.append((str(path), problem))
            elif path.is_file():
                yield path


def link_problem(link: Path, root: Path) -> str | None:
    """Why a file link below `root` is not read, or None when it leads to a file inside `root` that
    the walk itself would read (none hidden)."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
        return f"a link that loops or leads nowhere ({os.readlink(link)}): skipped"
    if not target.is_relative_to(root):
        return f"a link to {target}, outside the folder {root}: not followed"
    hidden = next((part for part in target.relative_to(root).parts if part.startswith(".")), None)
    if hidden is not None:  # as the walk skips them: a checkout's .git (identity, remotes) is no doc
        return f"a link into the hidden {hidden} ({os.readlink(link)}): not followed"
    return None


def _read_collection_manifest(found: Sources, folder: Path) -> dict | None:
    file = folder / "manifest.json"
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("documents", []), list):
            raise ValueError("expected an object with a 'documents' list")
        return data
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        found.failed.append((str(file), f"unreadable collection manifest ({exc}); indexing every document file instead"))
        return None
