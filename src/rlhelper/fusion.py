"""Rank fusion as pure functions: lists of ranked ids in, one fused ranking out.

Reciprocal rank fusion (Cormack et al., 2009) needs no score calibration
between BM25 and cosine similarity, which is why it is the default here: the
two retrievers' scores live on different scales and shift with the corpus.
Weights let one retriever count more (e.g. lexical for pasted error strings).
"""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked id lists: score(id) = sum_i w_i / (k + rank_i(id)), rank 1-based.

    Returns (id, score) pairs, best first; ties keep the order of first appearance
    so the result is deterministic.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
    order = {doc_id: i for i, doc_id in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def boost(
    fused: Sequence[tuple[int, float]],
    factors: dict[int, float],
) -> list[tuple[int, float]]:
    """Multiply chosen ids' scores (e.g. entries of a framework the query names) and re-sort.

    A multiplicative boost prefers the hinted framework among near-ties but
    lets a clearly better match from another framework stay on top.
    """
    boosted = [(doc_id, score * factors.get(doc_id, 1.0)) for doc_id, score in fused]
    order = {doc_id: i for i, (doc_id, _) in enumerate(fused)}
    return sorted(boosted, key=lambda item: (-item[1], order[item[0]]))
