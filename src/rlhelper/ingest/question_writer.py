"""A question bank for the user's own documents, written by the user's own model.

`rlhelper ingest DIR --llm --llm-base-url URL --llm-model M` asks the model, once per answerable
section of DIR's documents, for 8-12 ways a user would ask for it (the symptom, the error line as
in a log, a question, keywords, the other language). The replies are kept as the user's LLM bank,
in the shipped bank's format plus what the cache needs:

    <data_dir>/llm-questions/<collection>/<doc>.jsonl
    {"collection": "mine", "doc": "guide.md", "heading": "...", "questions": ["...", ...],
     "entry_sha256": "<hash of the section as sent>", "model": "...", "written": "2026-11-25T11:00:00Z"}

and ingest indexes them beside the shipped bank (source "llm"), the same way.

Trade-offs:

* **Cached by the section's content hash** (its title trail and text as sent, and the prompt's
  version). A re-ingest asks only about new or changed sections; unchanged ones keep their
  questions. The model's name is recorded but not hashed: pointing at another model does not
  re-ask everything (delete the folder for that).
* **Only what the model wrote for the current text is searched.** A section whose text changed
  since its questions were written (an ingest without --llm) keeps its line in the file until the
  next `--llm` run rewrites it, but the old questions are not indexed. A `--llm` run rewrites the
  files of its documents: questions of sections or documents that are gone are dropped there (they
  were written by a model, not by a person, and the next run would write them again). The shipped
  bank's files are never written; a section the shipped bank covers is not asked about.
* **Robust to the server.** Bounded concurrency, the per-request timeout of the LLM settings, one
  retry of a timeout, 5xx or 429, an overall deadline, and no more requests after a run of
  failures. A section that fails keeps no questions, the ingest still completes with the entries'
  own text, and the report names each failed section with its reason; the next run asks again.
* **The reply is untrusted text.** It is parsed as data (a JSON list, or one question per line),
  never executed; control characters are removed, and empty, overlong and repeated questions
  dropped, at most 12 kept.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .. import config
from ..errors import ConfigError
from ..index.questions import BankQuestion, BankReport
from .question_prompt import (
    ACCEPT_MIN,
    KEEP_MAX,
    MAX_QUESTION_CHARS,
    Section,
    build_messages,
    clean,
    parse_questions,
)

BANK_FOLDER = "llm-questions"  # under config.data_dir(); setting llm_question_bank_dir
DEFAULT_CONCURRENCY = 4
DEFAULT_DEADLINE = 3600.0  # seconds for the whole run
GIVE_UP_AFTER = 8  # consecutive failed sections: the server is down, stop asking
RETRY_PAUSE = 1.0

Progress = Callable[[int, int, str], None]


def bank_dir() -> Path:
    """The user's LLM bank: `llm-questions/` under the data folder (setting llm_question_bank_dir)."""
    return Path(config.setting("llm_question_bank_dir", default=str(config.data_dir() / BANK_FOLDER)))


@dataclass
class BankWriter:
    """How to have the model write questions: the LLM settings and the run's bounds."""

    settings: object  # llm.LLMSettings
    concurrency: int = DEFAULT_CONCURRENCY
    deadline: float = DEFAULT_DEADLINE
    folder: Path | None = None  # default: bank_dir()

    @classmethod
    def resolve(cls, settings, concurrency=None, deadline=None) -> BankWriter:
        """Argument > RLHELPER_LLM_CONCURRENCY / RLHELPER_LLM_DEADLINE > config file > default.
        Raises LLMError now, not per section, when langchain-openai is missing."""
        from ..answer.llm_client import INSTALL_HINT, LLMError

        if importlib.util.find_spec("langchain_openai") is None:
            raise LLMError(f"Questions written by your LLM need langchain-openai: {INSTALL_HINT}")
        return cls(settings,
                   concurrency=int(_positive("llm_concurrency", config.setting("llm_concurrency", concurrency,
                                                                               default=DEFAULT_CONCURRENCY))),
                   deadline=_positive("llm_deadline", config.setting("llm_deadline", deadline,
                                                                     default=DEFAULT_DEADLINE)))


def _positive(name: str, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = 0.0
    if not number > 0 or number != number or (name == "llm_concurrency" and number != int(number)):
        raise ConfigError(f"{name} must be a positive {'whole ' if name == 'llm_concurrency' else ''}number, "
                          f"got {value!r}: fix --{name.replace('_', '-')}, RLHELPER_{name.upper()} or {name} "
                          "in the config file.")
    return number


# --- the user's LLM bank on disk ------------------------------------------------------------

def _bank_file(folder: Path, collection: str, doc: str) -> Path | None:
    """Where a document's questions go; None for a name that would leave the folder."""
    file = (folder / collection / f"{doc}.jsonl")
    try:
        file.resolve().relative_to(folder.resolve())
    except ValueError:
        return None
    if collection in ("", ".", "..") or any(part in ("..", "") for part in Path(doc).parts):
        return None
    return file


def _read_rows(file: Path) -> list[dict]:
    """The lines of one bank file that look right; the rest are dropped (the file is ours)."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if (isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("collection", "doc", "heading",
                                                                                 "entry_sha256"))
                and isinstance(row.get("questions"), list)):
            row["questions"] = [q for q in (clean(q) for q in row["questions"] if isinstance(q, str))
                                if q and len(q) <= MAX_QUESTION_CHARS][:KEEP_MAX]
            rows.append(row)
    return rows


def _write_rows(file: Path, rows: list[dict]) -> None:
    """Replace the file atomically (another ingest may read it); no rows: remove it."""
    if not rows:
        file.unlink(missing_ok=True)
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_bank(current: Iterable[Section], folder: Path | None = None) -> tuple[BankReport, int]:
    """The LLM bank's questions for `current` sections whose text is the one they were written for
    (source "llm"), and how many sections have questions written for an older text (not used)."""
    folder = Path(folder) if folder is not None else bank_dir()
    report, stale = BankReport(), 0
    if not folder.is_dir():  # before hashing every section: the usual case without --llm
        return report, 0
    by_doc: dict[tuple[str, str], dict[str, str]] = {}
    for s in current:
        by_doc.setdefault((s.collection, s.doc), {})[s.heading] = s.sha256
    for (collection, doc), hashes in by_doc.items():
        file = _bank_file(folder, collection, doc)
        if file is None or not file.is_file():
            continue
        for row in _read_rows(file):
            sha = hashes.get(row["heading"])
            if sha is None:
                continue  # gone: the next --llm run drops it
            if row["entry_sha256"] != sha:
                stale += 1
                continue
            report.questions += [BankQuestion(collection, doc, row["heading"], q, "llm") for q in row["questions"]]
    return report, stale


# --- writing ----------------------------------------------------------------------------------

@dataclass
class WriteReport:
    """What a --llm run did: sections written, reused from the bank, failed (with the reason)."""

    model: str = ""
    written: list[str] = field(default_factory=list)  # section names
    questions: int = 0  # questions written in this run
    reused: int = 0
    covered: int = 0  # sections the shipped bank already covers: not asked
    failed: list[tuple[str, str]] = field(default_factory=list)  # (section name, reason)
    dropped: int = 0  # sections whose questions were removed: the section is gone
    requests: int = 0
    seconds: float = 0.0
    folder: Path | None = None

    def summary(self) -> str:
        return (f"questions by the LLM {self.model!r}: {len(self.written)} section(s) written "
                f"({self.questions} questions), {self.reused} reused from {self.folder}, {len(self.failed)} failed"
                + (f", {self.dropped} dropped (their section is gone)" if self.dropped else "")
                + (f", {self.covered} left to the shipped bank" if self.covered else "")
                + f"; {self.requests} request(s), {self.seconds:.1f} s")

    def lines(self) -> list[str]:
        """The summary, then one line per failed section (the next ingest --llm asks again)."""
        out = [self.summary()]
        out += [f"no questions for {name}: {reason}" for name, reason in self.failed]
        if self.failed:
            out.append("these sections are searched by their own text; run the same ingest --llm again to retry them")
        return out


class _Run:
    """The state shared by the worker threads of one write."""

    def __init__(self, writer: BankWriter):
        self.writer = writer
        self.deadline = time.monotonic() + writer.deadline
        self.lock = threading.Lock()
        self.failures_in_a_row = 0
        self.requests = 0
        self.stop_reason: str | None = None

    def ask(self, section: Section) -> list[str]:
        """The section's questions; raises _Failed with the reason."""
        from ..answer.llm_client import LLMError, LLMRequestError, complete

        system, user = build_messages(section)
        for attempt in (1, 2):
            self._check_go()
            with self.lock:
                self.requests += 1
            try:
                reply = complete(system, user, self.writer.settings)
            except LLMError:
                raise  # not an outage: the set-up is wrong, and every section would fail the same way
            except LLMRequestError as exc:
                if exc.retryable and attempt == 1 and time.monotonic() + RETRY_PAUSE < self.deadline:
                    time.sleep(RETRY_PAUSE)
                    continue
                self._failed()
                raise _Failed(exc.reason + (" (twice)" if attempt == 2 else "")) from exc
            except Exception as exc:  # noqa: BLE001 - a malformed response must fail one section, not the ingest
                self._failed()
                raise _Failed(f"bad response ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from exc
            found = parse_questions(reply)
            if len(found) < ACCEPT_MIN:
                self._failed()
                raise _Failed(f"unparseable reply ({len(found)} usable question(s) in {len(reply)} characters)")
            with self.lock:
                self.failures_in_a_row = 0
            return found
        raise AssertionError("unreachable")

    def _check_go(self) -> None:
        with self.lock:
            if self.stop_reason is None and time.monotonic() >= self.deadline:
                self.stop_reason = f"not asked: the run's deadline ({self.writer.deadline:g} s) passed"
            if self.stop_reason:
                raise _Failed(self.stop_reason)

    def _failed(self) -> None:
        with self.lock:
            self.failures_in_a_row += 1
            if self.failures_in_a_row >= GIVE_UP_AFTER and self.stop_reason is None:
                self.stop_reason = f"not asked: the server failed {GIVE_UP_AFTER} sections in a row"


class _Failed(Exception):
    pass


def write_bank(wanted: list[Section], writer: BankWriter, *, covered: set[tuple[str, str, str]] = frozenset(),
               gone_docs: Iterable[tuple[str, str]] = (), progress: Progress | None = None) -> WriteReport:
    """Bring the LLM bank of `wanted`'s documents up to date: ask the model about each section
    with no questions for its current text (not those in `covered`, the shipped bank's), keep the
    others, drop the questions of sections and of `gone_docs` that are gone. Never raises for the
    server's failures: they are in the report."""
    started = time.monotonic()
    folder = Path(writer.folder) if writer.folder is not None else bank_dir()
    report = WriteReport(model=str(getattr(writer.settings, "model", "")), folder=folder)
    docs: dict[tuple[str, str], list[Section]] = {}
    for s in wanted:
        docs.setdefault((s.collection, s.doc), []).append(s)

    existing: dict[tuple[str, str], dict[str, dict]] = {}
    todo: list[Section] = []
    for (collection, doc), secs in docs.items():
        file = _bank_file(folder, collection, doc)
        if file is None:
            report.failed += [(s.name, "the document's name cannot be a file name here") for s in secs]
            continue
        rows = {r["heading"]: r for r in _read_rows(file)} if file.is_file() else {}
        existing[(collection, doc)] = rows
        for s in secs:
            row = rows.get(s.heading)
            if s.key in covered:
                report.covered += 1
            elif row is not None and row["entry_sha256"] == s.sha256 and row["questions"]:
                report.reused += 1
            else:
                todo.append(s)

    written = _ask_all(todo, writer, report, progress)

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for (collection, doc), rows in existing.items():
        keep = []
        for s in docs[(collection, doc)]:
            row = rows.get(s.heading)
            if s.key in written:
                keep.append({"collection": collection, "doc": doc, "heading": s.heading, "questions": written[s.key],
                             "entry_sha256": s.sha256, "model": report.model, "written": now})
            elif s.key not in covered and row is not None and row["entry_sha256"] == s.sha256 and row["questions"]:
                keep.append(row)
        live = {s.heading for s in docs[(collection, doc)]}
        report.dropped += sum(1 for heading in rows if heading not in live)
        if [json.dumps(r, sort_keys=True) for r in keep] != [json.dumps(r, sort_keys=True) for r in rows.values()]:
            _write_rows(_bank_file(folder, collection, doc), keep)
    for collection, doc in gone_docs:
        file = _bank_file(folder, collection, doc)
        if file is not None and file.is_file():
            report.dropped += len(_read_rows(file))
            file.unlink(missing_ok=True)
    report.seconds = time.monotonic() - started
    return report


def _ask_all(todo: list[Section], writer: BankWriter, report: WriteReport,
             progress: Progress | None) -> dict[tuple[str, str, str], list[str]]:
    """Ask about every section of `todo`, `writer.concurrency` at a time, until the deadline."""
    written: dict[tuple[str, str, str], list[str]] = {}
    if not todo:
        return written
    # Seconds to import, and partly lazy (httpx is imported by the first request): imported here,
    # before the deadline's clock starts, and never by two worker threads at once (that fails with
    # "partially initialized module 'httpx'").
    import httpx  # noqa: F401
    import langchain_openai  # noqa: F401
    import openai  # noqa: F401
    from langchain_core.messages import HumanMessage  # noqa: F401

    run = _Run(writer)
    total = len(todo)
    _report(progress, 0, total, "writing questions")
    pool = ThreadPoolExecutor(max_workers=max(1, int(writer.concurrency)), thread_name_prefix="rlhelper-questions")
    futures = {pool.submit(run.ask, todo[0]): todo[0]}
    wait(futures, timeout=max(0.0, run.deadline - time.monotonic()))  # the first alone: the client warms up once
    futures.update({pool.submit(run.ask, s): s for s in todo[1:]})
    pending = set(futures)
    try:
        while pending:
            left = run.deadline - time.monotonic()
            done, pending = wait(pending, timeout=max(0.0, left), return_when=FIRST_COMPLETED)
            if not done:  # the deadline passed with requests in flight: do not wait for them
                break
            for future in done:
                section = futures[future]
                try:
                    found = future.result()
                except _Failed as exc:
                    report.failed.append((section.name, str(exc)))
                else:
                    written[section.key] = found
                    report.written.append(section.name)
                    report.questions += len(found)
            _report(progress, total - len(pending), total, "writing questions")
    finally:
        for future in pending:
            future.cancel()
            report.failed.append((futures[future].name,
                                  f"not answered before the run's deadline ({writer.deadline:g} s)"))
        pool.shutdown(wait=False, cancel_futures=True)
    report.requests = run.requests
    order = {s.name: i for i, s in enumerate(todo)}  # the documents' order, not the replies'
    report.failed.sort(key=lambda failed: order.get(failed[0], total))
    report.written.sort(key=lambda name: order.get(name, total))
    return written


def _report(progress: Progress | None, done: int, total: int, label: str) -> None:
    if progress is not None:
        progress(done, total, label)
