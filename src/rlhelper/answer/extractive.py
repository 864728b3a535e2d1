"""Extractive, grounded answers: every sentence shown comes verbatim from a cited entry.

No model writes anything here. The troubleshooting docs mostly follow a
"symptom / cause / fix" shape marked by bold labels (`**Cause:**`,
`**Solution:**`, `**现象：**`, `**修复：**` ...), so an answer is those labelled
blocks cut out of the best entry, each carrying the number of its citation.
Entries without labels are quoted whole (they are short: the index splits long
sections).

Only the best entry is quoted. A runner-up is cited too only when it ties
(fused score within 1 %): a close second is mostly a wrong fix, so quoting it
would pad the answer (the figures: eval/DECISIONS.md). The runners-up stay in
`Answer.hits`, which the CLI and the web chat list as related entries.

One exception: when the best entry is a doc section and a reported issue's thread
among the first three would be a plain answer on its own too (or the other way
round: retrieve.Retriever.companion), both are quoted, the docs first,
each introduced as what it is ("The docs: …", "A reported issue with the same
error, and how it was fixed: …"). The docs say what the project recommends;
the thread shows the same error met and fixed, which a doc entry that only
shares the error's words cannot.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

from ..catalogue import Phrase, say
from ..schema import MAX_QUOTED_CHARS, Entry, Hit, title_trail
from .language import language_of
from .model import RELATED_SHOWN, Answer, AnswerPart, Citation
from .sources import place

# Label words seen in the shipped docs, grouped by what they introduce.
# Collected with: grep -ohE '^\*\*[^*]{1,30}[:：]?\*\*[:：]?' ingest/*/*
LABEL_KINDS = {
    "symptom": ("symptom", "symptoms", "现象", "问题现象", "description", "what this means", "error"),
    "cause": ("cause", "causes", "likely cause", "原因", "可能原因", "diagnosis"),
    "fix": (
        "solution", "solutions", "fix", "fixes", "修复", "解决方案", "临时解决方案",
        "debug", "排查步骤", "causes & solutions", "workaround",
    ),
    # A GitHub thread's parts (ingest/github/entries.py): who gave the fix, or what closed the issue.
    "reply": ("maintainer's reply",),
    "maintainer_fix": ("maintainer's fix",),
    "reporter_fix": ("reporter's fix",),
    "user_fix": ("fix from another user",),
    "report_fix": ("workaround in the report",),
    "pull": ("fixed by pull request",),
    "duplicates": ("also reported as",),
}
_KIND_OF_LABEL = {label: kind for kind, labels in LABEL_KINDS.items() for label in labels}

# A bold label at the start of a line: **Cause:** / **Solutions**: / **修复：**
_LABEL_LINE = re.compile(r"^\*\*(?P<label>[^*\n]{1,30}?)\s*[:：]?\s*\*\*\s*[:：]?\s*(?P<rest>.*)$")

# Within this fraction of the best fused score, another entry ties and is quoted too.
TIE_RATIO = 0.99
MAX_CITED = 2
WEAK_MATCH_NOTICE = Phrase("notice.weak_match")
# Training frameworks as their docs spell them; frameworks.detect_frameworks keys them in lower case.
FRAMEWORK_NAMES = {"verl": "verl", "skyrl": "SkyRL", "slime": "slime", "rlinf": "RLinf"}
NAMED = 0.5  # hint strength from which a query names a framework (the bare word "slime" gives 0.6)


def split_labelled_blocks(text: str) -> list[tuple[str, str]]:
    """Cut an entry body into (kind, block) pairs at bold symptom/cause/fix labels.

    Text before the first label, and blocks under labels we do not know, are
    kind "text". Code fences are respected: a label-looking line inside a fence
    is code, not a label.
    """
    blocks: list[tuple[str, list[str]]] = [("text", [])]
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        match = None if in_fence else _LABEL_LINE.match(stripped)
        kind = _KIND_OF_LABEL.get(match.group("label").strip().lower()) if match else None
        if kind:
            blocks.append((kind, [match.group("rest")] if match.group("rest") else []))
        else:
            blocks[-1][1].append(line)
    result = []
    for kind, lines in blocks:
        block = "\n".join(lines).strip()
        if block:
            result.append((kind, block))
    return result


def _body_without_heading(hit: Hit) -> str:
    """Entry text minus a first line that merely repeats the heading, dedented: the answer of a
    numbered FAQ item is indented under it, and Markdown would show that indent as a code block."""
    lines = hit.entry.text.strip("\n").splitlines()
    if lines and hit.entry.heading and hit.entry.heading in re.sub(r"[`*#]", "", lines[0]):
        lines = lines[1:]
    return textwrap.dedent("\n".join(lines)).strip()


def citation_for(hit: Hit, number: int) -> Citation:
    e = hit.entry
    return Citation(
        number=number,
        entry_id=e.id,
        doc=e.doc,
        doc_title=e.doc_title,
        breadcrumb=list(e.breadcrumb),
        heading=e.heading,
        line_start=e.line_start,
        line_end=e.line_end,
        url=e.url,
        collection=e.collection,
        also_at=list(e.also_at),
        twins=list(e.twins),
        lang=e.lang,
        kind=e.kind,
    )


def cited_hits(hits: list[Hit], companion: int | None = None) -> list[Hit]:
    """The best hit, and a runner-up that ties with it, or the `companion` (retrieve.Retriever.companion:
    an entry of the other kind, doc or thread, that answers on its own too): then the doc entry comes first."""
    return [hits[i] for i in cited_positions([h.score for h in hits], [is_thread(h) for h in hits], companion)]


def is_thread(hit: Hit) -> bool:
    return hit.entry.kind == "issue"


def cited_positions(scores: list[float], threads: list[bool], companion: int | None = None) -> list[int]:
    """cited_hits on a ranking's scores and kinds (also what measure/tradeoff.py simulates)."""
    if not scores:
        return []
    best = scores[0]
    cited = [i for i in range(min(MAX_CITED, len(scores))) if best <= 0 or scores[i] >= best * TIE_RATIO]
    if companion is not None and 0 < companion < len(scores) and companion not in cited:
        cited = [cited[0], companion]
    if len({threads[i] for i in cited}) == 2:
        cited.sort(key=lambda i: threads[i])
    return cited


def framework_notice(named: dict[str, float], quoted: Entry, related: list[Hit], indexed: Iterable[str]) -> str | None:
    """A notice when the query names one framework and the quoted entry is another's.

    The docs' fixes are framework specific (config keys, flags, launch scripts), and the
    ranking lets another framework's entry win when it matches much better than any of the
    named one's (retrieve.py), so the reader is told whose advice this is, and which of the
    named framework's entries came closest when one is among the runners-up.
    """
    wanted = [name for name, strength in named.items() if name in FRAMEWORK_NAMES and strength >= NAMED]
    if len(wanted) != 1 or quoted.framework == wanted[0] or quoted.framework not in FRAMEWORK_NAMES:
        return None
    asked, found = FRAMEWORK_NAMES[wanted[0]], FRAMEWORK_NAMES[quoted.framework]
    # A thread is one user's case on another project's tracker: named as such, not as docs.
    source = Phrase("notice.source_tracker" if quoted.kind == "issue" else "notice.source_docs", found=found)
    this = Phrase("notice.this_fix" if quoted.kind == "issue" else "notice.this_entry")
    if wanted[0] not in set(indexed):
        return Phrase("notice.framework_absent", asked=asked, this=this, source=source)
    notice = Phrase("notice.framework_other", asked=asked, this=this, source=source)
    own = next((h.entry for h in related if h.entry.framework == wanted[0]), None)
    if own is not None:
        notice = Phrase("notice.framework_closest", notice=notice, asked=asked, heading=own.heading)
    return notice


def capped(body: str, entry: Entry, lang: str = "en") -> str:
    """`body` cut after MAX_QUOTED_CHARS at a line end, with how many lines follow and where."""
    if len(body) <= MAX_QUOTED_CHARS:
        return body
    cut = body.rfind("\n", 0, MAX_QUOTED_CHARS)
    cut = cut if cut > MAX_QUOTED_CHARS // 2 else MAX_QUOTED_CHARS
    shown = body[:cut].rstrip()
    if sum(line.lstrip().startswith(("```", "~~~")) for line in shown.splitlines()) % 2:
        shown += "\n```"  # the cut fell inside a code block: close it
    more = body.count("\n", cut) + 1
    where = (place(entry.doc, entry.line_start, entry.line_end, doc_title=entry.doc_title, lang=lang,
                   url=entry.url or "")
             or say("place.lines", lang, start=entry.line_start, end=entry.line_end)) + (f" {entry.url}" if entry.url
                                                                                          else "")
    return f"{shown}\n\n_{say('answer.continues', lang, n=more, where=where)}_"


def parts_for(hit: Hit, number: int, lang: str = "en") -> list[AnswerPart]:
    body = capped(_body_without_heading(hit), hit.entry, lang)
    blocks = split_labelled_blocks(body) or [("text", body)]
    return [AnswerPart(kind=kind, text=block, citation=number) for kind, block in blocks]


def render_markdown(parts: list[AnswerPart], citations: list[Citation], lang: str = "en") -> str:
    """Markdown answer text with [n] markers after every block; labels in `lang` (en or zh)."""
    out: list[str] = []
    by_number = {c.number: c for c in citations}
    both = len({c.kind == "issue" for c in citations}) == 2  # a doc entry and a thread: each named as what it is
    current = None
    for part in parts:
        if part.citation != current:
            current = part.citation
            c = by_number[current]
            trail = " › ".join(title_trail(c.doc_title, c.breadcrumb[-2:] or [c.heading]))
            if both:  # a doc entry and a reported issue's thread: each introduced as what it is
                lead = say("answer.issue_lead" if c.kind == "issue" else "answer.docs_lead", lang)
            else:
                lead = "" if current == 1 else say("answer.also_relevant", lang)
            out.append(f"### {lead}{c.heading} [{current}]\n_{trail}_")
        title = say(f"kind.{part.kind}", lang)
        label = f"**{title}** [{part.citation}]\n\n" if title else ""
        out.append(f"{label}{part.text}")
    return "\n\n".join(out)


def no_match_text(has_related: bool, lang: str = "en") -> str:
    """The answer's text when nothing answers the query."""
    return say("answer.no_match_related" if has_related else "answer.no_match", lang)


def build_answer(
    query: str,
    normalized_query: str,
    hits: list[Hit],
    *,
    abstained: bool,
    truncated: bool = False,
    notices: list[str] | None = None,
    weak: bool = False,
    named_frameworks: dict[str, float] | None = None,
    indexed_frameworks: Iterable[str] = (),
    companion: int | None = None,
) -> Answer:
    """The extractive answer for ranked hits; when abstaining, no citations, hits kept as "related".
    A weak answer (confidence.py: the band above the threshold) says so in a notice, and so does
    an answer from another framework than the one the query names."""
    notices = list(notices or [])
    if abstained or not hits:
        return Answer(query, normalized_query, truncated, True, no_match_text(bool(hits), language_of(query)), [], [],
                      hits, notices)
    citations: list[Citation] = []
    parts: list[AnswerPart] = []
    cited = cited_hits(hits, companion)
    for number, hit in enumerate(cited, start=1):
        citations.append(citation_for(hit, number))
        parts.extend(parts_for(hit, number, language_of(query)))
    text = render_markdown(parts, citations, language_of(query))
    related = [h for h in hits if h not in cited][:RELATED_SHOWN]
    for hit in cited:  # each quoted entry: a doc entry and a thread may be of two projects
        mismatch = framework_notice(named_frameworks or {}, hit.entry, related, indexed_frameworks)
        if mismatch and mismatch not in notices:
            notices.append(mismatch)
    if weak:
        notices.append(WEAK_MATCH_NOTICE)
    return Answer(query, normalized_query, truncated, False, text, parts, citations, hits, notices, weak_match=weak)
