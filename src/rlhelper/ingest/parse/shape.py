"""Which sections can answer a question, judged by the shape of their body.

A retrieval hit must be something a user can act on. Three body shapes never
are, whatever the document says, so they become `answerable=False` (kept in
the index for context, never offered as an answer):

1. Empty: only the heading (the body is blank lines, rules, hidden lines).
   Troubleshooting guides group their entries under bare category headings.
2. Navigation: the body is a table or list whose rows mostly link to anchors
   of the same document (a "jump to" table, a hand-written table of contents),
   or an rst `toctree` / `contents` directive. It points at answers elsewhere;
   answering with it would cite the index instead of the entry.
3. A short lead of a section that has subsections: plain text (no code, list,
   table or directive) of at most `LEAD_MAX_TOKENS` tokens. Such a lead
   introduces what follows ("Common issues are listed below", "Last updated:
   ...") rather than fixing anything; the fixes live in the subsections.

The rules read only the body's lines, never specific words, so they carry over
to documents we have not seen.
"""

from __future__ import annotations

import re

from ...tokens import count_tokens

LEAD_MAX_TOKENS = 50

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^[\s|:+=-]+$")  # |---|:--:| and rst grid/simple table rules
_SAME_DOC_LINK = re.compile(r"\]\(#[^)\s]*\)|:ref:`|`[^`<>]+`_(?!_)")
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::")
_RST_TOC = re.compile(r"^\.\.\s+(?:toctree|contents)::")


def is_answerable(content: list[str], has_children: bool) -> bool:
    """`content`: the body's non-noise lines (heading excluded), as in the file."""
    if not content:
        return False
    if _is_navigation(content):
        return False
    if has_children and _is_short_lead(content):
        return False
    return True


def _is_navigation(content: list[str]) -> bool:
    if _RST_TOC.match(content[0]) and all(line[:1].isspace() for line in content[1:]):
        return True
    if any(_FENCE.match(line) for line in content):
        return False
    rows = [line for line in content if _is_item(line) and not _TABLE_RULE.match(line)]
    if len(rows) < 2:
        return False
    linked = sum(1 for line in rows if _SAME_DOC_LINK.search(line))
    prose = len(content) - len(rows) - sum(1 for line in content if _TABLE_RULE.match(line))
    # Mostly linking rows, and at most a line or two of lead-in around them.
    return linked * 2 >= len(rows) and prose <= 2


def _is_short_lead(content: list[str]) -> bool:
    for line in content:
        if _FENCE.match(line) or _is_item(line) or _RST_DIRECTIVE.match(line):
            return False
    return count_tokens("\n".join(line.strip() for line in content)) <= LEAD_MAX_TOKENS


def _is_item(line: str) -> bool:
    return bool(_LIST_ITEM.match(line) or _TABLE_ROW.match(line))
