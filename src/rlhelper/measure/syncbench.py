"""The sync rows of `rlhelper bench`: four local upstreams made from the shipped official pages.

    upstreams = worker_git_upstreams(workdir, base_index)   # bare repos + an index following them
    ... `rlhelper sync` timed as a process (bench.py) ...
    changed = worker_git_change_page(workdir)               # one page edited upstream

Each framework's pages go into a bare repository of their own (`git init --bare`), at the paths they
have upstream (the official manifest's `repo_path`), reached by file://: what is measured is rlhelper's
own work and git's local round trips, not a network. The index following them starts as a copy of the
bench's index of the shipped collections, so the git collections' sections (the same text) reuse its
vectors instead of being embedded again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from .. import config

IDENTITY = {"GIT_AUTHOR_NAME": "rlhelper bench", "GIT_AUTHOR_EMAIL": "bench@rlhelper.invalid",
            "GIT_COMMITTER_NAME": "rlhelper bench", "GIT_COMMITTER_EMAIL": "bench@rlhelper.invalid",
            "GIT_TERMINAL_PROMPT": "0"}
CHANGED_PAGE = "slime/qa.md"  # the page the change row edits (one section of it)
EDITED = "Please check whether your task is set up for co-located training"


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **IDENTITY}, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def official_pages() -> dict[str, list[dict]]:
    """Repository -> its pages in the shipped official collection (manifest records, with `path`)."""
    manifest = json.loads((config.corpus_dir() / "official" / "manifest.json").read_text(encoding="utf-8"))
    repos: dict[str, list[dict]] = {}
    for record in manifest["documents"]:
        repos.setdefault(record["repo"], []).append(record)
    return repos


def _commit_all(work: Path, message: str) -> str:
    _git("add", "-A", cwd=work)
    _git("commit", "--quiet", "-m", message, cwd=work)
    _git("push", "--quiet", "origin", "HEAD:refs/heads/main", cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)


def worker_git_upstreams(workdir: str, base_index: str) -> dict:
    """Build the four upstreams and an index following them (a copy of `base_index` plus four git sources)."""
    from ..ingest.git.remote import GitSpec
    from ..ingest.sync import ingest_git

    root = Path(workdir)
    shutil.rmtree(root, ignore_errors=True)
    (root / "upstreams").mkdir(parents=True)
    index = root / "index"
    shutil.copytree(os.path.realpath(base_index), index)
    official = config.corpus_dir() / "official"
    sources, started = [], time.perf_counter()
    for repo, pages in official_pages().items():
        name = repo.split("/")[1].lower()
        bare, work = root / "upstreams" / f"{name}.git", root / "upstreams" / f"{name}-work"
        _git("init", "--quiet", "--bare", "-b", "main", str(bare))
        _git("config", "uploadpack.allowFilter", "true", cwd=bare)
        _git("init", "--quiet", "-b", "main", str(work))
        _git("remote", "add", "origin", str(bare), cwd=work)
        for page in pages:
            target = work / page["repo_path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(official / page["path"], target)
        (work / "README.md").write_text(f"# {repo}\n\nNot under the docs' paths.\n", encoding="utf-8")
        _commit_all(work, "docs as shipped")
        paths = sorted({page["repo_path"].split("/")[0] for page in pages})
        sources.append({"name": name, "url": bare.as_uri(), "paths": paths, "pages": len(pages)})
    built = time.perf_counter() - started
    started = time.perf_counter()
    embedded = 0
    for source in sources:
        report, _ = ingest_git(GitSpec.checked(source["url"], None, source["paths"]), source["name"], index=index)
        embedded += report.embedded
    return {"index": str(index), "sources": sources, "build_seconds": built,
            "ingest_seconds": time.perf_counter() - started, "embedded": embedded}


def worker_git_change_page(workdir: str) -> dict:
    """Edit one section of one page upstream (a sentence of slime's Q&A item on a stuck Ray job)."""
    page = next(p for p in official_pages()["THUDM/slime"] if p["path"] == CHANGED_PAGE)
    work = Path(workdir) / "upstreams" / "slime-work"
    target = work / page["repo_path"]
    text = target.read_text(encoding="utf-8")
    edited = text.replace(EDITED, f"Look at the Ray dashboard first. {EDITED}", 1)
    if edited == text:
        raise RuntimeError(f"{CHANGED_PAGE} no longer holds the sentence the bench edits: {EDITED!r}")
    target.write_text(edited, encoding="utf-8")
    commit = _commit_all(work, "bench: edit one section")
    from ..ingest.entries import build_entries

    entries, _ = build_entries(edited, collection="slime", doc=page["repo_path"], meta={})
    return {"commit": commit, "page": page["repo_path"], "page_sections": len(entries)}
