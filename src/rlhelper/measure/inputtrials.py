"""Hostile inputs to the CLI, for `rlhelper bench reliability` (issue 31): GitHub exports, a GitHub API
that misbehaves, an import into the learned bank, `questions list` on a pty, `serve` on IPv6.

    exports   hostile `--github-export` files (a number that is text, infinite, a list or missing;
              `comments: 5`; `labels: 7`; a pull request "x1"; JSON nested 200,000 deep) through
              `rlhelper ingest --github`: each one line or a note, never a traceback
    github    an API on 127.0.0.1 that drips its answer a byte at a time, follows `rel="next"` forever,
              or answers JSON nested 100,000 deep: the ingest ends within its bounds
              (RLHELPER_GITHUB_TIMEOUT=2, RLHELPER_GITHUB_MAX_PAGES=50), says what stopped it, no traceback
    bank      `rlhelper questions import` of 25,000 records, a 10 MB heading, deep JSON and garbage
              beside the user's own record: the report counts each, the user's record stays; then
              `questions list` of records full of terminal controls on a pty: nothing a terminal acts on
    ipv6      `rlhelper serve --host ::1`: it serves (skipped without IPv6 loopback)

Observations, not verdicts (as clitrials.py); reliability.py lays them out.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.parse
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .clikit import CliTrial, acted_on, run_in_pty
from .faults import rlhelper_command
from .trials import one_line_error, run_cli, stop_process

REPO = "acme/widgetrl"
HTML = "https://github.example/acme/widgetrl"


class MisbehavingAPI:
    """An HTTP server on 127.0.0.1 answering every GET with `answer(handler, url)`; counts requests."""

    def __init__(self, answer):
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                outer.requests.append(self.path)
                try:
                    answer(self, outer.url)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._http.shutdown()
        self._http.server_close()


def send_json(handler, body, headers: dict | None = None) -> None:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def drip_body(handler, url: str) -> None:
    """A 200 whose 202-byte body comes a byte every quarter second (50 s in all)."""
    data = b"[" + b" " * 200 + b"]"
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    for byte in data:
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.25)


def drip_headers(handler, url: str) -> None:
    """Headers that never end, a byte every quarter second."""
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200:
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.25)


def endless_pages(handler, url: str, last: int = 2_000) -> None:
    """An empty page of issues with a next link to the following one, for `last` pages."""
    split = urllib.parse.urlsplit(handler.path)
    query = dict(urllib.parse.parse_qsl(split.query))
    page = int(query.get("page", 1))
    following = urllib.parse.urlencode({**query, "page": page + 1})
    send_json(handler, [], {"Link": f'<{url}{split.path}?{following}>; rel="next"'} if page < last else {})


def deep_json(handler, url: str) -> None:
    send_json(handler, b"[" * 100_000 + b"]" * 100_000)


GOOD_ISSUE = {"number": 7, "title": "Spline solver diverges", "body": "It diverges.", "state": "CLOSED",
              "url": f"{HTML}/issues/7", "comments": [{"body": "Lower the step size.", "author": {"login": "maint"},
                                                       "authorAssociation": "MEMBER"}]}
API_ISSUE = {"number": 8, "title": "Solver stalls", "body": "It stalls.", "state": "closed",
             "html_url": f"{HTML}/issues/8", "user": {"login": "u"}, "comments": 0}
HOSTILE_EXPORTS = {
    "number-text": json.dumps([GOOD_ISSUE, {**GOOD_ISSUE, "number": "abc"}]),
    "number-infinite": "[" + json.dumps(GOOD_ISSUE) + ', {"number": 1e999, "url": "' + HTML + '/issues/9"}]',
    "number-list": json.dumps([GOOD_ISSUE, {**GOOD_ISSUE, "number": [1, 2]}]),
    "number-fraction": json.dumps([GOOD_ISSUE, {**GOOD_ISSUE, "number": 2.5}]),
    "no-number": json.dumps([GOOD_ISSUE, {k: v for k, v in API_ISSUE.items() if k != "number"}]),
    "comments-5": json.dumps([GOOD_ISSUE, {**GOOD_ISSUE, "number": 10, "comments": 5}]),
    "labels-7": json.dumps([{**GOOD_ISSUE, "labels": 7}, {**API_ISSUE, "labels": 7}]),
    "pull-request-x1": json.dumps([{**GOOD_ISSUE, "closedByPullRequestsReferences": [{"number": "x1"}]}]),
    "nested-200000": "[" * 200_000 + "]" * 200_000,
}


def _no_traceback(proc: subprocess.CompletedProcess) -> bool:
    return "Traceback" not in proc.stderr and proc.returncode in (0, 1)


def exports_trial(work: Path, env: dict) -> CliTrial:
    work.mkdir(parents=True, exist_ok=True)
    held, problems = 0, []
    for name, text in HOSTILE_EXPORTS.items():
        file = work / f"{name}.json"
        file.write_text(text, encoding="utf-8")
        proc = run_cli(["ingest", "--github", REPO, "--github-export", str(file), "--index", str(work / name)],
                       {**env, "GITHUB_TOKEN": ""}, timeout=300)
        ok = _no_traceback(proc) and (proc.returncode == 0 or one_line_error(proc) is not None)
        held += ok
        if not ok:
            problems.append(f"{name}: exit {proc.returncode}, {proc.stderr[-300:]!r}")
    return CliTrial("exports", "hostile --github-export files (bad numbers, comments: 5, labels: 7, PR \"x1\", "
                    "JSON 200,000 deep)", held, len(HOSTILE_EXPORTS),
                    "each one line or a note, no traceback", problems)


def github_trial(work: Path, env: dict) -> CliTrial:
    bounds = {"RLHELPER_GITHUB_TIMEOUT": "2", "RLHELPER_GITHUB_MAX_PAGES": "50", "GITHUB_TOKEN": ""}
    cases = {"drip-body": (drip_body, "no whole answer within 2 s"),
             "drip-headers": (drip_headers, "no whole answer within 2 s"),
             "endless-next": (endless_pages, "run the same command again to continue"),
             "deep-json": (deep_json, "nested too deeply")}
    held, figures, problems = 0, [], []
    for name, (answer, says) in cases.items():
        with MisbehavingAPI(answer) as server:
            started = time.monotonic()
            proc = run_cli(["ingest", "--github", REPO, "--github-api-url", server.url,
                            "--index", str(work / name)], {**env, **bounds}, timeout=300)
            seconds = time.monotonic() - started
            requests = len(server.requests)
        ok = _no_traceback(proc) and says in proc.stderr and requests <= 51
        held += ok
        figures.append(f"{name} {seconds:.0f} s, {requests} requests")
        if not ok:
            problems.append(f"{name}: exit {proc.returncode}, {requests} requests, {proc.stderr[-300:]!r}")
    return CliTrial("github", "an API that drips bytes, pages forever, or answers JSON 100,000 deep",
                    held, len(cases), "; ".join(figures) + " (whole command)", problems)


def _record(text: str, n: int, **more) -> str:
    return json.dumps({"text": text, "collection": "seeds", "doc": f"d{n}.md", "heading": f"Heading {n}", "vote": 1,
                       **more}, ensure_ascii=False) + "\n"


ESCAPES = "\x1b]0;owned title\x07\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\x1b]52;c;ZXZpbA==\x07\u202e"


def bank_trial(work: Path, env: dict) -> CliTrial:
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    env = {**env, "RLHELPER_DATA_DIR": str(data), "RLHELPER_INDEX_DIR": str(work / "no-index")}  # no embedding
    (data / "questions.jsonl").write_text(_record("my own question", 0, source="web"), encoding="utf-8")
    source = work / "team.jsonl"
    with source.open("w", encoding="utf-8") as f:
        f.write(_record(f"{ESCAPES} imported question", 1, heading=f"{ESCAPES}heading"))
        f.write(_record("a question with a huge heading", 2, heading="h" * 10_000_000))
        f.write("[" * 30_000 + "]" * 30_000 + "\n")
        f.write("not json at all\n")
        for n in range(25_000):
            f.write(_record(f"team question {n}", 10 + n))
    started = time.monotonic()
    imported = run_cli(["questions", "import", str(source)], env, timeout=600)
    seconds = time.monotonic() - started
    report = imported.stdout.strip()
    listed = run_cli(["questions", "list", "--json"], env)
    kept = [json.loads(line) for line in listed.stdout.splitlines() if line.startswith("{")]
    checks = {
        "the import ends with its report": _no_traceback(imported) and imported.returncode == 0,
        "counts what it added and skipped": report.startswith("19,999 added") and "5,005 skipped" in report
        and "5,002 over the cap" in report and "1 too long" in report and "2 malformed" in report,
        "the user's own record stays": any(r.get("text") == "my own question" for r in kept) and len(kept) == 20_000,
    }
    code, screen = run_in_pty(["questions", "list"], env)
    controls = acted_on(screen)
    checks["`questions list` sends no terminal control"] = code == 0 and not controls and "owned title" in screen
    problems = [f"{what}: {report!r} {imported.stderr[-300:]!r} {controls[:5]!r}" for what, ok in checks.items()
                if not ok]
    return CliTrial("bank", "`questions import` of 25,000 records, a 10 MB heading, deep JSON, garbage; "
                    "`questions list` of terminal controls on a pty", sum(checks.values()), len(checks),
                    f"import {seconds:.1f} s: \"{report[:90]}...\"; {len(controls)} controls reached the terminal",
                    problems)


@contextmanager
def serving(args: list[str], env: dict, ready: str, timeout: float = 120):
    """`rlhelper ARGS` (a server) until a line it prints holds `ready`; terminated on leaving. Yields
    (stdout lines, stderr lines) as they come; TimeoutError when it never gets ready, RuntimeError
    when it ends first (with what it said)."""
    proc = subprocess.Popen(rlhelper_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.extend(s), daemon=True)
               for s, into in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        deadline = time.monotonic() + timeout
        while not any(ready in line for line in out):
            if proc.poll() is not None:
                raise RuntimeError(f"rlhelper {args[0]} ended: {''.join(err)[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"rlhelper {args[0]} was not ready within {timeout} s")
            time.sleep(0.3)
        yield out, err
    finally:
        stop_process(proc)
        for reader in readers:
            reader.join(timeout=5)


def ipv6_port() -> int | None:
    """A free port on the IPv6 loopback, None when this machine has none."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
            return s.getsockname()[1]
    except OSError:
        return None


def ipv6_trial(index: Path, env: dict) -> CliTrial | None:
    port = ipv6_port()
    if port is None:
        return None
    err: list[str] = []
    try:
        with serving(["serve", "--host", "::1", "--port", str(port), "--index", str(index)], env,
                     f"http://[::1]:{port}") as (_, err):
            pass
        ok = "Traceback" not in "".join(err)
        problem = "".join(err)[-300:]
    except (RuntimeError, TimeoutError) as exc:
        ok, problem = False, str(exc)[-300:]
    return CliTrial("ipv6", "`rlhelper serve --host ::1`", int(ok), 1,
                    "served on [::1]" if ok else "did not serve", [] if ok else [problem])
