"""What closed an issue, from the API: the commit, and the pull request that commit came from.

    closed_by = closing_change("verl-project/verl", item, client)
    # {"ref": "#540", "url": ..., "title": ..., "body": ..., "commit": "0a1b2c3"} or a commit alone

The issue's events name the commit of its `closed` event (GitHub records one when a merged
pull request or a pushed commit says "fixes #N"). The pull requests that commit belongs to
(GET /repos/O/R/commits/SHA/pulls) give what a bare hash cannot: the title and the
description, which say what changed. A commit no pull request holds (pushed directly, or
from a fork the API does not list) stays a commit.
"""

from __future__ import annotations

from ...errors import GitHubError
from .client import GitHubClient, RateLimited
from .shapes import closing_commit, html_base, pull_request

PER_PAGE = 100


def closing_change(repo: str, item: dict, client: GitHubClient) -> dict | None:
    number = int(item["number"])
    issue_url = str(item.get("html_url") or "")
    events = client.get(client.url(f"repos/{repo}/issues/{number}/events", {"per_page": PER_PAGE})).data
    commit = closing_commit(events if isinstance(events, list) else [], issue_url)
    if commit is None or not commit.get("sha"):
        return commit
    pull = pull_of_commit(repo, commit["sha"], client, html_base(issue_url))
    return {**pull, "commit": commit["ref"]} if pull else commit


def pull_of_commit(repo: str, sha: str, client: GitHubClient, base: str = "") -> dict | None:
    """The pull request merged as `sha` (else the first one listing it), or None."""
    try:
        pulls = client.get(client.url(f"repos/{repo}/commits/{sha}/pulls")).data
    except RateLimited:
        raise
    except GitHubError:  # 404/422: a commit the API does not tie to this repository's pulls
        return None
    pulls = [p for p in pulls if isinstance(p, dict)] if isinstance(pulls, list) else []
    merged = [p for p in pulls if p.get("merge_commit_sha") == sha]
    for candidate in merged + pulls:
        found = pull_request(candidate, base)
        if found:
            return found
    return None
