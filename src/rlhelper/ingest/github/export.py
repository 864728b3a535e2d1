"""Threads from saved exports, for machines without network. Accepted files:

    gh issue list -R O/R --state closed --limit 10000 \\
        --json number,title,body,comments,labels,state,stateReason,closedAt,url,author > issues.json
    gh api --paginate 'repos/O/R/issues?state=closed' > issues.json        # API issue objects
    gh api --paginate 'repos/O/R/issues/comments' > comments.json         # their comments
    gh pr list -R O/R --state merged --limit 10000 \
        --json number,title,body,url,closingIssuesReferences > pulls.json  # what closed them

A file holds one JSON array, several arrays one after another (what `gh api --paginate`
prints without --slurp), or one object per line. Items are told apart by shape: a `gh`
issue has `number` and `url`, an API issue `html_url` and `user`, an API comment
`issue_url`, a pull request a `/pull/` URL. API comments are attached to their issues, and
pull requests to the issues they closed (the issue's `closedByPullRequestsReferences`, or the
pull's `closingIssuesReferences`), so give the files in one run.

A repository renamed since the export was saved (volcengine/verl -> verl-project/verl) is
named by `aliases` ({"volcengine/verl": "verl-project/verl"}, `--github-alias OLD=NEW`): its
issues are read as the new repository's, their links rewritten to the new name.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import GitHubError
from .shapes import from_api_issue, from_gh_issue, html_base, is_pull_request, issue_number, pull_request

MAX_EXPORT_BYTES = 1_000_000_000


def read_exports(paths: list[Path], repo: str, aliases: dict[str, str] | None = None) -> tuple[list[dict], list[str]]:
    """Thread records of `repo` from export files, and notes about what was left out."""
    gh, api, comments, gh_pulls = [], [], {}, []
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
            elif "/pull/" in str(item.get("url") or ""):
                gh_pulls.append(item)
            else:
                gh.append(item)
    names = [repo, *(old for old, new in (aliases or {}).items() if new.lower() == repo.lower())]
    threads, others, pulls = [], {}, 0
    for item in api:
        if is_pull_request(item):
            pulls += 1
            continue
        url = str(item.get("html_url") or "")
        if _of_repo(url, names):
            threads.append(from_api_issue(repo, item, comments.get(issue_number(item["number"]), [])))
        else:
            _count_other(others, url)
    for item in gh:
        url = str(item.get("url") or "")
        if _of_repo(url, names):
            threads.append(from_gh_issue(repo, item))
        else:
            _count_other(others, url)
    renamed = [old for old in names[1:] if any(_of_repo(t["url"], [old]) and html_base(t["url"]) for t in threads)]
    if renamed:
        threads = [_renamed(t, names[1:], repo) for t in threads]
        notes.append(f"issues of {', '.join(renamed)} read as {repo}'s (renamed; --github-alias)")
    matched = attach_pulls(threads, [p for p in gh_pulls if _of_repo(str(p.get("url") or ""), names)])
    if gh_pulls and not matched:
        notes.append(f"none of the {len(gh_pulls)} pull request(s) exported closed an issue of {repo} read here")
    bare = sum(1 for t in threads if str((t.get("closed_by") or {}).get("ref", "")).startswith("#")
               and not (t.get("closed_by") or {}).get("title"))
    if bare:
        notes.append(f"{bare} issue(s) closed by a pull request whose title and description are in no export: add "
                     f"`gh pr list -R {repo} --state merged --limit 10000 --json number,title,body,url,"
                     "closingIssuesReferences` as another --github-export to quote what changed")
    if unnumbered:
        notes.append(f"{unnumbered} item(s) without a valid issue number (a positive whole number) left out")
    if others:
        notes.append(other_repositories_note(others, repo))
    if pulls:
        notes.append(f"{pulls} pull request(s) left out")
    if api and not comments and any(item.get("comments") for item in api):
        notes.append("the API issues come without their comments: add the output of "
                     f"`gh api --paginate 'repos/{repo}/issues/comments'` as another --github-export")
    return threads, notes


def _of_repo(url: str, repos: list[str]) -> bool:
    base = html_base(url).lower()
    return not base or any(base.endswith("/" + repo.lower()) for repo in repos)


def _count_other(others: dict[str, int], url: str) -> None:
    name = "/".join(html_base(url).split("/")[-2:])
    others[name] = others.get(name, 0) + 1


def other_repositories_note(others: dict[str, int], repo: str) -> str:
    """What was left out, and, when it is all one repository's, how to read it as `repo`'s."""
    count = sum(others.values())
    note = f"{count} issue(s) of another repository than {repo} left out"
    if len(others) == 1:
        [(old, _)] = others.items()
        note += (f" (all of {old}: if {repo} is its new name, read them with --github-alias {old}={repo})"
                 if old.count("/") == 1 else "")
    return note


def _renamed(thread: dict, old_names: list[str], repo: str) -> dict:
    """A thread read under an old name: its links (issue, comments, closing change) under the new one."""
    def moved(url):
        if not isinstance(url, str):
            return url
        for old in old_names:
            base = html_base(url) or url.split("/pull/")[0].split("/commit/")[0]
            if base.lower().endswith("/" + old.lower()):
                return base[: len(base) - len(old)] + repo + url[len(base):]
        return url

    thread = {**thread, "url": moved(thread.get("url")),
              "comments": [{**c, "url": moved(c.get("url"))} for c in thread.get("comments") or []]}
    if isinstance(thread.get("closed_by"), dict):
        thread["closed_by"] = {**thread["closed_by"], "url": moved(thread["closed_by"].get("url"))}
    return thread


def attach_pulls(threads: list[dict], pulls: list[dict]) -> int:
    """Give each thread closed by an exported pull request that pull's title and description; a pull
    that lists the issues it closed (`closingIssuesReferences`) closes them when the issue's own
    export did not say. Returns how many threads got one."""
    by_number = {}
    closes: dict[int, dict] = {}
    for item in pulls:
        found = pull_request(item)
        if found is None:
            continue
        by_number[item["number"]] = found
        for ref in item.get("closingIssuesReferences") or []:
            if isinstance(ref, dict) and isinstance(ref.get("number"), int):
                closes.setdefault(ref["number"], found)
    matched = 0
    for thread in threads:
        ref = str((thread.get("closed_by") or {}).get("ref") or "")
        pull = by_number.get(int(ref[1:])) if ref.startswith("#") and ref[1:].isdigit() else None
        if pull is None and not thread.get("closed_by") and thread.get("state") == "closed":
            pull = closes.get(thread["number"])
        if pull is not None:
            thread["closed_by"] = {**pull, "url": (thread.get("closed_by") or {}).get("url") or pull["url"]}
            matched += 1
    return matched


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
