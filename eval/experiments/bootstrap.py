"""95 % percentile-bootstrap intervals of an eval report's figures (hybrid, or --mode), resampling its items.

    python eval/experiments/bootstrap.py eval/reports/threads-beside-the-docs/latest-test.json [...]
    python eval/experiments/bootstrap.py --mode judge REPORT.json [...]     # another mode's (the default's)
    python eval/experiments/bootstrap.py --mode judge --split test REPORT.json   # one split of a report of all items

Reads the report JSON `rlhelper eval` writes (per item: the rank of the first right hit, abstained,
weak) and prints, per file, Recall@1 / Recall@3 over the answerable items and "unanswerable abstained or
weak" over the unanswerable ones, each with its interval (2,000 resamples of the items, seed 0). Prints
figures only, never an item's query.
"""

from __future__ import annotations

import json
import sys

import numpy as np

RESAMPLES = 2000


def interval(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    data = np.asarray(values, dtype=float)
    if not len(data):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), (RESAMPLES, len(data)))].mean(axis=1)
    return float(data.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main(paths: list[str]) -> None:
    mode, split = "hybrid", None
    while paths[:1] in (["--mode"], ["--split"]):
        if paths[0] == "--mode":
            mode = paths[1]
        else:
            split = paths[1]
        paths = paths[2:]
    for path in paths:
        items = [i for i in json.loads(open(path, encoding="utf-8").read())["items"]
                 if split is None or i.get("split") == split]
        hybrid = [(bool(i["expected"]), i["modes"][mode]) for i in items]
        answerable = [m for a, m in hybrid if a]
        unanswerable = [m for a, m in hybrid if not a]
        rows = {
            "recall@1": [float(m["rank"] == 1) for m in answerable],
            "recall@3": [float(m["rank"] is not None and m["rank"] <= 3) for m in answerable],
            "unanswerable abstained or weak": [float(m["abstained"] or m["weak"]) for m in unanswerable],
            "answerable wrongly abstained": [float(m["abstained"]) for m in answerable],
        }
        print(f"{path} ({mode}{', ' + split if split else ''}): {len(answerable)} answerable, "
              f"{len(unanswerable)} unanswerable")
        for name, values in rows.items():
            mean, low, high = interval(values)
            print(f"  {name:32s} {mean:.3f}  [{low:.3f}, {high:.3f}]")


if __name__ == "__main__":
    main(sys.argv[1:])
