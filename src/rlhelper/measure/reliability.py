"""`rlhelper bench reliability`: try hard to break rlhelper, then print what was tried and what held.

    rows = run_reliability(index=None, kills=20, fuzz=200, clients=50, seconds=60)
    print(format_report(rows))

Everything happens in a temporary folder: the index named is only copied.

    kills       SIGKILL `rlhelper ingest` at seeded random points of a run with a change to
                write, half of them while it writes files; after each kill the copy answers
                exactly as before (or as the new index, past the swap), the next ingest finishes
                and nothing is left behind
    lock        a second `rlhelper ingest` while one holds the lock stops with a one-line
                message naming the holder; the first finishes; nothing is lost
    corruption  every kind of damage in faults.CORRUPTIONS, on a small index (a stand-in
                corpus keeps `rlhelper ingest --rebuild` quick): `rlhelper ask` prints one line
                naming the file and the fix, no traceback; that fix restores the same answers
    queries     0 bytes, whitespace, binary, a 1 MB log and a prompt injection through
                `rlhelper ask`: a one-line refusal, or an answer quoting only the docs
    fuzz        seeded nasty documents (every format) and pasted logs, some of 1 MB: no
                exception; CPU time per input
    load        `clients` concurrent clients for `seconds` against the web app on 127.0.0.1:
                errors and response-time percentiles
    web         attacks on the web app on 127.0.0.1 (webtrials.py): a visitor's own LLM URL
                (SSRF and key leak) refused, hand-made votes answered 400, an oversized comment
                refused, a vote flood bounded, a slow question cut while a normal one is answered
    trust       issue 31's attacks (web/trusttrials.py): a stranger's votes, filters, spam, pasted
                secrets and take-backs leave another visitor's answer and the operator's records
                as they were; fresh browsers claiming other addresses in X-Forwarded-For stay
                within one address's vote limit; Gradio's upload routes take no file
    memory      20 clients sending 2 MB questions for `seconds` to a `rlhelper serve` process:
                its resident memory at start, peak and end (target: under 1 GB)
    store, ipv6net, concurrent
                issue 37's attacks (web/votetrials.py): a flood from one network past the visitors'
                vote store's size, then a newcomer's vote; fresh browsers from one IPv6 /64; 100
                visitors' votes racing in one session
    escapes, llm, giant, symlinks, sections, gitlinks
                attacks on the CLI and ingest (clitrials.py): terminal escapes on a pty, a
                misbehaving model server, a giant section, links out of a docs folder, twin
                linking of huge pages, an upstream's docs linking into its checkout's .git
    exports, github, bank, ipv6
                hostile GitHub exports, a GitHub API that drips, pages forever or nests JSON
                deep, a hostile `questions import` and `questions list` on a pty, `serve --host
                ::1` (inputtrials.py)

The work is done by trials.py (one function per trial, returning observations);
this module only counts what held and lays out the table.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import config
from ..index import folders
from . import faults, trials


@dataclass
class Row:
    trial: str
    tried: str
    held: int
    total: int
    figures: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.held == self.total


def _kills(copy: Path, work: Path, kills: int, seed: int, env: dict) -> Row:
    run = trials.kill_trials(copy, work / "trial-docs", kills, seed, env)
    landed = Counter(t.kill.phase for t in run.trials)
    order = [*faults.PHASES, "finished"]
    where = ", ".join(f"{landed[p]} {p}" for p in order if landed[p])
    problems = [f"kill at {t.kill.seconds:.2f} s ({t.kill.phase}): the index did not answer as expected"
                for t in run.trials if not t.held]
    return Row("kills", f"{kills} SIGKILLs of `rlhelper ingest` (seed {seed})", sum(t.held for t in run.trials),
               kills, f"landed: {where}; an unkilled ingest takes {run.timeline.end:.1f} s", problems)


def _lock(work: Path, env: dict) -> Row:
    corpus = faults.write_small_corpus(work / "lock-docs")
    trial = trials.lock_trial(work / "lock" / "idx", corpus / "seeds", corpus / "official", env)
    message = trials.one_line_error(trial.second) or ""
    held = (f"(pid {trial.holder_pid})" in message and trial.first.returncode == 0
            and trial.collections == ["seeds"])
    problems = [] if held else [f"second ingest: exit {trial.second.returncode}, {trial.second.stderr[-300:]!r}; "
                                f"first: exit {trial.first.returncode}; collections {trial.collections}"]
    return Row("lock", "2 ingests at once on one index", int(held), 1,
               f'the second said: "{message[len("Error: "):][:70]}..."', problems)


def _corruptions(work: Path, env: dict) -> Row:
    small = {**env, "RLHELPER_CORPUS_DIR": str(faults.write_small_corpus(work / "corpus"))}
    (work / "pristine").mkdir()
    built = trials.run_cli(["ingest", "--index", "work/idx", "-q"], small, cwd=work / "pristine")
    if built.returncode != 0:
        return Row("corruption", "damaged index files", 0, len(faults.CORRUPTIONS), "",
                   [f"the small index could not be built: {built.stderr[-300:]}"])
    pristine = work / "pristine" / "work"
    expected = faults.answers(pristine / "idx")
    held, seconds, problems = 0, [], []
    for number, corruption in enumerate(faults.CORRUPTIONS):
        trial = trials.corruption_trial(corruption, pristine, work / f"damage-{number}", small)
        message = trial.message or ""
        ok = (f"work/idx/{corruption.file}" in message and trial.fixed is not None
              and trial.fixed.returncode == 0 and trial.answers == expected)
        held += ok
        seconds.append(trial.fix_seconds)
        if not ok:
            problems.append(f"{corruption.name}: {message or trial.asked.stderr[-300:]!r}")
    return Row("corruption", f"{len(faults.CORRUPTIONS)} kinds of damage, then `rlhelper ask`", held,
               len(faults.CORRUPTIONS), f"one line naming the file and the fix; the fix took "
               f"{statistics.median(seconds):.1f} s (median) and restored the same answers", problems)


def _queries(copy: Path, env: dict) -> Row:
    done = trials.query_trials(copy, env)
    slowest = max(done, key=lambda t: t.seconds)
    problems = [f"{t.name}: exit {t.proc.returncode}, {t.proc.stderr[-300:]!r}" for t in done if not t.held]
    return Row("queries", ", ".join(t.name for t in done), sum(t.held for t in done), len(done),
               f"refusals in one line; slowest: {slowest.name}, {slowest.seconds:.1f} s for the whole command",
               problems)


def _fuzz(examples: int, seed: int) -> Row:
    result = trials.fuzz_trial(examples, seed)
    total = result.documents + result.logs + result.megabytes
    return Row("fuzz", f"{result.documents} documents, {result.logs} logs, {result.megabytes} inputs of 1 MB",
               total - len(result.failures), total,
               f"CPU at most {result.max_cpu_s:.2f} s per input, {result.max_cpu_mb_s:.1f} s per MB",
               result.failures[:5])


WebStep = Callable[[Path, Path, int, float], "Row | list[Row] | None"]

CLI_TRIALS = ("escapes", "llm", "giant", "symlinks", "sections", "gitlinks", "exports", "github", "bank", "ipv6")


def _cli(work: Path, env: dict, skip: Sequence[str]) -> list[Row]:
    from . import clitrials

    return [Row(t.name, t.tried, t.held, t.total, t.figures, t.problems)
            for t in clitrials.cli_trials(work / "cli", env, skip=skip)]


def run_reliability(index: str | Path | None = None, *, kills: int = 20, fuzz: int = 200, clients: int = 50,
                    seconds: float = 60.0, seed: int = 0, skip: Sequence[str] = (),
                    say: Callable[[str], None] | None = None,
                    web_steps: Mapping[str, WebStep] | None = None) -> list[Row]:
    """Run the trials not in `skip` on a temporary copy of `index`; one Row each.

    The web app's trials come in as `web_steps` (name -> step(copy, work, clients, seconds)), from
    `rlhelper.web.benchrows.RELIABILITY_STEPS`: the web app is a face above this layer."""

    source = config.resolve_index(index)
    live = folders.live_folder(source)
    if live is None:
        raise folders.missing_error(source)
    say = say or (lambda _line: None)
    env = dict(os.environ)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="rlhelper-reliability-") as tmp:
        work = Path(tmp)
        copy = work / "copy" / "idx"
        shutil.copytree(live, copy)
        steps = {
            "kills": lambda: _kills(copy, work, kills, seed, env) if kills > 0 else None,
            "lock": lambda: _lock(work, env),
            "corruption": lambda: _corruptions(work, env),
            "queries": lambda: _queries(copy, env),
            "fuzz": lambda: _fuzz(fuzz, seed) if fuzz > 0 else None,
            **{name: functools.partial(step, copy, work, clients, seconds)
               for name, step in (web_steps or {}).items()},
            "cli": lambda: _cli(work, env, skip),
        }
        for name, step in steps.items():
            if name in skip or (name == "cli" and set(CLI_TRIALS) <= set(skip)):
                continue
            say(f"reliability: {name}...")
            done = step()
            for row in done if isinstance(done, list) else [done] if done is not None else []:
                rows.append(row)
                say(f"reliability: {row.trial}: {row.held}/{row.total} held")
    return rows


def format_report(rows: list[Row]) -> str:
    widths = [max(len(r.trial) for r in rows), max(len(r.tried) for r in rows)] if rows else [5, 5]
    lines = [f"{'trial':<{widths[0]}}  {'tried':<{widths[1]}}  {'held':>7}  figures"]
    for r in rows:
        lines.append(f"{r.trial:<{widths[0]}}  {r.tried:<{widths[1]}}  {f'{r.held}/{r.total}':>7}  {r.figures}")
    failed = [r for r in rows if not r.ok]
    for r in failed:
        lines += [f"  {r.trial}: {problem}" for problem in r.problems[:5]]
    lines.append("all held" if not failed else f"did not hold: {', '.join(r.trial for r in failed)}")
    return "\n".join(lines)
