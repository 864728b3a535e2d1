"""reStructuredText: section titles, their hierarchy and their docutils ids.

We scan lines rather than run docutils' parser: Sphinx directives
(`code-block`, `toctree`, roles like `:doc:`) are unknown to plain docutils,
and we need each title's line, not a doctree. The rules follow docutils:

* A title is a line of text followed by an underline, optionally preceded by
  an overline, made of one repeated non-alphanumeric ASCII character. The
  underline may be longer or shorter than the title: docutils only warns
  ("Title underline too short") unless it is shorter than 4 characters *and*
  than the title, which makes it plain text. Width counts East-Asian wide
  characters twice, as docutils does, so a Chinese title underlined to its
  display width is fine.
* The hierarchy is the order in which adornment styles first appear, a style
  being (character, with overline or not): the first style seen is level 1.
* Code and literal blocks (`.. code-block::`, `.. code::`, a paragraph ending
  in `::`) are indented, and titles start in column 0, so no title is ever
  found inside code. The scanner still tracks these blocks, to skip targets
  written inside them.
* Markdown `#` headings appear in some rst files (the Ascend FAQ of verl).
  Sphinx renders them as a paragraph, but the author meant a heading, so they
  open a subsection below the current rst section. They have no id of their
  own: their anchor is the enclosing rst section's, where a reader lands.
* A FAQ written as one list of bold questions under a title gets one
  sub-section per question, as in Markdown (see `faqlist`).
"""

from __future__ import annotations

import re
import unicodedata

from ...schema import Section
from .faqlist import with_question_items
from .inline import DocutilsIds, rst_heading_text, rst_named_targets
from .markdown import atx_heading
from .outline import Heading, build_sections

_ADORNMENT_CHARS = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_TARGET = re.compile(r"^\s*\.\.\s+_(`[^`]+`|[^:]+):(.*)$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::")
_CODE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:code-block|code|sourcecode|literalinclude|highlight)::")
_COMMENT = re.compile(r"^\s*\.\.(?:\s|$)")
_FOOTNOTE = re.compile(r"^\s*\.\.\s+\[")
_BULLET = re.compile(r"^[-*+•]\s")

MD_LEVEL_BASE = 100  # Markdown headings nest below every rst level


def parse_rst(text: str, *, first_line: int = 1) -> tuple[list[Section], list[str]]:
    lines = text.split("\n")
    n = len(lines)
    hidden = [False] * n
    noise = [False] * n
    in_code = [False] * n  # literal and comment block lines: never list items
    ids = DocutilsIds()
    styles: list[tuple[str, bool]] = []
    headings: list[Heading] = []
    rst_anchor = ""
    block_indent: int | None = None  # indent of the line opening a literal/comment block
    previous_blank = True

    def add_title(start: int, line: int, end: int, style: tuple[str, bool]) -> None:
        nonlocal rst_anchor
        raw = lines[line].strip()
        for name in rst_named_targets(raw):  # docutils parses a title's inline markup first
            ids.register(name)
        text = rst_heading_text(raw)
        if style not in styles:
            styles.append(style)
        rst_anchor = ids.register(text)
        headings.append(Heading(start, line, end, styles.index(style) + 1, text, rst_anchor))
        for t in range(start, end + 1):
            if t != line:
                hidden[t] = True

    i = 0
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            noise[i] = True
            previous_blank = True
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if indent > block_indent:
                in_code[i] = True
                i += 1
                previous_blank = False
                continue
            block_indent = None

        if indent == 0 and previous_blank:
            # Overline + title + underline.
            if _is_adornment(line) and i + 2 < n and lines[i + 1].strip() and not _is_adornment(lines[i + 1]) \
                    and _is_adornment(lines[i + 2]) and lines[i + 2].strip()[0] == stripped[0]:
                add_title(i, i + 1, i + 2, (stripped[0], True))
                i += 3
                previous_blank = True  # a title may follow a title directly
                continue
            # Title + underline.
            if not _is_adornment(line) and i + 1 < n and _is_adornment(lines[i + 1]) \
                    and _underline_fits(stripped, lines[i + 1].strip()) \
                    and not _COMMENT.match(line) and not _BULLET.match(line):
                add_title(i, i, i + 1, (lines[i + 1].strip()[0], False))
                i += 2
                previous_blank = True
                continue
            md = atx_heading(line) if line.startswith("#") else None
            if md and md[1]:
                text = rst_heading_text(md[1])
                headings.append(Heading(i, i, i, MD_LEVEL_BASE + md[0], text, rst_anchor))
                i += 1
                continue

        if _is_adornment(line) and len(stripped) >= 4:
            noise[i] = True  # a transition
        target = _TARGET.match(line)
        if target:
            name = target.group(1).strip("`")
            if not name.startswith("_"):  # ".. __:" is anonymous: no id
                ids.register(name)
            hidden[i] = True  # target definitions are not rendered
        elif _COMMENT.match(line) and not _DIRECTIVE.match(line) and not _FOOTNOTE.match(line):
            hidden[i] = True  # a comment: readers never see it, nor its indented continuation
            block_indent = indent
        else:
            for name in rst_named_targets(line):
                ids.register(name)
        if _CODE_DIRECTIVE.match(line) or (stripped.endswith("::") and not _DIRECTIVE.match(line)):
            block_indent = indent
        previous_blank = False
        i += 1

    # A comment's continuation lines are hidden too.
    _hide_comment_bodies(lines, hidden)
    headings = with_question_items(lines, headings, in_code=in_code, hidden=hidden, heading_text=rst_heading_text)
    return build_sections(lines, headings, noise=noise, hidden=hidden, first_line=first_line), []


def _is_adornment(line: str) -> bool:
    s = line.rstrip()
    return bool(s) and s[0] in _ADORNMENT_CHARS and s == s[0] * len(s)


def _underline_fits(title: str, underline: str) -> bool:
    return len(underline) >= 4 or len(underline) >= _display_width(title)


def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _hide_comment_bodies(lines: list[str], hidden: list[bool]) -> None:
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if hidden[i] and _COMMENT.match(line) and not (_DIRECTIVE.match(line) or _TARGET.match(line) or _FOOTNOTE.match(line)):
            indent = len(line) - len(line.lstrip())
            j = i + 1
            while j < n and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
                if lines[j].strip():
                    hidden[j] = True
                j += 1
            i = j
        else:
            i += 1
