"""GitHub's JSON shapes -> thread records (threads.py): the REST API's, and `gh issue list --json`'s.

Everything is read defensively: a missing or mistyped field becomes empty, never a crash,
and every text is clipped (threads.MAX_TEXT) before it is stored. An item without a valid
issue number (`issue_number`) is not a thread: callers leave it out and say how many.
"""

from __future__ import annotations

from .threads import MAX_COMMENTS, clip


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _list(value) -> list:
    return value if isinstance(value, list) else []


MAX_NUMBER = 2**31  # GitHub's issue numbers are far below


def issue_number(value) -> int | None:
    """A positive whole issue number, or None: an export or a server may hold anything there (a
    string, a fraction, infinity, a list)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 < value < MAX_NUMBER else None


def _number(item: dict) -> int:
    number = issue_number(item.get("number"))
    if number is None:
        raise ValueError("not an issue: no valid number")
    return number


def _is_bot(user) -> bool:
    return isinstance(user, dict) and (user.get("is_bot") is True or user.get("type") == "Bot")


def _login(user) -> str:
    return _text(user.get("login")) if isinstance(user, dict) else ""


def is_pull_request(item: dict) -> bool:
    """The issues endpoint lists pull requests too; they carry a `pull_request` key."""
    return "pull_request" in item


def html_base(issue_url: str) -> str:
    """https://github.com/O/R from https://github.com/O/R/issues/5 (GitHub Enterprise alike)."""
    head, sep, _ = issue_url.rpartition("/issues/")
    return head if sep else ""


# Reactions that approve of a comment, and those that doubt it (the API's keys; gh's names).
APPROVING = ("+1", "heart", "hooray", "rocket")
DOUBTING = ("-1", "confused")
_GH_REACTIONS = {"THUMBS_UP": "+1", "HEART": "heart", "HOORAY": "hooray", "ROCKET": "rocket",
                 "THUMBS_DOWN": "-1", "CONFUSED": "confused"}


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else 0


def api_reactions(reactions) -> dict:
    """{"up": n, "down": n} from the API's `reactions` object."""
    if not isinstance(reactions, dict):
        return {"up": 0, "down": 0}
    return {"up": sum(_count(reactions.get(k)) for k in APPROVING),
            "down": sum(_count(reactions.get(k)) for k in DOUBTING)}


def gh_reactions(groups) -> dict:
    """{"up": n, "down": n} from gh's `reactionGroups` ([{"content": "THUMBS_UP", "users": {"totalCount": 3}}])."""
    counts = {"up": 0, "down": 0}
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        key = _GH_REACTIONS.get(_text(group.get("content")).upper())
        users = group.get("users")
        if key:
            counts["up" if key in APPROVING else "down"] += _count(users.get("totalCount")) \
                if isinstance(users, dict) else 0
    return counts


def _comment(item: dict, *, url: str, author: str, association: str, created_at: str) -> dict:
    """A comment in the store's shape; the keyword arguments name the source's keys."""
    cid = item.get("id")
    return {
        "id": cid if isinstance(cid, int | str) and not isinstance(cid, bool) and len(str(cid)) <= 100 else None,
        "url": _text(item.get(url)),
        "author": _login(item.get(author)),
        "association": _text(item.get(association)).upper(),
        "created_at": _text(item.get(created_at)),
        "body": clip(item.get("body")),
        "reactions": api_reactions(item.get("reactions")) if "reactions" in item
        else gh_reactions(item.get("reactionGroups")),
        # gh: a comment hidden as spam, off-topic or outdated is no one's answer
        **({"minimized": True} if item.get("isMinimized") is True else {}),
        # a GitHub App's account: the API's user type, or gh's is_bot (gh drops the "[bot]" suffix)
        **({"bot": True} if _is_bot(item.get(author)) else {}),
    }


def from_api_comment(item: dict) -> dict:
    return _comment(item, url="html_url", author="user", association="author_association", created_at="created_at")


def from_api_issue(repo: str, item: dict, comments: list[dict], closed_by: dict | None = None) -> dict:
    """A thread from an issue object of GET /repos/{repo}/issues and its comments (API shape)."""
    labels = [label.get("name") if isinstance(label, dict) else label for label in _list(item.get("labels"))]
    return {
        "repo": repo,
        "number": _number(item),
        "title": clip(item.get("title"), 1000),
        "body": clip(item.get("body")),
        "url": _text(item.get("html_url")),
        "state": _text(item.get("state")).lower(),
        "state_reason": _text(item.get("state_reason")).lower() or None,
        "labels": [name for name in labels if isinstance(name, str) and name][:100],
        "created_at": _text(item.get("created_at")),
        "updated_at": _text(item.get("updated_at")),
        "closed_at": _text(item.get("closed_at")) or None,
        "author": _login(item.get("user")),
        "author_association": _text(item.get("author_association")).upper(),
        "reactions": api_reactions(item.get("reactions")),
        "comments": [from_api_comment(c) for c in comments[:MAX_COMMENTS] if isinstance(c, dict)],
        "closed_by": closed_by,
    }


def pull_request(item: dict, base: str = "") -> dict | None:
    """A closing pull request in the store's shape, from an API pull (GET .../pulls/N or
    .../commits/SHA/pulls) or a `gh pr list --json number,title,body,url` item: what changed."""
    number = item.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return None
    url = _text(item.get("html_url")) or _text(item.get("url"))
    if not url.startswith(("https://", "http://")) or "/pull/" not in url:
        url = f"{base}/pull/{number}" if base else ""
    return {"ref": f"#{number}", "url": url or None, "title": clip(item.get("title"), 1000),
            "body": clip(item.get("body"), PULL_BODY_CHARS)}


PULL_BODY_CHARS = 20_000  # of a pull request's description kept: what changed is said at its start


def closing_commit(events: list, issue_url: str) -> dict | None:
    """The commit that closed the issue, from its events (GET .../issues/{n}/events)."""
    for event in reversed(_list(events)):
        if isinstance(event, dict) and event.get("event") == "closed" and isinstance(event.get("commit_id"), str):
            sha = event["commit_id"]
            base = html_base(issue_url)
            return {"ref": sha[:7], "sha": sha, "url": f"{base}/commit/{sha}" if base else None}
    return None


def from_gh_issue(repo: str, item: dict) -> dict:
    """A thread from one object of `gh issue list --json number,title,body,comments,...`."""
    url = _text(item.get("url"))
    comments = [_comment(c, url="url", author="author", association="authorAssociation", created_at="createdAt")
                for c in _list(item.get("comments"))[:MAX_COMMENTS] if isinstance(c, dict)]
    closed_by = None
    for pr in _list(item.get("closedByPullRequestsReferences")):
        pr_number = issue_number(pr.get("number")) if isinstance(pr, dict) else None
        if pr_number is not None:
            closed_by = {"ref": f"#{pr_number}", "url": _text(pr.get("url")) or None,
                         **({"title": clip(pr["title"], 1000)} if isinstance(pr.get("title"), str) else {})}
    state = _text(item.get("state")).lower()
    return {
        "repo": repo,
        "number": _number(item),
        "title": clip(item.get("title"), 1000),
        "body": clip(item.get("body")),
        "url": url,
        "state": "closed" if state == "closed" or item.get("closed") is True else state,
        "state_reason": _text(item.get("stateReason")).lower() or None,
        "labels": [lb["name"] for lb in _list(item.get("labels"))
                   if isinstance(lb, dict) and isinstance(lb.get("name"), str) and lb["name"]][:100],
        "created_at": _text(item.get("createdAt")),
        "updated_at": _text(item.get("updatedAt")),
        "closed_at": _text(item.get("closedAt")) or None,
        "author": _login(item.get("author")),
        "author_association": _text(item.get("authorAssociation")).upper(),
        "reactions": gh_reactions(item.get("reactionGroups")),
        "comments": comments,
        "closed_by": closed_by,
    }
