"""Attacks on the CLI and ingest, for `rlhelper bench reliability` (issue 17; the web's are webtrials.py).

    cli_trials(work, env) -> [CliTrial]
      escapes   hostile file names, headings and an LLM reply of ESC[2J / ESC]0;title BEL through
                `ask` on a pty: characters a terminal would act on (click's colours aside)
      llm       a model server replying garbage, keep-alives forever, 50 MB: `ask --llm` ends in
                bounded time with a notice, no traceback, a bounded output
      giant     a 1 MB single-heading document: `ask` prints a bounded quote and where the rest is
      symlinks  links out of the folder and a link loop: not indexed, named by ingest and by info
      sections  twin linking of pages of 2,000 and 6,000 sections: peak memory (tracemalloc)
      gitlinks  an upstream's docs linking into the checkout's .git (issue 37): `ingest --git` indexes none
      exports, github, bank, ipv6
                hostile GitHub exports and API answers, a hostile import into the learned bank and
                `questions list` on a pty, `serve` on IPv6 (inputtrials.py)

Observations, not verdicts (as in trials.py); reliability.py lays them out. Every CLI run is a real
`rlhelper` subprocess; the model server is a small HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from . import inputtrials
from .clikit import CliTrial, acted_on, run_in_pty
from .trials import run_cli

ESCAPING_REPLY = "\x1b[2J\x1b]0;owned title\x07Run `cool --down` to cool the zorblax flux capacitor \u202e[1]\u202c."
QUESTION = "zorblax flux capacitor overheats"


class ModelServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that misbehaves as told: "escapes" (a streamed
    reply full of terminal controls), "garbage" (a body that is not JSON), "keepalive" (SSE comments
    every second, never an answer), "flood" (a 50 MB streamed reply)."""

    def __init__(self, mode: str):
        self.mode, self.stop = mode, threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    server.answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what it should do

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        if self.mode == "garbage":
            body = b"<html><body>502 Bad Gateway</body></html>\xff"
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()

        def event(text: str) -> None:
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                     "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            handler.wfile.flush()

        if self.mode == "keepalive":
            while not self.stop.wait(1.0):
                handler.wfile.write(b": keep-alive\n\n")
                handler.wfile.flush()
            return
        if self.mode == "flood":
            piece = "Run `cool --down` [1]. " * 200
            for _ in range(50_000_000 // len(piece)):
                event(piece)
        else:
            for start in range(0, len(ESCAPING_REPLY), 6):
                event(ESCAPING_REPLY[start:start + 6])
        handler.wfile.write(b"data: [DONE]\n\n")

    def close(self) -> None:
        self.stop.set()
        self._http.shutdown()
        self._http.server_close()


def write_hostile_docs(folder: Path) -> Path:
    """Hostile names and headings, a 1 MB single-heading document, links out of the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil\x1b]0;pwned\x07\u202egnp\x9b2J.md").write_text(
        "# Zorblax \x1b[2J guide \u202eevil\u202c\n\n## Zorblax flux capacitor overheats\n\n"
        "Run `cool --down` to fix the zorblax flux capacitor.\n", encoding="utf-8")
    body = "\n".join(f"Line {n}: the quasar reactor vents plasma through manifold {n % 97} when hot."
                     for n in range(14_000))
    (folder / "giant.md").write_text(f"# Quasar reactor venting plasma\n\n{body}\n", encoding="utf-8")
    (folder / "passwd.md").symlink_to("/etc/passwd")
    (folder / "loop.md").symlink_to("loop.md")
    return folder


def _escapes(index: Path, env: dict) -> CliTrial:
    server = ModelServer("escapes")
    try:
        runs = [run_in_pty(["ask", "--index", str(index), QUESTION], env),
                run_in_pty(["ask", "--index", str(index), "--llm", "--llm-base-url", server.url, "--llm-model", "m",
                            QUESTION], env)]
    finally:
        server.close()
    seen = [acted_on(screen) for _, screen in runs]
    held = sum(code == 0 and not controls for (code, _), controls in zip(runs, seen, strict=True))
    return CliTrial("escapes", "hostile names/headings and an LLM reply of ESC[2J, OSC title, U+202E on a pty",
                    held, 2, f"{sum(map(len, seen))} characters reached the terminal that it would act on",
                    [f"acted on: {c!r}" for c in seen if c])


def _llm(index: Path, env: dict) -> CliTrial:
    figures, problems, held = [], [], 0
    for mode in ("garbage", "keepalive", "flood"):
        server = ModelServer(mode)
        started = time.monotonic()
        try:
            proc = run_cli(["ask", "--index", str(index), "--llm", "--llm-base-url", server.url, "--llm-model", "m",
                            "--llm-timeout", "2", QUESTION], {**env, "RLHELPER_LLM_ANSWER_DEADLINE": "3"}, timeout=120)
        finally:
            server.close()
        seconds = time.monotonic() - started
        noted = any(line.startswith("note: ") and "LLM" in line for line in proc.stderr.splitlines())
        ok = proc.returncode == 0 and "Traceback" not in proc.stderr and noted and len(proc.stdout) < 100_000
        held += ok
        figures.append(f"{mode} {seconds:.1f} s, {len(proc.stdout) / 1000:.1f} KB")
        if not ok:
            problems.append(f"{mode}: exit {proc.returncode}, {proc.stderr[-300:]!r}")
    return CliTrial("llm", "model replies: not JSON, keep-alives forever (deadline 3 s), 50 MB", held, 3,
                    "; ".join(figures) + " (whole command)", problems)


def _giant(index: Path, env: dict, warned: bool) -> CliTrial:
    started = time.monotonic()
    proc = run_cli(["ask", "--index", str(index), "quasar reactor vents plasma"], env)
    seconds = time.monotonic() - started
    ok = proc.returncode == 0 and "The entry continues:" in proc.stdout and len(proc.stdout) < 10_000 and warned
    return CliTrial("giant", "a 1 MB single-heading document, then `rlhelper ask`", int(ok), 1,
                    f"{len(proc.stdout) / 1000:.1f} KB printed in {seconds:.1f} s; ingest "
                    f"{'warned' if warned else 'did not warn'} about the section",
                    [] if ok else [f"exit {proc.returncode}, {len(proc.stdout)} characters"])


def _symlinks(index: Path, env: dict, ingested: subprocess.CompletedProcess) -> CliTrial:
    from ..index.store import Index

    skipped = [line for line in ingested.stderr.splitlines() if line.startswith("skipped: ")]
    named = [name for name in ("passwd.md", "loop.md") if any(name in line for line in skipped)]
    docs = {e.doc for e in Index.load(index).entries}
    info = run_cli(["info", "--index", str(index)], env)
    status = next((line for line in info.stdout.splitlines() if line.startswith("status")), "")
    checks = [len(named) == 2, "passwd.md" not in docs, "skipped" in status and "passwd.md" in info.stdout]
    return CliTrial("symlinks", "passwd.md -> /etc/passwd and a link loop in a docs folder", sum(checks), 3,
                    f"indexed {len(docs)} documents; ingest named {', '.join(named) or 'none'}; info: "
                    f"{status.split(';')[-1].strip()[:50]}", [] if all(checks) else [ingested.stderr[-300:]])


GIT_LINKS = {"log.md": "../.git/logs/HEAD", "config.md": "../.git/config", "fetch.md": "../.git/FETCH_HEAD",
             "head.md": "../.git/HEAD"}


def _gitlinks(work: Path, env: dict) -> CliTrial:
    """An upstream whose docs hold links into the checkout's own .git, through `rlhelper ingest --git`."""
    from ..index.store import Index

    git_env = {**env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
               "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
               "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=git_env, check=True, capture_output=True, timeout=120)

    bare, clone = work / "upstream.git", work / "upstream"
    (clone / "docs").mkdir(parents=True)
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=work)
    git("init", "-q", "-b", "main", str(clone), cwd=work)
    (clone / "docs" / "faq.md").write_text("# FAQ\n\n## Rollout hangs\n\nStart the zorble service first.\n")
    for name, target in GIT_LINKS.items():
        os.symlink(target, clone / "docs" / name)
    git("add", "-A", cwd=clone)
    git("commit", "-q", "-m", "docs with links into .git", cwd=clone)
    git("push", "-q", str(bare), "main", cwd=clone)
    index = work / "index"
    proc = run_cli(["ingest", "--git", f"file://{bare}", "--path", "docs", "--collection", "gitlinks",
                    "--index", str(index)], git_env, timeout=600)
    if proc.returncode != 0:
        return CliTrial("gitlinks", "links into .git in an upstream's docs", 0, 1, "",
                        [f"ingest --git failed: {proc.stderr[-300:]}"])
    entries = Index.load(index).entries
    quoted = sorted({e.doc for e in entries} - {"docs/faq.md"})
    leaked = [e.doc for e in entries if "[remote" in e.text or "ref: refs/" in e.text or "bench@example" in e.text]
    held = not quoted and not leaked
    return CliTrial("gitlinks", f"{len(GIT_LINKS)} links from an upstream's docs into its checkout's .git "
                    "(logs/HEAD, config, FETCH_HEAD, HEAD), `rlhelper ingest --git`", int(held), 1,
                    f"indexed {len({e.doc for e in entries})} document (the FAQ); {len(quoted)} links quoted",
                    [] if held else [f"quoted: {quoted}, leaked: {leaked}"])


def _sections() -> CliTrial:
    from ..ingest import twins
    from ..schema import Entry

    figures, held = [], 0
    for sections in (twins.MAX_SECTIONS, 6000):
        entries = [Entry(id=f"{doc}#{n}", collection="c", doc=doc, doc_title=doc, framework="verl", lang="en",
                         breadcrumb=[f"s{n}"], heading=f"s{n}", anchor="", line_start=n + 1, line_end=n + 1,
                         text=f"set option_{n} to {n + 10}") for doc in ("a.md", "b.md") for n in range(sections)]
        base = np.random.default_rng(0).standard_normal((sections, 32)).astype(np.float32)
        vectors = np.concatenate([base, base])
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        tracemalloc.start()
        try:
            linked = twins.link(entries, vectors)
            peak = tracemalloc.get_traced_memory()[1] / 1e6
        finally:
            tracemalloc.stop()
        held += peak < 160 and linked == (sections if sections <= twins.MAX_SECTIONS else 0)
        figures.append(f"{sections:,} sections a page: {linked:,} linked, peak {peak:.0f} MB")
    return CliTrial("sections", "twin linking of two copies of a page of 2,000 and of 6,000 sections", held, 2,
                    "; ".join(figures), [] if held == 2 else figures)


def cli_trials(work: Path, env: dict, skip=()) -> list[CliTrial]:
    docs = write_hostile_docs(work / "hostile-docs")
    index = work / "hostile-index"
    ingested = run_cli(["ingest", "--index", str(index), str(docs)], {**env, "RLHELPER_MAX_TOKENS": "60000"})
    if ingested.returncode != 0:
        return [CliTrial("escapes", "a hostile docs folder", 0, 1, "", [f"ingest failed: {ingested.stderr[-300:]}"])]
    warned = "holds 1," in ingested.stderr and "giant.md" in ingested.stderr
    steps = {"escapes": lambda: _escapes(index, env), "llm": lambda: _llm(index, env),
             "giant": lambda: _giant(index, env, warned), "symlinks": lambda: _symlinks(index, env, ingested),
             "sections": _sections, "gitlinks": lambda: _gitlinks(work / "gitlinks", env), "exports": lambda: inputtrials.exports_trial(work / "exports", env),
             "github": lambda: inputtrials.github_trial(work / "github", env),
             "bank": lambda: inputtrials.bank_trial(work / "bank", env),
             "ipv6": lambda: inputtrials.ipv6_trial(index, env)}
    done = [step() for name, step in steps.items() if name not in skip]
    return [trial for trial in done if trial is not None]
