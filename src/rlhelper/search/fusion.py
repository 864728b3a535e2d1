"""Rank fusion as pure functions: lists of ranked ids in, one fused ranking out.

Reciprocal rank fusion (Cormack et al., 2009) needs no score calibration
between BM25 and cosine similarity, which is why it is the default here: the
two retrievers' scores live on different scales and shift with the corpus.
Weights let one retriever count more (e.g. lexical for pasted error strings).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence


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


def pin_and_demote(
    fused: Sequence[tuple[int, float]],
    pinned: Sequence[int],
    demoted: Sequence[int],
    *,
    group: Callable[[int], Hashable] = lambda doc_id: doc_id,
) -> list[tuple[int, float]]:
    """Apply what a user said about a ranking: `pinned` ids lead, in their order (one the ranking
    lacks is added); each `demoted` id drops below the id after it and never leads. Demotion wins
    over a pin. `group(id)` says which ids are one result (a section and its translation):
    a pin or a demotion of one applies to the id of its group that is in the ranking.

    Scores are raised or lowered just enough to stay best first.
    """
    out = list(fused)
    down = {group(d) for d in demoted}
    present = {group(i): n for n, (i, _) in enumerate(out)}
    lead = []
    for pin in pinned:
        g = group(pin)
        if g in down or any(group(i) == g for i, _ in lead):
            continue
        lead.append(out[present[g]] if g in present else (pin, 0.0))
    if lead:
        chosen = {group(i) for i, _ in lead}
        out = lead + [item for item in out if group(item[0]) not in chosen]
    for g in down:
        at = next((n for n, (i, _) in enumerate(out) if group(i) == g), None)
        if at is not None and at + 1 < len(out):
            out[at], out[at + 1] = out[at + 1], out[at]
    if out and group(out[0][0]) in down:  # two demoted in a row: the first that is not leads
        first = next((n for n, (i, _) in enumerate(out) if group(i) not in down), None)
        if first is not None:
            out.insert(0, out.pop(first))
    return _descending(out, raised=len(lead))


def _descending(items: list[tuple[int, float]], raised: int) -> list[tuple[int, float]]:
    """The same order with scores made non-increasing: the first `raised` (pinned) above the
    best score that was there, every other at most the one before it."""
    if not items:
        return items
    best = max(score for _, score in items)
    step = max(abs(best), 1e-6) * 1e-3
    out = []
    for n, (doc_id, score) in enumerate(items):
        if n < raised:
            score = best + step * (raised - n)
        elif out and score > out[-1][1]:
            score = out[-1][1] - step * 1e-3
        out.append((doc_id, score))
    return out
