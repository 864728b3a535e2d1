"""Turn a document's headings into Sections: breadcrumbs, bodies, line ranges.

Both the Markdown and the reStructuredText scanner end here. They hand over
the document's lines, its headings in order (with a numeric level: deeper is
larger) and two per-line flags:

* `hidden`: lines a reader never sees (rst adornment lines, front matter,
  HTML comments, MDX import/export). They are blanked in `Section.text`, so
  line i of a section's text is still line `line_start + i` of the file: the
  entry builder can split a section and give every part an exact range.
* `noise`: lines that carry no content (hidden ones, blank lines, thematic
  breaks / transitions, rst internal targets). A section ends at its last
  non-noise line; a body of noise only is empty.

A section's body runs to the next heading of *any* level, so each subsection
is its own section and a parent keeps only its own lead text.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...schema import Section
from .shape import is_answerable


@dataclass
class Heading:
    start: int  # first line of the heading block (an rst overline), 0-based
    line: int  # the line holding the title text
    end: int  # last line of the heading block (an underline)
    level: int
    text: str
    anchor: str


def build_sections(
    lines: list[str],
    headings: list[Heading],
    *,
    noise: list[bool],
    hidden: list[bool],
    first_line: int = 1,
    root: str | None = None,
) -> list[Section]:
    """Sections in document order; `first_line` is the file line number of lines[0]."""
    prefix = [root] if root else []
    noise = [n or h for n, h in zip(noise, hidden, strict=True)]
    sections: list[Section] = []

    # Text before the first heading (after front matter) is a section of its
    # own, headed by the document title when there is one.
    head_start = headings[0].start if headings else len(lines)
    pre = [i for i in range(head_start) if not noise[i]]
    if pre:
        sections.append(
            _section(lines, hidden, pre[0], pre[-1], pre, prefix, "", bool(headings), first_line)
        )

    stack: list[Heading] = []
    for k, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        body_end = headings[k + 1].start if k + 1 < len(headings) else len(lines)
        content = [i for i in range(heading.end + 1, body_end) if not noise[i]]
        last = content[-1] if content else heading.line
        has_children = k + 1 < len(headings) and headings[k + 1].level > heading.level
        crumbs = prefix + [h.text for h in stack]
        sections.append(
            _section(lines, hidden, heading.line, last, content, crumbs, heading.anchor, has_children, first_line)
        )
    return sections


def _section(lines, hidden, first, last, content, crumbs, anchor, has_children, first_line) -> Section:
    text = "\n".join("" if hidden[i] else lines[i] for i in range(first, last + 1))
    return Section(
        breadcrumb=list(crumbs),
        anchor=anchor,
        line_start=first + first_line,
        line_end=last + first_line,
        text=text,
        answerable=is_answerable([lines[i] for i in content], has_children),
    )
