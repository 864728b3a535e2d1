"""Paired bootstrap intervals: is one mode better than another on this set, or is it noise?

    compare(result.items, "hybrid", "judge") -> [Difference("recall@1", 0.652, 0.739, 0.087, -0.04, 0.22), ...]

A set of 23 answerable items moves Recall@1 by 4.3 points per item, so a difference is read with its
interval. Both modes answered the same items, so the items are resampled, not the modes: each of
RESAMPLES draws the answerable items with replacement and, apart, the unanswerable ones (their counts
stay as in the set: a metric over one kind never divides by a count the draw changed), computes each
metric for both modes on the draw, and keeps the difference. The interval holds the middle 95 % of
those differences (percentile method). An interval that excludes 0 is a difference the set can see.
Seeded: the same results give the same intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95
SEED = 20261127
K = 10


@dataclass(frozen=True)
class Difference:
    metric: str
    a: float | None
    b: float | None
    difference: float | None  # b - a
    low: float | None
    high: float | None

    def to_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _auroc(positives: np.ndarray, negatives: np.ndarray, chunk: int = 100) -> np.ndarray:
    """AUROC of each row (a draw): P(a positive's score > a negative's), ties counting half."""
    out = []
    for start in range(0, len(positives), chunk):  # (chunk, n_pos, n_neg) at a time: bounded memory
        p, n = positives[start:start + chunk, :, None], negatives[start:start + chunk, None, :]
        out.append((p > n).mean(axis=(1, 2)) + 0.5 * (p == n).mean(axis=(1, 2)))
    return np.concatenate(out)


def _columns(items, mode: str) -> dict[str, np.ndarray]:
    """Per-item figures of one mode: what each metric averages."""
    first = []
    for r in items:
        gains = r.outcomes[mode].gains[:K]
        first.append(next((rank for rank, g in enumerate(gains, start=1) if g), 0))
    first = np.array(first)
    abstained = np.array([r.outcomes[mode].abstained for r in items], dtype=float)
    weak = np.array([r.outcomes[mode].weak for r in items], dtype=float)
    top_right = first == 1
    answerable = np.array([r.item.answerable for r in items])
    return {
        "recall@1": (first == 1).astype(float),
        "recall@3": ((first >= 1) & (first <= 3)).astype(float),
        "mrr@10": np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0),
        "abstained": abstained,
        "abstained_or_weak": np.maximum(abstained, weak),
        "confidence": np.array([r.outcomes[mode].confidence for r in items], dtype=float),
        "correct": np.where(answerable, top_right & (abstained == 0), abstained == 1).astype(float),
    }


METRICS = ("recall@1", "recall@3", "mrr@10", "wrongly_abstained", "unanswerable_abstained",
           "unanswerable_abstained_or_weak", "abstention_auroc", "correct")


def _figures(cols: dict[str, np.ndarray], pos: np.ndarray, neg: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric for each draw: `pos` (draws, n_answerable) and `neg` (draws, n_unanswerable) index rows."""
    out = {}
    if pos.shape[1]:
        for name in ("recall@1", "recall@3", "mrr@10"):
            out[name] = cols[name][pos].mean(1)
        out["wrongly_abstained"] = cols["abstained"][pos].mean(1)
    if neg.shape[1]:
        out["unanswerable_abstained"] = cols["abstained"][neg].mean(1)
        out["unanswerable_abstained_or_weak"] = cols["abstained_or_weak"][neg].mean(1)
    if pos.shape[1] and neg.shape[1]:
        out["abstention_auroc"] = _auroc(cols["confidence"][pos], cols["confidence"][neg])
    both = np.concatenate([pos, neg], axis=1)
    out["correct"] = cols["correct"][both].mean(1)
    return out


def compare(items: Sequence, a: str, b: str, *, resamples: int = RESAMPLES, level: float = LEVEL,
            seed: int = SEED) -> list[Difference]:
    """b - a for every metric, with its paired bootstrap interval, over `items` (harness.ItemResult)."""
    items = list(items)
    answerable = np.array([i for i, r in enumerate(items) if r.item.answerable], dtype=int)
    unanswerable = np.array([i for i, r in enumerate(items) if not r.item.answerable], dtype=int)
    cols_a, cols_b = _columns(items, a), _columns(items, b)
    observed_a = _figures(cols_a, answerable[None, :], unanswerable[None, :])
    observed_b = _figures(cols_b, answerable[None, :], unanswerable[None, :])
    rng = np.random.default_rng(seed)
    draws_pos = answerable[rng.integers(0, len(answerable), (resamples, len(answerable)))] if len(answerable) \
        else np.zeros((resamples, 0), dtype=int)
    draws_neg = unanswerable[rng.integers(0, len(unanswerable), (resamples, len(unanswerable)))] if len(unanswerable) \
        else np.zeros((resamples, 0), dtype=int)
    drawn_a, drawn_b = _figures(cols_a, draws_pos, draws_neg), _figures(cols_b, draws_pos, draws_neg)
    tail = (1 - level) / 2 * 100
    out = []
    for name in METRICS:
        if name not in observed_a:
            out.append(Difference(name, None, None, None, None, None))
            continue
        low, high = np.percentile(drawn_b[name] - drawn_a[name], [tail, 100 - tail])
        va, vb = float(observed_a[name][0]), float(observed_b[name][0])
        out.append(Difference(name, va, vb, vb - va, float(low), float(high)))
    return out
