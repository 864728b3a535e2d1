"""Does the trained judge beat today's pipeline on dev? (issue 21, point 4)

    python eval/experiments/judge_study.py MODEL_FOLDER [--index index/default] [--k 5] [--split dev]

For the dev items of seeds, official, issues and written_reports, on one index (the default holds both shipped
collections, so every set is searched over the same entries), the pipeline's hybrid search gives
its top `k` hits and its confidence; the judge then reads (query, passage) for each of those hits.
Printed, per set and language:

- R@1 of the pipeline, and of the same hits reordered by the judge's probability;
- abstention AUROC of the pipeline's confidence, and of the judge's best probability over the
  top `k` (unanswerable items should score lower);
- the judge's cost per query (p50, one thread, int8; passage vectors kept between queries, as a
  server keeps them);
- `margin`: the judge's best hit goes first whenever its probability beats the first hit's by
  MARGIN, whatever the pipeline's confidence;
- the pipeline and judge together (`fused`, the candidate chosen on dev, eval/DECISIONS.md): the
  pipeline's order, except that when its answer falls in the weak-match band (confidence at or
  below the calibrated weak ceiling) the judge's best hit goes first; the confidence is the mean of
  the pipeline's and the judge's probability for the hit shown first;
- for each score, the share of unanswerable items abstained on at the threshold that abstains on
  at most 5 % of the answerable ones (chosen on the same items: an optimistic figure, for every
  score alike).

Only figures are printed, never a query. The judge is adopted only if it wins on dev here.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rlhelper.api import Helper
from rlhelper.errors import RlhelperError
from rlhelper.measure.metrics import abstention_separation, choose_threshold
from rlhelper.measure.sets import entry_locations, load_eval_set, relevance_gains
from rlhelper.search.judge import Judge, passage

ROOT = Path(__file__).resolve().parents[2]
SETS = ("seeds", "official", "issues", "written_reports")
WHO = ("pipeline", "judge", "fused", "margin")
MARGIN = 0.2  # `margin`: the judge's best hit goes first when its probability beats the first hit's by this


def study(helper: Helper, judge: Judge, name: str, split: str, k: int) -> list[dict]:
    weak_ceiling = helper.retriever.confidence_model.weak_ceilings.get("hybrid", 0.0)
    rows = []
    for item in load_eval_set(ROOT / "eval" / f"{name}.jsonl", split):
        if item.previous:
            continue
        try:
            found = helper.retrieve(item.query, k=k, mode="hybrid")
        except RlhelperError:
            continue
        hits = found.hits[:k]
        started = time.perf_counter()
        probs = judge.probabilities(found.normalized_query, [passage(h.entry) for h in hits]) if hits else []
        seconds = time.perf_counter() - started
        gains = relevance_gains([entry_locations(h.entry) for h in hits], item.expected)
        order = sorted(range(len(hits)), key=lambda i: -probs[i])
        first = order[0] if hits and found.confidence <= weak_ceiling else 0
        ahead = order[0] if hits and probs[order[0]] - probs[0] > MARGIN else 0
        rows.append({
            "lang": item.lang, "answerable": item.answerable,
            "pipeline_r1": bool(gains and gains[0]), "judge_r1": bool(gains and gains[order[0]]),
            "fused_r1": bool(gains and gains[first]), "margin_r1": bool(gains and gains[ahead]),
            "pipeline_conf": found.confidence, "judge_conf": max(probs, default=0.0),
            "fused_conf": (found.confidence + probs[first]) / 2 if probs else found.confidence / 2,
            "margin_conf": (found.confidence + probs[ahead]) / 2 if probs else found.confidence / 2,
            "seconds": seconds,
        })
    return rows


def summary(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    out = {"items": len(rows), "answerable": len(answerable), "unanswerable": len(unanswerable)}
    for who in WHO:
        if answerable:
            out[f"{who} R@1"] = sum(r[f"{who}_r1"] for r in answerable) / len(answerable)
    for who in WHO:
        yes, no = [r[f"{who}_conf"] for r in answerable], [r[f"{who}_conf"] for r in unanswerable]
        out[f"{who} AUROC"] = abstention_separation(yes, no)["abstention_auroc"]
        if yes and no:
            cut = choose_threshold(yes, no)
            out[f"{who} abstained@5%"] = sum(v < cut for v in no) / len(no)
    if rows:
        out["judge ms p50"] = 1000 * statistics.median(r["seconds"] for r in rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--index", default=None)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    parser.add_argument("--fp32", action="store_true", help="The fp32 model instead of int8.")
    args = parser.parse_args()
    helper = Helper.load(args.index)
    judge = Judge.load(args.model, int8=not args.fp32)
    everything = []
    for name in SETS:
        if not (ROOT / "eval" / f"{name}.jsonl").is_file():
            continue
        rows = study(helper, judge, name, args.split, args.k)
        everything += rows
        for lang in (None, "en", "zh"):
            part = [r for r in rows if lang is None or r["lang"] == lang]
            if part:
                print(name, lang or "all", {k: round(v, 3) if isinstance(v, float) else v for k, v in summary(part).items()})
    print("all sets", {k: round(v, 3) if isinstance(v, float) else v for k, v in summary(everything).items()})


if __name__ == "__main__":
    main()
