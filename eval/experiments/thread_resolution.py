"""Dev study: does the GitHub source find each thread's fix where the labels say it is?

    python eval/experiments/thread_resolution.py [--verbose]

Reads the invented corpus (eval/threads/corpus) as `rlhelper ingest --github` reads it, and the
ground-truth labels of the DEV threads only (eval/threads/labels.jsonl, split "dev": the test
threads' labels are never opened past their split field). Prints, over the dev threads:

- resolved: the entry exists (a fix, a closing pull request or commit was found) vs `has_resolution`;
- notices quoted: labelled boilerplate comments quoted in an entry (the target is none);
- fix comments found: labelled fix comments quoted, and quoted comments that are no labelled fix;
- the closing pull request quoted where the labels say the fix is in its description;
- the language of each entry against the label's.

--verbose lists the dev threads where a figure is off (numbers and shapes only, no thread text).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

from rlhelper import config
from rlhelper.ingest.github.entries import thread_sources
from rlhelper.ingest.github.source import update_threads
from rlhelper.measure.threadeval import corpus_folder, corpus_repositories, guessed_renames, read_renames

EVAL = config.REPO_ROOT / "eval" / "threads.jsonl"
LABELS = config.REPO_ROOT / "eval" / "threads" / "labels.jsonl"
_LINK = re.compile(r"\]\((https?://[^)\s]+)\)")


def dev_labels() -> dict[tuple[str, int], dict]:
    out = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("split") == "dev":
            out[(row["repo"], int(row["number"]))] = row
    return out


def canonical(url: str) -> str:
    return url.replace("/volcengine/verl/", "/verl-project/verl/")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    labels = dev_labels()
    folder = corpus_folder(EVAL)
    expected = sorted({repo for repo, _ in labels})
    renames = read_renames(folder) or guessed_renames(folder, expected)
    counts: Counter = Counter()
    off: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for repo, exports in corpus_repositories(folder, renames).items():
            aliases = {old: new for old, new in renames.items() if new == repo}
            update = update_threads(repo, exports=exports, aliases=aliases, root=Path(tmp))
            found = thread_sources(update.store, update.store.repo)
            entries = {}
            for doc in found.docs:
                [entry], _ = doc.build(doc.read(), collection=doc.collection, doc=doc.doc, meta=doc.meta)
                entries[int(doc.doc.split("/")[1])] = entry
            for (label_repo, number), label in labels.items():
                if label_repo != repo or label["state"] != "closed":
                    continue
                counts["dev threads"] += 1
                entry = entries.get(number)
                truth = label["has_resolution"]
                counts[f"resolved {bool(entry)} / labelled {truth}"] += 1
                if bool(entry) != truth:
                    off.append(f"{repo}#{number} resolved={bool(entry)} labelled={truth} shapes={label['shapes']}")
                if entry is None:
                    continue
                quoted = {canonical(u) for u in _LINK.findall(entry.text) if "#issuecomment-" in u}
                notices = {canonical(u) for u in label["boilerplate"]}
                fixes = {canonical(u) for u in label["resolution"]["comment_urls"]}
                counts["notices quoted"] += len(quoted & notices)
                if quoted & notices:
                    off.append(f"{repo}#{number} quotes a notice shapes={label['shapes']}")
                counts["labelled fix comments"] += len(fixes)
                counts["labelled fix comments quoted"] += len(fixes & quoted)
                answers = label["resolution"].get("answers")
                extra = quoted - fixes - ({canonical(answers)} if answers else set())
                counts["quoted comments that are no labelled fix"] += len(extra)
                if fixes - quoted or extra:
                    off.append(f"{repo}#{number} fixes missed={len(fixes - quoted)} extra={len(extra)} "
                               f"shapes={label['shapes']} kinds={label['resolution']['kinds']}")
                if "pr" in label["resolution"]["where"]:
                    counts["fix in a pull request"] += 1
                    counts["fix in a pull request, quoted"] += "**Fixed by pull request:**" in entry.text
                if "body" in label["resolution"]["where"]:
                    counts["fix in the body"] += 1
                    counts["fix in the body, quoted"] += "**Workaround in the report:**" in entry.text
                counts[f"language right: {entry.lang == label['lang']}"] += 1
                if entry.lang != label["lang"]:
                    off.append(f"{repo}#{number} lang={entry.lang} labelled={label['lang']}")
    for name in sorted(counts):
        print(f"{name:45s} {counts[name]}")
    if args.verbose:
        print("\n".join(off))


if __name__ == "__main__":
    main()
