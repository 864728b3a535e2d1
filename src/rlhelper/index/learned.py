"""The user's learned questions (userbank.py) as search structures that change in place.

A vote adds one line to the bank's journal; the next search reads that line (BankFollower) and
adds one question to what it searches, without building anything again:

    live = LiveLearned(bank, index, embedder_id, embed)   # one per Retriever
    learned = live.current()   # one stat when nothing changed; else only the new lines are applied

* Every record is a slot of LearnedSegment: its entry row, vote, vector (rows of a growing
  matrix) and text. A removed or replaced record is a tombstone (its slot marked dead), never
  moved, so a search running meanwhile keeps a consistent view (a copy of the masks and the length).
* The accepted questions' BM25 postings are immutable runs (CSR by a 64-bit hash of the term: no
  vocabulary of every word pair of every pasted log is held), one per batch of changes; small runs
  are merged as they pile up (each merge at most MERGE_LIMIT documents, and it drops dead
  postings), so a vote costs one small run, never a rebuild. A posting's weight is fixed when it is
  made: the length norm uses the shipped bank's average length (a learned question is as long or
  short as any question). The IDF is computed at query time for the query's terms, from the
  shipped bank's document counts and the live learned postings found for the term.
* SearchedQuestions is what search sees: the shipped QuestionIndex followed by the live accepted
  slots, with QuestionIndex's methods (question id q < len(shipped) is a shipped question, else
  learned slot q - len(shipped)). Learned.accepted / .demoted find the pairs whose question is the
  query (the same normalized text, or a cosine of at least NEAR_COSINE) for pinning and demoting.
* Vectors (per embedder) and tokens are kept in append-only files beside the bank (learned_store.py),
  so a process start embeds and tokenizes nothing it did before. Searches embed at most EMBED_SECONDS of missing vectors
  each (a big import is embedded by `rlhelper questions import` itself); a question still without
  its vector is searched by its words only until a later search embeds it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field

import numpy as np

from . import learned_snapshot
from .learned_store import TokenLog, VectorLog, term_hash
from .questions import QuestionIndex, VectorCache, best_first, by_entry, section_rows

NEAR_COSINE = 0.95  # a query this close to a learned question is taken as that question
MERGE_LIMIT = 4_096  # documents: runs smaller than this are merged as they pile up; larger ones stay
INDEX_CHUNK = 2_048  # documents indexed into one run at most (a process start, a big import)
EMBED_SECONDS = 0.5  # of embedding missing vectors per search; the rest waits for the next search
EMBED_BATCH = 16
DEFAULT_AVGDL = 10.0  # tokens of a question, when there is no shipped bank to measure
K1, B = 1.2, 0.75


# --- the BM25 postings of learned questions -------------------------------------------------


@dataclass(frozen=True)
class Run:
    """The postings of a batch of learned questions, by term (CSR); never changed once made."""

    terms: np.ndarray  # sorted term hashes (learned_store.term_hash)
    indptr: np.ndarray  # postings of terms[i]: slots[indptr[i]:indptr[i+1]]
    slots: np.ndarray
    weights: np.ndarray  # tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    docs: int

    @classmethod
    def of(cls, term_ids: np.ndarray, slots: np.ndarray, weights: np.ndarray, docs: int) -> Run:
        order = np.argsort(term_ids)  # a term's postings in any order: no stable sort needed
        ordered = term_ids[order]
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]])) if len(ordered) else \
            np.zeros(0, dtype=np.int64)
        indptr = np.append(starts, len(ordered)).astype(np.int64)
        return cls(ordered[starts].astype(np.uint64), indptr, slots[order].astype(np.int32),
                   weights[order].astype(np.float32), docs)

    def postings(self, term: np.uint64) -> tuple[np.ndarray, np.ndarray] | None:
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

    def __init__(self, dim: int, avgdl: float, tokens: TokenLog | None = None):
        self.dim, self.avgdl = dim, avgdl
        self.tokens = tokens or TokenLog(None)  # the questions' tokens, kept on disk (or not)
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
        for start in range(0, len(accepted), INDEX_CHUNK):  # a big load in runs: bounded memory and sorts
            self._index_words(accepted[start:start + INDEX_CHUNK])

    def _index_words(self, accepted: list[tuple[int, str]]) -> None:
        made = self.tokens.of([text for _, text in accepted])
        term_arr = np.concatenate([hashes for hashes, _, _ in made])
        tf_arr = np.concatenate([counts for _, counts, _ in made])
        sizes = [len(hashes) for hashes, _, _ in made]
        slots = np.repeat(np.array([slot for slot, _ in accepted], dtype=np.int32), sizes)
        lengths = np.repeat(np.array([length for *_, length in made], dtype=np.float32), sizes)
        norm = K1 * (1.0 - B + B * lengths / self.avgdl)
        weights = tf_arr * (K1 + 1.0) / (tf_arr + norm)
        self.searchable += len(accepted)
        runs = [*self.runs, Run.of(term_arr, slots, weights, len(accepted))]
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
                           runs=self.runs, searchable=self.searchable)


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
    runs: tuple[Run, ...]
    searchable: int
    _last: list = field(default_factory=lambda: [None])  # (query vector, cosines): one search asks thrice

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        """Every slot's cosine with the query (0 for a slot not embedded yet)."""
        last = self._last[0]
        if last is not None and last[0] is qvec:
            return last[1]
        cosines = self.vectors @ np.asarray(qvec, dtype=np.float32)
        self._last[0] = (qvec, cosines)
        return cosines


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
        mine = self.segment.cosines(qvec) if self.segment.n else np.zeros(0, dtype=np.float32)
        return np.concatenate([self.shipped.cosines(qvec), mine]) if self.shipped is not None else mine

    def _allowed(self, allowed: np.ndarray) -> np.ndarray:
        return self.searched & allowed[np.maximum(self.rows, 0)]

    def lexical_ranking(self, query_tokens: list[str], extra: dict[str, float], allowed: np.ndarray,
                        depth: int) -> tuple[list[int], dict[int, int]]:
        """As QuestionIndex.lexical_ranking, over both: BM25 with the IDF of the two together (a
        learned term's document count is its live postings', counted here)."""
        seg = self.segment
        factors = {t: 1.0 + math.log(qtf) for t, qtf in Counter(query_tokens).items()}
        for term, weight in (extra or {}).items():
            factors.setdefault(term, weight)  # a query token keeps its own weight
        n_docs = self.n_shipped + seg.searchable
        scores = np.zeros(self.n_shipped + seg.n, dtype=np.float32)
        for term, factor in factors.items():
            shipped_id = self._vocabulary.get(term)
            shipped_df = int(self._df[shipped_id]) if shipped_id is not None else 0
            learned = self._learned_postings(term)
            df = shipped_df + len(learned[0])
            if not df:
                continue
            weight = math.log1p((n_docs - df + 0.5) / (df + 0.5)) * factor  # Lucene's IDF, as lexical.py
            if shipped_df:
                start, end = self._indptr[shipped_id], self._indptr[shipped_id + 1]
                scores[self._doc_ids[start:end]] += weight * self._weights[start:end]
            scores[self.n_shipped + learned[0]] += weight * learned[1]
        scores[~self._allowed(allowed)] = 0.0
        return by_entry(self.rows, _top(scores, depth * 4), depth)

    def _learned_postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(slots, weights) of the live accepted learned questions holding `term`."""
        seg, key = self.segment, np.uint64(term_hash(term))
        found = [p for run in seg.runs if (p := run.postings(key)) is not None]
        if not found:
            return _NO_POSTINGS
        slots = np.concatenate([s for s, _ in found]) if len(found) > 1 else found[0][0]
        weights = np.concatenate([w for _, w in found]) if len(found) > 1 else found[0][1]
        keep = slots < seg.n  # a run made after this view's slots
        keep[keep] = seg.accepted[slots[keep]]
        return slots[keep], weights[keep]

    def dense_ranking(self, qvec: np.ndarray, allowed: np.ndarray, depth: int
                      ) -> tuple[list[int], dict[int, int], np.ndarray]:
        cosines = self.cosines(qvec)
        usable = self._allowed(allowed)
        if self.segment.n:
            usable[self.n_shipped:] &= self.segment.embedded
        ranked, best = by_entry(self.rows, best_first(np.where(usable, cosines, -np.inf), depth * 4), depth)
        return ranked, best, cosines

    def best_cosine(self, cosines: np.ndarray, row: int) -> float | None:
        mine = cosines[self.rows == row]
        return float(mine.max()) if mine.size else None


_NO_POSTINGS = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


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
            cosines = seg.cosines(qvec)
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


# --- keeping it up to date -----------------------------------------------------------------


class LiveLearned:
    """The user's bank as one index searches it, brought up to date from the bank's journal at each
    search. `embed(texts)` makes the vectors of questions not in the VectorLog."""

    def __init__(self, bank, index, embed: Callable[[list[str]], np.ndarray], *, dim: int,
                 clock: Callable[[], float] = time.monotonic):
        self.bank, self.index, self.embed, self.clock = bank, index, embed, clock
        self.follower = bank.follower()
        self.vectors = VectorLog(bank.cache_dir, index.embedder_id, dim)
        self.tokens = TokenLog(bank.cache_dir)
        shipped = index.questions
        avgdl = float(shipped.bm25.doc_lengths.mean()) if shipped is not None and len(shipped) else 0.0
        self.segment = LearnedSegment(dim, avgdl if avgdl > 0 else DEFAULT_AVGDL, self.tokens)
        self.held: dict[tuple, object] = {}  # key -> the record its slot was made from (placed or not)
        self.waiting: list[int] = []  # slots without their vector yet
        self._sections: dict | None = None
        self.full_reads = 0  # times the whole bank was read (the first search, a file replaced by hand)
        self._lock = threading.Lock()
        self._learned = Learned(shipped)
        self.snapshot_identity = learned_snapshot.identity(self)
        self.restored = learned_snapshot.restore(self)  # a large bank's saved state, when one fits

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
            self.tokens.compact(r.text for r in self.held.values() if r.vote == 1)
            if len(self.held) >= learned_snapshot.SNAPSHOT_MIN:
                learned_snapshot.save(self)  # the next process restores this state instead of reading it all

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
        if len(found) < len(texts):
            found.update(self._from_old_cache([t for t in texts if t not in found]))
        missing = []
        for i, text in enumerate(texts):
            if text in found:
                vectors[i], embedded[i] = found[text], True
            else:
                missing.append(i)
        first = self.segment.n
        self.segment.add(placed, vectors, embedded)
        self.waiting += [first + i for i in missing]

    def _from_old_cache(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Vectors the bank's cache held before learned_store.py (questions.jsonl.vectors.npz), moved
        into the VectorLog, so an upgrade embeds nothing again."""
        old = self.bank.path.with_name(self.bank.path.name + ".vectors.npz")
        if not old.is_file():
            return {}
        held = VectorCache(old).held(self.index.embedder_id, texts)
        if held:
            self.vectors.add(list(held), np.stack(list(held.values())))
        return held

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
        if self._sections is None:
            self._sections = section_rows(self.index.entries)
        return record_row(record, self._sections, self.index)


def record_row(record, sections: dict, index) -> int | None:
    """The row of a record's entry in `index` (by section key, then by entry id), or None."""
    row = sections.get((record.collection, record.doc, record.heading))
    if row is None and record.entry_id:
        try:
            row = index.row_of(record.entry_id)
        except KeyError:
            row = None
    return row


def learned_from(records: list, index, embed: Callable[[list[str]], np.ndarray], *, dim: int) -> Learned:
    """A few records held in memory, searched as a bank is (a web visitor's own votes: web/visitors.py);
    no journal and no files."""
    shipped = index.questions
    avgdl = float(shipped.bm25.doc_lengths.mean()) if shipped is not None and len(shipped) else 0.0
    segment = LearnedSegment(dim, avgdl if avgdl > 0 else DEFAULT_AVGDL)
    sections = section_rows(index.entries)
    placed = [(r.key, row, r.text, r.vote) for r in records if (row := record_row(r, sections, index)) is not None]
    if placed:
        vectors = np.asarray(embed([text for _, _, text, _ in placed]), dtype=np.float32)
        segment.add(placed, vectors, np.ones(len(placed), dtype=bool))
    return Learned.of(shipped, segment.snapshot())


def _same(held, record) -> bool:
    """The slot of `held` still stands for `record` (only the time of the vote changed)."""
    return held is not None and (held.text, held.vote, held.entry_id) == (record.text, record.vote, record.entry_id)


def prepare(bank, embedder=None, dim: int | None = None, notify: Callable[[str], None] = lambda line: None,
            batch: int = 64) -> tuple[int, int]:
    """Tokenize the bank's accepted questions and embed those without a vector for `embedder` (when
    given), into the files searches read (after `questions import`, so the first searches need not).
    Each batch is kept as it is made: interrupted, the rest is left to the searches. Returns (questions
    tokenized or found tokenized, questions embedded now)."""
    records = bank.records()
    accepted = list(dict.fromkeys(r.text for r in records if r.vote == 1))
    TokenLog(bank.cache_dir).of(accepted)
    if embedder is None:
        return len(accepted), 0
    log = VectorLog(bank.cache_dir, embedder.id, dim or embedder.dim)
    texts = list(dict.fromkeys(r.text for r in records))
    held = log.get(texts)
    missing = [t for t in texts if t not in held]
    for start in range(0, len(missing), batch):
        chunk = missing[start:start + batch]
        log.add(chunk, np.asarray(embedder.embed_documents(chunk), dtype=np.float32))
        notify(f"embedded {start + len(chunk):,} of {len(missing):,} questions for {embedder.id}")
    return len(accepted), len(missing)
