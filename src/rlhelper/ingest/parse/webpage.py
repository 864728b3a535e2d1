"""A captured web page that wraps a Markdown document (e.g. a skill catalog page).

Shape of such a capture, and what we do with each part:

1. Site chrome: navigation labels, counters, buttons, one per line. It ends
   where the wrapped document starts: at a YAML front matter block or at the
   first `# ` heading. Chrome is never an entry.
2. The wrapped Markdown document (its front matter hidden, like any
   Markdown's), parsed as Markdown.
3. "Companion files": a heading naming a Markdown file (`references/x.md`)
   followed by a ```markdown fence holding that whole file. The file has
   fences of its own and CommonMark would close the outer fence at the first
   inner bare ```. We pair them differently: the outer closer is the *last*
   bare fence line before the next companion-file opener (or the end of the
   page); inner fences pair up before it. The file is then parsed as Markdown
   on its own (its own slugs, since it is its own page on GitHub), with file
   line numbers, under the breadcrumb of the heading that names it.
4. A footer: the page's last line, alone in its paragraph, short, outside the
   document, repeating the page name from the chrome or shaped "title | site".
   Dropped like the chrome.

Sections of a companion file are `EmbeddedSection`s: a Section that also knows
the embedded file's path, so the entry builder can link to that file in the
repository instead of the page it was captured in.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from ...schema import Section
from .markdown import YAML_LINE, atx_heading, fence_marker, parse_markdown

_FILE_HEADING = re.compile(r"\.(?:md|mdx|markdown)$", re.IGNORECASE)
_FOOTER_SEPARATOR = re.compile(r"\s[|·•–—]\s")
_STRUCTURE = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|>|\||#|`{3}|~{3})")
FOOTER_MAX_CHARS = 120


@dataclass
class EmbeddedSection(Section):
    """A section of a file embedded whole in the page; `embedded_path` names that file."""

    embedded_path: str = ""


def parse_webpage(text: str) -> tuple[list[Section], list[str]]:
    """Sections of the wrapped document and of its companion files, in file order."""
    lines = text.split("\n")
    n = len(lines)
    start = article_start(lines)
    end = footer_start(lines, start)
    article = [""] * start + lines[start:end] + [""] * (n - end)

    companions, warnings = _companion_files(article)
    outer = list(article)
    for _path, opener, closer in companions:
        for t in range(opener, min(closer + 1, n)):
            outer[t] = ""  # the file is parsed on its own below
    sections, outer_warnings = parse_markdown(outer)
    warnings = outer_warnings + warnings

    outer_sections = list(sections)
    outer_starts = [s.line_start for s in outer_sections]
    for path, opener, closer in companions:
        # The file's owner: the last outer section starting before the opener.
        k = bisect_right(outer_starts, opener + 1)
        prefix = outer_sections[k - 1].breadcrumb if k else []
        inner, inner_warnings = parse_markdown(article[opener + 1 : closer], first_line=opener + 2)
        warnings += inner_warnings
        for s in inner:
            sections.append(
                EmbeddedSection(
                    breadcrumb=prefix + s.breadcrumb,
                    anchor=s.anchor,
                    line_start=s.line_start,
                    line_end=s.line_end,
                    text=s.text,
                    answerable=s.answerable,
                    embedded_path=path,
                )
            )
    sections.sort(key=lambda s: s.line_start)
    return sections, warnings


def article_start(lines: list[str]) -> int:
    """Index of the first line of the wrapped document: its front matter or first `# ` heading."""
    for i, line in enumerate(lines):
        if line.rstrip() == "---" and _front_matter_follows(lines, i):
            return i
        heading = atx_heading(line) if line.startswith("#") else None
        if heading and heading[0] == 1 and heading[1]:
            return i
    return 0


def footer_start(lines: list[str], start: int) -> int:
    """Index where the trailing site footer begins, or len(lines) if there is none."""
    last = len(lines) - 1
    while last > start and not lines[last].strip():
        last -= 1
    if last <= start or lines[last - 1].strip():
        return len(lines)
    footer = lines[last].strip()
    if len(footer) > FOOTER_MAX_CHARS or _STRUCTURE.match(footer) or fence_marker(footer):
        return len(lines)
    chrome = {line.strip() for line in lines[:start] if line.strip()}
    names_the_page = any(part.strip() in chrome for part in _FOOTER_SEPARATOR.split(footer))
    if names_the_page or _FOOTER_SEPARATOR.search(footer):
        return last
    return len(lines)


def _front_matter_follows(lines: list[str], i: int) -> bool:
    for j in range(i + 1, min(len(lines), i + 200)):
        if lines[j].rstrip() in ("---", "..."):
            body = lines[i + 1 : j]
            return bool(body) and all(YAML_LINE.match(line) for line in body)
        if not YAML_LINE.match(lines[j]):
            return False
    return False


def _companion_files(lines: list[str]) -> tuple[list[tuple[str, int, int]], list[str]]:
    """(file path, opener index, closer index) of each embedded Markdown file.

    The file's text is lines[opener + 1 : closer]; an unclosed one gets the
    index of the next opener (or len(lines)) as its closer.
    """
    openers: list[tuple[str, int]] = []
    last_heading: tuple[int, str] | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if line.startswith("#"):
            heading = atx_heading(line)
            if heading and _FILE_HEADING.search(heading[1].strip("` ")):
                last_heading = (i, heading[1].strip("` "))
                continue
        marker = fence_marker(line)
        if last_heading and marker and marker[2].lower() in ("markdown", "md") and not line[:1].isspace():
            openers.append((last_heading[1], i))
        last_heading = None

    found, warnings = [], []
    for k, (path, opener) in enumerate(openers):
        limit = openers[k + 1][1] if k + 1 < len(openers) else len(lines)
        char, length, _ = fence_marker(lines[opener])
        closer = None
        for j in range(limit - 1, opener, -1):
            m = fence_marker(lines[j])
            if m and m[0] == char and m[1] >= length and not m[2]:
                closer = j
                break
        if closer is None:
            warnings.append(
                f"unbalanced code fence at line {opener + 1}: embedded file {path} treated as running to the end of the page"
            )
            closer = limit  # no closing line: the file's text runs up to the limit
        found.append((path, opener, closer))
    return found, warnings
