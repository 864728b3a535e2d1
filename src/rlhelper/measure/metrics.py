"""Retrieval and abstention metrics: small pure functions over relevance lists and confidences.

In the spirit of sentence-transformers' InformationRetrievalEvaluator: a
ranking is a list of gains (1 where the hit at that rank matches an expected
entry, sets.relevance_gains), and every metric is a function of such lists,
tested on hand-made rankings.

Conventions (they decide the numbers, so they are written down):

* Any expected entry answers an item, so Recall@k is "some expected entry is
  in the top k" (a hit rate).
* Ranking metrics are over answerable items and ignore abstention: they judge
  the ranking. "answered correctly" judges what the user sees (not abstained
  and the top hit is right); abstention precision/recall treat "should
  abstain" (nothing expected) as the positive class, over all items.
* Abstention is also judged without its threshold: the AUROC of the
  confidence (answerable vs unanswerable items), and the share of answerable
  items abstained on if the threshold were moved to abstain on
  TARGET_ABSTENTION_RECALL of the unanswerable ones. A calibration change
  moves the first two figures; only a better confidence signal moves these.
* Between "no match" and a plain answer sits the weak match (confidence.py):
  "unanswerable abstained or weak" is the share of unanswerable items where
  the user was told nothing matched or that the match is weak; "answerable
  flagged weak" is what that costs on the answerable ones.
* nDCG@10 uses binary gains; a hit only gains when it matches an expected entry
  no earlier hit matched (so the two halves of one long section do not count
  twice), and the ideal DCG has min(distinct expected entries, k) gains.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

CUTOFFS = (1, 3, 5)
K = 10
# Calibration: at most this share of answerable dev items may be abstained on.
MAX_WRONGLY_ABSTAINED = 0.05
# The abstention target (share of unanswerable items abstained on) the trade-off row is read at.
TARGET_ABSTENTION_RECALL = 0.8


def recall_at_k(gains: Sequence[int], k: int) -> float:
    """1.0 when some expected entry is in the top k (any expected entry answers the query)."""
    return 1.0 if any(gains[:k]) else 0.0


def reciprocal_rank(gains: Sequence[int], k: int = K) -> float:
    """1/rank of the first relevant hit within the top k, else 0."""
    for rank, gain in enumerate(gains[:k], start=1):
        if gain:
            return 1.0 / rank
    return 0.0


def dcg(gains: Sequence[int], k: int = K) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains[:k], start=1))


def ndcg_at_k(gains: Sequence[int], n_relevant: int, k: int = K) -> float:
    """DCG of the ranking over the DCG of min(n_relevant, k) relevant hits on top."""
    ideal = dcg([1] * min(n_relevant, k), k)
    return dcg(gains, k) / ideal if ideal else 0.0


def first_relevant_rank(gains: Sequence[int]) -> int | None:
    return next((rank for rank, g in enumerate(gains, start=1) if g), None)


def ratio(numerator: int, denominator: int) -> float | None:
    """None (not 0) when there is nothing to divide by: "no abstentions" is not "all wrong"."""
    return numerator / denominator if denominator else None


def abstention_scores(abstained: Sequence[bool], should_abstain: Sequence[bool]) -> dict:
    """Abstention as a classifier whose positive class is "the docs do not answer".

    precision: correct abstentions / all abstentions; recall: correct abstentions /
    unanswerable items; wrongly_abstained: abstentions on answerable items / answerable items.
    """
    pairs = list(zip(abstained, should_abstain, strict=True))
    correct = sum(1 for a, s in pairs if a and s)
    wrong = sum(1 for a, s in pairs if a and not s)
    unanswerable = sum(1 for _, s in pairs if s)
    return {
        "abstention_precision": ratio(correct, correct + wrong),
        "abstention_recall": ratio(correct, unanswerable),
        "wrongly_abstained": ratio(wrong, len(pairs) - unanswerable),
    }


def share_ceiling(scores: Sequence[float], share: float) -> float:
    """The lowest score at or below which at least `share` of `scores` fall (scores must be non-empty)."""
    return sorted(scores)[math.ceil(share * len(scores)) - 1]


def abstention_separation(answerable: Sequence[float], unanswerable: Sequence[float],
                          recall: float = TARGET_ABSTENTION_RECALL) -> dict:
    """How well the confidence separates the two classes, whatever the threshold.

    auroc: the chance that an unanswerable item gets a lower confidence than an
    answerable one (ties count half). wrongly_abstained_at_target: the share of
    answerable items a threshold would abstain on if it were set to abstain on
    `recall` of the unanswerable ones, the price of meeting the target on this set.
    """
    if not answerable or not unanswerable:
        return {"abstention_auroc": None, "wrongly_abstained_at_target": None}
    below = sum(sum(1.0 if u < a else 0.5 if u == a else 0.0 for u in unanswerable) for a in answerable)
    cutoff = share_ceiling(unanswerable, recall)  # a threshold just above it abstains on `recall` of them
    return {"abstention_auroc": below / (len(answerable) * len(unanswerable)),
            "wrongly_abstained_at_target": sum(1 for a in answerable if a <= cutoff) / len(answerable)}


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


# --- choosing an abstention threshold (calibration.py fits the model) ---------------------


def choose_threshold(answerable: Sequence[float], unanswerable: Sequence[float],
                     max_wrongly_abstained: float = MAX_WRONGLY_ABSTAINED) -> float:
    """Threshold t (abstain when confidence < t) that abstains on the most unanswerable items
    while abstaining on at most `max_wrongly_abstained` of the answerable ones.

    Every threshold between two neighbouring confidences gives the same outcome,
    so candidates are the midpoints (and just below the lowest value: abstain on
    nothing); ties go to fewer wrong abstentions, then the lower threshold.
    """
    values = sorted(set(answerable) | set(unanswerable))
    if not values:
        return 0.0
    candidates = [values[0] - 1e-6] + [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)]
    candidates.append(values[-1] + 1e-6)
    best, best_key = candidates[0], None
    for t in candidates:
        wrong = sum(1 for c in answerable if c < t)
        if answerable and wrong / len(answerable) > max_wrongly_abstained:
            continue
        key = (sum(1 for c in unanswerable if c < t), -wrong, -t)
        if best_key is None or key > best_key:
            best, best_key = t, key
    return round(best, 6)
