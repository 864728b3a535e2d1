"""Per-item rows for the judge's cross-validation (issue 35): what each order and each confidence gives.

    python eval/experiments/judge_rows.py eval/issues.jsonl [more.jsonl ...] --out /tmp/judgecv/rows.jsonl
        [--index index/default] [--judge-model FOLDER] [--set-name NAME]

For every item (both splits; follow-ups left out), the same index is searched three ways:

- `hybrid`: the pipeline alone;
- `reorder`: the judge mode as issue 27 shipped it, ungated (the judge orders the first five hits, except
  for a pasted log or a query that names the first hit's heading);
- `keep`: the judge mode with the pipeline's order kept everywhere (the judge's say in "no match" only).

A gate (rlhelper.measure.judge_cv) picks, item by item, the `reorder` or the `keep` outcome: both are what
the judge mode would have answered, so no outcome is simulated. Beside them each row holds what a gate may
read at serve time: the judge's probabilities of the first five hits in the pipeline's order, the input's
kind (search/judge.py `input_kind`), the language. The rows hold ids, ranks and numbers, never a query.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlhelper.api import Helper
from rlhelper.errors import RlhelperError
from rlhelper.measure.sets import entry_locations, load_eval_set, relevance_gains
from rlhelper.search import retrieve as retrieve_module
from rlhelper.search.judge import JUDGED, input_kind, passage

K = 10
ROOT = Path(__file__).resolve().parents[2]
HOLDOUT = ROOT.parent / "shared" / "holdout-sources.txt"  # ../shared beside the checkout: scored, never trained on


def holdout_sources(path: Path = HOLDOUT) -> set[str]:
    """owner/repo#N of every held-out source, lower-cased (verl's two names as one)."""
    if not path.is_file():
        return set()
    keys = {line.strip().lower() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}
    return keys | {k.replace("volcengine/verl", "verl-project/verl") for k in keys}


def source_key(url: str) -> str:
    parts = url.split("github.com/")[-1].split("#")[0].strip("/").split("/")
    if len(parts) >= 4 and parts[2] in ("issues", "pull"):
        return f"{parts[0]}/{parts[1]}#{parts[3]}".lower().replace("volcengine/verl", "verl-project/verl")
    return url.lower()


def outcome(found, item) -> dict:
    gains = relevance_gains([entry_locations(h.entry) for h in found.hits[:K]], item.expected)
    return {"first": next((r for r, g in enumerate(gains, start=1) if g), 0), "abstained": found.abstained,
            "weak": found.weak, "confidence": round(found.confidence, 5)}


def judged(helper: Helper, query: str, **overrides):
    """A judge-mode search with rerank's arguments overridden (kind=None: the judge orders wherever
    issue 27 let it; reorder=False: the pipeline's order everywhere)."""
    original = retrieve_module.rerank
    retrieve_module.rerank = lambda *a, **kw: original(*a, **{**kw, **overrides})
    try:
        return helper.retrieve(query, k=K, mode="judge")
    finally:
        retrieve_module.rerank = original


def rows_of(helper: Helper, path: Path, set_name: str, held: set[str]) -> list[dict]:
    raw = {json.loads(line)["id"]: json.loads(line) for line in path.read_text().splitlines() if line.strip()}
    judge = helper.retriever.judge
    indexed = {f"{e.collection}/{e.doc}" for e in helper.entries if e.collection.startswith("github:")}
    out, unindexed = [], 0
    for item in load_eval_set(path):
        if item.previous:
            continue
        threads = [e["doc"] for e in item.expected if "repo" in e]
        if threads and not any(t in indexed for t in threads):
            unindexed += 1  # its thread is open or holds no fix: ingest leaves it out, no search can find it
            continue
        try:
            found = {"hybrid": helper.retrieve(item.query, k=K, mode="hybrid"),
                     "judge": judged(helper, item.query, kind=None),  # ungated, as issue 27 shipped
                     "keep": judged(helper, item.query, reorder=False)}
        except RlhelperError:
            continue
        hybrid = found["hybrid"]
        head = hybrid.hits[:JUDGED]
        probabilities = judge.probabilities(hybrid.normalized_query, [passage(h.entry) for h in head]) if head else []
        source = source_key(raw[item.id].get("source", ""))
        out.append({
            "set": set_name, "id": item.id, "split": item.split, "lang": item.lang, "item_kind": item.kind,
            "answerable": item.answerable, "held_out": source in held, "source": source,
            "input_kind": input_kind(hybrid.normalized),
            "keeps_order": hybrid.normalized.is_log or bool(hybrid.signals and hybrid.signals.heading_coverage >= 0.5),
            "probabilities": [round(p, 5) for p in probabilities],
            "hybrid": outcome(hybrid, item), "reorder": outcome(found["judge"], item), "keep": outcome(found["keep"], item),
        })
    if unindexed:
        print(f"{path}: {unindexed} items left out, their threads not in the index", file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--index", default=None)
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--set-name", default=None, help="The set's name in the rows (default: the file's stem).")
    args = parser.parse_args()
    helper = Helper.load(args.index, judge=args.judge_model, user_bank=False)
    held = holdout_sources()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a", encoding="utf-8") as f:
        for path in args.sets:
            rows = rows_of(helper, path, args.set_name or path.stem, held)
            for row in rows:
                f.write(json.dumps(row) + "\n")
            print(f"{path}: {len(rows)} rows -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
