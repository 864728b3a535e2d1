"""Threads from saved exports, for machines without network. Accepted files:

    gh issue list -R O/R --state closed --limit 10000 \\
        --json number,title,body,comments,labels,state,stateReason,closedAt,url,author > issues.json
    gh api --paginate 'repos/O/R/issues?state=closed' > issues.json        # API issue objects
    gh api --paginate 'repos/O/R/issues/comments' > comments.json         # their comments

A file holds one JSON array, several arrays one after another (what `gh api --paginate`
prints without --slurp), or one object per line. Items are told apart by shape: a `gh`
issue has `number` and `url`, an API issue `html_url` and `user`, an API comment
`issue_url`. API comments are attached to their issues, so give both files in one run.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import GitHubError
from .shapes import from_api_issue, from_gh_issue, html_base, is_pull_request, issue_number

MAX_EXPORT_BYTES = 1_000_000_000


def read_exports(paths: list[Path], repo: str) -> tuple[list[dict], list[str]]:
    """Thread records of `repo` from export files, and notes about what was left out."""
    gh, api, comments = [], [], {}
    notes: list[str] = []
    unnumbered = 0
    for path in paths:
        for item in _items(Path(path)):
            if "issue_url" in item and "number" not in item:
                number = str(item.get("issue_url", "")).rstrip("/").rpartition("/")[2]
                if number.isdigit() and issue_number(int(number)) is not None:
                    comments.setdefault(int(number), []).append(item)
            elif issue_number(item.get("number")) is None:
                unnumbered += 1  # no issue without its number: a hand-edited or foreign file
            elif "html_url" in item or "user" in item:
                api.append(item)
            else:
                gh.append(item)
    threads, other, pulls = [], 0, 0
    for item in api:
        if is_pull_request(item):
            pulls += 1
        elif _of_repo(str(item.get("html_url") or ""), repo):
            threads.append(from_api_issue(repo, item, comments.get(issue_number(item["number"]), [])))
        else:
            other += 1
    for item in gh:
        if _of_repo(str(item.get("url") or ""), repo):
            threads.append(from_gh_issue(repo, item))
        else:
            other += 1
    if unnumbered:
        notes.append(f"{unnumbered} item(s) without a valid issue number (a positive whole number) left out")
    if other:
        notes.append(f"{other} issue(s) of another repository than {repo} left out")
    if pulls:
        notes.append(f"{pulls} pull request(s) left out")
    if api and not comments and any(item.get("comments") for item in api):
        notes.append("the API issues come without their comments: add the output of "
                     f"`gh api --paginate 'repos/{repo}/issues/comments'` as another --github-export")
    return threads, notes


def _of_repo(url: str, repo: str) -> bool:
    base = html_base(url)
    return not base or base.lower().endswith("/" + repo.lower())


def _items(path: Path) -> list[dict]:
    try:
        if path.stat().st_size > MAX_EXPORT_BYTES:
            raise GitHubError(f"{path}: larger than {MAX_EXPORT_BYTES:,} bytes; split the export")
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise GitHubError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise GitHubError(f"{path}: not UTF-8 JSON; save the export as `gh` writes it") from None
    decoder, at, items = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError as exc:
            raise GitHubError(f"{path}: not a JSON export ({exc}); see docs/github.md for the commands") from None
        except RecursionError:
            raise GitHubError(f"{path}: JSON nested too deeply to be an export; see docs/github.md for the "
                              "commands") from None
        items += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, dict)]
    if not items:
        raise GitHubError(f"{path}: holds no issues; see docs/github.md for the export commands")
    return items
