"""The same section in another document: its translation, or another version of the page.

    link(entries, vectors)   -> fills each entry's `twins`: the sections of other documents
                                that say the same thing (ingest calls it after merging)

The default index holds pages twice: RLinf's FAQ in Chinese (seed 001) and in English
(official), slime's Q&A and debug guide in both languages, verl's FAQ as the seed's copy
and as today's page. Searched as they are, the two copies take two of the top slots, and
an English question can be answered in Chinese while the English page sits at rank 3.
Linked, a result list shows a section once, in the asker's language where a twin has it
(retrieve.py), and the answer names the other copy ("also in English: …").

Twins are found per pair of documents of one framework (each page with the `CANDIDATES`
pages nearest to it), by aligning their sections in order: translated pages keep their
structure, so the pairs kept are sections that are each other's best match, in the same
order on both pages. Two sections match on what survives
translation: their identifiers, flags, paths and numbers (Jaccard), and the embedder's
cosine (multilingual for the default embedder; with an English-only one, the
identifiers carry it). A document pair counts only when at least two sections align
and they are at least `MIN_SHARE` of the smaller document: one similar heading
("Debugging Tips" ~ "Debugging") is not a translation.

Once two pages are found to be one text, the sections between their aligned ones are
held to a lower bar (`GAP_MATCH`), in order: a question translated freely ("How do I
resume training?" ~ "如何续训？") shares no identifier with its translation, and scores
below the aligned pairs yet above the nearest wrong pair of a twin page pair.

The thresholds were set by reading, on the default index, every section pair the
alignment proposed; `MIN_PAIRS` rejects the single pairs it also proposes ("Debugging
Tips" ~ "Debugging"; two pages' titles). The counts, the cost at 10k and 100k entries,
and the commands that measure them again are in eval/DECISIONS.md.

Bounded: aligning two pages costs |A| x |B| cells, so a page of more than `MAX_SECTIONS`
sections (a generated reference, a log cut at every line) is not aligned at all, and the
identifier overlap is counted a block of identifiers at a time: no array grows with a
page's vocabulary (a 100k-section page once asked for a 100000 x 199988 one).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from ..schema import Entry

VERSION = 2  # recorded in the index settings: an index linked otherwise is relinked on ingest
MATCH = 0.45  # a section pair aligns above this similarity (half cosine, half identifier Jaccard)
GAP_MATCH = 0.36  # ... and, between the aligned sections of two pages found to be one text, above this
MIN_PAIRS = 2
MIN_SHARE = 0.3
CANDIDATES = 3  # pages of the same framework each page is aligned with (the most similar ones)
MAX_SECTIONS = 2000  # pages with more are not aligned: no translated page is that long
BLOCK_CELLS = 1 << 22  # cells of one identifier-overlap block (16 MB of float32)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{2,}|\d{2,}")


def link(entries: Sequence[Entry], vectors: np.ndarray) -> int:
    """Set `twins` on every entry (row i of `vectors` is entry i); returns the pairs linked."""
    for e in entries:
        e.twins = []
    by_doc: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row, e in enumerate(entries):
        # A GitHub thread is no page with a translation (and 10k of them made a 10k x 10k page matrix).
        if e.kind == "doc":
            by_doc[(e.collection, e.doc)].append(row)
    identifiers = _identifier_ids(entries)
    linked = 0
    pages = [rows for rows in by_doc.values() if len(rows) <= MAX_SECTIONS]
    for rows_a, rows_b in _candidate_pages(pages, entries, vectors):
        similarity = _similarity(rows_a, rows_b, vectors, identifiers)
        anchors = _increasing_run(_mutual_best(similarity, MATCH))
        if len(anchors) < MIN_PAIRS or len(anchors) < MIN_SHARE * min(len(rows_a), len(rows_b)):
            continue
        pairs = [(rows_a[i], rows_b[j]) for i, j in _fill_gaps(anchors, _mutual_best(similarity, GAP_MATCH))]
        for x, y in pairs:
            entries[x].twins.append(_place(entries[y]))
            entries[y].twins.append(_place(entries[x]))
        linked += len(pairs)
    return linked


def _candidate_pages(pages: list[list[int]], entries, vectors) -> list[tuple[list[int], list[int]]]:
    """Pairs of pages of one framework worth aligning: each page with the `CANDIDATES` pages
    nearest to it (cosine of their mean entry vectors). Aligning every pair is quadratic in
    pages: the synthetic 100k-entry corpus has 1,000 pages per framework."""
    by_framework: dict[str, list[int]] = defaultdict(list)
    for p, rows in enumerate(pages):
        by_framework[entries[rows[0]].framework].append(p)
    out = []
    for members in by_framework.values():
        if len(members) < 2:
            continue
        means = np.array([vectors[pages[p]].mean(axis=0) for p in members], dtype=np.float32)
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        similarity = means @ means.T
        np.fill_diagonal(similarity, -np.inf)
        nearest = np.argsort(-similarity, axis=1)[:, :CANDIDATES]
        pairs = {tuple(sorted((i, int(j)))) for i in range(len(members)) for j in nearest[i] if j != i}
        out += [(pages[members[i]], pages[members[j]]) for i, j in sorted(pairs)]
    return out


def _identifier_ids(entries: Sequence[Entry]) -> list[np.ndarray]:
    """Each entry's identifiers, flags, paths and numbers as sorted integer ids."""
    vocabulary: dict[str, int] = {}
    return [np.array(sorted({vocabulary.setdefault(t, len(vocabulary)) for t in _identifiers(e)}), dtype=np.int64)
            for e in entries]


def _similarity(rows_a: list[int], rows_b: list[int], vectors: np.ndarray, identifiers,
                block_cells: int = BLOCK_CELLS) -> np.ndarray:
    """Half the cosine, half the Jaccard of identifiers, for every section pair of two pages."""
    cosine = vectors[rows_a] @ vectors[rows_b].T
    ids_a, ids_b = ([identifiers[r] for r in rows] for rows in (rows_a, rows_b))
    flat_a, flat_b = _flat(ids_a), _flat(ids_b)
    common = np.intersect1d(flat_a[1], flat_b[1])  # only identifiers on both pages can be shared
    shared = np.zeros_like(cosine)
    step = max(1, block_cells // max(len(rows_a), len(rows_b), 1))
    for start in range(0, len(common), step):
        block = common[start:start + step]
        shared += _indicator(flat_a, len(ids_a), block) @ _indicator(flat_b, len(ids_b), block).T
    sizes_a, sizes_b = (np.array([len(i) for i in ids], dtype=np.float32) for ids in (ids_a, ids_b))
    union = sizes_a[:, None] + sizes_b[None, :] - shared
    jaccard = np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)
    return 0.5 * cosine + 0.5 * jaccard


def _flat(ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(section of each identifier, identifier) over a page's sections."""
    return (np.repeat(np.arange(len(ids)), [len(i) for i in ids]),
            np.concatenate([*ids, np.zeros(0, np.int64)]))


def _indicator(flat: tuple[np.ndarray, np.ndarray], sections: int, block: np.ndarray) -> np.ndarray:
    """One row per section, one column per identifier of `block` (sorted): 1 where it holds it."""
    rows, ids = flat
    matrix = np.zeros((sections, len(block)), dtype=np.float32)
    at = np.minimum(np.searchsorted(block, ids), len(block) - 1)
    held = block[at] == ids
    matrix[rows[held], at[held]] = 1.0
    return matrix


def _mutual_best(similarity: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """The (i, j) section pairs that are each other's best match, above `threshold`, by i."""
    best_b, best_a = similarity.argmax(axis=1), similarity.argmax(axis=0)
    return [(i, int(j)) for i, j in enumerate(best_b) if best_a[j] == i and similarity[i, j] > threshold]


def _fill_gaps(anchors: list[tuple[int, int]], weaker: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The anchors (pairs in order on both pages) and the weaker pairs that sit in order between
    them. A question translated freely ("How do I resume training?" ~ "如何续训？") shares no
    identifier and scores below MATCH, yet sits where its translation sits. A pair in order with
    every anchor keeps them all in the longest run."""
    def in_order(i: int, j: int) -> bool:
        return all((a < i and b < j) or (a > i and b > j) for a, b in anchors)

    fitting = [(i, j) for i, j in weaker if (i, j) in anchors or in_order(i, j)]
    return _increasing_run(sorted(set(fitting) | set(anchors)))


def _increasing_run(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of (i, j) pairs, i ascending, whose j ascend too."""
    tails: list[int] = []  # tails[k]: index in pairs of the smallest j ending a run of k + 1
    tail_js: list[int] = []  # their j, for bisect
    before: list[int | None] = [None] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tail_js, j)
        before[n] = tails[at - 1] if at else None
        if at == len(tails):
            tails.append(n)
            tail_js.append(j)
        else:
            tails[at], tail_js[at] = n, j
    run, n = [], tails[-1] if tails else None
    while n is not None:
        run.append(pairs[n])
        n = before[n]
    return run[::-1]


def _identifiers(e: Entry) -> set[str]:
    return {t.lower() for t in _IDENTIFIER.findall(f"{e.heading}\n{e.text}")}


def _place(e: Entry) -> dict:
    return {"entry_id": e.id, "collection": e.collection, "doc": e.doc, "heading": e.heading, "lang": e.lang,
            "breadcrumb": list(e.breadcrumb), "line_start": e.line_start, "line_end": e.line_end, "url": e.url}
