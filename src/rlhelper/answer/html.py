"""Safe HTML for the web chat: answers, citations, whole entries, notices.

Everything that comes from a document or a user is untrusted. This module
escapes it (html.escape) *before* adding any markup of its own, so a
`<script>` or `<img onerror=...>` in a doc is shown as text and never runs.
Links are only made for http(s) URLs; anything else (javascript:, data:,
relative paths) stays visible as plain text. The browser-side sanitiser of
the chat widget is a second fence, not the first.

The entry text is Markdown or reStructuredText source. A small block
renderer covers what the troubleshooting docs use: headings, paragraphs,
lists, pipe tables, fenced and rst code blocks (highlighted by a tiny
tokenizer, each with a copy button), bold/italic/code spans and links.
Standard library only.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..schema import Entry, Hit, title_trail
from .language import ALSO_RELEVANT, language_of
from .sources import collection_note, short_trail, twin_label, twin_worth_naming, upstream

if TYPE_CHECKING:  # Answer._repr_html_ imports this module: the model is only named here
    from .model import Answer, Citation

MAX_QUERY_ECHO = 2000  # characters of the user's query shown back in the chat


def esc(text: str) -> str:
    return html.escape(text or "", quote=True)


def safe_url(url: str | None) -> str | None:
    """The URL if it is a plain http(s) URL, else None (javascript:, data:, relative ...)."""
    if not url:
        return None
    url = url.strip()
    if re.match(r"^https?://[^\s/?#]+[^\s]*$", url, re.IGNORECASE) and not re.search(r"[\x00-\x1f<>\"'`]", url):
        return url
    return None


def link(url: str | None, label_html: str, cls: str = "") -> str:
    """An <a> to a safe URL (label already HTML); just the label when the URL is not safe."""
    href = safe_url(url)
    if not href:
        return label_html
    klass = f' class="{cls}"' if cls else ""
    return f'<a{klass} href="{esc(href)}" target="_blank" rel="noopener noreferrer">{label_html}</a>'


# -- code highlighting --------------------------------------------------------------

_LANG_ALIASES = {
    "py": "python", "python3": "python", "ipython": "python", "pycon": "python", "python": "python",
    "sh": "bash", "shell": "bash", "console": "bash", "zsh": "bash", "bash": "bash", "shell-session": "bash",
    "yml": "yaml", "yaml": "yaml", "json": "json", "toml": "yaml", "ini": "yaml",
}
_KEYWORDS = {
    "python": set(
        "False None True and as assert async await break class continue def del elif else except finally for "
        "from global if import in is lambda nonlocal not or pass raise return try while with yield".split()
    ),
    "bash": set(
        "if then else elif fi for while do done case esac function in export source sudo echo cd "
        "pip python python3 uv conda git ray bash set unset return torchrun srun".split()
    ),
    "yaml": {"true", "false", "null", "yes", "no", "True", "False", "None"},
    "json": {"true", "false", "null"},
}
_TOKEN = re.compile(
    r"(?P<comment>(?:(?<=\s)|^)(?:#|//)[^\n]*)"
    r"|(?P<string>\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')"
    r"|(?P<error>\b[A-Z]\w*(?:Error|Exception|Warning)\b)"
    r"|(?P<number>\b\d+(?:\.\d+)?\b)"
    r"|(?P<word>\b[A-Za-z_][\w]*\b)",
    re.MULTILINE,
)


def code_language(lang: str | None) -> str:
    """A class-safe language name ([\\w+-] only), lower case; "" when none."""
    return re.sub(r"[^\w+-]", "", (lang or "").lower())[:20]


def highlight(code: str, lang: str | None) -> str:
    """Escaped code with <span class="tok-..."> around comments, strings, keywords, numbers, errors."""
    kind = _LANG_ALIASES.get(code_language(lang), "")
    if not kind:
        return esc(code)
    keywords = _KEYWORDS.get(kind, set())
    out, pos = [], 0
    for m in _TOKEN.finditer(code):
        group = m.lastgroup
        if group == "comment" and kind == "json":
            continue
        if group == "word" and m.group() not in keywords:
            continue
        out.append(esc(code[pos:m.start()]))
        cls = {"comment": "tok-c", "string": "tok-s", "number": "tok-n", "word": "tok-k", "error": "tok-e"}[group]
        out.append(f'<span class="{cls}">{esc(m.group())}</span>')
        pos = m.end()
    out.append(esc(code[pos:]))
    return "".join(out)


def preformatted(escaped: str) -> str:
    """Text for a <pre>, with its line breaks as character references.

    Gradio's Chatbot passes every message through inspect.cleandoc, which strips
    the indentation that lines 2+ share: a YAML fix quoted in the chat lost two
    spaces on its nested keys, and so its meaning. One physical line leaves it
    nothing to strip; the browser still shows (and copies) real line breaks.
    """
    return escaped.replace("\r", "").replace("\n", "&#10;")


def code_block(code: str, lang: str | None = None) -> str:
    """<pre><code class="language-x"> with highlighting and a copy button (wired by the page's script)."""
    language = code_language(lang)
    klass = f' class="language-{language}"' if language else ""
    label = f'<span class="rl-lang">{esc(language)}</span>' if language else ""
    return (
        f'<div class="rl-code">{label}<button class="rl-copy" type="button" title="Copy to clipboard">Copy</button>'
        f"<pre><code{klass}>{preformatted(highlight(code.strip(chr(10)), lang))}</code></pre></div>"
    )


# -- inline markup ------------------------------------------------------------------

_INLINE = re.compile(
    r"(?P<rstlink>`(?P<rt>[^`<\n]+?)\s*<(?P<ru>[^>`\s]+)>`__?)"
    r"|(?P<code2>``(?P<c2>[^\n]+?)``)"
    r"|(?P<code>`(?P<c1>[^`\n]+)`)"
    r"|(?P<mdlink>!?\[(?P<mt>[^\]\n]+)\]\((?P<mu>[^)\s]+)(?:\s+\"[^\"\n]*\")?\))"
    r"|(?P<auto><(?P<au>https?://[^>\s]+)>)"
    r"|(?P<url>https?://[^\s<>()\[\]`\"']*[^\s<>()\[\]`\"'.,;:!?。，；：）])"
    r"|(?P<bold>\*\*(?P<b>[^*\n]+?)\*\*)"
    r"|(?P<em>(?<![\w*])\*(?P<e>[^*\s][^*\n]*?)\*(?![\w*]))"
    r"|(?P<em2>(?<![\w_])_(?P<e2>[^_\s](?:[^\n]*?[^\s_])?)_(?![\w_]))"
    r"|(?P<ref>(?<![\w\]])\[(?P<n>\d{1,2})\])"
)


def inline(text: str, refs: dict[int, str | None] | None = None, *, links: bool = True) -> str:
    """Inline Markdown/rst to HTML; all text escaped, links only to http(s).

    `refs` maps citation numbers to URLs: "[n]" becomes a numbered link.
    """
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        kind = m.lastgroup
        out.append(esc(text[pos:m.start()]))
        pos = m.end()
        out.append(_inline_match(m, kind, refs, links))
    out.append(esc(text[pos:]))
    return "".join(out)


def _inline_match(m: re.Match, kind: str, refs, links: bool) -> str:
    raw = m.group()
    if kind in ("code", "code2"):
        return f"<code>{esc(m.group('c1') or m.group('c2'))}</code>"
    if kind == "bold":
        return f"<strong>{inline(m.group('b'), refs, links=links)}</strong>"
    if kind in ("em", "em2"):
        return f"<em>{inline(m.group('e') or m.group('e2'), refs, links=links)}</em>"
    if kind == "ref":
        number = int(m.group("n"))
        if refs is None or number not in refs:
            return esc(raw)
        label = f"[{number}]"
        return f'<sup class="rl-ref">{link(refs[number], esc(label)) if links else esc(label)}</sup>'
    if kind in ("mdlink", "rstlink"):
        label, url = (m.group("mt"), m.group("mu")) if kind == "mdlink" else (m.group("rt"), m.group("ru"))
        if raw.startswith("!"):  # an image: never load it, show its markup as text
            return esc(raw)
        if safe_url(url):
            label_html = inline(label, refs, links=False)
            return link(url, label_html) if links else label_html
        if re.match(r"^[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):
            return esc(raw)  # javascript:, data:, file: ... stays visible, literally, as text
        return inline(label, refs, links=False)  # a relative link: its label only
    if kind in ("auto", "url"):
        url = m.group("au") or raw
        return link(url, esc(url)) if links else esc(raw)
    return esc(raw)


# -- blocks -------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+.-]*)")
_RST_CODE = re.compile(r"^(?P<indent>\s*)\.\.\s+(?:code-block|code|sourcecode|highlight)::\s*(?P<lang>[\w+.-]*)\s*$")
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?P<name>[\w-]+)::\s*(?P<arg>.*)$")
_RST_COMMENT = re.compile(r"^\s*\.\.(\s+[^:]*)?$|^\s*\.\.\s+_[^:]*:.*$")
_MD_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+:.])\1{2,}\s*$")
_HRULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_LIST = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+•]|\d{1,3}[.)]|#\.)\s+(?P<text>.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_RST_TABLE = re.compile(r"^\s*(\+[-=+]+\+|={2,}(\s+={2,})+)\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _dedent(lines: list[str]) -> list[str]:
    widths = [_indent(x) for x in lines if x.strip()]
    cut = min(widths) if widths else 0
    return [x[cut:] for x in lines]


def markdown_html(text: str, refs: dict[int, str | None] | None = None) -> str:
    """Markdown or rst source to safe HTML (see the module docstring for what is covered)."""
    lines = (text or "").replace("\r\n", "\n").replace("\t", "    ").split("\n")
    out: list[str] = []
    para: list[str] = []
    i, n = 0, len(lines)

    def flush_para():
        if para:
            out.append(f"<p>{inline(_joined(para), refs)}</p>".replace(_HARD_BREAK, "<br>"))
            para.clear()

    while i < n:
        line = lines[i]
        stripped = line.strip()
        nxt = lines[i + 1] if i + 1 < n else ""

        if not stripped:
            flush_para()
            i += 1
            continue

        m = _FENCE.match(line)
        if m:
            flush_para()
            fence, body, i = m.group("fence"), [], i + 1
            while i < n and not lines[i].strip().startswith(fence[0] * len(fence)):
                body.append(lines[i])
                i += 1
            out.append(code_block("\n".join(_dedent(body)), m.group("lang")))
            i += 1  # the closing fence
            continue

        m = _RST_CODE.match(line)
        if m or (stripped.endswith("::") and not _RST_DIRECTIVE.match(line) and _indented_block_follows(lines, i)):
            if m:
                flush_para()
            else:  # "text::" introduces a literal block; the text keeps one colon
                para.append(stripped[:-1] if not stripped.endswith(" ::") else stripped[:-3])
                flush_para()
            base, body, i = _indent(line), [], i + 1
            while i < n and (not lines[i].strip() or _indent(lines[i]) > base):
                if not body and re.match(r"^\s*:[\w-]+:", lines[i]):  # directive options
                    i += 1
                    continue
                body.append(lines[i])
                i += 1
            out.append(code_block("\n".join(_dedent(body)), m.group("lang") if m else ""))
            continue

        m = _RST_DIRECTIVE.match(line)
        if m:
            flush_para()
            name, arg = m.group("name"), m.group("arg").strip()
            title = name.capitalize() + (f": {arg}" if arg and name not in ("image", "figure", "include") else "")
            if name in ("image", "figure", "include", "raw", "toctree", "meta", "only", "contents"):
                out.append(f'<p class="rl-directive">{esc(line.strip())}</p>')  # never fetched or embedded
            else:
                out.append(f'<p class="rl-directive"><strong>{inline(title, refs)}</strong></p>')
            i += 1
            continue
        if _RST_COMMENT.match(line):
            i += 1
            continue

        m = _MD_HEADING.match(line)
        if m:
            flush_para()
            level = min(len(m.group("hashes")) + 2, 6)
            out.append(f"<h{level}>{inline(m.group('text'), refs)}</h{level}>")
            i += 1
            continue
        if _UNDERLINE.match(line) and nxt.strip() and i + 2 < n and _UNDERLINE.match(lines[i + 2]):
            flush_para()  # rst title with overline
            out.append(f"<h4>{inline(nxt.strip(), refs)}</h4>")
            i += 3
            continue
        if not para and _UNDERLINE.match(nxt) and not _LIST.match(line) and len(nxt.strip()) >= 3:
            out.append(f"<h4>{inline(stripped, refs)}</h4>")
            i += 2
            continue
        if _HRULE.match(line):
            flush_para()
            out.append("<hr>")
            i += 1
            continue

        if stripped.startswith("|") and _TABLE_SEP.match(nxt):
            flush_para()
            rows, i = [], i + 2
            while i < n and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append(_table(_cells(line), rows, refs))
            continue
        if _RST_TABLE.match(line):
            flush_para()
            body = []
            while i < n and lines[i].strip():
                body.append(lines[i])
                i += 1
            out.append(f"<pre class=\"rl-table\">{preformatted(esc(chr(10).join(_dedent(body))))}</pre>")
            continue

        m = _LIST.match(line)
        if m and para and _interrupts_paragraph(m):
            flush_para()  # "**Common mismatches:**" then "- Different batch size" on the next line
        if m and not para:
            items, ordered, start = [], m.group("marker")[0].isdigit(), None
            if ordered:
                start = int(re.match(r"\d+", m.group("marker")).group())
            while i < n:
                m = _LIST.match(lines[i])
                if not m or m.group("marker")[0].isdigit() != ordered:
                    break
                item, i = [m.group("text")], i + 1
                while (i < n and lines[i].strip() and not _LIST.match(lines[i]) and _indent(lines[i]) > 0
                       and not _starts_block(lines[i])):
                    item.append(lines[i].strip())
                    i += 1
                items.append((_indent(m.group("indent")), " ".join(item)))
                if i < n and not lines[i].strip() and i + 1 < n and _LIST.match(lines[i + 1]):
                    i += 1  # loose list: a blank line between items
            out.append(_list(items, ordered, start, refs))
            continue

        if stripped.startswith(">"):
            flush_para()
            quote = []
            while i < n and lines[i].strip().startswith(">"):
                quote.append(lines[i].strip()[1:].lstrip())
                i += 1
            out.append(f"<blockquote>{markdown_html(chr(10).join(quote), refs)}</blockquote>")
            continue

        if _starts_block(line) and para:
            flush_para()
            continue
        para.append(line)
        i += 1

    flush_para()
    return "".join(out)


_HARD_BREAK = "\x00br\x00"  # survives inline() (not markup, not escaped) and becomes <br>


def _joined(lines: list[str]) -> str:
    """A paragraph's lines as one text: wrapped source lines are one line to a reader (and an rst
    link or literal wrapped over two lines is whole again). A break stays where the source asks
    for one (a line ending in two spaces or a backslash) and before a bold label line
    ("**Fix:** ..."), which these docs write under the previous line without a blank."""
    text = lines[0].strip()
    for previous, line in zip(lines, lines[1:], strict=False):
        hard = previous.endswith(("  ", "\\")) or line.lstrip().startswith("**")
        text = (text.removesuffix("\\") if hard else text) + (_HARD_BREAK if hard else " ") + line.strip()
    return text


def _interrupts_paragraph(item: re.Match) -> bool:
    """Whether a list item may start right under a paragraph line, as in CommonMark: a bullet, or
    a numbered item starting at 1 (a wrapped line beginning "2019. was ..." is no list)."""
    marker = item.group("marker")
    return not marker[0].isdigit() or marker[:-1] == "1"


def _indented_block_follows(lines: list[str], i: int) -> bool:
    base = _indent(lines[i])
    j = i + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    return j > i + 1 and j < len(lines) and _indent(lines[j]) > base


def _starts_block(line: str) -> bool:
    return bool(_FENCE.match(line) or _RST_CODE.match(line) or _MD_HEADING.match(line))


def _cells(line: str) -> list[str]:
    core = line.strip()
    core = core[1:] if core.startswith("|") else core
    core = core[:-1] if core.endswith("|") and not core.endswith("\\|") else core
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", core)]


def _table(head: list[str], rows: list[list[str]], refs) -> str:
    th = "".join(f"<th>{inline(c, refs)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{inline(c, refs)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="rl-table-wrap"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _list(items: list[tuple[int, str]], ordered: bool, start: int | None, refs) -> str:
    base = min(indent for indent, _ in items)
    lis = "".join(
        f'<li{" class=rl-sub" if indent > base else ""}>{inline(text, refs)}</li>' for indent, text in items
    )
    if ordered:
        first = f' start="{start}"' if start and start != 1 else ""
        return f"<ol{first}>{lis}</ol>"
    return f"<ul>{lis}</ul>"


# -- the pieces of a chat answer ------------------------------------------------------------


def user_html(query: str) -> str:
    """The user's message, escaped; a long paste is cut for display (the search saw all of it)."""
    text = query or ""
    more = ""
    if len(text) > MAX_QUERY_ECHO:
        more = f'<div class="rl-muted">… {len(text) - MAX_QUERY_ECHO:,} more characters not shown</div>'
        text = text[:MAX_QUERY_ECHO]
    if "\n" in text.strip():
        return f'<pre class="rl-query">{preformatted(esc(text.strip(chr(10))))}</pre>{more}'
    return f"<p>{esc(text)}</p>{more}"


def notices_html(notices: Iterable[str]) -> str:
    items = [n for n in notices if n]
    if not items:
        return ""
    body = "".join(f"<li>{inline(n, links=False)}</li>" for n in items)
    return f'<div class="rl-notices" role="note"><ul>{body}</ul></div>'


def error_html(message: str) -> str:
    """A one-line error for the user (never a traceback)."""
    return f'<div class="rl-error" role="alert"><strong>Cannot answer:</strong> {esc(message)}</div>'


def breadcrumb_html(doc_title: str, breadcrumb: list[str]) -> str:
    """The document title and the section heading (sources.short_trail); the whole trail is the tooltip."""
    shown = " <span class=\"rl-sep\">›</span> ".join(esc(t) for t in short_trail(doc_title, breadcrumb))
    return f'<span title="{esc(" › ".join(title_trail(doc_title, breadcrumb)))}">{shown}</span>'


def _location(url: str | None, collection: str = "") -> str:
    """Where the source lives upstream (repository · path) and, in plain words on hover, what its
    collection is; the file and lines are in the entry's detail (_file_line)."""
    parts = [esc(where)] if (where := upstream(url)) else []
    if collection:
        parts.append(f'<span class="rl-coll" title="{esc(collection_note(collection))}">{esc(collection)}</span>')
    return f'<span class="rl-loc">{" · ".join(parts)}</span>' if parts else ""


def _file_line(doc: str, line_start: int, line_end: int) -> str:
    return f'<div class="rl-muted rl-file">File {esc(doc)}, lines {line_start}–{line_end}</div>'


def entry_html(entry: Entry) -> str:
    """A whole entry, rendered safely, for the expandable source view."""
    return f'<div class="rl-entry">{markdown_html(entry.text)}</div>'


MATCHED_CHARS = 160  # a matched question shown under a source is cut to this


def matched_html(question: str | None) -> str:
    """"matched: <question>" under a source found through a question of the bank, escaped as
    document text is, cut short."""
    if not question:
        return ""
    text = " ".join(question.split())
    text = text if len(text) <= MATCHED_CHARS else text[:MATCHED_CHARS - 1] + "…"
    return f'<div class="rl-muted rl-matched">matched: {esc(text)}</div>'


def _source_row(number: int | None, title_html: str, url: str | None, location: str, entry: Entry | None,
                also_at: list[dict] | None = None, twins: list[dict] | None = None, lang: str = "",
                matched: str | None = None, file_line: str = "", heading: str = "") -> str:
    badge = f'<span class="rl-num">{number}</span>' if number is not None else '<span class="rl-num rl-dot">•</span>'
    head = link(url, title_html, "rl-cite-link")
    also = ""
    if also_at:
        places = ", ".join(esc(f"{a.get('doc', '')}:{a.get('line_start', '')}") for a in also_at[:5])
        also = f'<div class="rl-muted">Also at {places}</div>'
    for twin in [t for t in twins or [] if twin_worth_naming(t, heading, lang)]:  # in another language or version
        where = esc(f"{twin['doc']}:{twin['line_start']}")
        also += (f'<div class="rl-muted rl-twin">{esc(twin_label(twin, lang).capitalize())}: '
                 f'{link(twin.get("url"), esc(twin["heading"]))} ({where})</div>')
    details = ""
    if entry is not None:
        details = (f'<details class="rl-details"><summary>Show the whole entry</summary>'
                   f"{file_line}{entry_html(entry)}</details>")
    else:
        location += file_line
    return (f'<div class="rl-cite">{badge}<div class="rl-cite-main"><div class="rl-cite-head">{head}</div>'
            f"{location}{matched_html(matched)}{also}{details}</div></div>")


def citation_html(c: Citation, entry: Entry | None, matched: str | None = None) -> str:
    return _source_row(c.number, breadcrumb_html(c.doc_title, c.breadcrumb), c.url, _location(c.url, c.collection),
                       entry, c.also_at, c.twins, c.lang, matched, _file_line(c.doc, c.line_start, c.line_end),
                       c.heading)


def related_html(hit: Hit) -> str:
    e = hit.entry
    return _source_row(None, breadcrumb_html(e.doc_title, e.breadcrumb), e.url, _location(e.url, e.collection), e,
                       twins=e.twins, lang=e.lang, matched=hit.matched_question,
                       file_line=_file_line(e.doc, e.line_start, e.line_end), heading=e.heading)


def sources_html(citations: list[Citation], entry_for: Callable[[str], Entry | None],
                 matched: dict[str, str | None] | None = None) -> str:
    if not citations:
        return ""
    rows = "".join(citation_html(c, entry_for(c.entry_id), (matched or {}).get(c.entry_id)) for c in citations)
    return f'<div class="rl-sources"><div class="rl-sources-title">Sources</div>{rows}</div>'




def related_block_html(hits: list[Hit], title: str = "Related entries") -> str:
    if not hits:
        return ""
    rows = "".join(related_html(h) for h in hits)
    return f'<div class="rl-sources rl-related"><div class="rl-sources-title">{esc(title)}</div>{rows}</div>'


def abstained_html(answer: Answer) -> str:
    intro = ("Nothing in the indexed troubleshooting docs answers this. "
             + ("The nearest entries are below; they may not answer it." if answer.hits else
                "Try other words, paste the exact error line, or clear the filters."))
    block = f'<div class="rl-abstain"><strong>No matching entry in the docs.</strong><p>{esc(intro)}</p></div>'
    return block + related_block_html(answer.hits)


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


def _literal_headings(citations: list[Citation], refs: dict[int, str | None]) -> dict[str, str]:
    """Each citation's heading and trail lines, as answer.render_markdown writes them, to HTML that
    shows their text literally: a heading is document text, not Markdown (`Quasar {{7*7}} ${7*7}`
    lost its asterisks to emphasis)."""
    literal = {}
    for c in citations:
        ref = inline(f"[{c.number}]", refs)
        for lead in ("", *ALSO_RELEVANT.values()):
            literal[f"### {lead}{c.heading} [{c.number}]"] = f"<h5>{esc(lead + c.heading)} {ref}</h5>"
        trail = " › ".join(title_trail(c.doc_title, c.breadcrumb[-2:] or [c.heading]))
        literal[f"_{trail}_"] = f"<p><em>{esc(trail)}</em></p>"
    return literal


def body_html(markdown: str, citations: list[Citation]) -> str:
    """The answer text with its [n] markers as links to the cited sections."""
    refs = {c.number: c.url for c in citations}
    literal = _literal_headings(citations, refs)
    out: list[str] = []
    chunk: list[str] = []
    for line in (markdown or "").replace("\r\n", "\n").split("\n"):
        shown = literal.get(line.rstrip())
        if shown is None:
            chunk.append(line)
            continue
        out += [markdown_html("\n".join(chunk), refs) if chunk else "", shown]
        chunk = []
    out.append(markdown_html("\n".join(chunk), refs) if chunk else "")
    return f'<div class="rl-body">{"".join(out)}</div>'


SEARCHED_CHARS = 300  # of the searched lines shown under a pasted log


def _cut_at_word(text: str, limit: int) -> str:
    """The head of text within limit characters, ended at a space when there is one in its last fifth."""
    head = text[:limit]
    space = max(head.rfind(" "), head.rfind("\n"))
    return head[:space].rstrip() if space > limit * 4 // 5 else head


def searched_html(answer: Answer) -> str:
    """For a pasted log, the lines actually searched (shown with the query, never in the answer,
    which holds doc text only): the echo of a long paste shows only its head."""
    if "\n" not in answer.query.strip() or answer.normalized_query.strip() == answer.query.strip():
        return ""
    searched = answer.normalized_query
    shown = searched if len(searched) <= SEARCHED_CHARS else _cut_at_word(searched, SEARCHED_CHARS) + " …"
    return f'<div class="rl-searched">Searched for: <code>{esc(shown)}</code></div>'


def link_html(search: str) -> str:
    """A link that asks the question again (`search` is the query string, "?q=..."), to share it.
    It opens a new tab: following it here would end this conversation."""
    return (f'<div class="rl-link"><a href="{esc(search)}" target="_blank" rel="noopener noreferrer">'
            'Link to this question</a></div>')


# The page's own words in an answer, in Chinese for a question asked in Chinese. Each key is a piece
# of this module's own markup (never document text, which is escaped and carries no such tags).
CHINESE_MARKUP = {
    '<div class="rl-sources-title">Sources</div>': '<div class="rl-sources-title">来源</div>',
    '<div class="rl-sources-title">Also related (not quoted above)</div>':
        '<div class="rl-sources-title">其他相关条目（上文未引用）</div>',
    '<div class="rl-sources-title">Related entries</div>': '<div class="rl-sources-title">相关条目</div>',
    "<summary>Show the whole entry</summary>": "<summary>查看完整条目</summary>",
    '<strong>No matching entry in the docs.</strong>': "<strong>文档中没有匹配的条目。</strong>",
    "Nothing in the indexed troubleshooting docs answers this. The nearest entries are below; they may not answer it.":
        "已索引的排障文档中没有能回答这个问题的内容。下面是最接近的条目，它们未必能回答。",
    "Nothing in the indexed troubleshooting docs answers this. Try other words, paste the exact error line, or clear "
    "the filters.": "已索引的排障文档中没有能回答这个问题的内容。请换个说法、贴上完整的报错行，或清除筛选条件。",
    'title="Copy to clipboard">Copy</button>': 'title="复制到剪贴板">复制</button>',
    '<div class="rl-muted rl-file">File ': '<div class="rl-muted rl-file">文件 ',
}


def in_language(html: str, lang: str) -> str:
    """The answer's own labels in `lang` (en: as written; zh: CHINESE_MARKUP)."""
    if lang != "zh":
        return html
    for english, chinese in CHINESE_MARKUP.items():
        html = html.replace(english, chinese)
    return re.sub(r'(<div class="rl-muted rl-file">文件 [^<]*?), lines (\d+)–(\d+)</div>', r"\1，第 \2–\3 行</div>", html)


def answer_html(answer: Answer, *, text: str | None = None, final: bool = True,
                entry_for: Callable[[str], Entry | None] | None = None) -> str:
    """The assistant message for an Answer.

    `text` overrides the body (a partial answer while streaming); `final`
    adds the sources (or the related entries when the answer abstained).
    """
    parts = [notices_html(answer.notices)]
    if answer.abstained:
        parts.append(abstained_html(answer))
    else:
        parts.append(body_html(answer.text if text is None else text, answer.citations))
        if final:
            parts.append(sources_html(answer.citations, _entries_of(answer, entry_for),
                                      {h.entry.id: h.matched_question for h in answer.hits}))
            parts.append(related_block_html(answer.runners_up(), "Also related (not quoted above)"))
        else:
            parts.append('<div class="rl-muted rl-pending">…</div>')
    return in_language(f'<div class="rl-answer">{"".join(parts)}</div>', language_of(answer.query))


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
