"""The user's learned questions (userbank.py) as search structures that change in place.

A vote adds one line to the bank's journal; the next search reads that line (BankFollower) and
adds one question to what it searches, without building anything again:

    live = LiveLearned(bank, index, embedder_id, embed)   # one per Retriever
    learned = live.current()   # one stat when nothing changed; else only the new lines are applied

* Every record is a slot of LearnedSegment: its entry row, vote, vector (rows of a growing
  matrix) and text. A removed or replaced record is a tombstone (its slot marked dead), never
  moved, so a search running meanwhile keeps a consistent view (a copy of the masks and the length).
* The accepted questions' BM25 postings are immutable runs (CSR by term), one per batch of
  changes; small runs are merged as they pile up (each merge at most MERGE_LIMIT documents, and it
  drops dead postings), so a vote costs one small run, never a rebuild. A posting's weight is fixed
  when it is made: the length norm uses the shipped bank's average length (a learned question is
  as long or short as any question); only the IDF, from the shipped and learned document counts
  together, is computed at query time, for the query's terms.
* SearchedQuestions is what search sees: the shipped QuestionIndex followed by the live accepted
  slots, with QuestionIndex's methods (question id q < len(shipped) is a shipped question, else
  learned slot q - len(shipped)). Learned.accepted / .demoted find the pairs whose question is the
  query (the same normalized text, or a cosine of at least NEAR_COSINE) for pinning and demoting.
* Vectors are kept per embedder in an append-only file beside the bank (VectorLog), so a process
  start embeds nothing it embedded before. Searches embed at most EMBED_SECONDS of missing vectors
  each (a big import is embedded by `rlhelper questions import` itself); a question still without
  its vector is searched by its words only until a later search embeds it.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import questions
from .questions import QuestionIndex, section_rows

NEAR_COSINE = 0.95  # a query this close to a learned question is taken as that question
MERGE_LIMIT = 4_096  # documents: runs smaller than this are merged as they pile up; larger ones stay
EMBED_SECONDS = 0.5  # of embedding missing vectors per search; the rest waits for the next search
EMBED_BATCH = 16
DEFAULT_AVGDL = 10.0  # tokens of a question, when there is no shipped bank to measure
K1, B = 1.2, 0.75


# --- the BM25 postings of learned questions -------------------------------------------------


@dataclass(frozen=True)
class Run:
    """The postings of a batch of learned questions, by term (CSR); never changed once made."""

    terms: np.ndarray  # sorted learned-vocabulary term ids
    indptr: np.ndarray  # postings of terms[i]: slots[indptr[i]:indptr[i+1]]
    slots: np.ndarray
    weights: np.ndarray  # tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    docs: int

    @classmethod
    def of(cls, term_ids: np.ndarray, slots: np.ndarray, weights: np.ndarray, docs: int) -> Run:
        order = np.argsort(term_ids, kind="stable")
        terms, counts = np.unique(term_ids[order], return_counts=True)
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(terms.astype(np.int32), indptr, slots[order].astype(np.int32), weights[order].astype(np.float32),
                   docs)

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray] | None:
        i = int(np.searchsorted(self.terms, term))
        if i < len(self.terms) and self.terms[i] == term:
            start, end = self.indptr[i], self.indptr[i + 1]
            return self.slots[start:end], self.weights[start:end]
        return None

    def merged_with(self, other: Run, live: np.ndarray) -> Run:
        """One run of both, without the postings of dead slots."""
        parts = [(np.repeat(r.terms, np.diff(r.indptr)), r.slots, r.weights) for r in (self, other)]
        terms, slots, weights = (np.concatenate(column) for column in zip(*parts, strict=True))
        keep = live[slots]
        return Run.of(terms[keep], slots[keep], weights[keep], int(np.unique(slots[keep]).size))


# --- the learned questions, slot by slot ------------------------------------------------------


class LearnedSegment:
    """Every learned record placed in this index, as slots that are only ever added or killed."""

    def __init__(self, dim: int, avgdl: float):
        self.dim, self.avgdl = dim, avgdl
        self.n = 0
        capacity = 64
        self.rows = np.zeros(capacity, dtype=np.int64)
        self.votes = np.zeros(capacity, dtype=np.int8)
        self.live = np.zeros(capacity, dtype=bool)
        self.embedded = np.zeros(capacity, dtype=bool)
        self.vectors = np.zeros((capacity, dim), dtype=np.float32)
        self.texts: list[str] = []
        self.slot_of: dict[tuple, int] = {}  # record key -> its live slot
        self.by_normalized: dict[str, list[int]] = {}  # normalized text -> live slots
        self.vocabulary: dict[str, int] = {}
        self.df = np.zeros(0, dtype=np.int32)  # live accepted questions holding each term (copied on change)
        self.runs: tuple[Run, ...] = ()
        self.searchable = 0  # live accepted slots

    def _reserve(self, more: int) -> None:
        need = self.n + more
        if need <= len(self.rows):
            return
        capacity = max(need, 2 * len(self.rows))

        def grown(a: np.ndarray) -> np.ndarray:  # a new array: views made before keep the old one
            out = np.zeros((capacity, *a.shape[1:]), dtype=a.dtype)
            out[:self.n] = a[:self.n]
            return out

        self.rows, self.votes, self.live = grown(self.rows), grown(self.votes), grown(self.live)
        self.embedded, self.vectors = grown(self.embedded), grown(self.vectors)

    def remove(self, keys: Iterable[tuple]) -> None:
        """Kill the slots of these record keys (those it holds)."""
        dropped_terms: list[int] = []
        for key in keys:
            slot = self.slot_of.pop(key, None)
            if slot is None:
                continue
            self.live[slot] = False
            same = self.by_normalized.get(key[0], [])
            with suppress(ValueError):
                same.remove(slot)
            if not same:
                self.by_normalized.pop(key[0], None)
            if self.votes[slot] == 1:
                self.searchable -= 1
                dropped_terms += [self.vocabulary[t] for t in set(questions.tokens(self.texts[slot]))]
        if dropped_terms:
            df = self.df.copy()
            np.subtract.at(df, np.asarray(dropped_terms, dtype=np.int64), 1)
            self.df = df

    def add(self, placed: list[tuple[tuple, int, str, int]], vectors: np.ndarray, embedded: np.ndarray) -> None:
        """Add (key, row, text, vote) records with their vectors (zero where `embedded` is False)."""
        if not placed:
            return
        self._reserve(len(placed))
        first = self.n
        slots = np.arange(first, first + len(placed))
        self.rows[slots] = [row for _, row, _, _ in placed]
        self.votes[slots] = [vote for *_, vote in placed]
        self.vectors[slots] = vectors
        self.embedded[slots] = embedded
        self.live[slots] = True
        for slot, (key, _, text, _) in zip(slots, placed, strict=True):
            self.texts.append(text)
            self.slot_of[key] = int(slot)
            self.by_normalized.setdefault(key[0], []).append(int(slot))
        self.n += len(placed)
        accepted = [(int(slot), text) for slot, (_, _, text, vote) in zip(slots, placed, strict=True) if vote == 1]
        if accepted:
            self._index_words(accepted)

    def _index_words(self, accepted: list[tuple[int, str]]) -> None:
        vocabulary = self.vocabulary
        term_ids, slots, tfs, lengths = [], [], [], []
        for slot, text in accepted:
            tokens = questions.tokens(text)
            for term, tf in Counter(tokens).items():
                term_ids.append(vocabulary.setdefault(term, len(vocabulary)))
                slots.append(slot)
                tfs.append(tf)
                lengths.append(len(tokens))
        term_arr = np.asarray(term_ids, dtype=np.int64)
        tf_arr = np.asarray(tfs, dtype=np.float32)
        norm = K1 * (1.0 - B + B * np.asarray(lengths, dtype=np.float32) / self.avgdl)
        weights = tf_arr * (K1 + 1.0) / (tf_arr + norm)
        df = np.zeros(len(vocabulary), dtype=np.int32)
        df[:len(self.df)] = self.df
        np.add.at(df, term_arr, 1)  # a term counts once per question: Counter made them distinct
        self.df = df
        self.searchable += len(accepted)
        runs = [*self.runs, Run.of(term_arr, np.asarray(slots, dtype=np.int64), weights, len(accepted))]
        # Merge the newest runs while the one before is no bigger (a binary counter: O(log n) runs, each
        # question merged O(log n) times), never past MERGE_LIMIT: a vote never pays for a big merge.
        while len(runs) >= 2 and runs[-2].docs <= runs[-1].docs and runs[-2].docs + runs[-1].docs <= MERGE_LIMIT:
            last = runs.pop()
            runs[-1] = runs[-1].merged_with(last, self.live)
        self.runs = tuple(runs)

    def set_vectors(self, slots: list[int], vectors: np.ndarray) -> None:
        """Vectors embedded after their slots were added (a search had no time for them then)."""
        self.vectors[slots] = vectors
        self.embedded[slots] = True

    def snapshot(self) -> SegmentView:
        n = self.n
        live = self.live[:n].copy()
        votes = self.votes[:n]
        return SegmentView(n=n, rows=self.rows[:n], vectors=self.vectors[:n], texts=self.texts,
                           accepted=live & (votes == 1), demoted=live & (votes == -1),
                           embedded=self.embedded[:n].copy(), by_normalized=self.by_normalized,
                           vocabulary=self.vocabulary, df=self.df, runs=self.runs, searchable=self.searchable)


@dataclass(frozen=True)
class SegmentView:
    """The segment as one search sees it: what was added later, or killed later, is not in it."""

    n: int
    rows: np.ndarray
    vectors: np.ndarray
    texts: list[str]
    accepted: np.ndarray
    demoted: np.ndarray
    embedded: np.ndarray
    by_normalized: dict
    vocabulary: dict
    df: np.ndarray
    runs: tuple[Run, ...]
    searchable: int


# --- what search sees --------------------------------------------------------------------


class SearchedQuestions:
    """The shipped bank's questions followed by the learned accepted ones, searched as one bank
    (the methods of QuestionIndex)."""

    def __init__(self, shipped: QuestionIndex | None, segment: SegmentView):
        self.shipped = shipped
        self.segment = segment
        self.n_shipped = len(shipped) if shipped is not None else 0
        seg_rows = np.where(segment.accepted, segment.rows, -1)
        self.rows = np.concatenate([shipped.rows, seg_rows]) if shipped is not None else seg_rows
        self.searched = self.rows >= 0  # shipped questions, and live accepted slots
        if shipped is not None and len(shipped):
            bm25 = shipped.bm25
            self._vocabulary, self._indptr = bm25.vocabulary, bm25.indptr
            self._doc_ids, self._weights = bm25.doc_ids, bm25.weights
            self._df = np.diff(bm25.indptr)
        else:
            self._vocabulary, self._indptr, self._df = {}, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
            self._doc_ids, self._weights = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)

    def __len__(self) -> int:
        return self.n_shipped + self.segment.searchable

    def text(self, q: int) -> str:
        return self.shipped.texts[q] if q < self.n_shipped else self.segment.texts[q - self.n_shipped]

    def source(self, q: int) -> str:
        return self.shipped.sources[q] if q < self.n_shipped else "user"

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        """Every question's cosine with the query (a learned question not embedded yet: 0)."""
        qvec = np.asarray(qvec, dtype=np.float32)
        mine = self.segment.vectors @ qvec if self.segment.n else np.zeros(0, dtype=np.float32)
        return np.concatenate([self.shipped.cosines(qvec), mine]) if self.shipped is not None else mine

    def _allowed(self, allowed: np.ndarray) -> np.ndarray:
        return self.searched & allowed[np.maximum(self.rows, 0)]

    def lexical_ranking(self, query_tokens: list[str], extra: dict[str, float], allowed: np.ndarray,
                        depth: int) -> tuple[list[int], dict[int, int]]:
        """As QuestionIndex.lexical_ranking, over both: BM25 with the IDF of the two together."""
        seg = self.segment
        factors = {t: 1.0 + math.log(qtf) for t, qtf in Counter(query_tokens).items() if self._known(t)}
        for term, weight in (extra or {}).items():
            if term not in factors and self._known(term):
                factors[term] = weight
        n_docs = self.n_shipped + seg.searchable
        scores = np.zeros(self.n_shipped + seg.n, dtype=np.float32)
        for term, factor in factors.items():
            shipped_id, learned_id = self._vocabulary.get(term), seg.vocabulary.get(term)
            shipped_df = int(self._df[shipped_id]) if shipped_id is not None else 0
            learned_df = int(seg.df[learned_id]) if learned_id is not None and learned_id < len(seg.df) else 0
            df = shipped_df + learned_df
            weight = math.log1p((n_docs - df + 0.5) / (df + 0.5)) * factor  # Lucene's IDF, as lexical.py
            if shipped_df:
                start, end = self._indptr[shipped_id], self._indptr[shipped_id + 1]
                scores[self._doc_ids[start:end]] += weight * self._weights[start:end]
            if learned_df:
                for run in seg.runs:
                    found = run.postings(learned_id)
                    if found is not None:
                        slots, weights = found
                        inside = slots < seg.n  # a run made after this view's slots
                        scores[self.n_shipped + slots[inside]] += weight * weights[inside]
        scores[~self._allowed(allowed)] = 0.0
        return self._by_entry(_top(scores, depth * 4), depth)

    def _known(self, term: str) -> bool:
        if term in self._vocabulary:
            return True
        t = self.segment.vocabulary.get(term)
        return t is not None and t < len(self.segment.df) and self.segment.df[t] > 0

    def dense_ranking(self, qvec: np.ndarray, allowed: np.ndarray, depth: int
                      ) -> tuple[list[int], dict[int, int], np.ndarray]:
        cosines = self.cosines(qvec)
        usable = self._allowed(allowed)
        if self.segment.n:
            usable[self.n_shipped:] &= self.segment.embedded
        masked = np.where(usable, cosines, -np.inf)
        want = min(len(masked), depth * 4)
        top = np.argpartition(-masked, want - 1)[:want] if want < len(masked) else np.arange(len(masked))
        top = top[np.argsort(-masked[top], kind="stable")]
        top = top[np.isfinite(masked[top])]
        ranked, best = self._by_entry(top, depth)
        return ranked, best, cosines

    def _by_entry(self, question_ids: Iterable[int], depth: int) -> tuple[list[int], dict[int, int]]:
        ranked: list[int] = []
        best: dict[int, int] = {}
        for q in question_ids:
            row = int(self.rows[int(q)])
            if row >= 0 and row not in best:
                best[row] = int(q)
                ranked.append(row)
                if len(ranked) >= depth:
                    break
        return ranked, best

    def best_cosine(self, cosines: np.ndarray, row: int) -> float | None:
        mine = cosines[self.rows == row]
        return float(mine.max()) if mine.size else None


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Ids of the k best positive scores, best first, ties to the lower id (as BM25Index.search)."""
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        cutoff = scores[candidates[part]].min()
        candidates = candidates[scores[candidates] >= cutoff]
    return candidates[np.lexsort((candidates, -scores[candidates]))][:k]


@dataclass(frozen=True)
class Votes:
    """The live learned pairs of one vote (+1 accepted, -1 demoted) in a view."""

    segment: SegmentView | None = None
    mask: np.ndarray | None = None

    def __len__(self) -> int:
        return 0 if self.mask is None else int(self.mask.sum())

    def near(self, normalized: str, qvec: np.ndarray | None) -> list[tuple[int, str, float]]:
        """(row, question, similarity) of the pairs whose question is the query: the same
        normalized text (similarity 1), or a cosine of at least NEAR_COSINE; best first."""
        seg, mask = self.segment, self.mask
        if seg is None or not mask.any():
            return []
        found: dict[int, tuple[str, float]] = {}

        def take(slot: int, similarity: float) -> None:
            row = int(seg.rows[slot])
            if similarity > found.get(row, ("", -1.0))[1]:
                found[row] = (seg.texts[slot], similarity)

        for slot in tuple(seg.by_normalized.get(normalized, ())):
            if slot < seg.n and mask[slot]:
                take(slot, 1.0)
        if qvec is not None and seg.vectors.shape[1] == len(qvec):
            cosines = seg.vectors @ np.asarray(qvec, dtype=np.float32)
            for slot in np.flatnonzero(mask & seg.embedded & (cosines >= NEAR_COSINE)):
                take(int(slot), float(cosines[slot]))
        return sorted(((row, text, sim) for row, (text, sim) in found.items()), key=lambda item: -item[2])


@dataclass
class Learned:
    """What the user's bank changes in a search: the questions searched (the shipped ones with the
    accepted ones after them) and the pairs accepted and demoted, for pinning and demoting an
    entry when the query is one of those questions (retrieve.py)."""

    questions: QuestionIndex | SearchedQuestions | None
    accepted: Votes = field(default_factory=Votes)
    demoted: Votes = field(default_factory=Votes)

    @property
    def empty(self) -> bool:
        return not len(self.accepted) and not len(self.demoted)

    @classmethod
    def of(cls, shipped: QuestionIndex | None, view: SegmentView) -> Learned:
        if not view.accepted.any() and not view.demoted.any():
            return cls(shipped)
        searched = SearchedQuestions(shipped, view) if view.accepted.any() else shipped
        return cls(searched, Votes(view, view.accepted), Votes(view, view.demoted))


# --- the vectors, kept on disk ------------------------------------------------------------


class VectorLog:
    """Vectors of learned questions for one embedder in an append-only file: a 128-byte header
    (magic, dimension, embedder id), then records of a 16-byte key (a hash of the embedder and the
    text) and the float32 vector. A vote appends one record; a record cut by a crash is dropped
    before the next append; `compact` writes only the keys still wanted."""

    MAGIC = b"RLHVEC1\n"
    HEADER = 128

    def __init__(self, folder: Path, embedder_id: str, dim: int):
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in embedder_id)
        self.path = Path(folder) / f"{name}.f32"
        self.embedder_id, self.dim = embedder_id, dim
        self._dtype = np.dtype([("key", "V16"), ("vector", "<f4", (dim,))])
        self._held: dict[bytes, np.ndarray] = {}
        self._read_to = 0  # bytes of the file read into _held

    def key(self, text: str) -> bytes:
        return hashlib.blake2b(f"{self.embedder_id}\0{text}".encode(), digest_size=16).digest()

    def _header(self) -> bytes:
        ident = self.embedder_id.encode()[:100]
        return (self.MAGIC + struct.pack("<II", self.dim, len(ident)) + ident).ljust(self.HEADER, b"\0")

    def _read_new(self) -> None:
        try:
            with open(self.path, "rb") as f:
                if self._read_to == 0:
                    if f.read(self.HEADER) != self._header():
                        return  # another embedder's file, or damaged: written anew by compact
                    self._read_to = self.HEADER
                size = os.fstat(f.fileno()).st_size
                whole = (size - self._read_to) // self._dtype.itemsize
                if whole <= 0:
                    return
                f.seek(self._read_to)
                records = np.fromfile(f, dtype=self._dtype, count=whole)
        except OSError:
            return
        self._read_to += whole * self._dtype.itemsize
        for key, vector in zip(records["key"], records["vector"], strict=True):
            self._held[bytes(key)] = vector

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The vectors held for `texts`, by text."""
        self._read_new()
        keys = [self.key(t) for t in texts]
        return {t: self._held[k] for t, k in zip(texts, keys, strict=True) if k in self._held}

    def add(self, texts: list[str], vectors: np.ndarray) -> None:
        """Append vectors (best effort: a read-only data folder only means embedding again)."""
        records = np.zeros(len(texts), dtype=self._dtype)
        records["key"] = [np.void(self.key(t)) for t in texts]
        records["vector"] = vectors
        for t, v in zip(texts, records["vector"], strict=True):
            self._held[self.key(t)] = v
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return
        try:
            _lock(fd)
            size = os.fstat(fd).st_size
            if size < self.HEADER or os.pread(fd, self.HEADER, 0) != self._header():
                os.ftruncate(fd, 0)
                os.pwrite(fd, self._header(), 0)
                size = self.HEADER
            whole = self.HEADER + (size - self.HEADER) // self._dtype.itemsize * self._dtype.itemsize
            if whole != size:
                os.ftruncate(fd, whole)  # a record cut by a crash
            os.pwrite(fd, records.tobytes(), whole)
        except OSError:
            pass
        finally:
            os.close(fd)

    def compact(self, keep: Iterable[str]) -> None:
        """Write the file anew with only the vectors of `keep`, when most of it is for other texts."""
        self._read_new()
        wanted = {self.key(t) for t in keep}
        if len(self._held) <= 2 * len(wanted) + 1_000:
            return
        kept = [(k, v) for k, v in self._held.items() if k in wanted]
        records = np.zeros(len(kept), dtype=self._dtype)
        if kept:
            records["key"] = [np.void(k) for k, _ in kept]
            records["vector"] = np.stack([v for _, v in kept])
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as out:
                out.write(self._header() + records.tobytes())
            os.replace(tmp, self.path)
        except OSError:
            with suppress(OSError):
                tmp.unlink()
            return
        self._held = dict(kept)
        self._read_to = self.HEADER + len(kept) * self._dtype.itemsize


def _lock(fd: int) -> None:
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed
    except ImportError:
        pass


# --- keeping it up to date -----------------------------------------------------------------


class LiveLearned:
    """The user's bank as one index searches it, brought up to date from the bank's journal at each
    search. `embed(texts)` makes the vectors of questions not in the VectorLog."""

    def __init__(self, bank, index, embed: Callable[[list[str]], np.ndarray], *, dim: int,
                 clock: Callable[[], float] = time.monotonic):
        self.bank, self.index, self.embed, self.clock = bank, index, embed, clock
        self.follower = bank.follower()
        self.vectors = VectorLog(bank.vectors_path, index.embedder_id, dim)
        shipped = index.questions
        avgdl = float(shipped.bm25.doc_lengths.mean()) if shipped is not None and len(shipped) else 0.0
        self.segment = LearnedSegment(dim, avgdl if avgdl > 0 else DEFAULT_AVGDL)
        self.held: dict[tuple, object] = {}  # key -> the record its slot was made from (placed or not)
        self.waiting: list[int] = []  # slots without their vector yet
        self._sections: dict | None = None
        self.full_reads = 0  # times the whole bank was read (the first search, a file replaced by hand)
        self._lock = threading.Lock()
        self._learned = Learned(shipped)

    def current(self) -> Learned:
        """What to search with now. When another search is applying changes, the state before them."""
        if not self._lock.acquire(blocking=False):
            return self._learned
        try:
            delta = self.follower.poll()
            if delta:
                self._apply(delta)
            if self.waiting:
                self._embed_waiting()
            return self._learned
        finally:
            self._lock.release()

    def _apply(self, delta) -> None:
        from .userbank import replay

        self.full_reads += delta.reset
        final = replay(delta.changes)  # key -> record, for the keys that hold one after the changes
        touched = dict.fromkeys([*self.held, *final] if delta.reset else [c.record.key for c in delta.changes])
        gone, added = [], []
        for key in touched:
            old, new = self.held.get(key), final.get(key)
            if new is not None and _same(old, new):
                continue
            if old is not None:
                gone.append(key)
            if new is not None:
                added.append(new)
        self.segment.remove(gone)
        for key in gone:
            del self.held[key]
        self._add(added)
        self._learned = Learned.of(self.index.questions, self.segment.snapshot())
        if delta.reset:
            self.vectors.compact(r.text for r in self.held.values())

    def _add(self, records: list) -> None:
        placed = []
        for record in records:
            self.held[record.key] = record
            row = self._row(record)
            if row is not None:
                placed.append((record.key, row, record.text, record.vote))
        if not placed:
            return
        texts = [text for _, _, text, _ in placed]
        found = self.vectors.get(texts)
        vectors = np.zeros((len(placed), self.segment.dim), dtype=np.float32)
        embedded = np.zeros(len(placed), dtype=bool)
        missing = []
        for i, text in enumerate(texts):
            if text in found:
                vectors[i], embedded[i] = found[text], True
            else:
                missing.append(i)
        first = self.segment.n
        self.segment.add(placed, vectors, embedded)
        self.waiting += [first + i for i in missing]

    def _embed_waiting(self) -> None:
        """Embed what has no vector yet, for at most EMBED_SECONDS (the first batch always)."""
        started = self.clock()
        seg = self.segment
        while self.waiting:
            batch = [s for s in self.waiting[:EMBED_BATCH] if seg.live[s]]
            del self.waiting[:EMBED_BATCH]
            if batch:
                texts = [seg.texts[s] for s in batch]
                made = np.asarray(self.embed(texts), dtype=np.float32)
                seg.set_vectors(batch, made)
                self.vectors.add(texts, made)
            if self.clock() - started > EMBED_SECONDS:
                break
        self._learned = Learned.of(self.index.questions, seg.snapshot())

    def _row(self, record) -> int | None:
        """The row of the record's entry in this index (by key, then by entry id), or None."""
        if self._sections is None:
            self._sections = section_rows(self.index.entries)
        row = self._sections.get((record.collection, record.doc, record.heading))
        if row is None and record.entry_id:
            try:
                row = self.index.row_of(record.entry_id)
            except KeyError:
                row = None
        return row


def _same(held, record) -> bool:
    """The slot of `held` still stands for `record` (only the time of the vote changed)."""
    return held is not None and (held.text, held.vote, held.entry_id) == (record.text, record.vote, record.entry_id)
