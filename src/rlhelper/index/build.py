"""Writing an index: what ingest does to one, under its lock.

    index_lock(path)                          -> context manager: one ingest at a time
    save_index(path, IndexContents(...))      -> build beside, fsync, swap in one rename
    read_parsed(path)                         -> what incremental ingest reuses

Why a symlink swap: replacing a directory is two renames (old aside, new in) and a crash
between them leaves no index; replacing a symlink is one `rename(2)`, atomic on POSIX. So an
ingest killed at any point leaves either the old or the new index behind `index/default`,
never a mix. Old versions and half-written builds are deleted under the lock by the next
ingest. An index folder copied or made by hand (a plain directory) is moved aside once
before the first swap.

Why `parsed.*` as well as `dense.faiss`: incremental ingest reuses the vectors and tokens of
unchanged documents, including entries that merging folded into a duplicate elsewhere (they
come back when that duplicate goes). Reading them back from FAISS would only work for flat
indexes; a plain .npy works for every index type, at the price of the vectors stored twice
(`Index.load` never reads them).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import faiss
import numpy as np

from .. import config
from ..errors import (
    ConfigError,
    IndexCorruptError,
)
from ..schema import Entry
from ..version import __version__
from .folders import (
    DENSE,
    ENTRIES,
    JUDGE_VECTORS,
    LEXICAL,
    MANIFEST,
    MOVED_SUFFIX,
    PARSED,
    PARSED_VECTORS,
    live_folder,
    manifest_checksum,
    rebuild_hint,
    same_folder,
    show,
    versions,
)
from .judge_vectors import JudgeVectors, read_judge_vectors
from .lexical import BM25Index
from .lock import DEFAULT_LOCK_TIMEOUT, index_lock  # noqa: F401 - build.index_lock is where callers find it
from .questions import QuestionIndex
from .store import FAISS_TYPES, FORMAT_VERSION, HNSW_EF_SEARCH, read_manifest

HNSW_M, HNSW_EF_CONSTRUCTION = 32, 80
IVF_MIN_PER_LIST = 39  # FAISS warns below 39 training points per list
IVF_TRAIN_SAMPLE = 50_000
ADD_CHUNK = 16_384  # rows copied at a time into FAISS


def build_faiss(vectors: np.ndarray, kind: str = "flat", rows: Sequence[int] | None = None) -> tuple[object, dict]:
    """A FAISS index over unit vectors (`vectors[rows]`, or all) and the settings the manifest records.

    Rows are added in chunks, so selecting them never copies the whole matrix.
    """
    if kind not in FAISS_TYPES:
        raise ConfigError(f"Unknown faiss_type {kind!r}: use one of {', '.join(FAISS_TYPES)}.")
    selected = np.arange(len(vectors)) if rows is None else np.asarray(rows, dtype=np.int64)
    n, dim = len(selected), vectors.shape[1]
    faiss.omp_set_num_threads(config.cpu_threads())
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        settings = {"type": kind, "m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION, "ef_search": HNSW_EF_SEARCH}
    elif kind == "ivf":
        nlist = max(1, min(int(4 * np.sqrt(max(n, 1))), n // IVF_MIN_PER_LIST))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        if n:  # (the Python wrapper keeps `quantizer` alive with the index)
            sample = np.sort(np.random.default_rng(0).permutation(selected)[:IVF_TRAIN_SAMPLE])
            index.train(np.ascontiguousarray(vectors[sample], dtype=np.float32))
        settings = {"type": kind, "nlist": nlist, "nprobe": max(1, min(nlist, 8 if nlist < 64 else nlist // 8))}
    else:
        index = faiss.IndexFlatIP(dim)
        settings = {"type": "flat"}
    for start in range(0, n, ADD_CHUNK):
        index.add(np.ascontiguousarray(vectors[selected[start:start + ADD_CHUNK]], dtype=np.float32))
    return index, settings


# --- writing -------------------------------------------------------------------

@dataclass
class IndexContents:
    """Everything `save_index` writes. `parsed`/`parsed_vectors`/`parsed_tokens` are every
    document's entries before merging; `entries` the searchable rows, entry i being
    `parsed[rows[i]]` after merging (so its vector is `parsed_vectors[rows[i]]`); `bm25`
    indexes `entries` in that order."""

    entries: list[Entry]
    rows: list[int]
    bm25: BM25Index
    parsed: list[Entry]
    parsed_vectors: np.ndarray
    parsed_tokens: list[list[str]]
    embedder: dict  # {"id", "dim", "recipe"}
    documents: list[dict]
    collections: dict[str, dict]
    settings: dict = field(default_factory=dict)  # what shaped the entries (max_tokens, parser fingerprint)
    faiss_type: str = "flat"
    questions: QuestionIndex | None = None  # the question bank, keyed to `entries` rows
    judge: JudgeVectors | None = None  # the judge's passage vectors (search/judge.py), when a judge can run


def _fsync_file(file: Path) -> None:
    fd = os.open(file, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_jsonl(file: Path, rows) -> None:
    with file.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            f.write("\n")


def write_folder(folder: Path, contents: IndexContents) -> dict:
    """Write every file of an index into `folder` (which must not exist) and return its manifest."""
    if len(contents.entries) != len(contents.rows) or len(contents.parsed) != len(contents.parsed_vectors):
        raise ValueError("entries, rows and vectors differ in length")
    folder.mkdir(parents=True)
    _write_jsonl(folder / ENTRIES, (e.to_dict() for e in contents.entries))
    dense, faiss_settings = build_faiss(contents.parsed_vectors, contents.faiss_type, contents.rows)
    faiss.write_index(dense, str(folder / DENSE))
    del dense
    contents.bm25.save(folder / LEXICAL)
    _write_jsonl(folder / PARSED, ({"entry": e.to_dict(), "tokens": t}
                                   for e, t in zip(contents.parsed, contents.parsed_tokens, strict=True)))
    np.save(folder / PARSED_VECTORS, np.ascontiguousarray(contents.parsed_vectors, dtype=np.float32),
            allow_pickle=False)
    if contents.questions is not None:
        contents.questions.save(folder, contents.entries)
    if contents.judge is not None:
        contents.judge.save(folder)

    files = {}
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        _fsync_file(file)
        files[file.relative_to(folder).as_posix()] = file.stat().st_size
    manifest = {
        "format_version": FORMAT_VERSION,
        "rlhelper_version": __version__,
        "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "entries": len(contents.entries),
        "parsed_entries": len(contents.parsed),
        "embedder": dict(contents.embedder),
        "lexical": contents.bm25.settings(),
        "faiss": faiss_settings,
        "settings": dict(contents.settings),
        **({"judge": {"fingerprint": contents.judge.fingerprint, "vectors": len(contents.judge.keys)}}
           if contents.judge is not None else {}),
        "collections": contents.collections,
        "documents": contents.documents,
        "files": files,
    }
    manifest["checksum"] = manifest_checksum(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    _fsync_file(folder / MANIFEST)
    for sub in [p for p in folder.rglob("*") if p.is_dir()] + [folder]:
        _fsync_dir(sub)
    return manifest


def save_index(path: Path, contents: IndexContents) -> dict:
    """Write a new version of the index at `path` and make it live in one atomic rename.

    Call it while holding `index_lock(path)`. Returns the manifest written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    manifest = write_folder(tmp, contents)
    version = path.parent / f".{path.name}.v-{time.time_ns():x}-{os.getpid()}"
    os.rename(tmp, version)
    _swap_in(path, version)
    return manifest


def rewrite_manifest(path: Path, *, collections: dict) -> dict:
    """A new version of the index at `path` that differs from the live one by its collection records
    only (a git source read at a new commit whose documents did not change), swapped in as
    `save_index` does. The other files are hard links to the live version's (versions are never
    changed in place), copied where the file system has no links. Call it under `index_lock`."""
    path = Path(path)
    live = live_folder(path)
    manifest = read_manifest(path, live)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for file in sorted(p for p in live.rglob("*") if p.is_file() and p != live / MANIFEST):
        target = tmp / file.relative_to(live)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(file, target)
        except OSError:
            shutil.copy2(file, target)
    manifest = {**manifest, "collections": collections}
    manifest["checksum"] = manifest_checksum(manifest)
    (tmp / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    _fsync_file(tmp / MANIFEST)
    for sub in [p for p in tmp.rglob("*") if p.is_dir()] + [tmp]:
        _fsync_dir(sub)
    version = path.parent / f".{path.name}.v-{time.time_ns():x}-{os.getpid()}"
    os.rename(tmp, version)
    _swap_in(path, version)
    return manifest


def _swap_in(path: Path, version: Path) -> None:
    parent = path.parent
    previous = None
    if path.is_symlink():
        previous = Path(os.path.realpath(path))
    elif path.exists():  # a plain folder (copied or hand-made): move it aside, once
        previous = parent / f".{path.name}.v-{time.time_ns():x}{MOVED_SUFFIX}"
        os.rename(path, previous)
    link = parent / f".{path.name}.link-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    os.symlink(version.name, link)  # relative: the index root can be moved
    os.replace(link, path)  # the commit point
    _fsync_dir(parent)
    if previous is not None and not same_folder(previous, version) and same_folder(previous.parent, parent):
        shutil.rmtree(previous, ignore_errors=True)


def clean_stale(path: Path) -> None:
    """Remove half-written builds and superseded versions (call under the lock).

    When `path` itself is missing but a complete version survives, link it
    back first so nothing is lost.
    """
    path = Path(path)
    live = live_folder(path)
    if live is not None and not path.exists() and same_folder(live.parent, path.parent):
        _swap_in(path, live)
    parent = path.parent
    for stale in [*parent.glob(f".{path.name}.tmp-*"), *parent.glob(f".{path.name}.link-*")]:
        if stale.is_symlink() or stale.is_file():
            stale.unlink(missing_ok=True)
        else:
            shutil.rmtree(stale, ignore_errors=True)
    for version in versions(path):
        if live is None or not same_folder(version, live):
            shutil.rmtree(version, ignore_errors=True)


# --- what incremental ingest reads back ------------------------------------------

@dataclass
class Parsed:
    """The previous index as ingest sees it: manifest, pre-merge entries, their tokens and vectors."""

    manifest: dict
    entries: list[Entry]
    tokens: list[list[str]]
    vectors: np.ndarray
    folder: Path | None = None

    def judge_vectors(self, fingerprint: str) -> dict[str, np.ndarray]:
        """The previous index's judge vectors by passage hash, if the same judge made them."""
        return read_judge_vectors(self.folder / JUDGE_VECTORS, fingerprint) if self.folder is not None else {}


def read_parsed(path: Path) -> Parsed | None:
    """The previous index's reusable parts; None when there is no index.

    Raises IndexCorruptError (naming the file) when they are damaged: ingest
    then rebuilds from the sources.
    """
    path = Path(path)
    folder = live_folder(path)
    if folder is None or not (folder / MANIFEST).exists():
        return None
    manifest = read_manifest(path, folder)
    hint = f"Run {rebuild_hint(path)} to rebuild the index."
    entries, tokens = [], []
    try:
        with (folder / PARSED).open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                entries.append(Entry.from_dict(row["entry"]))
                tokens.append([sys.intern(t) for t in row["tokens"]])
        vectors = np.load(folder / PARSED_VECTORS, allow_pickle=False)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise IndexCorruptError(f"{show(path / PARSED)} or its vectors are damaged ({exc}). {hint}") from exc
    if vectors.ndim != 2 or len(vectors) != len(entries) or len(entries) != manifest.get("parsed_entries"):
        raise IndexCorruptError(
            f"{show(path / PARSED)} and {show(path / PARSED_VECTORS)} disagree with the manifest. {hint}"
        )
    return Parsed(manifest, entries, tokens, vectors.astype(np.float32, copy=False), folder)
