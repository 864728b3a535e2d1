"""markdown-it rules for the reStructuredText an entry may hold.

Entries keep their source text, and half the docs are rst; the answer quotes
both kinds in one Markdown body. These rules teach a CommonMark parser the rst
constructs that would otherwise come out wrong: titles underlined with `~` or
`^` (a `~~~` line is a Markdown fence), `.. code-block::` and `text::` literal
blocks (indented by 3, which CommonMark takes for a paragraph), directives,
grid tables and `text <url>`_ links. Each one only starts on syntax Markdown
gives no meaning to, so Markdown renders as CommonMark says.

The rules emit the parser's own tokens (fence, heading, paragraph, link), so
escaping and the link check stay in one place, the renderer (markup.py).
"""

from __future__ import annotations

import re

_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
_LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_EXPLICIT = re.compile(r"^\.\.(?:\s|$)")  # a directive, comment, target or footnote
_OPTION = re.compile(r"^\s*:[\w-]+:")
_GRID_TABLE = re.compile(r"^(?:\+[-=+]+\+|={2,}(?:\s+={2,})+)\s*$")
_LINK = re.compile(r"`([^`<]+?)\s*<([^>`\s]+)>`__?")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)

CODE_DIRECTIVES = {"code-block", "code", "sourcecode"}
# Shown as their own line of text, never fetched, embedded or followed; their body is dropped.
LITERAL_DIRECTIVES = {"image", "figure", "include", "literalinclude", "raw", "toctree", "meta", "only",
                      "contents", "highlight"}


def _line(state, n: int) -> str:
    """Line n's text after its indentation (and any container markers)."""
    return state.src[state.bMarks[n] + state.tShift[n]:state.eMarks[n]]


def _blank(state, n: int) -> bool:
    return state.bMarks[n] + state.tShift[n] >= state.eMarks[n]


def _body_end(state, start: int, end: int, base: int) -> int:
    """The line after a block of lines indented deeper than `base` (blank lines inside it included)."""
    n, last = start, start
    while n < end and (_blank(state, n) or state.sCount[n] > base):
        n += 1
        if not _blank(state, n - 1):
            last = n
    return last


def _body_lines(state, start: int, end: int, skip_options: bool) -> str:
    while skip_options and start < end and _OPTION.match(_line(state, start)):
        start += 1  # directive options (:linenos:, :caption: ...) are not content
    indents = [state.sCount[n] for n in range(start, end) if not _blank(state, n)]
    return state.getLines(start, end, min(indents), False) if indents else ""


def _push_heading(state, text: str, first: int, last: int) -> None:
    for kind, nesting in (("heading_open", 1), ("inline", 0), ("heading_close", -1)):
        token = state.push(kind, "h2" if nesting else "", nesting)
        token.markup, token.map = "rst", [first, last]
        if kind == "inline":
            token.content, token.children = text, []


def title(state, start: int, end: int, silent: bool) -> bool:
    """`Title` over a line of one repeated punctuation character (optionally under one, too)."""
    if state.is_code_block(start) or start + 1 >= end:
        return False
    first, second = _line(state, start), _line(state, start + 1)
    over = _ADORNMENT.match(first)
    if over and over.group(1) in "`~":
        return False  # a Markdown code fence
    if over and start + 2 < end and second.strip() and (under := _ADORNMENT.match(_line(state, start + 2))):
        if under.group(1) != over.group(1):
            return False
        text, lines = second.strip(), 3
    elif not over and first.strip() and not _LIST_ITEM.match(first) and (under := _ADORNMENT.match(second)):
        if under.group(1) in "`~" and start + 2 < end and not _blank(state, start + 2):
            return False  # "Run:" over a Markdown code fence, not a title
        text, lines = first.strip(), 2
    else:
        return False
    if not silent:
        _push_heading(state, text, start, start + lines)
        state.line = start + lines
    return True


def directive(state, start: int, end: int, silent: bool) -> bool:
    """`.. name:: arg` and its indented body; comments and targets (`.. _x:`) are dropped."""
    line = _line(state, start)
    if state.is_code_block(start) or not _EXPLICIT.match(line):
        return False
    if silent:
        return True
    stop = _body_end(state, start + 1, end, state.sCount[start])
    m = _DIRECTIVE.match(line)
    name, arg = (m.group(1).lower(), m.group(2).strip()) if m else ("", "")
    if name in CODE_DIRECTIVES:
        token = state.push("fence", "code", 0)
        token.info, token.content, token.map = arg, _body_lines(state, start + 1, stop, True), [start, stop]
    elif name in LITERAL_DIRECTIVES or (name and ":" in name):
        token = state.push("rst_literal_line", "p", 0)
        token.content, token.map = line.strip(), [start, stop]
    elif name:
        opening = state.push("paragraph_open", "p", 1)
        opening.attrs = {"class": "rl-directive"}
        token = state.push("inline", "", 0)
        token.content, token.children = f"**{name.capitalize()}{': ' + arg if arg else ''}**", []
        state.push("paragraph_close", "p", -1)
        body = start + 1
        while body < stop and (_blank(state, body) or _OPTION.match(_line(state, body))):
            body += 1
        if body < stop:  # the admonition's text is rst too: parse it at its own indentation
            outer = state.blkIndent
            state.blkIndent = min(state.sCount[n] for n in range(body, stop) if not _blank(state, n))
            state.md.block.tokenize(state, body, stop)
            state.blkIndent = outer
    state.line = stop
    return True


def literal_block(state, start: int, end: int, silent: bool) -> bool:
    """The indented block after a paragraph ending in `::`; the paragraph keeps one colon."""
    tokens = state.tokens
    if len(tokens) < 3 or tokens[-1].type != "paragraph_close" or _blank(state, start):
        return False
    text = tokens[-2].content.rstrip()
    if not text.endswith("::") or state.sCount[start] <= state.blkIndent:
        return False
    if silent:
        return True
    stop = _body_end(state, start, end, state.blkIndent)
    shown = text[:-1] if not text.endswith(" ::") else text[:-3].rstrip()
    if shown:
        tokens[-2].content = shown
    else:  # a "::" line alone says nothing
        del tokens[-3:]
    token = state.push("fence", "code", 0)
    token.info, token.content, token.map = "", _body_lines(state, start, stop, False), [start, stop]
    state.line = stop
    return True


def grid_table(state, start: int, end: int, silent: bool) -> bool:
    """An rst grid or simple table, shown as the preformatted text it is."""
    if state.is_code_block(start) or not _GRID_TABLE.match(_line(state, start)):
        return False
    if silent:
        return True
    stop = start
    while stop < end and not _blank(state, stop):
        stop += 1
    token = state.push("rst_table", "pre", 0)
    token.content, token.map = state.getLines(start, stop, state.blkIndent, False), [start, stop]
    state.line = stop
    return True


def link(state, silent: bool) -> bool:
    """`label <url>`_ : a link when the parser's link check passes it, else the label alone
    (a relative target) or the whole markup as text (javascript:, data: ...)."""
    m = _LINK.match(state.src, state.pos) if state.src[state.pos] == "`" else None
    if not m:
        return False
    if not silent:
        label, url = " ".join(m.group(1).split()), m.group(2)
        href = state.md.normalizeLink(url)
        if state.md.validateLink(href):
            state.push("link_open", "a", 1).attrs = {"href": href}
            state.push("text", "", 0).content = label
            state.push("link_close", "a", -1)
        else:
            state.push("text", "", 0).content = m.group(0) if _SCHEME.match(url) else label
    state.pos = m.end()
    return True


def use(md) -> None:
    """Add the rules to a MarkdownIt parser, ahead of the CommonMark rules they must pre-empt."""
    md.block.ruler.before("table", "rst_table", grid_table)
    md.block.ruler.before("fence", "rst_literal", literal_block)
    md.block.ruler.before("fence", "rst_title", title)
    md.block.ruler.before("fence", "rst_directive", directive)
    md.inline.ruler.before("backticks", "rst_link", link)
