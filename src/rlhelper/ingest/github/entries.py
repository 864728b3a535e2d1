"""An issue's thread, closed or open -> one index entry: the problem, and where the thread says it was
fixed or answered.

    thread_sources(store, repo)        stored threads -> documents for ingest (ingest.Sources)
    thread_entries(text, ...)          one thread document (JSON text) -> [Entry], build_entries' signature

The entry's text, in the labelled shape answers cut into parts (answer/extractive.py):

    <title>
    **Symptom:** <the body's prose> + its error signature (the lines a pasted log is reduced to
                 when it is a query: query.normalize_query), in a fence
    **Also reported as:** the titles of the issues closed as its duplicates
    **Fixed by pull request:** [#540: <its title>](link), its description's first lines
    **Maintainer's fix:** / **Reporter's fix:** / **Fix from another user:**
                 [@login, date](comment link), "confirmed by the reporter" when they said so,
                 the question a short reply answers, then the comment quoted
    **Workaround in the report:** what the reporter added to the issue ("Update: ...")
    Closed by commit [0a1b2c3](link).

Which comments hold a fix is resolution.py's judgement (a model learned from labelled real threads,
over the comment's role, content, links, the reporter's word on it, its place); notices are
recognised across the whole repository first (boilerplate.py) and are one of its signals. A thread
is resolved when something in it holds a fix or an answer, or a pull request or a commit closed it;
the others are left out (closed ones kept with --include-unresolved), since a report without an
answer answers nothing. What was kept and left out is counted per collection (THREAD_COUNTS).

The entry's `doc_title` says what it is ("Reported issue verl#523, closed 2025-03 (fixed by
#540)", "Reported issue verl#611, still open (opened 2025-04)"), so every renderer shows it as
a report, not as documentation, and `kind` is
"issue", which ranking and the confidence use (search/). Its language is the problem's
(title and prose), not the thread's: an English report with a bilingual notice is English.

Memory: threads are streamed from the store three times (notices, resolutions, then each
one's document when the pipeline reads it), never all held: ingest is linear in the store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from ...index.folders import GITHUB_SOURCE
from ...schema import Entry
from ...search.query import normalize_query
from ..entries import detect_lang, entry_id
from ..sources import SourceDoc, Sources
from . import boilerplate as boilerplate_module
from . import resolution as resolution_module
from . import resolution_model
from . import signals as signals_module
from . import text as text_module
from .boilerplate import Notices
from .resolution import MAINTAINERS, Fix, Resolution, is_bot, resolve
from .text import clean, plain, split_body
from .threads import ThreadStore

QUOTE_CHARS = 1500  # of each quoted fix
QUESTION_CHARS = 300  # of the question a short reply answers
PULL_CHARS = 700  # of a closing pull request's description
PROSE_CHARS = 600  # of the body's prose before its error lines
SIGNATURE_CHARS = 1200
MAX_DUPLICATES = 5  # titles of duplicates named in the original's entry
KIND = "issue"
DOC_KIND = "github-issue"  # the documents' meta "kind"
FIX_LABELS = {"maintainer": "Maintainer's fix", "reporter": "Reporter's fix", "other": "Fix from another user",
              "contributor": "Fix from another user"}
BODY_FIX_LABEL = "Workaround in the report"
PULL_LABEL = "Fixed by pull request"
DUPLICATES_LABEL = "Also reported as"
NO_FIX = "_No fix is recorded in this thread; it was closed without one._"


def collection_name(repo: str) -> str:
    return f"github:{repo}"


def framework_of(repo: str) -> str:
    """The framework a repository's issues are about: its name (verl-project/verl -> verl,
    NovaSky-AI/SkyRL -> skyrl, THUDM/slime -> slime, RLinf/RLinf -> rlinf)."""
    return repo.rsplit("/", 1)[-1].lower()


def maintainer_replies(thread: dict) -> list[dict]:
    return [c for c in thread.get("comments") or []
            if c.get("association") in MAINTAINERS and not is_bot(c) and str(c.get("body") or "").strip()]


def is_closed(thread: dict) -> bool:
    return thread.get("state") == "closed"


def is_resolved(thread: dict, notices: frozenset = frozenset()) -> bool:
    """A fix or an answer found in the thread, open or closed."""
    return resolve(thread, notices).resolved


class _Threads:
    """The threads to read, streamed from a store or taken from a dict (tests, small callers)."""

    def __init__(self, threads: ThreadStore | dict[int, dict]):
        self.store = threads if isinstance(threads, ThreadStore) else None
        self.given = None if self.store is not None else threads
        self.offsets = self.store.offsets() if self.store is not None else {}

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        if self.store is not None:
            yield from self.store.threads(self.offsets)
        else:
            yield from sorted(self.given.items())

    def reader(self, number: int) -> Callable[[], dict | None]:
        if self.store is None:
            thread = self.given[number]
            return lambda: thread
        store, offset = self.store, self.offsets[number]
        return lambda: store.read_at(offset)


def thread_sources(threads: ThreadStore | dict[int, dict], repo: str, *, collection: str | None = None,
                   include_unresolved: bool = False, issues_file: Path | None = None,
                   renamed_from: list[str] | tuple = ()) -> Sources:
    """The threads that hold a fix or an answer, closed or open (and, with `include_unresolved`, the
    closed ones that hold none) as ingest's documents. The collection is read whole: a thread gone
    since leaves the index, and so does the collection of an old name of the repository (`renamed_from`).
    How many of each kind were kept and left out is recorded in the collection's `threads` counts."""
    name = collection or collection_name(repo)
    found = Sources()
    found.replaced.add(name)
    found.replaced.update(collection_name(old) for old in renamed_from if collection_name(old) != name)
    source = _Threads(threads)
    if source.store is not None:
        issues_file = issues_file or source.store.issues_file
    analysis = analyse(source)
    kept, duplicates = [], {}
    counts = dict.fromkeys(THREAD_COUNTS, 0)
    for number, found_out in sorted(analysis.items()):
        if found_out["duplicate_of"] is not None:
            duplicates.setdefault(found_out["duplicate_of"], []).append(number)
        kind = thread_kind(found_out)
        counts[kind] += 1
        if kind in ("resolved", "open with an answer") or (include_unresolved and kind == "closed without a fix"):
            kept.append(number)
    found.collections[name] = {"title": f"GitHub issues of {repo}", "source": f"{GITHUB_SOURCE}{repo}",
                               "whole_folder": True, "threads": counts}
    for number in kept:
        also = [{"number": d, "title": analysis[d]["title"], "url": analysis[d]["url"]}
                for d in sorted(duplicates.get(number, []))[:MAX_DUPLICATES] if d != number]
        found.docs.append(SourceDoc(name, f"issues/{number}", issues_file or Path(f"{repo}#{number}"),
                                    {"kind": DOC_KIND, "repo": repo, "framework": framework_of(repo)},
                                    build=thread_entries,
                                    read=_document(source.reader(number), analysis[number]["notices"], also)))
    left = counts["closed without a fix"]
    if left and not include_unresolved:
        found.notes.append(f"{left} closed issue(s) of {repo} with no fix in the thread and no closing pull "
                           "request or commit left out (--include-unresolved adds them)")
    if counts["open without an answer"]:
        found.notes.append(f"{counts['open without an answer']} open issue(s) of {repo} with no answer yet left out")
    return found


# What `rlhelper info` counts per thread collection: what was indexed, and what was left out and why.
THREAD_COUNTS = ("resolved", "open with an answer", "closed without a fix", "open without an answer")


def thread_kind(analysed: dict) -> str:
    is_open = bool(analysed.get("open"))
    if analysed.get("resolved"):
        return "open with an answer" if is_open else "resolved"
    return "open without an answer" if is_open else "closed without a fix"


def repository_notices(threads) -> dict[int, set[int]]:
    """Issue number -> positions of its comments the repository-wide pass flags as notices
    (boilerplate.Notices: how its accounts write across all its threads, open and closed)."""
    notices = Notices()
    for thread in threads:
        notices.add_thread(thread)
    flagged: dict[int, set[int]] = {}
    for number, position in notices.flagged():
        flagged.setdefault(number, set()).add(position)
    return flagged


def analyse(source: _Threads) -> dict[int, dict]:
    """Per thread, open or closed: resolved (a fix or an answer found) or not, what it duplicates, its
    title and link, its state, its notices. Two passes over the store (the notices are the repository's,
    then each thread's fix); a store unchanged since the last analysis reads it back from ANALYSIS_FILE."""
    cached = _cached_analysis(source.store)
    if cached is not None:
        return cached
    flagged = repository_notices(thread for _, thread in source)
    analysis = {}
    for number, thread in source:  # second pass: what each thread's fix is
        resolution = resolve(thread, flagged.get(number, set()))
        analysis[number] = {"resolved": resolution.resolved, "duplicate_of": resolution.duplicate_of,
                            "title": _one_line(thread.get("title")), "url": str(thread.get("url") or ""),
                            "open": not is_closed(thread), "notices": sorted(flagged.get(number, ()))}
    _save_analysis(source.store, analysis)
    return analysis


ANALYSIS_FILE = "analysis.json"


def _analysis_key(store: ThreadStore) -> str | None:
    """The store's size and time, and the code that judges threads: either changed, analyse again."""
    try:
        stat = store.issues_file.stat()
    except OSError:
        return None
    code = hashlib.sha256()
    for module in (resolution_module, boilerplate_module, text_module, signals_module):
        code.update(Path(module.__file__).read_bytes())
    code.update(resolution_model.fingerprint().encode())
    return f"{stat.st_size}:{stat.st_mtime_ns}:{code.hexdigest()[:16]}"


def _cached_analysis(store: ThreadStore | None) -> dict[int, dict] | None:
    if store is None:
        return None
    key = _analysis_key(store)
    try:
        data = json.loads((store.folder / ANALYSIS_FILE).read_text(encoding="utf-8"))
        if key is None or data.get("key") != key:
            return None
        return {int(number): found for number, found in data["threads"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _save_analysis(store: ThreadStore | None, analysis: dict[int, dict]) -> None:
    key = _analysis_key(store) if store is not None else None
    if key is None:
        return
    try:
        store.write_private(ANALYSIS_FILE, json.dumps({"key": key, "threads": analysis}, ensure_ascii=False))
    except OSError:
        pass  # a cache: the next ingest analyses again


def _document(read: Callable[[], dict | None], notices: list[int], also: list[dict]) -> Callable[[], str]:
    """What the pipeline reads for one thread: the thread, the positions of its comments flagged as
    notices (decided across the repository, so a change there rebuilds the entry) and its duplicates."""
    def text() -> str:
        thread = read() or {}
        return json.dumps({"thread": thread, "notices": notices, "duplicates": also}, ensure_ascii=False,
                          sort_keys=True)
    return text


def thread_entries(text: str, *, collection: str, doc: str, meta: dict | None, max_tokens: int = 0
                   ) -> tuple[list[Entry], list[str]]:
    """The entry of one thread document (thread_sources' JSON, or a bare thread record). One entry
    per thread, never split: its text is bounded here."""
    data = json.loads(text)
    thread = data["thread"] if "thread" in data else data
    notices = frozenset(int(p) for p in data.get("notices") or [] if isinstance(p, int))
    meta = meta or {}
    repo = str(meta.get("repo") or thread.get("repo") or "")
    title = _one_line(thread.get("title")) or f"Issue #{thread.get('number')}"
    resolution = resolve(thread, notices)
    symptom = problem_lines(thread, without=[f.text for f in resolution.fixes if f.source == "body"])
    lines = [title, "", "**Symptom:**", *symptom]
    also = [d for d in data.get("duplicates") or [] if isinstance(d, dict) and d.get("title")]
    if also:
        lines += ["", f"**{DUPLICATES_LABEL}:** " + "; ".join(
            _link(f"#{d.get('number')}: {_one_line(d['title'])}", d.get("url")) for d in also)]
    lines += resolution_lines(resolution)
    body = "\n".join(lines)
    entry = Entry(
        id=entry_id(collection, doc, ["issue"], 1),
        collection=collection,
        doc=doc,
        doc_title=report_title(repo, thread),
        framework=str(meta.get("framework") or framework_of(repo)),
        lang=detect_lang("\n".join([title, *symptom])),
        breadcrumb=[title],
        heading=title,
        anchor="",
        line_start=1,
        line_end=len(lines),
        text=body,
        url=str(thread.get("url") or "") or None,
        kind=KIND,
    )
    return [entry], []


def resolution_lines(resolution: Resolution) -> list[str]:
    lines: list[str] = []
    pull = resolution.pull
    if pull:
        title = _one_line(pull.get("title"))
        lines += ["", f"**{PULL_LABEL}:** " + _link(f"{pull['ref']}: {title}" if title else str(pull["ref"]),
                                                     pull.get("url"))]
        description = pull_description(pull.get("body"))
        if description:
            lines += ["", *_quote(description, PULL_CHARS)]
    for fix in resolution.fixes:
        lines += ["", *fix_lines(fix)]
    if resolution.commit and not pull:
        lines += ["", f"Closed by commit {_link(str(resolution.commit['ref']), resolution.commit.get('url'))}."]
    elif pull and pull.get("commit"):
        lines += ["", f"Merged as commit {_link(str(pull['commit']), None)}."]
    if not resolution.resolved:
        lines += ["", NO_FIX]
    return lines


def fix_lines(fix: Fix) -> list[str]:
    if fix.source == "body":
        return [f"**{BODY_FIX_LABEL}:**", "", *_quote(fix.text, QUOTE_CHARS)]
    who = _reply_link(fix.comment or {})
    if fix.role == "contributor":
        who += " (a contributor to the project)"
    if fix.confirmed:
        who += ", confirmed by the reporter"
    lines = [f"**{FIX_LABELS[fix.role]}:** {who}", ""]
    if fix.answers:
        asked = _cut(" ".join(split_body(fix.answers.get("body")).prose.split()), QUESTION_CHARS)
        if asked:
            lines += [f"In answer to {_reply_link(fix.answers)}: “{asked}”", ""]
    return lines + _quote(fix.text, QUOTE_CHARS)


def report_title(repo: str, thread: dict) -> str:
    """"Reported issue verl#523, closed 2025-03 (fixed by #540)"; "Reported issue verl#611, still open
    (opened 2025-04)": an open thread's answer is knowledge too, but nobody has closed it as fixed."""
    name = repo.rsplit("/", 1)[-1] or "issue"
    title = f"Reported issue {name}#{thread.get('number')}"
    closed = str(thread.get("closed_at") or "")[:7]
    if not is_closed(thread):
        opened = str(thread.get("created_at") or "")[:7]
        return title + (f", still open (opened {opened})" if opened else ", still open")
    if closed:
        title += f", closed {closed}"
    ref = (thread.get("closed_by") or {}).get("ref")
    if ref:
        title += f" (fixed by {ref})"
    return title


def problem_lines(thread: dict, without: list[str] | tuple = ()) -> list[str]:
    """The body's prose (markup, images, template headings out), and its error signature: the
    error lines of its logs and prose, reduced as a pasted query is. Launch scripts, environment
    dumps and config are no signature. `without`: text of the body quoted elsewhere (its workaround)."""
    body = split_body(thread.get("body"))
    for part in without:
        body.prose = body.prose.replace(part, "")
    prose = _cut(body.prose.strip(), PROSE_CHARS)
    out = prose.split("\n") if prose else []
    logs = [b.text for b in body.of_kind("log")]
    searched = "\n".join([body.prose, *logs])
    signature = normalize_query(searched) if searched.strip() else None
    text = signature.text if signature is not None and signature.is_log else "\n".join(logs)
    text = _cut(text.strip("\n"), SIGNATURE_CHARS)
    if text.strip():
        fence = "~" * max(3, _longest_run(text, "~") + 1)
        out += ["", fence, *text.split("\n"), fence]
    return out or ["(no description)"]


def pull_description(text) -> str:
    """A pull request's description without its template: headings, checklists and HTML out."""
    body = split_body(text)
    return body.prose.strip()


def _reply_link(comment: dict) -> str:
    who = f"@{_one_line(comment.get('author')) or 'someone'}"
    when = str(comment.get("created_at") or "")[:10]
    return _link(f"{who}, {when}" if when else who, comment.get("url"))


def _link(label: str, url) -> str:
    label = label.replace("[", "(").replace("]", ")")
    url = str(url or "")
    return f"[{label}]({url})" if url.startswith(("https://", "http://")) and " " not in url and ")" not in url \
        else label


def _quote(text, limit: int) -> list[str]:
    body = _cut(plain(clean(text)).strip(), limit)
    lines = body.split("\n")
    fences = [line.strip()[:3] for line in lines if line.lstrip().startswith(("```", "~~~"))]
    if len(fences) % 2:
        lines.append(fences[-1])  # the cut fell inside a code block: close it
    return [f"> {line}".rstrip() for line in lines]


def _one_line(text) -> str:
    return " ".join(clean(text).split())


def _cut(text: str, limit: int) -> str:
    """The head of `text` within `limit` characters, ended at a line (or a space) when one is near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    at = head.rfind("\n", limit // 2)
    if at < 0:
        at = head.rfind(" ", limit // 2)
    return (head[:at] if at > 0 else head).rstrip() + " …"


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest
