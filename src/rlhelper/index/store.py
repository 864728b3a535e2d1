"""The index on disk: one folder per index, written atomically, validated on load.

    Index.load(path, expected_embedder=None) -> Index (entries, bm25, faiss, manifest)
    index.dense_search(qvec, k, allowed=None) -> (row ids, cosine scores), best first
    index_lock(path)                          -> context manager: one ingest at a time
    save_index(path, IndexContents(...))      -> build beside, fsync, swap in one rename
    read_parsed(path)                         -> what incremental ingest reuses

Layout (`index/default` is a symlink; each build is a fresh hidden folder):

    index/default -> .default.v-<stamp>
    index/.default.v-<stamp>/
        manifest.json      format, embedder, settings, per-document records, file sizes, checksum
        entries.jsonl      searchable entries (after duplicate merging); row i == vector i == BM25 doc i
        dense.faiss        FAISS index of the rows (exact inner product on unit vectors by default)
        lexical/           BM25Index.save
        parsed.jsonl       every document's entries before merging + their lexical tokens
        parsed_vectors.npy their vectors, float32, row-aligned with parsed.jsonl
    index/default.lock     flock target; holds the pid of the running ingest

Why a symlink swap: replacing a directory is two renames (old aside, new in)
and a crash between them leaves no index; replacing a symlink is one
`rename(2)`, atomic on POSIX. So an ingest killed at any point leaves either
the old or the new index behind `index/default`, never a mix, and readers need
no lock: `load` resolves the link once and reads one version. Old versions and
half-written builds are deleted under the lock by the next ingest. An index
folder copied or made by hand (a plain directory) is moved aside once before
the first swap; a crash in that one gap is recovered by `load`, which then
reads the newest complete `.default.v-*`.

Why `parsed.*` as well as `dense.faiss`: incremental ingest reuses the
vectors and tokens of unchanged documents, including entries that merging
folded into a duplicate elsewhere (they come back when that duplicate goes).
Reading them back from FAISS would only work for flat indexes; a plain .npy
works for every index type. The price is the vectors stored twice (what that
costs at 100k entries: `rlhelper bench scale`, eval/DECISIONS.md); `load`
never reads them.

Why JSON Lines for entries: no pickle (a downloaded index cannot run code),
greppable, and ~1000 lines parse in a few milliseconds.

FAISS types (`faiss_type` setting): "flat" (IndexFlatIP, exact, the default:
fast enough at the scale bench's 100k entries), "hnsw" (IndexHNSWFlat, inner
product) and "ivf" (IndexIVFFlat) for much larger corpora. Filtered search
passes a bitmap selector to FAISS; approximate indexes can return fewer hits
than asked under a tight filter, so the shortfall is filled by an exact search.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import faiss
import numpy as np

from .. import config
from ..errors import (
    ConfigError,
    EmbedderError,
    EmbedderMismatchError,
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    IndexStaleError,
)
from ..schema import Entry
from ..version import __version__
from .lexical import TOKENIZER_VERSION, BM25Index
from .questions import QuestionIndex

FORMAT_VERSION = 2  # 2: entries carry `twins` (twins.py)
OLDEST_FORMAT = 1  # read as the current one without twins; the next ingest links them
MANIFEST = "manifest.json"
ENTRIES = "entries.jsonl"
DENSE = "dense.faiss"
LEXICAL = "lexical"
PARSED = "parsed.jsonl"
PARSED_VECTORS = "parsed_vectors.npy"
FAISS_TYPES = ("flat", "hnsw", "ivf")
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128
IVF_MIN_PER_LIST = 39  # FAISS warns below 39 training points per list
IVF_TRAIN_SAMPLE = 50_000
ADD_CHUNK = 16_384  # rows copied at a time into FAISS
DEFAULT_LOCK_TIMEOUT = 30.0


def show(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def is_default(path: Path) -> bool:
    return os.path.abspath(path) == os.path.abspath(config.index_path())


def rebuild_hint(path: Path, *, rebuild: bool = True) -> str:
    """The command that rebuilds (or, rebuild=False, updates) the index at `path`.

    Ingest without paths reads the shipped collections, so for an index of
    other folders the command must name them, or following the advice would
    swap the user's docs for the shipped ones. The folders come from the
    manifest when it can still be read.
    """
    command = "rlhelper ingest --rebuild" if rebuild else "rlhelper ingest"
    if is_default(path):
        return f"`{command}`"
    command += f" --index {show(path)}"
    sources = _recorded_sources(path)
    if sources is None:
        return f"`{command}` with the folders the index was built from"
    if _are_shipped(sources):
        return f"`{command}`"
    if all(_default_name(paths, whole) == name for name, (paths, whole) in sources.items()):
        return f"`{command} {' '.join(show(Path(p)) for paths, _ in sources.values() for p in paths)}`"
    # One collection name per run: the first run rebuilds, the others add.
    runs = [f"`{command if i == 0 else command.replace(' --rebuild', '')} "
            f"{' '.join(show(Path(p)) for p in paths)} --collection {name}`"
            for i, (name, (paths, _)) in enumerate(sources.items())]
    return ", then ".join(runs)


def _recorded_sources(path: Path) -> dict[str, tuple[list[str], bool]] | None:
    """Collection name -> (what to ingest again, whether that is its whole folder): the folder, or
    the files picked from it when no run read the whole folder. None when the manifest cannot be read."""
    try:
        folder = live_folder(path)
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8")) if folder else None
        sources = {}
        for name, info in manifest["collections"].items():
            if str(info.get("source", "")).startswith(GITHUB_SOURCE):
                continue  # kept by any ingest that does not name it; updated by `ingest --github`
            picked = [str(d["source"]) for d in manifest.get("documents", []) if d["collection"] == name]
            whole = info.get("whole_folder", True) or not picked
            sources[name] = ([str(info["source"])], True) if whole else (picked, False)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return sources or None


def _default_name(paths: list[str], whole_folder: bool) -> str | None:
    """The collection name ingest gives these paths when none is passed: the folder's name."""
    folders = {Path(p) if whole_folder else Path(p).parent for p in paths}
    return folders.pop().name if len(folders) == 1 else None


def _are_shipped(sources: dict[str, tuple[list[str], bool]]) -> bool:
    shipped = config.corpus_dir()
    return all(name in config.DEFAULT_COLLECTIONS and whole and os.path.abspath(paths[0]) == os.path.abspath(shipped / name)
               for name, (paths, whole) in sources.items())


def stale_error(path: Path, built_with: str, current: str) -> IndexStaleError:
    return IndexStaleError(
        f"{show(path)} was built by an older rlhelper (tokenizer {built_with or 'unknown'}; this one uses "
        f"{current}). Run {rebuild_hint(path, rebuild=False)} to update it: unchanged entries keep their vectors.")


def missing_error(path: Path) -> IndexMissingError:
    command = "`rlhelper ingest`" if is_default(path) else f"`rlhelper ingest --index {show(path)}`"
    return IndexMissingError(f"No index at {show(path)} (manifest.json not found). Run {command} to build it.")


# --- naming the pieces of an index ---------------------------------------------

GITHUB_SOURCE = "github:"  # a collection's source when it holds a repository's issue threads
MOVED_SUFFIX = "-moved"  # a plain index folder set aside by _swap_in, until the link is in


def _versions(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.v-*"))


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name the same folder. Versions are found relative to the path given
    and the live one through the link: compared as written, the live version of an index
    named by a relative path (or through a symlinked folder) looked stale and was deleted."""
    return os.path.realpath(a) == os.path.realpath(b)


def _lock_file(path: Path) -> Path:
    return path.parent / f"{path.name}.lock"


def _manifest_checksum(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def live_folder(path: Path) -> Path | None:
    """The folder holding the index that `path` names now, or None.

    Follows the symlink; a plain folder is its own live folder. When `path` is
    gone after a crash while a hand-made folder was moved aside (its `-moved`
    version is still there), the newest complete version is the live one. Gone
    with no such trace, it was deleted on purpose (`rm -rf index/default`
    removes only the link): the index is missing, not silently brought back.
    """
    path = Path(path)
    if path.exists():
        return Path(os.path.realpath(path))
    if path.is_symlink():  # dangling: its target was removed by hand
        return None
    versions = _versions(path)
    if not any(v.name.endswith(MOVED_SUFFIX) for v in versions):
        return None
    complete = [v for v in versions if (v / MANIFEST).is_file()]
    return max(complete, key=lambda v: v.stat().st_mtime) if complete else None


# --- loading -----------------------------------------------------------------

class Index:
    """A loaded index: entries, their BM25 and FAISS indexes, and the manifest describing them."""

    def __init__(self, path: Path, folder: Path, manifest: dict, entries: list[Entry], dense, bm25: BM25Index,
                 questions: QuestionIndex | None = None):
        self.path = Path(path)
        self.folder = folder
        self.manifest = manifest
        self.entries = entries
        self.faiss = dense
        self.bm25 = bm25
        self.questions = questions  # the question bank (questions.py); None for an index built without one
        self._row_of: dict[str, int] | None = None
        self._exact = None  # exact fallback for approximate indexes, built on first need

    # -- loading ----------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str, expected_embedder: str | None = None) -> Index:
        """Open the index at `path`, checking it before trusting it.

        Raises IndexMissingError, IndexCorruptError (naming the damaged file and
        the rebuild command) or EmbedderMismatchError. An ingest that swaps in a
        new version while we read is retried once (the old files vanish).
        """
        path = Path(path)
        for attempt in range(2):
            folder = live_folder(path)
            if folder is None:
                raise missing_error(path)
            try:
                return cls._load_folder(path, folder, expected_embedder)
            except (IndexCorruptError, IndexMissingError):
                if attempt == 0 and live_folder(path) != folder:
                    continue  # swapped under us: read the new version
                raise
        raise AssertionError("unreachable")

    @classmethod
    def _load_folder(cls, path: Path, folder: Path, expected_embedder: str | None) -> Index:
        manifest = read_manifest(path, folder)
        if expected_embedder:
            check_embedder(path, manifest, expected_embedder)
        _check_sizes(path, folder, manifest)
        entries = _read_entries(path, folder, manifest)
        dense = _read_faiss(path, folder, manifest)
        try:
            bm25 = BM25Index.load(folder / LEXICAL)
        except IndexCorruptError as exc:
            # Its own message names the default index's rebuild: give the cause and this index's fix only.
            cause = str(exc.__cause__ or "inconsistent arrays").split(". ")[0].rstrip(".")
            raise IndexCorruptError(
                f"{show(path / LEXICAL)} is damaged ({cause}). Run {rebuild_hint(path)} to rebuild the index."
            ) from exc
        if len(bm25) != len(entries):
            raise IndexCorruptError(
                f"{show(path / LEXICAL)} holds {len(bm25)} documents but {show(path / ENTRIES)} holds "
                f"{len(entries)} entries. Run {rebuild_hint(path)} to rebuild the index."
            )
        index = cls(path, folder, manifest, entries, dense, bm25)
        try:
            index.questions = QuestionIndex.load(folder, index.row_of)
        except KeyError as exc:
            raise IndexCorruptError(f"{show(path)}: the question bank names entry {exc} that the index does not "
                                    f"hold. Run {rebuild_hint(path)} to rebuild the index.") from exc
        return index

    def check_current(self) -> None:
        """Refuse to search an index whose lexical tokens this code would not produce:
        queries would miss words silently. Ingest reads such an index (to update it)."""
        if self.bm25.stale:
            raise stale_error(self.path, self.bm25.tokenizer_version, TOKENIZER_VERSION)

    # -- what callers read -------------------------------------------------------

    @property
    def embedder_id(self) -> str:
        return self.manifest["embedder"]["id"]

    @property
    def dim(self) -> int:
        return int(self.manifest["embedder"]["dim"])

    @property
    def faiss_type(self) -> str:
        return self.manifest["faiss"]["type"]

    @property
    def collections(self) -> list[str]:
        return list(self.manifest.get("collections", {}))

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"<Index {show(self.path)}: {len(self)} entries, {self.embedder_id}, faiss {self.faiss_type}>"

    def row_of(self, entry_id: str) -> int:
        """Row of an entry id; KeyError when the index has no such entry."""
        if self._row_of is None:
            self._row_of = {e.id: i for i, e in enumerate(self.entries)}
        return self._row_of[entry_id]

    def vector(self, row: int) -> np.ndarray:
        """The stored unit vector of a row."""
        return self.faiss.reconstruct(int(row))

    def vectors(self) -> np.ndarray:
        """All row vectors, (N, dim) float32."""
        n = self.faiss.ntotal
        return self.faiss.reconstruct_n(0, n) if n else np.zeros((0, self.dim), dtype=np.float32)

    # -- searching ---------------------------------------------------------------

    def dense_search(self, qvec, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Rows nearest to `qvec` by inner product (cosine: all vectors are unit length), best first.

        `allowed`: a bool mask with one value per row; only those rows are
        returned. Fewer than k rows come back only when fewer are allowed.
        """
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        n = self.faiss.ntotal
        query = np.ascontiguousarray(np.asarray(qvec, dtype=np.float32).reshape(1, -1))
        if query.shape[1] != self.faiss.d:
            raise EmbedderMismatchError(
                f"The query vector has {query.shape[1]} dimensions but the index at {show(self.path)} holds "
                f"{self.faiss.d}-dimensional vectors of {self.embedder_id}; embed queries with that embedder."
            )
        if k <= 0 or n == 0:
            return empty
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=bool)
            if allowed.shape != (n,):
                raise ValueError(f"allowed mask has shape {allowed.shape}, expected ({n},)")
            count = int(allowed.sum())
            if count == 0:
                return empty
            if count == n:
                allowed = None
        want = min(k, n if allowed is None else count)
        if allowed is None:
            scores, ids = self.faiss.search(query, want)
        else:
            # The bitmap must outlive the search: FAISS keeps a raw pointer to it.
            bits = np.packbits(allowed, bitorder="little")
            selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
            scores, ids = self.faiss.search(query, want, params=self._search_params(selector))
        keep = ids[0] >= 0
        ids, scores = ids[0][keep].astype(np.int64), scores[0][keep].astype(np.float32)
        if len(ids) < want:  # approximate index under a tight filter: complete exactly
            ids, scores = self._exact_search(query, want, allowed)
        return ids, scores

    def _search_params(self, selector):
        kind = self.faiss_type
        if kind == "hnsw":
            return faiss.SearchParametersHNSW(sel=selector, efSearch=self.faiss.hnsw.efSearch)
        if kind == "ivf":
            return faiss.SearchParametersIVF(sel=selector, nprobe=faiss.extract_index_ivf(self.faiss).nprobe)
        return faiss.SearchParameters(sel=selector)

    def _exact_search(self, query: np.ndarray, want: int, allowed: np.ndarray | None):
        if self._exact is None:
            self._exact = self.vectors()
        scores = self._exact @ query[0]
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf)
        top = np.argsort(-scores, kind="stable")[:want]
        return top.astype(np.int64), scores[top].astype(np.float32)


def read_manifest(path: Path, folder: Path) -> dict:
    file = folder / MANIFEST
    where = show(path / MANIFEST)
    hint = f"Run {rebuild_hint(path)} to rebuild the index."
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        if (folder / ENTRIES).exists():
            raise IndexCorruptError(f"{where} is missing but index files are there. {hint}") from None
        raise missing_error(path) from None
    except OSError as exc:
        raise IndexCorruptError(f"{where} cannot be read ({exc.strerror or exc}). {hint}") from exc
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IndexCorruptError(f"{where} is not valid JSON ({exc}). {hint}") from exc
    if not isinstance(manifest, dict):
        raise IndexCorruptError(f"{where} is not a JSON object. {hint}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or not OLDEST_FORMAT <= version <= FORMAT_VERSION:
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise IndexCorruptError(
                f"{where} has index format {version}, newer than this rlhelper ({__version__}) reads "
                f"(format {FORMAT_VERSION}). Upgrade rlhelper, or run {rebuild_hint(path)} to rebuild the index."
            )
        raise IndexCorruptError(
            f"{where} has index format {version!r}; this rlhelper reads formats {OLDEST_FORMAT}-{FORMAT_VERSION}. "
            f"The index was built by an older version: run {rebuild_hint(path)} to rebuild it."
        )
    if manifest.get("checksum") != _manifest_checksum(manifest):
        raise IndexCorruptError(f"{where} was edited or damaged (its checksum does not match). {hint}")
    try:
        ok = (isinstance(manifest["entries"], int) and isinstance(manifest["embedder"]["id"], str)
              and isinstance(manifest["embedder"]["dim"], int) and manifest["faiss"]["type"] in FAISS_TYPES
              and isinstance(manifest["files"], dict) and isinstance(manifest["documents"], list))
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise IndexCorruptError(f"{where} lacks required fields. {hint}")
    return manifest


def check_embedder(path: Path, manifest: dict, expected: str) -> None:
    from .embed import embedder_id  # stdlib + numpy: no model is loaded

    built = manifest["embedder"]["id"]
    wanted = embedder_id(expected)
    if built != wanted:
        index_opt = "" if is_default(path) else f" --index {show(path)}"
        raise EmbedderMismatchError(
            f"The index at {show(path)} was built with embedder {built!r}, not {wanted!r}. "
            f"Search it without --embedder (it uses {built!r}), or rebuild it with the other one: "
            f"`rlhelper ingest --embedder {expected}{index_opt}`."
        )


def unusable_embedder(path: Path, built: str, reason: Exception) -> EmbedderError:
    """The index's own embedder cannot be loaded here (unknown to this rlhelper, or its model is missing)."""
    return EmbedderError(
        f"{show(Path(path) / MANIFEST)} says the index was built with embedder {built!r}, which cannot be loaded "
        f"here ({str(reason).rstrip('.')}). Rebuild the index with an embedder you have: {rebuild_hint(path)}."
    )


def _check_sizes(path: Path, folder: Path, manifest: dict) -> None:
    """Cheap truncation check: every file is as long as when it was written."""
    for name, size in manifest["files"].items():
        if name.startswith("parsed"):
            continue  # read by ingest only, which checks them itself
        try:
            actual = (folder / name).stat().st_size
        except FileNotFoundError:
            raise IndexCorruptError(
                f"{show(path / name)} is missing. Run {rebuild_hint(path)} to rebuild the index."
            ) from None
        if actual != size:
            raise IndexCorruptError(
                f"{show(path / name)} is damaged or truncated ({actual} bytes, {size} when written). "
                f"Run {rebuild_hint(path)} to rebuild the index."
            )


def _read_entries(path: Path, folder: Path, manifest: dict) -> list[Entry]:
    where = show(path / ENTRIES)
    hint = f"Run {rebuild_hint(path)} to rebuild the index."
    try:
        lines = (folder / ENTRIES).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise IndexCorruptError(f"{where} is missing. {hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexCorruptError(f"{where} cannot be read ({exc}). {hint}") from exc
    entries = []
    for number, line in enumerate(lines, start=1):
        try:
            entries.append(Entry.from_dict(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise IndexCorruptError(f"{where} line {number} is damaged ({exc}). {hint}") from exc
    if len(entries) != manifest["entries"]:
        raise IndexCorruptError(
            f"{where} holds {len(entries)} entries but {show(path / MANIFEST)} says {manifest['entries']}. {hint}"
        )
    return entries


def _read_faiss(path: Path, folder: Path, manifest: dict):
    where = show(path / DENSE)
    hint = f"Run {rebuild_hint(path)} to rebuild the index."
    try:
        dense = faiss.read_index(str(folder / DENSE))
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1][:160]
        raise IndexCorruptError(f"{where} is damaged or truncated (FAISS: {reason}). {hint}") from exc
    if dense.ntotal != manifest["entries"] or dense.d != manifest["embedder"]["dim"]:
        raise IndexCorruptError(
            f"{where} holds {dense.ntotal} vectors of {dense.d} dimensions; {show(path / MANIFEST)} says "
            f"{manifest['entries']} of {manifest['embedder']['dim']}. {hint}"
        )
    faiss.omp_set_num_threads(config.cpu_threads())
    kind = manifest["faiss"]["type"]
    if kind == "hnsw":
        dense.hnsw.efSearch = int(manifest["faiss"].get("ef_search", HNSW_EF_SEARCH))
    elif kind == "ivf":
        ivf = faiss.extract_index_ivf(dense)
        ivf.nprobe = int(manifest["faiss"].get("nprobe", 8))
        ivf.make_direct_map()  # lets vector(row) reconstruct
    return dense


# --- building FAISS ------------------------------------------------------------

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
        "collections": contents.collections,
        "documents": contents.documents,
        "files": files,
    }
    manifest["checksum"] = _manifest_checksum(manifest)
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
    if previous is not None and not _same(previous, version) and _same(previous.parent, parent):
        shutil.rmtree(previous, ignore_errors=True)


def clean_stale(path: Path) -> None:
    """Remove half-written builds and superseded versions (call under the lock).

    When `path` itself is missing but a complete version survives, link it
    back first so nothing is lost.
    """
    path = Path(path)
    live = live_folder(path)
    if live is not None and not path.exists() and _same(live.parent, path.parent):
        _swap_in(path, live)
    parent = path.parent
    for stale in [*parent.glob(f".{path.name}.tmp-*"), *parent.glob(f".{path.name}.link-*")]:
        if stale.is_symlink() or stale.is_file():
            stale.unlink(missing_ok=True)
        else:
            shutil.rmtree(stale, ignore_errors=True)
    for version in _versions(path):
        if live is None or not _same(version, live):
            shutil.rmtree(version, ignore_errors=True)


# --- the lock ------------------------------------------------------------------

@contextlib.contextmanager
def index_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold `index/<name>.lock` (flock) for the duration; wait up to `timeout` seconds for it.

    flock is released by the kernel when its holder dies, so a killed ingest
    never leaves the index locked.
    """
    path = Path(path)
    if timeout is None:
        timeout = float(config.setting("lock_timeout", default=DEFAULT_LOCK_TIMEOUT))
    lock = _lock_file(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    raise IndexLockedError(
                        f"another `rlhelper ingest` (pid {holder}) is updating {show(path)}; wait for it, "
                        f"or remove {show(lock)} if no ingest is running."
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --- what incremental ingest reads back ------------------------------------------

@dataclass
class Parsed:
    """The previous index as ingest sees it: manifest, pre-merge entries, their tokens and vectors."""

    manifest: dict
    entries: list[Entry]
    tokens: list[list[str]]
    vectors: np.ndarray


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
    return Parsed(manifest, entries, tokens, vectors.astype(np.float32, copy=False))
