"""Labelled threads, read as ingest reads them, and how well the resolution finds their fixes.

    threads = labelled_threads(Path("eval/threads-real"), split="dev")   # [LabelledThread]
    figures = thread_figures(threads, predicted)                         # per thread and per kind

A labelled corpus is a folder holding `corpus/*.json` (saved `gh issue list --json` exports, one
repository each, named by their URLs) and `labels.jsonl`: per thread its split, `has_resolution`,
`resolution.kinds` and the fix comments (`resolution.comments`, 0-based positions, or
`resolution.comment_urls`), its state. The threads go through the same export reader and the same
repository-wide notice pass as `rlhelper ingest --github`, so what is measured is what ingest does.
Only the labels of the split asked for are returned: a test split's labels are read when asked for.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .threadeval import corpus_repositories, read_renames


@dataclass
class LabelledThread:
    repo: str
    number: int
    thread: dict  # the store's record
    notices: set[int]  # positions flagged by the repository-wide pass
    label: dict

    @property
    def fix_positions(self) -> set[int]:
        res = self.label.get("resolution") or {}
        positions = {int(i) for i in res.get("comments") or [] if isinstance(i, int)}
        if not positions and res.get("comment_urls"):
            urls = {_canonical(u) for u in res["comment_urls"]}
            positions = {i for i, c in enumerate(self.thread.get("comments") or [])
                         if _canonical(str(c.get("url") or "")) in urls}
        return positions

    @property
    def kinds(self) -> list[str]:
        return list((self.label.get("resolution") or {}).get("kinds") or [])


def _canonical(url: str) -> str:
    return url.replace("/volcengine/verl/", "/verl-project/verl/")


def read_labels(folder: Path, split: str | None) -> dict[tuple[str, int], dict]:
    path = Path(folder) / "labels.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"no labels at {path} ({exc.strerror or exc})") from None
    out = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if split is None or row.get("split") == split:
                out[(str(row["repo"]), int(row["number"]))] = row
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}:{n}: not a thread label ({exc})") from None
    return out


def labelled_threads(folder: Path, split: str | None = "dev") -> list[LabelledThread]:
    """The labelled threads of `split`, as ingest reads them (exports, then the notice pass)."""
    from ..ingest.github.entries import repository_notices
    from ..ingest.github.source import update_threads

    folder = Path(folder)
    labels = read_labels(folder, split)
    renames = read_renames(folder / "corpus")
    found = []
    with tempfile.TemporaryDirectory(prefix="rlhelper-labelled-") as tmp:
        for repo, exports in corpus_repositories(folder / "corpus", renames).items():
            aliases = {old: new for old, new in renames.items() if new == repo}
            store = update_threads(repo, exports=exports, aliases=aliases, root=Path(tmp)).store
            threads = dict(store.threads())
            flagged = repository_notices(threads.values())
            for number, thread in sorted(threads.items()):
                label = labels.get((store.repo, number))
                if label is not None:
                    found.append(LabelledThread(store.repo, number, thread, flagged.get(number, set()), label))
    return found


def data_hash(folder: Path, threads: list[LabelledThread]) -> str:
    """What a resolution model was fitted on: the corpus's exports and the labels of the threads read."""
    digest = hashlib.sha256()
    for path in sorted((Path(folder) / "corpus").glob("*.json")):
        digest.update(path.read_bytes())
    for t in sorted(threads, key=lambda t: (t.repo, t.number)):
        digest.update(json.dumps(t.label, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def thread_figures(threads: list[LabelledThread], predicted: dict[tuple[str, int], bool]) -> dict:
    """Per thread, "has a fix": precision and recall over all, recall per labelled kind, and the
    predicted-positive share of the threads labelled with none, by state."""
    counts: Counter = Counter()
    for t in threads:
        truth, guess = bool(t.label.get("has_resolution")), bool(predicted.get((t.repo, t.number)))
        state = "open" if str(t.label.get("state") or t.thread.get("state")).lower() == "open" else "closed"
        counts["tp" if truth and guess else "fp" if guess else "fn" if truth else "tn"] += 1
        counts[f"{state}:{'tp' if truth and guess else 'fp' if guess else 'fn' if truth else 'tn'}"] += 1
        for kind in t.kinds if truth else []:
            counts[f"kind:{kind}"] += 1
            counts[f"kind:{kind}:found"] += guess
    figures = {"threads": len(threads), "with a fix": counts["tp"] + counts["fn"],
               "precision": _ratio(counts["tp"], counts["tp"] + counts["fp"]),
               "recall": _ratio(counts["tp"], counts["tp"] + counts["fn"]),
               "false positives": counts["fp"], "missed": counts["fn"]}
    for state in ("closed", "open"):
        tp, fp, fn = (counts[f"{state}:{k}"] for k in ("tp", "fp", "fn"))
        figures[state] = {"threads": sum(counts[f"{state}:{k}"] for k in ("tp", "fp", "fn", "tn")),
                          "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn)}
    figures["recall by kind"] = {kind.split(":")[1]: f"{counts[kind + ':found']}/{counts[kind]}"
                                 for kind in sorted(k for k in counts if k.startswith("kind:") and k.count(":") == 1)}
    return figures


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None
