"""Why the judge became a bi-encoder: the probes behind eval/DECISIONS.md ("The judge").

    python eval/experiments/judge_probes.py overfit  PAIRS [--lr 2e-5]  # can the cross-encoder loop fit 48 pairs?
    python eval/experiments/judge_probes.py cross    PAIRS [--lr 1e-4] [--pairs-n 2000] [--mean-pool]
    python eval/experiments/judge_probes.py zeroshot PAIRS              # the untrained bi-encoder's cosine

PAIRS is `rlhelper judge build-data`'s file (training data only, no eval item). `cross` trains the
cross-encoder recipe on pairs of 90 % of the questions and scores the pairs of the other 10 %
(held out by question, crc32 of its text); `zeroshot` scores those held-out pairs with the bundled
all-MiniLM-L6-v2's cosine, untrained. The trained bi-encoder's figures on the same held-out pairs:
`python eval/experiments/judge_probes.py bi PAIRS [--pairs-n 2000]`. Each prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import zlib
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def split(pairs_file: Path) -> tuple[list[dict], list[dict]]:
    pairs = [json.loads(line) for line in pairs_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    held = [zlib.crc32(p["query"].encode()) % 10 == 0 for p in pairs]
    return [p for p, h in zip(pairs, held, strict=True) if not h], [
        p for p, h in zip(pairs, held, strict=True) if h
    ]


def report(name: str, pairs: list[dict], scores: np.ndarray) -> None:
    from sklearn.metrics import roc_auc_score

    labels = np.array([p["label"] for p in pairs])
    figures = {"pairs": len(pairs), "AUROC": roc_auc_score(labels, scores)}
    for lang in ("en", "zh"):
        mask = np.array([p["lang"] == lang for p in pairs])
        if 0 < labels[mask].sum() < mask.sum():
            figures[f"AUROC {lang}"] = roc_auc_score(labels[mask], scores[mask])
    by_query: dict[str, list] = {}
    for p, s in zip(pairs, scores, strict=True):
        by_query.setdefault(p["query"], []).append((s, p["label"]))
    answerable = [v for v in by_query.values() if any(label for _, label in v)]
    figures["top-1 within a question"] = float(np.mean([max(v)[1] for v in answerable]))
    best = [(max(v)[0], any(label for _, label in v)) for v in by_query.values()]
    figures["abstention AUROC (best score)"] = roc_auc_score([a for _, a in best], [s for s, _ in best])
    print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}, flush=True)


def pair_features(tokenizer, batch: list[dict], max_length: int):
    return tokenizer([p["query"] for p in batch], [p["passage"] for p in batch], padding=True, truncation=True,
                     max_length=max_length, return_tensors="pt")


def start_cross_encoder():
    """The first recipe's start: the bundled encoder with a fresh one-logit head on [CLS], seed 13."""
    import torch
    from sentence_transformers import CrossEncoder

    from rlhelper.index.embed import bundled_minilm_folder

    torch.manual_seed(13)
    model = CrossEncoder(str(bundled_minilm_folder()), num_labels=1, max_length=128, device="cpu")
    return model.model, model.tokenizer


def cross_scores(network, tokenizer, pairs: list[dict], max_length: int, pool) -> np.ndarray:
    import torch

    out = []
    with torch.no_grad():
        for start in range(0, len(pairs), 32):
            batch = pairs[start : start + 32]
            features = pair_features(tokenizer, batch, max_length)
            out += pool(network, features).tolist()
    return np.array(out)


def cross(args) -> None:
    """The first recipe (a CrossEncoder, a fresh head on [CLS], or on the tokens' mean with --mean-pool)."""
    import torch

    from rlhelper.judge.train import sample

    train_pairs, held = split(args.pairs)
    train_pairs = sample(train_pairs, args.pairs_n)
    network, tokenizer = start_cross_encoder()
    head = torch.nn.Linear(network.config.hidden_size, 1)

    def pool(net, features):
        if not args.mean_pool:
            return net(**features).logits.view(-1)
        tokens = net.bert(**features).last_hidden_state
        mask = features["attention_mask"].unsqueeze(-1).float()
        return head((tokens * mask).sum(1) / mask.sum(1)).view(-1)

    params = list(network.parameters()) + (list(head.parameters()) if args.mean_pool else [])
    steps = -(-len(train_pairs) // 16)
    warmup = max(1, steps // 10)
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup)),
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    network.train()
    started = time.perf_counter()
    for start in range(0, len(train_pairs), 16):
        batch = train_pairs[start : start + 16]
        features = pair_features(tokenizer, batch, 128)
        loss = loss_fn(pool(network, features), torch.tensor([float(p["label"]) for p in batch]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    network.eval()
    print(f"trained {steps} steps in {time.perf_counter() - started:.0f} s", flush=True)
    report("held out", held, cross_scores(network, tokenizer, held, 128, pool))
    report(
        "own training pairs (300)",
        train_pairs[:300],
        cross_scores(network, tokenizer, train_pairs[:300], 128, pool),
    )


def overfit(args) -> None:
    """48 pairs (24 answers, 24 not), 12 passes, no schedule: the training loss per pass."""
    import torch

    train_pairs, _ = split(args.pairs)
    random.Random(1).shuffle(train_pairs)
    chosen = [p for p in train_pairs if p["label"]][:24] + [p for p in train_pairs if not p["label"]][:24]
    network, tokenizer = start_cross_encoder()
    network.train()
    optimizer = torch.optim.AdamW(network.parameters(), lr=args.lr, weight_decay=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for epoch in range(12):
        random.Random(epoch).shuffle(chosen)
        total = 0.0
        for start in range(0, len(chosen), 16):
            batch = chosen[start : start + 16]
            features = pair_features(tokenizer, batch, 128)
            loss = loss_fn(
                network(**features).logits.view(-1), torch.tensor([float(p["label"]) for p in batch])
            )
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item() * len(batch)
        print(f"pass {epoch + 1}: loss {total / len(chosen):.4f}", flush=True)


def bi_scores(model, pairs: list[dict]) -> np.ndarray:
    queries = model.encode([p["query"] for p in pairs], normalize_embeddings=True, batch_size=64)
    passages = model.encode([p["passage"] for p in pairs], normalize_embeddings=True, batch_size=64)
    return (queries * passages).sum(1)


def zeroshot(args) -> None:
    from rlhelper.judge.train import start_model

    _, held = split(args.pairs)
    report("held out, untrained cosine", held, bi_scores(start_model(128), held))


def bi(args) -> None:
    from rlhelper.judge import train

    train_pairs, held = split(args.pairs)
    model, scale, bias = train.train(train.sample(train_pairs, args.pairs_n), max_length=128)
    report(f"held out, trained bi-encoder (scale {scale:.1f}, bias {bias:.1f})", held, bi_scores(model, held))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probe", choices=["overfit", "cross", "zeroshot", "bi"])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--pairs-n", type=int, default=2000)
    parser.add_argument("--mean-pool", action="store_true")
    args = parser.parse_args()
    args.lr = args.lr or (2e-5 if args.probe == "overfit" else 1e-4)
    sys.stdout.reconfigure(line_buffering=True)
    {"overfit": overfit, "cross": cross, "zeroshot": zeroshot, "bi": bi}[args.probe](args)


if __name__ == "__main__":
    main()
