"""A closed issue's thread -> one index entry: the problem, and what maintainers answered.

    thread_sources(threads, repo)      stored threads -> documents for ingest (ingest.Sources)
    thread_entries(text, ...)          one thread (as JSON text) -> [Entry], build_entries' signature

The entry's text, in the labelled shape answers cut into parts (answer.py):

    <title>
    **Symptom:** <the body's first prose> + its error signature (the lines a pasted log
                 is reduced to when it is a query: query.normalize_query), in a fence
    **Maintainer's reply:** [@login, date](comment link), then the reply quoted
    ... (at most `REPLIES_QUOTED`: the first and the last ones)
    Closed by [#540](link).

A reply is a comment whose author association is OWNER, MEMBER or COLLABORATOR (bots
left out). A thread is resolved when a maintainer replied or a commit or pull request
closed it; unresolved ones are left out unless asked for, since a report without an
answer answers nothing. The entry's `doc_title` says what it is ("Reported issue
verl#523, closed 2025-03 (fixed by #540)"), so every renderer shows it as a report, not
as documentation, and `kind` is "issue", which ranking uses (retrieve.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...index.folders import GITHUB_SOURCE
from ...schema import Entry
from ...search.query import normalize_query
from ..entries import detect_lang, entry_id
from ..parse.inline import CONTROL_CHARS
from ..sources import SourceDoc, Sources

MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
REPLIES_QUOTED = 3
REPLY_CHARS = 1500  # of each quoted reply
PROSE_CHARS = 600  # of the body's prose before its error lines
SIGNATURE_CHARS = 1200
KIND = "issue"
DOC_KIND = "github-issue"  # the documents' meta "kind"
REPLY_LABEL = "Maintainer's reply"


def collection_name(repo: str) -> str:
    return f"github:{repo}"


def framework_of(repo: str) -> str:
    """The framework a repository's issues are about: its name (verl-project/verl -> verl,
    NovaSky-AI/SkyRL -> skyrl, THUDM/slime -> slime, RLinf/RLinf -> rlinf)."""
    return repo.rsplit("/", 1)[-1].lower()


def maintainer_replies(thread: dict) -> list[dict]:
    return [c for c in thread.get("comments") or []
            if c.get("association") in MAINTAINERS and not str(c.get("author", "")).endswith("[bot]")
            and str(c.get("body") or "").strip()]


def is_closed(thread: dict) -> bool:
    return thread.get("state") == "closed"


def is_resolved(thread: dict) -> bool:
    return is_closed(thread) and bool(maintainer_replies(thread) or thread.get("closed_by"))


def thread_sources(threads: dict[int, dict], repo: str, *, collection: str | None = None,
                   include_unresolved: bool = False, issues_file: Path | None = None) -> Sources:
    """The closed (and, unless `include_unresolved`, resolved) threads as ingest's documents.
    The collection is read whole: a thread reopened or gone since leaves the index."""
    name = collection or collection_name(repo)
    found = Sources()
    found.replaced.add(name)
    found.collections[name] = {"title": f"GitHub issues of {repo}", "source": f"{GITHUB_SOURCE}{repo}",
                               "whole_folder": True}
    kept = unresolved = 0
    for number in sorted(threads):
        thread = threads[number]
        if not is_closed(thread):
            continue
        if not is_resolved(thread):
            unresolved += 1
            if not include_unresolved:
                continue
        kept += 1
        found.docs.append(SourceDoc(name, f"issues/{number}", issues_file or Path(f"{repo}#{number}"),
                                    {"kind": DOC_KIND, "repo": repo, "framework": framework_of(repo)},
                                    text=json.dumps(thread, ensure_ascii=False, sort_keys=True),
                                    build=thread_entries))
    if unresolved and not include_unresolved:
        found.notes.append(f"{unresolved} closed issue(s) of {repo} with no maintainer reply and no closing "
                           "commit left out (--include-unresolved adds them)")
    return found


def thread_entries(text: str, *, collection: str, doc: str, meta: dict | None, max_tokens: int = 0
                   ) -> tuple[list[Entry], list[str]]:
    """The entry of one thread (JSON text of a thread record). One entry per thread, never split:
    its text is bounded here."""
    thread = json.loads(text)
    meta = meta or {}
    repo = str(meta.get("repo") or thread.get("repo") or "")
    title = " ".join(_clean(thread.get("title")).split()) or f"Issue #{thread.get('number')}"
    lines = [title, "", "**Symptom:**", *problem_lines(thread)]
    for reply in quoted_replies(thread):
        lines += ["", f"**{REPLY_LABEL}:** {_reply_link(reply)}", "", *_quote(reply.get("body"))]
    closed_by = thread.get("closed_by") or {}
    if closed_by.get("ref"):
        lines += ["", f"Closed by {_link(str(closed_by['ref']), closed_by.get('url'))}."]
    body = "\n".join(lines)
    entry = Entry(
        id=entry_id(collection, doc, ["issue"], 1),
        collection=collection,
        doc=doc,
        doc_title=report_title(repo, thread),
        framework=str(meta.get("framework") or framework_of(repo)),
        lang=detect_lang(body),
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


def report_title(repo: str, thread: dict) -> str:
    """"Reported issue verl#523, closed 2025-03 (fixed by #540)"."""
    name = repo.rsplit("/", 1)[-1] or "issue"
    title = f"Reported issue {name}#{thread.get('number')}"
    closed = str(thread.get("closed_at") or "")[:7]
    if closed:
        title += f", closed {closed}"
    ref = (thread.get("closed_by") or {}).get("ref")
    if ref:
        title += f" (fixed by {ref})"
    return title


def problem_lines(thread: dict) -> list[str]:
    """The body's first prose, and its error lines as a query would be reduced to, fenced."""
    body = _without_html_comments(_clean(thread.get("body")))
    prose, fenced = _split_fences(body)
    prose = _cut(prose.strip(), PROSE_CHARS)
    out = prose.split("\n") if prose else []
    unfenced = "\n".join(line for line in body.split("\n") if not _FENCE.match(line))  # fences are no error lines
    signature = normalize_query(unfenced) if unfenced.strip() else None
    # A log or traceback: its error lines. Else what was pasted in a fence (one error line, often).
    text = signature.text if signature is not None and signature.is_log else fenced
    text = _cut(text.strip("\n"), SIGNATURE_CHARS)
    if text.strip():
        fence = "~" * max(3, _longest_run(text, "~") + 1)
        out += ["", fence, *text.split("\n"), fence]
    return out or ["(no description)"]


def quoted_replies(thread: dict) -> list[dict]:
    """The first maintainer reply (often the diagnosis) and the last ones (often the fix)."""
    replies = maintainer_replies(thread)
    if len(replies) <= REPLIES_QUOTED:
        return replies
    return [replies[0], *replies[-(REPLIES_QUOTED - 1):]]


def _reply_link(reply: dict) -> str:
    who = f"@{_clean(reply.get('author')) or 'maintainer'}"
    when = str(reply.get("created_at") or "")[:10]
    return _link(f"{who}, {when}" if when else who, reply.get("url"))


def _link(label: str, url) -> str:
    label = label.replace("[", "(").replace("]", ")")
    url = str(url or "")
    return f"[{label}]({url})" if url.startswith(("https://", "http://")) and " " not in url and ")" not in url \
        else label


def _quote(text) -> list[str]:
    body = _cut(_without_html_comments(_clean(text)).strip(), REPLY_CHARS)
    return [f"> {line}".rstrip() for line in body.split("\n")]


def _clean(text) -> str:
    return CONTROL_CHARS.sub("", text.replace("\r\n", "\n")) if isinstance(text, str) else ""


def _cut(text: str, limit: int) -> str:
    """The head of `text` within `limit` characters, ended at a line (or a space) when one is near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    at = head.rfind("\n", limit // 2)
    if at < 0:
        at = head.rfind(" ", limit // 2)
    return (head[:at] if at > 0 else head).rstrip() + " …"


def _without_html_comments(text: str) -> str:
    """Issue templates' <!-- hints --> removed (a loop of finds: no regex backtracking)."""
    out, at = [], 0
    while True:
        start = text.find("<!--", at)
        if start < 0:
            out.append(text[at:])
            return "".join(out)
        out.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:
            return "".join(out)
        at = end + 3


_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _split_fences(text: str) -> tuple[str, str]:
    """(prose, fenced): a body's text outside its fenced blocks, and inside them."""
    prose, fenced, fence = [], [], None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        else:
            (prose if fence is None else fenced).append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(prose)), "\n".join(fenced)


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)
