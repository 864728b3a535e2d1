"""Hybrid retrieval over a loaded index: lexical + dense, fused, filtered, framework-aware.

The path of a query: normalise it (tracebacks -> error signature), run BM25 on
its tokens (plus glossary expansions across English/Chinese) and the embedder
on its text, fuse the two rankings with RRF, nudge entries of a framework the
query names, drop entries that are not answers (chrome, intros), and decide
whether anything answers at all (abstention).

Abstention needs a score that means the same thing from query to query; RRF
scores do not (they only encode ranks). The confidence is therefore the dense
cosine similarity of the top hit, raised when the lexical retriever agrees with
it, and the threshold is calibrated on the eval's dev split
(`rlhelper eval --calibrate`), stored in data/calibration.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from . import glossary, lexical
from .config import PACKAGE_DIR
from .errors import QueryError
from .fusion import boost, reciprocal_rank_fusion
from .query import NormalizedQuery, is_binary, normalize_query
from .schema import Hit

MODES = ("hybrid", "lexical", "dense")
CANDIDATES = 50  # depth taken from each retriever before fusion
FRAMEWORK_BOOST = 0.25  # at full hint strength, a hinted framework's entries score x1.25
MAX_QUERY_BYTES = 1_000_000
CALIBRATION_FILE = PACKAGE_DIR / "data" / "calibration.json"
DEFAULT_THRESHOLD = 0.35


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

    @property
    def normalized_query(self) -> str:
        return self.normalized.text

    @property
    def truncated(self) -> bool:
        return self.normalized.truncated


def load_threshold(mode: str = "hybrid", embedder_id: str | None = None) -> float:
    """The calibrated abstention threshold for a mode, or a conservative default."""
    try:
        data = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT_THRESHOLD
    if embedder_id and data.get("embedder") not in (None, embedder_id):
        return DEFAULT_THRESHOLD  # calibrated for another embedder: scores are not comparable
    return float(data.get(mode, {}).get("threshold", DEFAULT_THRESHOLD))


def check_query(query: str) -> str:
    """Refuse what cannot be searched, with a sentence that says why."""
    if query is None or not query.strip():
        raise QueryError("The query is empty: paste an error message, a traceback or a question.")
    if is_binary(query):
        raise QueryError("The query looks like binary data, not text: paste the error message or log text.")
    return query


class Retriever:
    """Searches one loaded index. The embedder is loaded on first dense search only."""

    def __init__(self, index, embedder_factory, *, threshold: float | None = None):
        self.index = index
        self._embedder_factory = embedder_factory
        self.threshold = threshold

    @cached_property
    def embedder(self):
        return self._embedder_factory()

    @cached_property
    def _columns(self) -> dict[str, np.ndarray]:
        """Per-entry attributes as arrays, so filters are vectorised masks."""
        entries = self.index.entries
        return {
            "framework": np.array([e.framework for e in entries]),
            "collection": np.array([e.collection for e in entries]),
            "lang": np.array([e.lang for e in entries]),
            "answerable": np.array([e.answerable for e in entries], dtype=bool),
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

    def lexical_ranking(self, text: str, allowed: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        tokens = glossary.expand(lexical.tokenize(text))
        if not tokens:
            return [], []
        ids, scores = self.index.bm25.search(tokens, k, allowed=allowed)
        keep = scores > 0
        return [int(i) for i in ids[keep]], [float(s) for s in scores[keep]]

    def dense_ranking(self, text: str, allowed: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        qvec = self.query_vector(text)
        ids, scores = self.index.dense_search(qvec, k, allowed=allowed)
        return [int(i) for i in ids], [float(s) for s in scores]

    def framework_factors(self, hints: dict[str, float], ids) -> dict[int, float]:
        if not hints:
            return {}
        frameworks = self._columns["framework"]
        return {i: 1.0 + FRAMEWORK_BOOST * hints.get(str(frameworks[i]), 0.0) for i in ids}

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        framework=None,
        collection=None,
        lang=None,
        mode: str = "hybrid",
    ) -> Retrieval:
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}: use one of {', '.join(MODES)}.")
        check_query(query)
        normalized = normalize_query(query)
        if not normalized.text.strip():
            raise QueryError("Nothing searchable was left in the query after removing log noise; paste the error line.")
        allowed = self.allowed_mask(framework=framework, collection=collection, lang=lang)
        depth = max(CANDIDATES, k)

        lex_ids, lex_scores = ([], []) if mode == "dense" else self.lexical_ranking(normalized.text, allowed, depth)
        dense_ids, dense_scores = ([], []) if mode == "lexical" else self.dense_ranking(normalized.text, allowed, depth)

        rankings = [r for r in (lex_ids, dense_ids) if r]
        fused = reciprocal_rank_fusion(rankings) if rankings else []
        fused = boost(fused, self.framework_factors(normalized.frameworks, [i for i, _ in fused]))

        lex_rank = {i: r for r, i in enumerate(lex_ids, start=1)}
        dense_rank = {i: r for r, i in enumerate(dense_ids, start=1)}
        entries = self.index.entries
        hits = [
            Hit(rank=r, score=s, entry=entries[i], lexical_rank=lex_rank.get(i), dense_rank=dense_rank.get(i))
            for r, (i, s) in enumerate(fused[:k], start=1)
        ]
        top_row = fused[0][0] if fused else None
        confidence = self.confidence(top_row, dict(zip(dense_ids, dense_scores, strict=True)), lex_ids, normalized.text)
        threshold = self.threshold if self.threshold is not None else load_threshold(mode)
        abstained = not hits or confidence < threshold
        return Retrieval(query, normalized, hits, abstained, confidence, mode, list(normalized.notices))

    def confidence(self, row: int | None, dense_by_row: dict[int, float], lex_ids: list[int], text: str) -> float:
        """How sure we are the top entry answers: its cosine to the query, plus a
        bonus when BM25 ranks it first too (two independent signals agreeing)."""
        if row is None:
            return 0.0
        cosine = dense_by_row.get(row)
        if cosine is None:  # surfaced by BM25 only (or lexical mode): measure it directly
            cosine = float(np.dot(self.index.vector(row), self.query_vector(text)))
        agreement = 0.1 if lex_ids[:1] == [row] else 0.0
        return cosine + agreement
