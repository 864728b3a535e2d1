"""What would a cross-encoder judge cost per search? (issue 35, point 1)

    python eval/experiments/judge_crosscost.py [--repeats 30]

A cross-encoder reads the question and an entry together, so it cannot reuse a stored passage vector:
each of the first five hits costs a pass over question + passage (about 128 + 128 tokens), where the
shipped bi-encoder costs one pass over the question alone. Timed here with the shipped int8 e5-small
encoder (the same size a cross-encoder on it would have), one onnxruntime thread as a query process
runs it: the median of `--repeats` runs of each, on real eval questions and the hybrid's first five
passages. Prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rlhelper.api import Helper
from rlhelper.measure.sets import load_eval_set
from rlhelper.search.judge import JUDGED, PASSAGE_PREFIX, QUERY_PREFIX, passage

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    helper = Helper.load(user_bank=False)
    judge = helper.retriever.judge
    items = [i for i in load_eval_set(ROOT / "eval" / "issues.jsonl", "dev") if not i.previous][:args.repeats]
    bi, cross = [], []
    for item in items:
        found = helper.retrieve(item.query, k=JUDGED, mode="hybrid")
        query = found.normalized_query
        passages = [passage(h.entry) for h in found.hits[:JUDGED]]
        started = time.perf_counter()
        judge.encode_query(query)
        bi.append(time.perf_counter() - started)
        judge.tokenizer.enable_truncation(max_length=256)
        started = time.perf_counter()
        judge.embed([f"{QUERY_PREFIX}{query} {PASSAGE_PREFIX}{p}" for p in passages])
        cross.append(time.perf_counter() - started)
        judge.tokenizer.enable_truncation(max_length=128)
    b, c = 1000 * statistics.median(bi), 1000 * statistics.median(cross)
    print(f"{len(items)} searches: bi-encoder (the query alone) p50 {b:.1f} ms; cross-encoder over {JUDGED} hits "
          f"(question + passage, 256 tokens) p50 {c:.1f} ms; ratio {c / b:.1f}x")


if __name__ == "__main__":
    main()
