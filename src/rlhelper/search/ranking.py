"""What one search knows about a query while it ranks: its terms as typed and as meant (spelling,
glossary), how the question bank and each retriever ranked the entries, and what one section is."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from ..index import lexical, questions
from ..index.learned import SearchedQuestions
from ..schema import Entry
from . import glossary
from .frameworks import HINTED_NAMES
from .phase import PHASE_WORDS
from .query import NormalizedQuery
from .spelling import Corrector

MISSPELT_NAME = 0.5  # hint strength of a misspelt framework name (a spelt-out one: 0.6-0.8)
CROSS_LANGUAGE_WEIGHT = 0.5  # an English query's glossary terms in Chinese count half (glossary.py)
CONTEXT_WEIGHT = 0.3  # words of the traceback's deepest framework frame ("rollout"), a hint not a query
PHASE_WEIGHT = 0.5  # the words naming the phase a traceback failed in ("training"; phase.py), a hint
DETAIL_WEIGHT = 0.5  # words only in the sentences after an exception message's first (query.py)
SPELLING_WEIGHT = 0.8  # a known word one edit from a word no entry holds ("memroy" -> memory; spelling.py)

def section_key(e: Entry) -> tuple:
    """What the parts of one section share."""
    return e.collection, e.doc, e.anchor, tuple(e.breadcrumb)


def split_sections(entries: list[Entry]) -> dict[tuple, list[int]]:
    """Rows of each section that was split into parts, in part order."""
    groups: dict[tuple, list[int]] = {}
    for row, e in enumerate(entries):
        if e.parts > 1:
            groups.setdefault(section_key(e), []).append(row)
    return {key: sorted(rows, key=lambda r: entries[r].part) for key, rows in groups.items()}


def whole_section(entries: list[Entry], sections: dict[tuple, list[int]], row: int) -> Entry:
    """The entry at `row`; for a part of a long section (`sections`: split_sections), the whole
    section as one entry, keeping the part's id and spanning all the parts' lines."""
    entry = entries[row]
    rows = sections.get(section_key(entry)) if entry.parts > 1 else None
    if not rows or len(rows) < 2:
        return entry
    parts = [entries[r] for r in rows]
    return replace(entry, text="\n".join(p.text for p in parts), line_start=parts[0].line_start,
                   line_end=parts[-1].line_end, part=1, parts=1)


@dataclass
class AskedAs:
    """Entries as the question bank ranked them: by their best question's BM25 and cosine, the
    question that did it per entry row, and every question's cosine with the query."""

    lexical: list[int] = field(default_factory=list)
    lexical_best: dict[int, int] = field(default_factory=dict)
    dense: list[int] = field(default_factory=list)
    dense_best: dict[int, int] = field(default_factory=dict)
    cosines: np.ndarray | None = None
    closer: dict[int, int] = field(default_factory=dict)  # row -> its question nearer the query than its text
    # the questions searched: the shipped ones, and the user's accepted ones after them
    bank: questions.QuestionIndex | SearchedQuestions | None = None

    @staticmethod
    def rank_in(ranked: list[int], row: int) -> float:
        try:
            return ranked.index(row) + 1
        except ValueError:
            return math.inf


@dataclass
class Ranking:
    """One query's candidate lists: fused (best first, one per section) and each retriever's."""

    fused: list[tuple[int, float]]
    terms: QueryTerms
    lex_ids: list[int]
    dense_ids: list[int]
    dense_scores: list[float]
    asked: AskedAs = field(default_factory=AskedAs)
    pinned: dict[tuple, str] = field(default_factory=dict)  # section group -> the accepted question that pinned it
    pinned_lead: bool = False  # the top entry was accepted by the user for this question
    demoted: frozenset[int] = frozenset()  # rows of `fused` a vote demoted for this question: never to lead

    def lexical_rank(self, row: int) -> int | None:
        return self._lexical_ranks.get(row)

    def dense_rank(self, row: int) -> int | None:
        return self._dense_ranks.get(row)

    @cached_property
    def _lexical_ranks(self) -> dict[int, int]:
        return {i: r for r, i in enumerate(self.lex_ids, start=1)}

    @cached_property
    def _dense_ranks(self) -> dict[int, int]:
        return {i: r for r, i in enumerate(self.dense_ids, start=1)}


@dataclass(frozen=True)
class QueryTerms:
    """A query's BM25 terms, worked out once per search.

    tokens: its tokens, the glossary's terms for them, its word pairs (weight 1 + ln qtf);
    words: its plain tokens (for coverage); extra: hint terms with a weight of their own,
    the Chinese glossary terms of an English query, the words of a traceback's frame and
    the corrections of misspelt words.
    """

    tokens: list[str]
    words: list[str]
    extra: dict[str, float]
    corrected: dict[str, str] = field(default_factory=dict)  # misspelt word -> its closest known word

    @classmethod
    def of(cls, normalized: NormalizedQuery, corrector: Corrector | None = None) -> QueryTerms:
        words = lexical.tokenize(normalized.text)
        extra = dict.fromkeys(lexical.tokenize(normalized.context), CONTEXT_WEIGHT)
        extra.update(dict.fromkeys(PHASE_WORDS.get(normalized.phase, ()), PHASE_WEIGHT))
        detail_only = _detail_only(normalized)
        if detail_only:
            extra.update(dict.fromkeys(detail_only, DETAIL_WEIGHT))
        extra.update(dict.fromkeys(glossary.cross_language(words), CROSS_LANGUAGE_WEIGHT))
        corrected = {}
        if corrector is not None:
            for word in set(words):
                corrections = corrector.corrections(word)
                extra.update(dict.fromkeys(corrections, SPELLING_WEIGHT))
                if corrections:
                    corrected[word] = corrections[0]
        tokens = [t for t in glossary.expand(words) + lexical.phrases(normalized.text)
                  if t not in detail_only and not detail_only.intersection(t.split("+"))]
        return cls(tokens, words, extra, corrected)

    def misspelt_frameworks(self) -> dict[str, float]:
        """Framework hints from misspelt names ("rilnf", "skime"), at MISSPELT_NAME strength."""
        return {name: MISSPELT_NAME for name in self.corrected.values() if name in HINTED_NAMES}

    def as_meant(self) -> tuple[list[str], list[str]]:
        """(tokens, words) with misspelt words read as their corrections: what the abstention
        signals weigh, so a typo is not taken for a word the docs do not cover."""
        return ([self.corrected.get(t, t) for t in self.tokens], [self.corrected.get(w, w) for w in self.words])


def _detail_only(normalized: NormalizedQuery) -> set[str]:
    """Words that occur only in the exception message's detail sentences: an allocator's
    "GPU 0 has a total capacity of ... free" matched an entry about memory that stays free."""
    if not normalized.detail:
        return set()
    rest = normalized.text.replace(normalized.detail, " ", 1)
    return set(lexical.tokenize(normalized.detail)) - set(lexical.tokenize(rest))
