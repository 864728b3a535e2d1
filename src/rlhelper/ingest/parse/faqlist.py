"""A FAQ written as one list under one heading: each question becomes a sub-section.

Some FAQ pages (slime's qa.md, English and Chinese) put every question under a
single heading, as a list whose items open with a bold question:

    # FAQ

    1.  **Why is my task stuck on the Ray submission page?**

        Please check whether ...

Headings alone make that page one section, which the token budget then cuts
at arbitrary points. A reader sees one question per item, so we do too: each
item becomes a sub-section headed by its bold text as a reader sees it (markup
removed). The list number is dropped: it names nothing (the Chinese page
numbers every item "1." and GitHub renders 1..13; upstream inserting a
question renumbers the rest), and the breadcrumb reads as a heading would. The
items have no anchors upstream: their anchor is their line ("L32", entries.py
links the file's source view there), since the parent heading's anchor (#faq)
left the reader to find the question among a dozen (issue 36).

The rule reads the list's shape only, and is conservative. A list qualifies
when it is the first list of its section's body and runs to the end of it
(lead text before it stays with the parent heading; text after it would be
cut off from the parent, so such a list is left alone), has at least two
top-level items, every one of them opening with a line that is one bold span
and nothing else, and more than half of those bold titles end in "?" or "？".
That last condition tells a FAQ from a step list with bold step names. The
other items of a FAQ list are its symptom-style entries ("Gradient becomes NaN
or Inf during training.", "训练出现 grad NaN 或者 Inf 的情况"): no word list
recognises those reliably, but the list they stand in does.

List structure follows CommonMark (and rst's bullet and enumerated lists,
which agree on what matters here): an item's content column is where the text
after its marker starts. A line indented to at least that column continues
the item (nested lists, paragraphs, indented fences); a line of the same
marker kind indented less starts the next item; any other line indented less
ends the list after a blank line or when it opens a fence, and is a lazy
continuation of the item's paragraph otherwise. Lines inside code never start
an item, and lines a reader never sees (HTML comments) are skipped. One pass
over each body, so the rule is linear in the document's length.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .outline import Heading

ITEM_LEVEL = 1000  # deeper than any heading of any format: the next real heading closes the items
MIN_ITEMS = 2

_ITEM = re.compile(r"( {0,3})(\d{1,9}[.)]|[-*+])[ \t]+")
_QUESTION_MARKS = ("?", "？")


def with_question_items(
    lines: list[str],
    headings: list[Heading],
    *,
    in_code: list[bool],
    hidden: list[bool],
    heading_text: Callable[[str], str],
) -> list[Heading]:
    """`headings` plus one heading per item of every FAQ list, in line order.

    `heading_text` turns the text inside a bold span into visible text (the
    format's rule: Markdown or rst inline markup).
    """
    out: list[Heading] = []
    for k, heading in enumerate(headings):
        out.append(heading)
        body_end = headings[k + 1].start if k + 1 < len(headings) else len(lines)
        items = _list_ending_body(lines, heading.end + 1, body_end, in_code, hidden)
        out.extend(_question_items(lines, items, heading, heading_text))
    return out


def _question_items(lines, items, parent: Heading, heading_text) -> list[Heading]:
    """A heading per item when the items make a FAQ, else none."""
    if len(items) < MIN_ITEMS:
        return []
    titles = [_bold_title(lines[i][content:], heading_text) for i, content in items]
    if not all(titles):
        return []
    questions = sum(title.endswith(_QUESTION_MARKS) for title in titles)
    if 2 * questions <= len(titles):
        return []
    return [Heading(i, i, i, ITEM_LEVEL, title, line_anchor(i)) for (i, _), title in zip(items, titles, strict=True)]


def line_anchor(index: int) -> str:
    """The anchor of a line (0-based index) as GitHub's source view names it: "L32"."""
    return f"L{index + 1}"


def _bold_title(text: str, heading_text) -> str:
    """Visible text of `text` when it is one bold span and nothing else, else ""."""
    s = text.strip()
    if len(s) < 5 or not (s.startswith("**") and s.endswith("**")):
        return ""
    inner = s[2:-2]
    if inner != inner.strip() or "**" in inner:
        return ""  # "** a **" is not bold (CommonMark's flanking rule); "**a** **b**" is two spans
    return heading_text(inner)  # without its delimiters the common title has no markup left: fast


def _list_ending_body(lines, start, end, in_code, hidden) -> list[tuple[int, int]]:
    """(line, content column) of each top-level item of the body's first list.

    Empty unless that list runs to the end of the body lines[start:end].
    """
    first = next((i for i in range(start, end) if _starts_item(lines, i, in_code, hidden)), None)
    if first is None:
        return []
    kind, column = _marker(lines[first])
    items = [(first, column)]
    blank = False
    for i in range(first + 1, end):
        line = lines[i]
        if hidden[i]:
            continue  # invisible to a reader: neither text nor a blank line
        if not line.strip():
            blank = True
            continue
        if in_code[i] and in_code[i - 1]:
            blank = False  # inside a fence: part of whatever item holds the fence
            continue
        indent = _indent(line)
        if indent < column and not in_code[i] and _ITEM.match(line):
            next_kind, column = _marker(line)
            if next_kind != kind:
                return []  # another marker starts another list
            items.append((i, column))
        elif indent < column and (blank or in_code[i]):
            return []  # the list ends before the body does (a fence is never a lazy continuation)
        # else the item goes on: indented content, or a lazy continuation line of its paragraph
        blank = False
    return items


def _starts_item(lines, i, in_code, hidden) -> bool:
    return not (in_code[i] or hidden[i]) and _ITEM.match(lines[i]) is not None


def _marker(line: str) -> tuple[str, int]:
    """(marker kind, content column) of a list item line: "." and ")" for numbers, else the bullet."""
    m = _ITEM.match(line)
    return m.group(2)[-1], m.end()


def _indent(line: str) -> int:
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))
