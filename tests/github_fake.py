"""A fake GitHub REST API on 127.0.0.1 for the GitHub source's tests.

Real HTTP (a ThreadingHTTPServer), the API's JSON shapes, Link-header pagination,
the issues list's filters (state, since, labels, sort=updated asc), a token check,
the repository itself (GET /repos/O/R, and a renamed one's 301 to /repositories/ID), the pull
requests a commit belongs to, and faults on demand: a rate-limit answer, a 502. The threads are written for these
tests (invented errors of an invented library): no issue text comes from GitHub.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "ghp_FAKE_s3cret_T0KEN_for_tests_only"
REPO = "acme/widgetrl"
REPO_ID = 4242
HTML = "https://github.example/acme/widgetrl"


def comment(cid: int, number: int, login: str, association: str, body: str, day: str) -> dict:
    return {"id": cid, "html_url": f"{HTML}/issues/{number}#issuecomment-{cid}", "body": body,
            "user": {"login": login}, "author_association": association, "created_at": f"{day}T10:00:00Z",
            "updated_at": f"{day}T10:00:00Z", "issue_url": f"https://api.example/repos/{REPO}/issues/{number}"}


def issue(number: int, title: str, body: str, updated: str, *, state: str = "closed", reason: str | None = "completed",
          labels=(), comments: int = 0, pull: bool = False) -> dict:
    item = {"number": number, "title": title, "body": body, "state": state, "state_reason": reason,
            "html_url": f"{HTML}/{'pull' if pull else 'issues'}/{number}", "user": {"login": "reporter"},
            "author_association": "NONE", "labels": [{"name": name} for name in labels], "comments": comments,
            "created_at": "2025-01-02T09:00:00Z", "updated_at": updated,
            "closed_at": updated if state == "closed" else None}
    if pull:
        item["pull_request"] = {"url": f"https://api.example/repos/{REPO}/pulls/{number}"}
    return item


QUUX_TRACEBACK = """When I start the rollout workers the run dies after the first step.

```
Traceback (most recent call last):
  File "/home/me/widgetrl/rollout/worker.py", line 88, in sync_shards
    manifest.verify(shard)
  File "/home/me/widgetrl/io/manifest.py", line 12, in verify
    raise ZorbleChecksumError(f"shard {idx} checksum mismatch in quux_loader")
widgetrl.io.manifest.ZorbleChecksumError: shard 3 checksum mismatch in quux_loader
```
"""

HOSTILE_BODY = """<script>alert('pwned-body')</script> <img src=x onerror=alert(1)>
```
FlimflamOverflowError: gizmo buffer overflow in flimflam_kernel
```
"""


def default_threads() -> tuple[list[dict], dict[int, list[dict]], dict[int, list[dict]]]:
    """Issues (with a pull request among them), comments per issue, events per issue."""
    issues = [
        issue(1, "ZorbleChecksumError when rollout workers sync shards", QUUX_TRACEBACK, "2025-03-01T12:00:00Z",
              labels=["bug"], comments=3),
        issue(2, "Question about the docs layout", "Where is the page about widgets?", "2025-03-02T12:00:00Z",
              reason="not_planned", comments=1),
        issue(3, "Add a logo", "", "2025-03-03T12:00:00Z", pull=True),
        issue(4, "FlimflamOverflowError with the <b>gizmo</b> kernel", HOSTILE_BODY, "2025-03-04T12:00:00Z",
              labels=["bug", "kernel"], comments=1),
        issue(5, "Crash on start with an empty config", "It crashes.", "2025-03-05T12:00:00Z", comments=0),
        issue(6, "Still open: slow checkpoint upload", "Uploads take hours.", "2025-03-06T12:00:00Z",
              state="open", reason=None, comments=1),
    ]
    comments = {
        1: [comment(101, 1, "reporter", "NONE", "Same here with 4 GPUs.", "2025-02-20"),
            comment(102, 1, "maint", "MEMBER", "The quux_loader caches stale manifests. Delete "
                    "`~/.cache/widgetrl/manifests` and set `io.verify_shards=lazy`; fixed for good in the next "
                    "release.", "2025-02-21"),
            comment(103, 1, "helper-bot[bot]", "COLLABORATOR", "This issue is stale.", "2025-02-28")],
        2: [comment(201, 2, "someone", "CONTRIBUTOR", "Which page do you mean?", "2025-03-02")],
        4: [comment(401, 4, "owner", "OWNER", "<script>alert('pwned-reply')</script> Build with "
                    "`FLIMFLAM_SAFE=1` until the kernel fix lands. [click](javascript:alert(2))", "2025-03-04")],
        6: [comment(601, 6, "maint", "MEMBER", "Which storage backend do you upload to?", "2025-03-06")],
    }
    events = {1: [{"event": "referenced", "commit_id": "aaaa"},
                  {"event": "closed", "commit_id": "0123456789abcdef0123456789abcdef01234567",
                   "created_at": "2025-03-01T12:00:00Z"}],
              4: [{"event": "closed", "commit_id": None}], 5: [{"event": "closed", "commit_id": None}]}
    return issues, comments, events


class FakeGitHub:
    """The API at `self.url`; change `issues`, `comments`, `events` between syncs to simulate edits."""

    def __init__(self, per_page_cap: int = 2, token: str = TOKEN):
        self.issues, self.comments, self.events = default_threads()
        self.per_page_cap = per_page_cap  # small, so pagination is exercised with a handful of issues
        self.commit_pulls: dict[str, list[dict]] = {}  # sha -> GET /repos/O/R/commits/SHA/pulls
        self.old_names: set[str] = set()  # names the repository had: answered with a 301 to /repositories/ID
        # Other repositories served beside REPO: "owner/name" -> (issues, comments, events), their own threads.
        self.others: dict[str, tuple[list[dict], dict, dict]] = {}
        self.token = token
        self.requests: list[str] = []  # path?query of every request, in order
        self.auth_headers: list[str | None] = []
        # Faults by request number (1-based): ("rate", seconds until the reset) or ("status", 502).
        self.faults: dict[int, tuple[str, float]] = {}
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def listed(self, prefix: str) -> list[str]:
        return [r for r in self.requests if r.startswith(prefix)]

    # -- answers ----------------------------------------------------------------------

    def answer(self, path: str, query: dict, auth: str | None) -> tuple[int, dict, object]:
        with self.lock:
            self.requests.append(path + (f"?{urllib.parse.urlencode(query)}" if query else ""))
            self.auth_headers.append(auth)
            if self.token and auth != f"Bearer {self.token}":
                return 401, {}, {"message": "Bad credentials"}
            fault = self.faults.pop(len(self.requests), None)
            if fault and fault[0] == "rate":
                reset = str(int(time.time() + fault[1]))
                return 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}, \
                    {"message": "API rate limit exceeded"}
            if fault:
                return int(fault[1]), {}, {"message": "Bad gateway"}
        parts = path.strip("/").split("/")
        if "/".join(parts[1:3]) in self.old_names:  # GitHub's answer for a renamed repository
            location = f"{self.url}/repositories/{REPO_ID}/" + "/".join(parts[3:])
            query_text = urllib.parse.urlencode(query)
            return 301, {"location": location + (f"?{query_text}" if query_text else "")}, {"message": "Moved"}
        if parts[:2] == ["repositories", str(REPO_ID)]:
            parts = ["repos", *REPO.split("/"), *parts[2:]]
        name = "/".join(parts[1:3])
        if parts[:1] != ["repos"] or (name != REPO and name not in self.others):
            return 404, {}, {"message": "Not Found"}
        issues, comments, events = (self.issues, self.comments, self.events) if name == REPO else self.others[name]
        rest = parts[3:]
        if rest == []:
            return 200, {}, {"id": REPO_ID if name == REPO else hash(name) % 10**6, "full_name": name,
                             "html_url": HTML if name == REPO else f"https://github.example/{name}"}
        if len(rest) == 3 and rest[0] == "commits" and rest[2] == "pulls":
            return 200, {}, self.commit_pulls.get(rest[1], [])
        if rest == ["issues"]:
            return self._page(path, query, self._list(query, issues))
        if len(rest) == 3 and rest[0] == "issues" and rest[2] == "comments":
            return self._page(path, query, comments.get(int(rest[1]), []))
        if len(rest) == 3 and rest[0] == "issues" and rest[2] == "events":
            return 200, {}, events.get(int(rest[1]), [])
        return 404, {}, {"message": "Not Found"}

    def _list(self, query: dict, issues: list[dict]) -> list[dict]:
        state = query.get("state", "open")
        items = [i for i in issues if state == "all" or i["state"] == state]
        if query.get("since"):
            items = [i for i in items if i["updated_at"] >= query["since"]]
        if query.get("labels"):
            wanted = set(query["labels"].split(","))
            items = [i for i in items if wanted <= {lb["name"] for lb in i["labels"]}]
        return sorted(items, key=lambda i: i["updated_at"], reverse=query.get("direction") != "asc")

    def _page(self, path: str, query: dict, items: list) -> tuple[int, dict, object]:
        per_page = min(int(query.get("per_page", 30)), self.per_page_cap)
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(items):
            nxt = urllib.parse.urlencode({**query, "page": page + 1})
            headers["link"] = f'<{self.url}{path}?{nxt}>; rel="next", <{self.url}{path}?page=1>; rel="first"'
        return 200, headers, chunk

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                split = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(split.query))
                status, headers, body = fake.answer(split.path, query, self.headers.get("Authorization"))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler
