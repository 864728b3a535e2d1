"""Reading an index: `Index.load` resolves the link once and checks every file it reads.

    Index.load(path, expected_embedder=None) -> Index (entries, bm25, faiss, manifest)
    index.dense_search(qvec, k, allowed=None) -> (row ids, cosine scores), best first

Readers need no lock: a build is swapped in by one rename (build.py), so `load` reads one
whole version. A crash in the one gap where a hand-made folder is moved aside is recovered
here, by reading the newest complete `.default.v-*` (folders.live_folder).

Why JSON Lines for entries: no pickle (a downloaded index cannot run code), greppable, and
fast to parse.

FAISS types (`faiss_type` setting): "flat" (IndexFlatIP, exact, the default), "hnsw"
(IndexHNSWFlat, inner product) and "ivf" (IndexIVFFlat) for much larger corpora. Filtered
search passes a bitmap selector to FAISS; approximate indexes can return fewer hits than
asked under a tight filter, so the shortfall is filled by an exact search.
"""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np

from .. import config
from ..errors import (
    EmbedderError,
    EmbedderMismatchError,
    IndexCorruptError,
    IndexMissingError,
)
from ..schema import Entry
from .folders import (  # noqa: F401 - callers find them here too
    DENSE,
    ENTRIES,
    FAISS_TYPES,
    FORMAT_VERSION,
    JUDGE_VECTORS,
    LEXICAL,
    MANIFEST,
    OLDEST_FORMAT,
    is_default,
    live_folder,
    manifest_checksum,
    missing_error,
    read_manifest,
    rebuild_hint,
    show,
    stale_error,
)
from .judge_vectors import read_judge_vectors
from .lexical import TOKENIZER_VERSION, BM25Index
from .questions import QuestionIndex

HNSW_EF_SEARCH = 128  # a loaded HNSW index searches this wide unless its manifest says otherwise


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

    def judge_vectors(self, fingerprint: str) -> dict[str, np.ndarray]:
        """The judge's passage vectors stored at ingest, by passage hash (search/judge.py); empty when
        the index holds none or another judge's (read on first use, not on load)."""
        return read_judge_vectors(self.folder / JUDGE_VECTORS, fingerprint)

    @property
    def judge_fingerprint(self) -> str | None:
        """The fingerprint of the judge whose vectors the index holds (None: none stored)."""
        return (self.manifest.get("judge") or {}).get("fingerprint")

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
