"""Issue 31's attacks on the web app, for `rlhelper bench reliability`: whose votes teach, the real
client address, uploads, and memory under 2 MB questions.

    poisoning_trial(helper, work) -> WebTrial   a stranger's votes, filters, spam, secrets and take-backs
    forwarded_trial(helper, work) -> WebTrial   fresh browsers each claiming another X-Forwarded-For
    upload_trial(helper, work)    -> WebTrial   999 files a request at Gradio's upload routes
    memory_row(copy, work, ...)   -> Row        20 browser tabs sending 2 MB questions at a `rlhelper serve`

Visitors are raw HTTP clients speaking the page's protocol (trials.Visitor). Observations, not
verdicts: each says what was tried, whether it held, and its figures.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import httpx

from ..measure.reliability import Row
from ..measure.trials import stop_process
from . import loadtest
from .app import EXAMPLES
from .trials import Visitor, WebTrial, dependencies, lead_of, matched_of, own_server, queue_call

EXAMPLE = EXAMPLES[0]["text"]  # the page's own example
SECRETS = ("Free bitcoin: https://spam.example/claim-now", "HF_TOKEN=hf_QpT9xBenchSecret42 on gpu-node-17.corp.internal")
MEMORY_CLIENTS = 20
MEMORY_TARGET_MB = 1024
BIG_QUESTION_CHARS = 2_000_000


def _own_bank(helper, work: Path):
    """The same index with a user bank of its own in `work`: a trial never teaches the user's."""
    from ..api import Helper

    return Helper(helper.index, user_bank=work / f"bank-{os.urandom(4).hex()}" / "questions.jsonl", mode=helper.mode)


def poisoning_trial(helper, work: Path) -> WebTrial:
    """A stranger demotes the page's example, pins an entry under a filter, teaches a spam question and a
    pasted secret, and takes back a vote on a pair the operator imported; a fresh visitor checks each."""
    from ..index.lastanswer import entry_key

    helper = _own_bank(helper, work)
    app, url, _ = own_server(helper, work)
    held: list[bool] = []
    try:
        deps = dependencies(url)
        attacker = Visitor(url, deps)
        lead = lead_of(attacker.ask(EXAMPLE))
        attacker.vote("Dislike")
        held.append(lead_of(Visitor(url, deps).ask(EXAMPLE)) == lead)
        for framework in helper.frameworks:  # a thumbs-up under a filter, on an entry that does not lead without it
            if lead_of(attacker.ask(EXAMPLE, framework=framework)) not in ("", lead):
                attacker.vote("Like")
                held.append(lead_of(Visitor(url, deps).ask(EXAMPLE)) == lead)
                break
        for secret in SECRETS:
            question = f"RuntimeError: weight sync timed out between trainer and SGLang {secret}"
            attacker.ask(question)
            attacker.vote("Like")
            shown = Visitor(url, deps).ask(question)
            held.append("rl-answer" in shown and secret not in shown)
        question = "sglang weight update times out after the trainer step"
        third = helper.search(question, k=5)[2].entry
        helper.user_bank.add(question, entry_key(third), 1, "import")
        attacker.ask(question)
        attacker.vote("Like")
        attacker.vote("")
        attacker.ask(question)
        attacker.vote("Dislike")
        operator = any(r.source == "import" and r.entry_id == third.id for r in helper.user_bank.records())
        held.append(operator and third.heading in lead_of(Visitor(url, deps).ask(question)))
        words = [m for m in matched_of(Visitor(url, deps).ask(EXAMPLE))]
    finally:
        loadtest.close_quietly(app)
    held.append(not any("bitcoin" in w or "hf_" in w for w in words))
    return WebTrial("poisoning", f"{len(held)} attempts by one stranger to change or read another visitor's answer",
                    all(held), f"{sum(held)}/{len(held)} left the other visitor's lead and words as they were; "
                    "the operator's imported record survived the stranger's take-back")


def forwarded_trial(helper, work: Path, browsers: int = 8, limit: int = 5) -> WebTrial:
    """Fresh browsers, each asking once and voting once, each claiming another address in X-Forwarded-For,
    against a server that allows `limit` writes a minute per address and trusts no proxy."""
    helper = _own_bank(helper, work)
    app, url, _ = own_server(helper, work, writes_per_minute=limit)
    accepted = 0
    try:
        deps = dependencies(url)
        for i in range(browsers):
            visitor = Visitor(url, deps, headers={"X-Forwarded-For": f"203.0.113.{i + 1}"})
            visitor.ask(EXAMPLE)
            accepted += "Thanks" in visitor.vote("Like")
    finally:
        loadtest.close_quietly(app)
    return WebTrial("forwarded", f"{browsers} votes from new browsers, each claiming another X-Forwarded-For",
                    accepted <= limit, f"{accepted}/{browsers} accepted (limit {limit} a minute per address)")


def upload_trial(helper, work: Path, requests: int = 3, files: int = 999) -> WebTrial:
    from gradio.utils import get_upload_folder

    folder = get_upload_folder()

    def stored() -> int:
        return sum(len(names) for _, _, names in os.walk(folder)) if os.path.isdir(folder) else 0

    app, url, _ = own_server(helper, work)
    before, answers = stored(), []
    try:
        batch = [("files", (f"f{i}.txt", b"x" * 1024, "text/plain")) for i in range(files)]
        for route in ["/gradio_api/upload"] * requests + ["/gradio_api/process_recording"]:
            said = httpx.post(f"{url}{route}", files=batch, timeout=60, trust_env=False)
            answers.append((said.status_code, folder in said.text))
    finally:
        loadtest.close_quietly(app)
    added = stored() - before
    held = all(status == 403 and not path for status, path in answers) and added == 0
    return WebTrial("uploads", f"{len(answers)} requests of {files} files of 1 KB at the upload routes", held,
                    f"answered HTTP {', '.join(sorted({str(s) for s, _ in answers}))}; {added} files written; "
                    f"a temp path in {sum(p for _, p in answers)} replies")


def trust_rows(copy: Path, work: Path, clients: int, seconds: float) -> list[Row]:
    from ..api import Helper

    helper = Helper.load(copy, user_bank=work / "trust" / "questions.jsonl")
    done = [trial(helper, work / "trust") for trial in (poisoning_trial, forwarded_trial, upload_trial)]
    return [Row(t.name, t.tried, int(t.held), 1, t.figures, [] if t.held else [t.figures]) for t in done]


# -- memory ---------------------------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB (Linux /proc)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def big_question(n: int) -> str:
    """A pasted training log of `n` characters that ends in the error."""
    line = "INFO 2026-01-05 12:00:01 [rollout] step 1234 tokens/s=4821 kv_cache=0.83 weight_version=17\n"
    tail = "RuntimeError: Weight sync timed out between the trainer and SGLang after 600 s\n"
    return (line * ((n - len(tail)) // len(line) + 1))[: n - len(tail)] + tail


def memory_row(copy: Path, work: Path, clients: int, seconds: float) -> Row | None:
    """A real `rlhelper serve` (its own process) under MEMORY_CLIENTS clients sending 2 MB questions
    for `seconds`: its resident memory at start, at its peak and at the end."""
    if seconds <= 0:
        return None
    port = loadtest.free_port()
    data = work / "memory-data"
    env = {**os.environ, "RLHELPER_DATA_DIR": str(data), "NO_PROXY": "127.0.0.1,localhost"}
    from ..measure.faults import rlhelper_command

    server = subprocess.Popen(rlhelper_command("serve", "--port", str(port), "--index", str(copy)), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url, samples, done, errors = f"http://127.0.0.1:{port}", [], [], []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/config", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        start_mb = rss_mb(server.pid)
        question, stop, ask = big_question(BIG_QUESTION_CHARS), threading.Event(), dependencies(url)["ask"]

        def client() -> None:
            """One browser tab: one session, its chat growing, one question after the other."""
            session, history = uuid.uuid4().hex, []
            while not stop.is_set():
                try:
                    answered = queue_call(url, ask, [question, history, "", "", None, ""], session)
                    if not answered.get("success"):
                        raise ValueError(f"not answered: {str(answered)[:150]}")
                    history = answered["output"]["data"][0]
                    done.append(1)
                except (httpx.HTTPError, ValueError, KeyError, IndexError) as err:
                    errors.append(f"{type(err).__name__}: {err}"[:200])

        threads = [threading.Thread(target=client, daemon=True) for _ in range(MEMORY_CLIENTS)]
        for t in threads:
            t.start()
        began = time.monotonic()
        while time.monotonic() < began + seconds:
            samples.append((time.monotonic() - began, rss_mb(server.pid)))
            time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=150)
        end_mb = rss_mb(server.pid)
    finally:
        stop_process(server)
    peak = max((mb for _, mb in samples), default=0.0)
    # A bound holds when memory levels off; growth to the end would only take longer to pass the target.
    thirds = [max((mb for t, mb in samples if t <= seconds * k / 3), default=0.0) for k in (1, 2, 3)]
    held = peak < MEMORY_TARGET_MB and not errors
    return Row("memory", f"{MEMORY_CLIENTS} browsers sending 2 MB questions for {seconds:g} s to `rlhelper serve`",
               int(held), 1, f"server RSS {start_mb:.0f} MB at start, peak by each third of the run "
               f"{' / '.join(f'{mb:.0f}' for mb in thirds)} MB, {end_mb:.0f} MB after (target < {MEMORY_TARGET_MB} MB); "
               f"{len(done)} answers, {len(errors)} errors",
               sorted(set(errors))[:5] + ([] if peak < MEMORY_TARGET_MB else [f"peak {peak:.0f} MB"]))
