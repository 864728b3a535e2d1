"""Markdown and MDX: a line scanner for ATX/setext headings and code fences.

Why not a full CommonMark parser (markdown-it-py is installed)? We need three
things it does not give directly: exact *file* line numbers for every section
of a file embedded inside another one (the captured slime page), our own
recovery from an unclosed fence, and a guarantee of linear time on hostile
input. Headings and fences are line-level constructs, so a scanner is enough:

* A fence opens with ``` or ~~~ (any indentation: fences inside list items are
  indented) and closes with a bare fence of the same character at least as
  long. Everything between is code: a `# comment` in it is not a heading.
  Closers are found by walking a per-character list of bare fence lines with
  a suffix maximum, so the scan is linear however the fences are arranged.
* An unclosed fence would swallow the rest of the document. We end it at the
  next heading-like line that stands alone between blank lines (a real heading
  looks like that; a shell comment in code rarely does) and warn with the
  opener's line number.
* ATX headings (#..######, up to 3 spaces of indent, a space after the #'s);
  setext headings when the text above the underline is a one-line paragraph
  (the common case, and it keeps a `---` rule after a list from becoming one).
* A FAQ written as one list of bold questions under a heading gets one
  sub-section per question (see `faqlist`).
* YAML front matter (at the first non-blank line) is hidden; its `title:` is
  the page title when the document has no level-1 heading (site generators
  render it as the H1). MDX import/export lines and `{/* */}` comments are
  hidden; JSX tags are never headings and the text inside them stays.

Tables need nothing special: they contain no blank lines, and sections are
never cut inside a block.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from ...schema import Section
from .faqlist import with_question_items
from .inline import GithubSlugger, markdown_heading_text
from .outline import Heading, build_sections

YAML_LINE = re.compile(r"^(?:[\w\"'.-][^:]*:(?:\s|$)|\s|-\s|#|$)")
_MDX_HIDDEN = re.compile(r"^(?:import\s|export\s|\{/\*.*\*/\}\s*$)")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|>|\||<|`{3}|~{3})")

MAX_FENCE_WARNINGS = 10  # one broken file must not flood the ingest report
UNCLOSED_FENCE = "unbalanced code fence at line {line}: treated as running to the end of the section"


def parse_markdown(text_or_lines, *, mdx: bool = False, first_line: int = 1) -> tuple[list[Section], list[str]]:
    """Sections and warnings of a Markdown (or MDX) text.

    `first_line` is the file line number of the text's first line: an embedded
    file reports lines of the file that embeds it.
    """
    lines = text_or_lines.split("\n") if isinstance(text_or_lines, str) else list(text_or_lines)
    n = len(lines)
    hidden = [False] * n
    title = _hide_front_matter(lines, hidden)
    if mdx:
        for i, line in enumerate(lines):
            if _MDX_HIDDEN.match(line):
                hidden[i] = True

    in_code, unclosed = scan_fences(lines, hidden)
    warnings = [UNCLOSED_FENCE.format(line=i + first_line) for i in unclosed[:MAX_FENCE_WARNINGS]]
    if len(unclosed) > MAX_FENCE_WARNINGS:
        warnings.append(f"{len(unclosed) - MAX_FENCE_WARNINGS} more unbalanced code fences")
    _hide_html_comments(lines, hidden, in_code)

    noise = [hidden[i] or not lines[i].strip() or (not in_code[i] and is_thematic_break(lines[i])) for i in range(n)]
    headings = _headings(lines, hidden, in_code, noise)
    root = title if title and not any(h.level == 1 for h in headings) else None
    headings = with_question_items(lines, headings, in_code=in_code, hidden=hidden, heading_text=markdown_heading_text)
    sections = build_sections(lines, headings, noise=noise, hidden=hidden, first_line=first_line, root=root)
    return sections, warnings


def fence_marker(line: str) -> tuple[str, int, str] | None:
    """(char, length, info string) when `line` opens or closes a code fence."""
    stripped = line.lstrip(" \t")
    char = stripped[:1]
    if char not in ("`", "~") or not stripped.startswith(char * 3):
        return None
    length = len(stripped) - len(stripped.lstrip(char))
    info = stripped[length:].strip()
    if char == "`" and "`" in info:  # CommonMark: a backtick fence's info has no backtick
        return None
    return char, length, info


def scan_fences(lines: list[str], skip: list[bool]) -> tuple[list[bool], list[int]]:
    """Which lines are inside fenced code (fence lines included), and the openers never closed."""
    n = len(lines)
    markers = [None if skip[i] else fence_marker(line) for i, line in enumerate(lines)]
    bare: dict[str, list[int]] = {"`": [], "~": []}
    for i, m in enumerate(markers):
        if m and not m[2]:
            bare[m[0]].append(i)
    # suffix_max[c][p]: longest bare fence of char c at or after bare[c][p].
    suffix_max: dict[str, list[int]] = {}
    for char, positions in bare.items():
        best, acc = 0, []
        for pos in reversed(positions):
            best = max(best, markers[pos][1])
            acc.append(best)
        suffix_max[char] = acc[::-1]
    stops = _lone_heading_lines(lines, skip)

    in_code = [False] * n
    unclosed: list[int] = []
    pointer = {"`": 0, "~": 0}
    i = 0
    while i < n:
        marker = markers[i]
        if marker is None:
            i += 1
            continue
        char, length, _ = marker
        positions, p = bare[char], pointer[char]
        while p < len(positions) and positions[p] <= i:
            p += 1
        if p < len(positions) and suffix_max[char][p] >= length:
            while markers[positions[p]][1] < length:
                p += 1
            end = positions[p]
            pointer[char] = p + 1
        else:
            pointer[char] = p
            unclosed.append(i)
            k = bisect_right(stops, i)
            end = stops[k] - 1 if k < len(stops) else n - 1
        for t in range(i, end + 1):
            in_code[t] = True
        i = end + 1
    return in_code, unclosed


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, raw inline text) of an ATX heading line; no regex, so no backtracking."""
    indent = len(line) - len(line.lstrip(" "))
    if indent > 3:
        return None
    body = line[indent:]
    level = len(body) - len(body.lstrip("#"))
    if not 1 <= level <= 6:
        return None
    rest = body[level:]
    if rest and rest[0] not in " \t":
        return None  # "#hashtag" is not a heading
    rest = rest.strip()
    # An optional closing sequence of #'s, preceded by a space.
    stripped = rest.rstrip("#")
    if stripped != rest and (not stripped or stripped[-1] in " \t"):
        rest = stripped.rstrip()
    return level, rest


def is_thematic_break(line: str) -> bool:
    if len(line) - len(line.lstrip(" ")) > 3:
        return False
    compact = line.replace(" ", "").replace("\t", "")
    return len(compact) >= 3 and compact[0] in "-*_" and compact == compact[0] * len(compact)


def _setext_level(line: str) -> int:
    if len(line) - len(line.lstrip(" ")) > 3:
        return 0
    s = line.strip()
    if len(s) >= 3 and s == s[0] * len(s) and s[0] in "=-":
        return 1 if s[0] == "=" else 2
    return 0


def _headings(lines, hidden, in_code, noise) -> list[Heading]:
    slugger = GithubSlugger()
    headings: list[Heading] = []
    atx_lines: set[int] = set()
    for i, line in enumerate(lines):
        if in_code[i] or hidden[i] or not line.strip():
            continue
        atx = atx_heading(line)
        if atx:
            text = markdown_heading_text(atx[1])
            if text:  # an empty "#" line is not a usable heading
                headings.append(Heading(i, i, i, atx[0], text, slugger.slug(text)))
                atx_lines.add(i)
            continue
        level = _setext_level(line)
        if level and i >= 1 and _is_one_line_paragraph(lines, i - 1, hidden, in_code, atx_lines):
            text = markdown_heading_text(lines[i - 1].strip())
            if text:
                headings.append(Heading(i - 1, i - 1, i, level, text, slugger.slug(text)))
                hidden[i] = noise[i] = True  # the underline is adornment, not text
    return headings


def _is_one_line_paragraph(lines, p, hidden, in_code, atx_lines) -> bool:
    line = lines[p]
    if not line.strip() or hidden[p] or in_code[p] or p in atx_lines:
        return False
    if len(line) - len(line.lstrip(" ")) > 3 or _NOT_PARAGRAPH.match(line) or _setext_level(line):
        return False
    return p == 0 or not lines[p - 1].strip() or hidden[p - 1]


def _lone_heading_lines(lines: list[str], skip: list[bool]) -> list[int]:
    """ATX heading lines with a blank line (or the edge) on both sides."""
    n = len(lines)
    out = []
    for i, line in enumerate(lines):
        if skip[i] or not line.startswith(("#", " #", "  #", "   #")) or atx_heading(line) is None:
            continue
        before = i == 0 or not lines[i - 1].strip()
        after = i == n - 1 or not lines[i + 1].strip()
        if before and after:
            out.append(i)
    return out


def _hide_front_matter(lines: list[str], hidden: list[bool]) -> str | None:
    """Hide a YAML front matter block at the first non-blank line; return its title."""
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None or lines[start].rstrip() != "---":
        return None
    limit = min(len(lines), start + 200)
    for j in range(start + 1, limit):
        if lines[j].rstrip() in ("---", "..."):
            body = lines[start + 1 : j]
            if not body or not all(YAML_LINE.match(line) for line in body):
                return None
            for t in range(start, j + 1):
                hidden[t] = True
            for line in body:
                if line.startswith("title:"):
                    return line[len("title:") :].strip().strip("\"'").strip() or None
            return None
    return None


def _hide_html_comments(lines: list[str], hidden: list[bool], in_code: list[bool]) -> None:
    """Hide <!-- ... --> blocks outside code: readers never see them."""
    closers = [i for i, line in enumerate(lines) if "-->" in line]
    i, n = 0, len(lines)
    while i < n:
        if in_code[i] or not lines[i].lstrip().startswith("<!--"):
            i += 1
            continue
        k = bisect_right(closers, i - 1)
        end = closers[k] if k < len(closers) else i
        if "-->" in lines[i][lines[i].index("<!--") + 4 :]:
            end = i
        for t in range(i, end + 1):
            if in_code[t]:
                break
            hidden[t] = True
        i = end + 1
