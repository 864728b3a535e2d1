"""Does fine-tuning e5's top layers make a judge that orders real reports better? (issue 35, point 1)

    python eval/experiments/judge_toplayers.py [--pairs train/judge/pairs.jsonl] [--base train/judge/base]
        [--top 2] [--questions 2500] [--steps 300] [--out /tmp/judgecv/toplayers]

The lower layers of e5-small (train/judge/base, fp32) stay frozen: their output for every text is
computed once and cached (`--out`/lower.*.pt); only the top `--top` layers, then mean pooling, a scale
and a bias are trained, on a seeded sample of `--questions` question ids of the judge's pairs
(judge build-data; without it, a sample of the written reports and unanswerable reports paired the
same way: `training_pairs`; no eval item) with binary cross-entropy, plus the other passages of the
batch as negatives at half weight. A step costs the top layers only.

Scored on eval items the pairs never saw (eval/issues.jsonl both splits, and the dev splits of
written_reports, seeds, official): the pipeline's (hybrid) first five hits, ordered by the new model's
probability, against the same hits ordered by the shipped judge (int8 ONNX, head): R@1 of each order,
per set and language, and the AUROC of the best probability (answerable against unanswerable items).
Only figures are printed.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from rlhelper.api import Helper
from rlhelper.judge.data import SEED
from rlhelper.measure.metrics import abstention_separation
from rlhelper.measure.sets import entry_locations, load_eval_set, relevance_gains
from rlhelper.search.judge import JUDGED, PASSAGE_PREFIX, QUERY_PREFIX, passage

ROOT = Path(__file__).resolve().parents[2]
EVAL = (("issues", None), ("written_reports", "dev"), ("seeds", "dev"), ("official", "dev"))
MAX_LENGTH = 128


def eval_items(helper: Helper) -> list[dict]:
    """(set, lang, answerable, normalized query, the first five passages, their gains) per eval item."""
    out = []
    for name, split in EVAL:
        for item in load_eval_set(ROOT / "eval" / f"{name}.jsonl", split):
            if item.previous:
                continue
            found = helper.retrieve(item.query, k=JUDGED, mode="hybrid")
            hits = found.hits[:JUDGED]
            if not hits:
                continue
            out.append({"set": name, "lang": item.lang, "answerable": item.answerable, "query": found.normalized_query,
                        "passages": [passage(h.entry) for h in hits],
                        "gains": relevance_gains([entry_locations(h.entry) for h in hits], item.expected)})
    return out


def training_pairs(pairs_file: Path, questions: int, cache: Path) -> list[dict]:
    """`questions` question ids of `pairs_file` (judge build-data) when it exists; else (build-data takes
    hours on two shared cores) a sample made the same way from the written reports and the unanswerable
    reports alone, the users' words of the training data: each with its entry and the hybrid retriever's
    near misses (data.report_pairs, data.unanswerable_pairs), kept in `cache` for the next run."""
    from rlhelper.judge import data

    if pairs_file.is_file() or cache.is_file():
        pairs = data.read(pairs_file if pairs_file.is_file() else cache)
        qids = sorted({p["qid"] for p in pairs})
        chosen = set(random.Random(SEED).sample(qids, min(questions, len(qids))))
        return [p for p in pairs if p["qid"] in chosen]
    helper = Helper.load(user_bank=False, mode="hybrid")
    answered, _ = data.without_eval_lookalikes(data.read_reports(), "text")
    unanswered, _ = data.without_eval_lookalikes(data.read_unanswered_reports(), "query")
    rng = random.Random(SEED)
    answered = rng.sample(answered, min(len(answered), questions * 4 // 5))
    unanswered = rng.sample(unanswered, min(len(unanswered), questions - len(answered)))
    pairs, _ = data.report_pairs(helper, answered)
    pairs += data.unanswerable_pairs(helper, unanswered)
    data.write(pairs, cache)
    return pairs


def additive_mask(mask):
    """(batch, 1, 1, width): 0 where a token is, the float minimum where padding is (BertLayer's attention mask)."""
    import torch

    return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min


class Lower:
    """The frozen lower layers' output per text (float16, its own length), computed once and cached."""

    def __init__(self, model, tokenizer, top: int, cache: Path):
        import torch

        self.model, self.tokenizer, self.top, self.cache = model, tokenizer, top, cache
        self.states: dict[str, torch.Tensor] = torch.load(cache) if cache.is_file() else {}

    def compute(self, texts: list[str], batch: int = 32) -> None:
        import torch

        missing = sorted({t for t in texts if t not in self.states}, key=len)
        started = time.time()
        layers = self.model.encoder.layer[:len(self.model.encoder.layer) - self.top]
        with torch.no_grad():
            for start in range(0, len(missing), batch):
                chunk = missing[start:start + batch]
                ids, mask = self.batch(chunk)
                hidden = self.model.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
                extended = additive_mask(mask)
                for layer in layers:
                    out = layer(hidden, attention_mask=extended)
                    hidden = out[0] if isinstance(out, tuple) else out
                for row, text in enumerate(chunk):
                    self.states[text] = hidden[row, :int(mask[row].sum())].to(torch.float16).clone()
                if start // batch % 20 == 0:
                    print(f"lower layers: {start + len(chunk)}/{len(missing)} texts, {time.time() - started:.0f} s", flush=True)
        if missing:
            torch.save(self.states, self.cache)

    def batch(self, texts: list[str]):
        import torch

        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = torch.full((len(texts), width), 1, dtype=torch.long)
        mask = torch.zeros((len(texts), width), dtype=torch.long)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = torch.tensor(e.ids)
            mask[row, :len(e.ids)] = 1
        return ids, mask


def main() -> None:
    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=ROOT / "train/judge/pairs.jsonl")
    parser.add_argument("--base", type=Path, default=ROOT / "train/judge/base")
    parser.add_argument("--top", type=int, default=2)
    parser.add_argument("--questions", type=int, default=2500)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--out", type=Path, default=Path("/tmp/judgecv/toplayers"))
    args = parser.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)

    helper = Helper.load(user_bank=False)
    items_file = args.out / "items.json"
    items = json.loads(items_file.read_text()) if items_file.is_file() else eval_items(helper)
    items_file.write_text(json.dumps(items))
    shipped = helper.retriever.judge
    shipped_probs = [shipped.probabilities(i["query"], i["passages"]) for i in items]

    pairs = training_pairs(args.pairs, args.questions, args.out / "pairs.jsonl")
    print(f"{len(pairs)} pairs of {len({p['qid'] for p in pairs})} question ids "
          f"({sum(p['label'] for p in pairs)} positive)", flush=True)

    tokenizer = Tokenizer.from_file(str(args.base / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_LENGTH)
    tokenizer.no_padding()
    model = BertModel.from_pretrained(str(args.base), add_pooling_layer=False).eval()
    lower = Lower(model, tokenizer, args.top, args.out / f"lower.top{args.top}.pt")
    queries = [QUERY_PREFIX + t for t in {p["query"] for p in pairs} | {i["query"] for i in items}]
    passages = [PASSAGE_PREFIX + t for t in {p["passage"] for p in pairs} | {x for i in items for x in i["passages"]}]
    lower.compute(queries + passages)

    top = torch.nn.ModuleList(model.encoder.layer[len(model.encoder.layer) - args.top:])
    scale = torch.nn.Parameter(torch.tensor(float(shipped.scale)))
    bias = torch.nn.Parameter(torch.tensor(float(shipped.bias)))

    def encode(texts: list[str]) -> torch.Tensor:
        states = [lower.states[t].float() for t in texts]
        width = max(len(s) for s in states)
        hidden = torch.zeros(len(states), width, states[0].shape[1])
        mask = torch.zeros(len(states), width)
        for row, s in enumerate(states):
            hidden[row, :len(s)], mask[row, :len(s)] = s, 1
        extended = additive_mask(mask)
        for layer in top:
            out = layer(hidden, attention_mask=extended)
            hidden = out[0] if isinstance(out, tuple) else out
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def probabilities(item: dict) -> list[float]:
        with torch.no_grad():
            q = encode([QUERY_PREFIX + item["query"]])
            p = encode([PASSAGE_PREFIX + x for x in item["passages"]])
            return torch.sigmoid(scale * (p @ q[0]) + bias).tolist()

    def score(label: str, probs: list[list[float]]) -> None:
        for name in [*(n for n, _ in EVAL), "all"]:
            for lang in ("all", "zh"):
                rows = [(i, p) for i, p in zip(items, probs, strict=True)
                        if (name == "all" or i["set"] == name) and (lang == "all" or i["lang"] == lang)]
                yes = [(i, p) for i, p in rows if i["answerable"]]
                if not yes:
                    continue
                r1 = sum(bool(i["gains"][int(np.argmax(p))]) for i, p in yes) / len(yes)
                auroc = abstention_separation([max(p) for _, p in yes], [max(p) for i, p in rows if not i["answerable"]])
                print(f"{label} {name} {lang}: {len(yes)} answerable R@1 by its order {r1:.3f} "
                      f"AUROC {auroc['abstention_auroc'] if auroc['abstention_auroc'] is not None else float('nan'):.3f}")

    pipeline = sum(bool(i["gains"][0]) for i in items if i["answerable"]) / sum(i["answerable"] for i in items)
    print(f"pipeline order, all sets: R@1 {pipeline:.3f}")
    score("shipped judge", shipped_probs)
    score(f"top {args.top} layers, untrained", [probabilities(i) for i in items])

    optimizer = torch.optim.AdamW([*top.parameters(), scale, bias], lr=args.lr, weight_decay=0.01)
    rng = random.Random(SEED)
    top.train()
    started = time.time()
    for step in range(1, args.steps + 1):
        batch = rng.sample(pairs, args.batch)
        q = encode([QUERY_PREFIX + p["query"] for p in batch])
        p = encode([PASSAGE_PREFIX + x["passage"] for x in batch])
        logits = scale * (q @ p.T) + bias  # (batch, batch): the diagonal is each pair, the rest in-batch negatives
        labels = torch.tensor([float(x["label"]) for x in batch])
        same = torch.tensor([[a["passage"] == b["passage"] or a["qid"] == b["qid"] for b in batch] for a in batch])
        pair_loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.diagonal(), labels)
        off = logits[~same]
        extra = torch.nn.functional.binary_cross_entropy_with_logits(off, torch.zeros_like(off)) if off.numel() else 0.0
        loss = pair_loss + 0.5 * extra
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 0:
            print(f"step {step}: loss {float(loss):.4f} ({time.time() - started:.0f} s)", flush=True)
    top.eval()
    score(f"top {args.top} layers, trained {args.steps} steps", [probabilities(i) for i in items])
    torch.save({"top": top.state_dict(), "scale": scale.detach(), "bias": bias.detach()}, args.out / f"top{args.top}.pt")


if __name__ == "__main__":
    main()
