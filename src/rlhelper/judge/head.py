"""The judge's trained part: a linear map on each side of the frozen encoder's vectors.

    q' = unit(q M_q),  p' = unit(p M_p),  P(answers) = sigmoid(scale * q'.p' + bias)

q and p are e5's vectors of the question ("query: ...") and of the entry's passage ("passage: ..."),
as the shipped int8 model computes them; M_q and M_p start as the identity (so training starts from
e5's own similarity), and are learnt with scale and bias. Why not fine-tune the transformer: one
step of 16 pairs costs about 9 CPU-seconds on this machine (eval/DECISIONS.md), so the time two
shared cores allow buys a few hundred steps, while the head learns from every pair for many passes
in seconds, on vectors computed once by the very model that serves them.

The loss is binary cross-entropy on the labelled pairs, plus EXTRA_WEIGHT x the same on EXTRA
passages drawn per pair from every passage of the training data, other than the question's answers
and passages under an answer's heading trail (the answer in another form); an L2 pull of each map
towards the identity keeps the head near e5 where the data says little. The questions of a tenth of
the question ids (a bank question and its noisy form share one) are held out, and the epoch with the
lowest held-out loss is kept. Adam, its rate decaying linearly over the passes; seeded.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

EPOCHS = 40
BATCH = 512
LEARNING_RATE = 2e-3
L2 = 1e-3  # on M - I, per element summed
EXTRA = 8  # other passages per pair, as negatives
EXTRA_WEIGHT = 0.5
HELD_OUT = 0.1  # share of question ids held out to pick the epoch
THREADS = 2


@dataclass
class Head:
    query: np.ndarray  # (d, d)
    passage: np.ndarray  # (d, d)
    scale: float
    bias: float
    epoch: int = 0
    held_out: dict | None = None  # figures on the held-out questions at the chosen epoch

    def apply(self, vectors: np.ndarray, side: str) -> np.ndarray:
        out = np.asarray(vectors, dtype=np.float32) @ (self.query if side == "query" else self.passage)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def trail(passage: str) -> str:
    """A passage's heading trail: what precedes its first ": " (search/judge.py's passage())."""
    return passage.split(": ", 1)[0]


def _auroc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def start(query_vectors: np.ndarray, passage_vectors: np.ndarray, qi: np.ndarray, pi: np.ndarray,
          labels: np.ndarray) -> tuple[float, float]:
    """(scale, bias) of a logistic fit of e5's own cosine on the pairs: where training starts."""
    from ..search.confidence import fit_logistic

    cos = (query_vectors[qi] * passage_vectors[pi]).sum(1)[:, None]
    weights, bias = fit_logistic(cos[labels == 1], cos[labels == 0], l2=1e-3)
    return float(weights[0]), float(bias)


def train_head(query_vectors: np.ndarray, passage_vectors: np.ndarray, passages: list[str], pairs: list[dict],
               query_row: dict[str, int], passage_row: dict[str, int], *, epochs: int = EPOCHS, seed: int = 13,
               log: Callable[[str], None] | None = None) -> Head:
    """The head trained on `pairs` ({"qid", "query", "passage", "label"}), whose texts index the vectors
    through `query_row` and `passage_row`."""
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(THREADS)
    qids = sorted({p["qid"] for p in pairs})
    held = set(rng.sample(qids, max(1, int(len(qids) * HELD_OUT)))) if len(qids) > 1 else set()
    qi = np.array([query_row[p["query"]] for p in pairs])
    pi = np.array([passage_row[p["passage"]] for p in pairs])
    labels = np.array([p["label"] for p in pairs], dtype=np.float32)
    is_held = np.array([p["qid"] in held for p in pairs])

    # Per query row, the passages it must not be given as a drawn negative: its answers' trails.
    trails = np.array([trail(p) for p in passages])
    forbidden = np.zeros((len(query_vectors), len(passages)), dtype=bool)
    for q, p, y in zip(qi, pi, labels, strict=True):
        if y == 1:
            forbidden[q] |= trails == trails[p]
    draw = np.random.default_rng(seed)

    def extra_negatives(rows: np.ndarray) -> np.ndarray:
        """EXTRA passage rows per pair, -1 where the draw hit one of the question's answers."""
        drawn = draw.integers(0, len(passages), (len(rows), EXTRA))
        return np.where(forbidden[qi[rows][:, None], drawn], -1, drawn)

    d = query_vectors.shape[1]
    Q = torch.tensor(query_vectors, dtype=torch.float32)
    P = torch.tensor(passage_vectors, dtype=torch.float32)
    first_scale, first_bias = start(query_vectors, passage_vectors, qi[~is_held], pi[~is_held], labels[~is_held])
    if log:
        log(f"start: scale {first_scale:.2f}, bias {first_bias:.2f}; {len(held)} of {len(qids)} question ids held out")
    delta_q = torch.zeros(d, d, requires_grad=True)
    delta_p = torch.zeros(d, d, requires_grad=True)
    log_scale = torch.tensor(float(np.log(max(first_scale, 1.0))), requires_grad=True)  # a similarity: scale > 0
    bias = torch.tensor(first_bias, requires_grad=True)
    optimizer = torch.optim.Adam([delta_q, delta_p, log_scale, bias], lr=LEARNING_RATE)
    steps = epochs * -(-int((~is_held).sum()) // BATCH)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.05, 1 - step / max(1, steps)))
    eye = torch.eye(d)

    def batch_loss(rows: np.ndarray, extra: np.ndarray):
        """The loss of `rows` (pairs) and their drawn negatives `extra`: each question and every
        passage mapped once, then the pairs' logits gathered from the (questions x passages) grid."""
        unique, inverse = np.unique(qi[rows], return_inverse=True)
        q = torch.nn.functional.normalize(Q[unique] @ (eye + delta_q), dim=-1)
        p = torch.nn.functional.normalize(P @ (eye + delta_p), dim=-1)
        grid = log_scale.exp() * q @ p.T + bias
        at = torch.tensor(inverse)
        loss = bce(grid[at, torch.tensor(pi[rows])], torch.tensor(labels[rows]))
        keep = extra >= 0
        if keep.any():
            q_at = np.repeat(inverse, EXTRA).reshape(-1, EXTRA)[keep]
            loss = loss + EXTRA_WEIGHT * bce(grid[torch.tensor(q_at), torch.tensor(extra[keep])],
                                             torch.zeros(int(keep.sum())))
        return loss, grid[at, torch.tensor(pi[rows])]

    bce = torch.nn.functional.binary_cross_entropy_with_logits
    train_rows = np.flatnonzero(~is_held)
    held_rows = np.flatnonzero(is_held)
    held_extra = extra_negatives(held_rows) if len(held_rows) else None
    best = None
    for epoch in range(1, epochs + 1):
        order = train_rows.copy()
        rng.shuffle(order)
        for s in range(0, len(order), BATCH):
            rows = order[s:s + BATCH]
            loss, _ = batch_loss(rows, extra_negatives(rows))
            loss = loss + L2 * ((delta_q ** 2).sum() + (delta_p ** 2).sum())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        figures = {"loss": 0.0, "auroc": None}
        if len(held_rows):
            with torch.no_grad():
                held_loss, scores = batch_loss(held_rows, held_extra)
            auroc = _auroc(scores.numpy(), labels[held_rows])
            figures = {"loss": round(float(held_loss), 5), "auroc": None if auroc is None else round(auroc, 4)}
        if log:
            log(f"epoch {epoch}: held-out loss {figures['loss']:.4f}, AUROC {figures['auroc']}")
        if best is None or figures["loss"] < best[0]["loss"]:
            best = (figures, epoch, delta_q.detach().clone(), delta_p.detach().clone(), float(log_scale.detach().exp()),
                    float(bias.detach()))
    figures, epoch, dq, dp, s, b = best
    return Head((eye + dq).numpy(), (eye + dp).numpy(), s, b, epoch, figures)
