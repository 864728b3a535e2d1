"""Eval sets that expect GitHub threads (eval/threads.jsonl): their corpus, their index, two views.

    results = run_thread_eval(Path("eval/threads.jsonl"), split="dev")
    results["threads only"], results["beside the docs"]          # EvalResult each

A thread set's corpus sits beside it: `eval/threads/corpus/*.json` (`eval/threads-real/corpus/` for
`eval/threads_real.jsonl`), saved `gh issue list --json`
and `gh pr list --json` exports (and `gh api` ones). Each file is read as the repository its
URLs name; an export saved before a rename is read as the new name's (the `--github-alias` a user
gives) through `eval/threads/renames.json` ({"OLD/NAME": "NEW/NAME"}), or, without that file, when
the set expects no thread of the old name and exactly one repository of the same name: an eval
set names repositories as they are called today.

One temporary index is built as a user builds theirs: the default docs (or `collections`),
then `rlhelper ingest --github` of each repository's exports. Every item is searched twice:
within the thread collections only (what `--collection github:OWNER/REPO` gives), and in the
whole index, beside the docs (how a user asks).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

from .. import config
from ..errors import ConfigError
from .harness import MODES, EvalResult, abstain_thresholds, evaluate_helper, manifest_langs
from .sets import ANY_HEADING, EvalItem, load_eval_set

VIEWS = ("threads only", "beside the docs")
RENAMES_FILE = "renames.json"


def expects_threads(items: Sequence[EvalItem]) -> bool:
    return any(want["heading"] == ANY_HEADING for item in items for want in item.expected)


def corpus_folder(eval_file: Path) -> Path:
    """eval/threads.jsonl -> eval/threads/corpus; eval/threads_real.jsonl -> eval/threads_real/corpus, or
    eval/threads-real/corpus when only that one is there (a folder's name may spell the set's with hyphens)."""
    plain = Path(eval_file).with_suffix("")
    hyphened = plain.with_name(plain.name.replace("_", "-")) / "corpus"
    return hyphened if not (plain / "corpus").is_dir() and hyphened.is_dir() else plain / "corpus"


def read_renames(folder: Path) -> dict[str, str]:
    path = Path(folder).parent / RENAMES_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a JSON object of OLD/NAME -> NEW/NAME ({exc})") from None
    return {str(old): str(new) for old, new in data.items()} if isinstance(data, dict) else {}


def export_repository(path: Path) -> str | None:
    """The repository most of an export's items belong to (from their URLs), or None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    names = Counter()
    for item in data if isinstance(data, list) else []:
        url = str(item.get("html_url") or item.get("url") or "") if isinstance(item, dict) else ""
        parts = url.split("/")
        if len(parts) > 5 and parts[2] and parts[5] in ("issues", "pull"):
            names[f"{parts[3]}/{parts[4]}"] += 1
    return names.most_common(1)[0][0] if names else None


def corpus_repositories(folder: Path, renames: dict[str, str]) -> dict[str, list[Path]]:
    """Repository (by its name today) -> its export files."""
    found: dict[str, list[Path]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        repo = export_repository(path)
        if repo:
            found.setdefault(renames.get(repo, repo), []).append(path)
    if not found:
        raise ConfigError(f"no GitHub exports under {folder}: a thread eval set keeps its corpus there "
                          "(`gh issue list --json ...` files, docs/github.md)")
    return found


def guessed_renames(folder: Path, expected_repos: Sequence[str]) -> dict[str, str]:
    """OLD -> NEW for exports of a repository the set never expects, when exactly one expected
    repository has its name (volcengine/verl -> verl-project/verl)."""
    renames = {}
    for path in sorted(Path(folder).glob("*.json")):
        repo = export_repository(path)
        if not repo or repo in expected_repos:
            continue
        same = [r for r in expected_repos if r.split("/")[1].lower() == repo.split("/")[1].lower()]
        if len(same) == 1:
            renames[repo] = same[0]
    return renames


@contextmanager
def thread_index(folder: Path, collections: Sequence[str] | None = None, embedder: str | None = None,
                 notify: Callable[[str], None] = lambda message: None, expected_repos: Sequence[str] = ()):
    """A temporary index of the docs `collections` (default: the default index's) and the corpus's
    threads; yields (index path, thread collection names)."""
    from ..ingest.github.entries import collection_name, thread_sources
    from ..ingest.github.source import update_threads
    from ..ingest.pipeline import ingest

    renames = read_renames(folder) or guessed_renames(folder, expected_repos)
    repos = corpus_repositories(folder, renames)
    names = list(collections or config.DEFAULT_COLLECTIONS)
    with tempfile.TemporaryDirectory(prefix="rlhelper-threads-eval-") as tmp:
        target = Path(tmp) / "index"
        ingest([config.corpus_dir() / name for name in names], embedder=embedder, index=target, rebuild=True)
        for repo, exports in repos.items():
            aliases = {old: new for old, new in renames.items() if new == repo}
            update = update_threads(repo, exports=exports, aliases=aliases, root=Path(tmp) / "github", notify=notify)
            for note in update.notes:
                notify(note)
            documents = thread_sources(update.store, update.store.repo, renamed_from=update.renamed_from)
            for note in documents.notes:
                notify(note)
            ingest(index=target, embedder=embedder, documents=documents)
        yield target, [collection_name(repo) for repo in repos]


def run_thread_eval(eval_file: Path, *, split: str | None = None, collections: Sequence[str] | None = None,
                    embedder: str | None = None, modes: Sequence[str] = MODES, k: int = 10,
                    progress: Callable[[int, int], None] | None = None,
                    notify: Callable[[str], None] = lambda message: None) -> dict[str, EvalResult]:
    """The set's items searched among the threads only, and beside the docs, on one index of both."""
    from ..api import Helper

    items = load_eval_set(eval_file, split=split)
    if not items:
        raise ConfigError(f"{eval_file}: no items{f' in split {split!r}' if split else ''}")
    folder = corpus_folder(eval_file)
    results = {}
    expected_repos = sorted({want["repo"] for item in load_eval_set(eval_file) for want in item.expected
                             if "repo" in want})
    with thread_index(folder, collections, embedder, notify, expected_repos) as (where, thread_collections):
        helper = Helper.load(where, embedder=embedder, user_bank=False)
        for view, within in zip(VIEWS, (thread_collections, None), strict=True):
            started = time.perf_counter()
            found, warnings = evaluate_helper(helper, items, modes=modes, k=k, collections=within,
                                              doc_langs=manifest_langs(), progress=progress)
            label = ", ".join(collections or config.DEFAULT_COLLECTIONS)
            results[view] = EvalResult(
                eval_file=str(eval_file), split=split, modes=tuple(modes), k=k,
                index=f"temporary index of {label} and the threads of {folder} ({view})",
                embedder=str(helper.index.embedder_id), collections=list(within) if within else None, items=found,
                seconds=time.perf_counter() - started, warnings=warnings, thresholds=abstain_thresholds(helper, modes))
    return results
