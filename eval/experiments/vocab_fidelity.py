"""How far does pruning e5's vocabulary move a vector? (issue 27, point 7)

    python eval/experiments/vocab_fidelity.py [--base train/judge/base]

The pieces are chosen as judge/vocab.py chooses them, except that the judge's training questions
(train/judge: unanswerable questions and reports) are left out of the choice and used as text the
choice never saw. For each of those questions (as a query: "query: ..."), the tokenization with the
pruned vocabulary is compared with the full one, and where they differ the base model's vectors of
both are compared (fp32, torch). Printed: pieces kept, int8 size of the table, share of questions
tokenized identically, and the cosine of the others (mean, 10th percentile, min) and over all.
No eval set is read.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    from rlhelper.judge import data, vocab
    from rlhelper.search.judge import QUERY_PREFIX

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=ROOT / "train" / "judge" / "base")
    args = parser.parse_args()

    pieces, added = vocab.base_vocabulary(args.base)
    full = Tokenizer.from_file(str(args.base / "tokenizer.json"))
    seen = itertools.chain([QUERY_PREFIX], vocab.corpus_texts(), vocab.word_texts())
    keep = vocab.kept_pieces(pieces, full, seen, always=added)
    pruned = vocab.pruned_tokenizer(args.base, keep)
    held = [r["query"] for r in data.read_unanswerable()] + [r["text"] for r in data.read_reports()]
    held += [r["query"] for r in data.read_unanswered_reports()]
    texts = [QUERY_PREFIX + t for t in held]
    ids_full = [e.ids[:512] for e in full.encode_batch(texts)]
    ids_pruned = [[keep[i] for i in e.ids][:512] for e in pruned.encode_batch(texts)]
    differ = [i for i in range(len(texts)) if ids_full[i] != ids_pruned[i]]

    model = AutoModel.from_pretrained(str(args.base), add_pooling_layer=False).eval()

    def vector(ids):
        with torch.no_grad():
            pooled = model(input_ids=torch.tensor([ids])).last_hidden_state[0].mean(0)
        return (pooled / pooled.norm()).numpy()

    cos = np.array([float(vector(ids_full[i]) @ vector(ids_pruned[i])) for i in differ])
    every = np.ones(len(texts))
    every[differ] = cos
    print(f"pieces kept {len(keep)} of {len(pieces)} (word table int8 {len(keep) * 384 / 1e6:.1f} MB); "
          f"{len(texts)} held-out questions, {1 - len(differ) / len(texts):.1%} tokenized identically")
    if differ:
        print(f"the others: cosine mean {cos.mean():.4f}, 10th percentile {np.percentile(cos, 10):.4f}, "
              f"min {cos.min():.4f}; over all held-out questions mean {every.mean():.5f}")


if __name__ == "__main__":
    main()
