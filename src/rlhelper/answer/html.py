"""The web chat's and the notebook's views of an answer: body, citations, whole entries, notices.

Document text becomes HTML in markup.py (escaped, http(s) links only); this
module lays the pieces out and escapes every other value it writes, so a
heading or a URL from a document can never add markup of its own.

Its own words come from the catalogue, in the asker's language (`lang`: language_of the question),
and so do the notices, which carry their catalogue key (catalogue.Phrase).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..catalogue import in_language, say
from ..schema import Entry, Hit, title_trail
from .language import language_of
from .markup import code_block, esc, inline, link, markdown_html, preformatted, safe_url  # noqa: F401 (re-exported)
from .sources import (
    collection_name,
    collection_note,
    page_name,
    place,
    short_trail,
    twin_label,
    twin_worth_naming,
    upstream,
)

if TYPE_CHECKING:  # Answer._repr_html_ imports this module: the model is only named here
    from .model import Answer, Citation

MAX_QUERY_ECHO = 2000  # characters of the user's query shown back in the chat


# -- the pieces of a chat answer ------------------------------------------------------------


def user_html(query: str) -> str:
    """The user's message, escaped; a long paste is cut for display (the search saw all of it)."""
    text = query or ""
    more = ""
    if len(text) > MAX_QUERY_ECHO:
        more = f'<div class="rl-muted">{esc(say("answer.more_chars", language_of(text), n=len(text) - MAX_QUERY_ECHO))}</div>'
        text = text[:MAX_QUERY_ECHO]
    if "\n" in text.strip():
        return f'<pre class="rl-query">{preformatted(esc(text.strip(chr(10))))}</pre>{more}'
    return f"<p>{esc(text)}</p>{more}"


def notices_html(notices: Iterable[str], lang: str = "en") -> str:
    items = [in_language(n, lang) for n in notices if n]
    if not items:
        return ""
    body = "".join(f"<li>{inline(n, links=False)}</li>" for n in items)
    return f'<div class="rl-notices" role="note"><ul>{body}</ul></div>'


def error_html(message: str, lang: str = "en") -> str:
    """A one-line error for the user (never a traceback)."""
    return (f'<div class="rl-error" role="alert"><strong>{esc(say("answer.cannot", lang))}</strong> '
            f'{esc(in_language(message, lang))}</div>')


def breadcrumb_html(doc_title: str, breadcrumb: list[str]) -> str:
    """The document title and the section heading (sources.short_trail); the whole trail is the tooltip."""
    shown = " <span class=\"rl-sep\">›</span> ".join(esc(t) for t in short_trail(doc_title, breadcrumb))
    return f'<span title="{esc(" › ".join(title_trail(doc_title, breadcrumb)))}">{shown}</span>'


def _location(url: str | None, collection: str = "", lang: str = "en", shown_below: bool = False) -> str:
    """Where the source lives upstream (repository · path) and, in plain words on hover, what its
    collection is; the file and lines are in the entry's detail (_file_line). A shipped page with
    no upstream says so, rather than leaving a bare collection name, and, with no link to give,
    where to read it: the whole section, `shown_below` the row."""
    parts = [esc(where)] if (where := upstream(url)) else []
    if collection:
        parts.append(f'<span class="rl-coll" title="{esc(collection_note(collection, lang))}">'
                     f'{esc(collection_name(collection, lang))}</span>')
        if not url and collection == "seeds":
            parts.append(esc(say("sources.no_upstream_read" if shown_below else "sources.no_upstream", lang)))
    return f'<span class="rl-loc">{" · ".join(parts)}</span>' if parts else ""


def _file_line(doc: str, line_start: int, line_end: int, doc_title: str = "", lang: str = "en") -> str:
    """"Lines 10–20 of “verl Troubleshooting”": a page is named by its title, as the row above it names
    it (its local path, "File slime/qa.md", named the page a second way under the repository's path,
    issue 36); "File notes.md, lines 10–20" for a file without a title; "Lines 10–20" with no name."""
    name = page_name(doc, doc_title)
    if name and not name.startswith("“"):
        said = say("sources.file_lines", lang, name=name, start=line_start, end=line_end)
    elif name:
        said = say("sources.lines_of", lang, name=name, start=line_start, end=line_end)
    else:
        said = say("place.lines", lang, start=line_start, end=line_end)
        said = said[:1].upper() + said[1:]
    return f'<div class="rl-muted rl-file">{esc(said)}</div>'


def entry_html(entry: Entry, lang: str = "en") -> str:
    """A whole entry, rendered safely, for the expandable source view (its copy buttons in `lang`)."""
    return f'<div class="rl-entry">{markdown_html(entry.text, lang=lang)}</div>'


# How render_markdown may introduce a cited heading (extractive.py): quoted after the first, or, when a
# doc entry and a reported issue's thread both answer, each as what it is.
HEADING_LEADS = ("answer.also_relevant", "answer.docs_lead", "answer.issue_lead")
MATCHED_CHARS = 160  # a matched question shown under a source is cut to this


def matched_html(question: str | None, lang: str = "en") -> str:
    """"matched: <question>" under a source found through a question of the bank, escaped as
    document text is, cut short."""
    if not question:
        return ""
    text = " ".join(question.split())
    text = text if len(text) <= MATCHED_CHARS else text[:MATCHED_CHARS - 1] + "…"
    return f'<div class="rl-muted rl-matched">{esc(say("sources.matched", lang, question=text))}</div>'


def _source_row(number: int | None, title_html: str, url: str | None, location: str, entry: Entry | None,
                also_at: list[dict] | None = None, twins: list[dict] | None = None, entry_lang: str = "",
                matched: str | None = None, file_line: str = "", heading: str = "", doc: str = "",
                lang: str = "en") -> str:
    """One source: `entry_lang` is the entry's language (its twins are named against it), `lang` the reader's."""
    badge = f'<span class="rl-num">{number}</span>' if number is not None else '<span class="rl-num rl-dot">•</span>'
    head = link(url, title_html, "rl-cite-link")
    also = ""
    if also_at:
        places = ", ".join(where for a in also_at[:5]
                           if (where := place(a.get("doc", ""), a.get("line_start", 0), doc_title=a.get("doc_title", ""),
                                             same_doc=doc, lang=lang)))
        also = f'<div class="rl-muted">{esc(say("sources.also_at", lang, places=places))}</div>' if places else ""
    for twin in [t for t in twins or [] if twin_worth_naming(t, heading, entry_lang)]:  # another language or version
        where = place(twin["doc"], twin["line_start"], doc_title=twin.get("doc_title", ""), lang=lang)
        also += (f'<div class="rl-muted rl-twin">{esc(twin_label(twin, entry_lang, lang) + say("punct.colon", lang))}'
                 f'{link(twin.get("url"), esc(twin["heading"]))}{f" ({esc(where)})" if where else ""}</div>')
    details = ""
    if entry is not None:
        details = (f'<details class="rl-details"><summary>{esc(say("sources.show_entry", lang))}</summary>'
                   f"{file_line}{entry_html(entry, lang)}</details>")
    else:
        location += file_line
    return (f'<div class="rl-cite">{badge}<div class="rl-cite-main"><div class="rl-cite-head">{head}</div>'
            f"{location}{matched_html(matched, lang)}{also}{details}</div></div>")


def citation_html(c: Citation, entry: Entry | None, matched: str | None = None, lang: str = "en") -> str:
    return _source_row(c.number, breadcrumb_html(c.doc_title, c.breadcrumb), c.url,
                       _location(c.url, c.collection, lang, entry is not None), entry, c.also_at, c.twins, c.lang, matched,
                       _file_line(c.doc, c.line_start, c.line_end, c.doc_title, lang), c.heading, c.doc, lang)


def related_html(hit: Hit, lang: str = "en") -> str:
    e = hit.entry
    return _source_row(None, breadcrumb_html(e.doc_title, e.breadcrumb), e.url, _location(e.url, e.collection, lang, True),
                       e, twins=e.twins, entry_lang=e.lang, matched=hit.matched_question,
                       file_line=_file_line(e.doc, e.line_start, e.line_end, e.doc_title, lang), heading=e.heading,
                       doc=e.doc, lang=lang)


def _titled(title: str, rows: str, klass: str = "rl-sources") -> str:
    return f'<div class="{klass}"><div class="rl-sources-title">{esc(title)}</div>{rows}</div>'


def sources_html(citations: list[Citation], entry_for: Callable[[str], Entry | None],
                 matched: dict[str, str | None] | None = None, lang: str = "en") -> str:
    if not citations:
        return ""
    rows = "".join(citation_html(c, entry_for(c.entry_id), (matched or {}).get(c.entry_id), lang) for c in citations)
    return _titled(say("sources.title", lang), rows)


def related_block_html(hits: list[Hit], title: str | None = None, lang: str = "en") -> str:
    """The entries found but not quoted, under `title` (default: "Related entries", in `lang`)."""
    if not hits:
        return ""
    rows = "".join(related_html(h, lang) for h in hits)
    return _titled(title or say("sources.related", lang), rows, "rl-sources rl-related")


def abstained_html(answer: Answer, lang: str = "en") -> str:
    intro = say("answer.nothing_near" if answer.hits else "answer.nothing_try", lang)
    block = (f'<div class="rl-abstain"><strong>{esc(say("answer.no_match_title", lang))}</strong>'
             f"<p>{esc(intro)}</p></div>")
    return block + related_block_html(answer.hits, lang=lang)


def _entries_of(answer: Answer, fallback: Callable[[str], Entry | None] | None) -> Callable[[str], Entry | None]:
    by_id = {h.entry.id: h.entry for h in answer.hits}

    def entry_for(entry_id: str) -> Entry | None:
        if entry_id in by_id:
            return by_id[entry_id]
        try:
            return fallback(entry_id) if fallback else None
        except Exception:  # an id the index does not know: show the citation without the entry
            return None

    return entry_for


def _literal_headings(citations: list[Citation], refs: dict[int, str | None], lang: str) -> dict[str, str]:
    """Each citation's heading and trail lines, as answer.render_markdown writes them, to HTML that
    shows their text literally: a heading is document text, not Markdown (`Quasar {{7*7}} ${7*7}`
    lost its asterisks to emphasis)."""
    literal = {}
    for c in citations:
        ref = inline(f"[{c.number}]", refs)
        for lead in ("", *(say(key, lang) for key in HEADING_LEADS)):
            literal[f"### {lead}{c.heading} [{c.number}]"] = f"<h5>{esc(lead + c.heading)} {ref}</h5>"
        trail = " › ".join(title_trail(c.doc_title, c.breadcrumb[-2:] or [c.heading]))
        literal[f"_{trail}_"] = f"<p><em>{esc(trail)}</em></p>"
    return literal


def body_html(markdown: str, citations: list[Citation], lang: str = "en") -> str:
    """The answer text with its [n] markers as links to the cited sections."""
    refs = {c.number: c.url for c in citations}
    literal = _literal_headings(citations, refs, lang)
    out: list[str] = []
    chunk: list[str] = []
    for line in (markdown or "").replace("\r\n", "\n").split("\n"):
        shown = literal.get(line.rstrip())
        if shown is None:
            chunk.append(line)
            continue
        out += [markdown_html("\n".join(chunk), refs, lang=lang) if chunk else "", shown]
        chunk = []
    out.append(markdown_html("\n".join(chunk), refs, lang=lang) if chunk else "")
    return f'<div class="rl-body">{"".join(out)}</div>'


SEARCHED_CHARS = 300  # of the searched lines shown under a pasted log


def _cut_at_word(text: str, limit: int) -> str:
    """The head of text within limit characters, ended at a space when there is one in its last fifth."""
    head = text[:limit]
    space = max(head.rfind(" "), head.rfind("\n"))
    return head[:space].rstrip() if space > limit * 4 // 5 else head


def _whole_lines(text: str, limit: int, lang: str) -> str:
    """The lines of `text` that fit in `limit` characters, whole, and how many more there are; a
    first line longer than that is cut at a word. A preview never stops in the middle of a line
    it goes on to show."""
    lines = text.split("\n")
    shown: list[str] = []
    for line in lines:
        if shown and sum(len(s) + 1 for s in shown) + len(line) > limit:
            break
        shown.append(line if len(line) <= limit else _cut_at_word(line, limit) + " …")
    left = len(lines) - len(shown)
    return "\n".join(shown) + ("\n" + say("answer.more_lines", lang, n=left, s="" if left == 1 else "s") if left else "")


def searched_html(answer: Answer) -> str:
    """For a pasted log, the lines actually searched (shown with the query, never in the answer,
    which holds doc text only): the echo of a long paste shows only its head."""
    if "\n" not in answer.query.strip() or answer.normalized_query.strip() == answer.query.strip():
        return ""
    lang = language_of(answer.query)
    shown = _whole_lines(answer.normalized_query, SEARCHED_CHARS, lang)
    return f'<div class="rl-searched">{esc(say("answer.searched_for", lang))} <code>{esc(shown)}</code></div>'


def link_html(search: str, lang: str = "en") -> str:
    """A link that asks the question again (`search` is the query string, "?q=..."), to share it.
    It opens a new tab: following it here would end this conversation."""
    return (f'<div class="rl-link"><a href="{esc(search)}" target="_blank" rel="noopener noreferrer">'
            f'{esc(say("answer.link", lang))}</a></div>')


def answer_html(answer: Answer, *, text: str | None = None, final: bool = True,
                entry_for: Callable[[str], Entry | None] | None = None) -> str:
    """The assistant message for an Answer, its own words in the question's language.

    `text` overrides the body (a partial answer while streaming); `final`
    adds the sources (or the related entries when the answer abstained).
    """
    lang = language_of(answer.query)
    parts = [notices_html(answer.notices, lang)]
    if answer.abstained:
        parts.append(abstained_html(answer, lang))
    else:
        parts.append(body_html(answer.text if text is None else text, answer.citations, lang))
        if final:
            parts.append(sources_html(answer.citations, _entries_of(answer, entry_for),
                                      {h.entry.id: h.matched_question for h in answer.hits}, lang))
            parts.append(related_block_html(answer.runners_up(), say("sources.also_related", lang), lang))
        else:
            parts.append('<div class="rl-muted rl-pending">…</div>')
    return f'<div class="rl-answer" lang="{lang}">{"".join(parts)}</div>'


# -- notebooks ------------------------------------------------------------------------------

# Jupyter has none of the web page's stylesheet: a small one scoped to .rl-nb, with
# colours that read on light and dark notebook themes. No script runs there, so the
# copy buttons are hidden; "Show the whole entry" is a plain <details> and works.
NOTEBOOK_CSS = """
.rl-nb { font-size: 14px; line-height: 1.5; max-width: 60em; }
.rl-nb .rl-searched { opacity: 0.7; font-size: 12px; margin-bottom: 4px; }
.rl-nb .rl-body :is(h3, h4, h5, h6) { font-size: 1.05em; margin: 0.8em 0 0.3em; }
.rl-nb .rl-code pre { background: #0f172a; color: #e2e8f0; padding: 10px 12px; border-radius: 6px; overflow-x: auto; }
.rl-nb .rl-copy, .rl-nb .rl-lang { display: none; }
.rl-nb .tok-k { color: #c4b5fd; } .rl-nb .tok-s { color: #86efac; } .rl-nb .tok-c { color: #7c8ba1; }
.rl-nb .tok-n { color: #fdba74; } .rl-nb .tok-e { color: #fca5a5; }
.rl-nb .rl-sources { border-top: 1px solid rgba(127,127,127,0.4); margin-top: 10px; padding-top: 4px; }
.rl-nb .rl-sources-title { font-size: 11px; text-transform: uppercase; letter-spacing: 0.06em; font-weight: 700;
  opacity: 0.7; }
.rl-nb .rl-cite { display: flex; gap: 8px; padding: 5px 0; }
.rl-nb .rl-num { flex: none; min-width: 20px; height: 20px; border-radius: 50%; background: rgba(99,102,241,0.18);
  font-weight: 700; font-size: 12px; text-align: center; line-height: 20px; }
.rl-nb .rl-cite-head { font-weight: 600; }
.rl-nb .rl-loc { display: block; font-family: monospace; font-size: 11.5px; opacity: 0.7; }
.rl-nb .rl-muted { opacity: 0.7; font-size: 12px; }
.rl-nb .rl-entry { border-left: 3px solid rgba(99,102,241,0.35); padding: 2px 10px; max-height: 420px; overflow: auto; }
.rl-nb .rl-notices { border: 1px solid #fcd34d; background: rgba(252,211,77,0.12); border-radius: 6px;
  padding: 2px 10px; margin-bottom: 6px; font-size: 12.5px; }
.rl-nb .rl-abstain { border-left: 4px solid #94a3b8; padding: 4px 12px; }
"""


def notebook_html(answer: Answer) -> str:
    """A self-contained view of an Answer for Jupyter: what was searched, the answer, numbered sources."""
    return f'<style>{NOTEBOOK_CSS}</style><div class="rl-nb">{searched_html(answer)}{answer_html(answer)}</div>'
