"""Does the GitHub source find each labelled thread's fix where the reader says it is?

    python eval/experiments/thread_resolution.py [--corpus eval/threads-real] [--split dev] [--verbose]

Reads a labelled corpus (a folder with corpus/*.json exports and labels.jsonl: eval/threads-real, or the
invented eval/threads) as `rlhelper ingest --github` reads it, and the labels of ONE split (dev unless
asked; the test split is run once, at the end). Prints, over that split's threads:

- per thread, "has a fix" (or an answer): precision and recall, for closed and open threads, and the
  recall per kind of fix the reader labelled (maintainer, pointer, doc-found, reporter, reporter-confirms,
  other-user, feature-answer, triage-summary, pr, body), with paired-bootstrap-free counts (n/N);
- precision per role of the quoted fix (who the answer says it quotes);
- per comment: labelled fix comments quoted in the entry, labelled cleanup notices quoted (the target is
  none), a triage account's comments with advice quoted.

--verbose lists the threads where a figure is off (repository#number, kinds, no text).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from rlhelper import config
from rlhelper.ingest.github.entries import thread_entries
from rlhelper.ingest.github.resolution import resolve
from rlhelper.measure.resolutioneval import labelled_threads, thread_figures

_LINK = re.compile(r"\]\((https?://[^)\s]+)\)")


def canonical(url: str) -> str:
    return url.replace("/volcengine/verl/", "/verl-project/verl/")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=config.REPO_ROOT / "eval" / "threads-real")
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    threads = labelled_threads(args.corpus, split=args.split)
    predicted, counts, off = {}, Counter(), []
    for t in threads:
        found = resolve(t.thread, t.notices)
        predicted[(t.repo, t.number)] = found.resolved
        truth = bool(t.label.get("has_resolution"))
        if found.resolved != truth:
            off.append(f"{t.repo}#{t.number} {t.label.get('state')} resolved={found.resolved} labelled={truth} "
                       f"kinds={t.kinds} roles={[f.role for f in found.fixes]}")
        for fix in found.fixes:
            counts[f"quoted {fix.role}: {'right' if truth else 'wrong'}"] += 1
        if not found.resolved:
            continue
        document = json.dumps({"thread": t.thread, "notices": sorted(t.notices), "duplicates": []})
        [entry], _ = thread_entries(document, collection=f"github:{t.repo}", doc=f"issues/{t.number}",
                                    meta={"repo": t.repo})
        quoted = {canonical(u) for u in _LINK.findall(entry.text) if "#issuecomment-" in u}
        fixes = {canonical(u) for u in (t.label.get("resolution") or {}).get("comment_urls") or []}
        notices = {canonical(u) for u in t.label.get("boilerplate") or []}
        advice = {canonical(u) for u in t.label.get("triage_advice") or []}
        counts["labelled fix comments (threads found)"] += len(fixes)
        counts["labelled fix comments quoted"] += len(fixes & quoted)
        counts["labelled notices quoted"] += len(quoted & notices)
        counts["triage advice comments"] += len(advice)
        counts["triage advice comments quoted"] += len(advice & quoted)
        if quoted & notices:
            off.append(f"{t.repo}#{t.number} quotes a notice")
    figures = thread_figures(threads, predicted)
    print(json.dumps({"corpus": str(args.corpus), "split": args.split, **figures, "comments": dict(sorted(counts.items()))},
                     indent=2, ensure_ascii=False))
    if args.verbose:
        print("\n".join(off))


if __name__ == "__main__":
    main()
