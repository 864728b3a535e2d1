"""Blocks of a section's text: where a long section may be split, and its prose.

One rule serves Markdown, rst and plain text alike: a block boundary is a
blank line, outside fenced code, followed by a line in column 0. Indented
lines after a blank belong to the block above them: list-item continuations
in Markdown (the ```bash under "1. Check logs:"), directive content and `::`
literal blocks in rst. So a code block always stays with the line that
introduces it and is never cut.

A block bigger than the budget is cut between lines, unless it holds code
(a fence, an rst literal/code directive) or a table: a single oversized code
block or table stays whole, as the contract asks.
"""

from __future__ import annotations

import re

from .markdown import fence_marker

_RST_CODE = re.compile(r"^\s*\.\.\s+(?:code-block|code|sourcecode)::|::\s*$")
_TABLE_ROW = re.compile(r"^\s*(?:\||\+[-=+]+\+)")  # Markdown rows, rst grid-table rules
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"https?://\S+")


def blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Inclusive (first, last) line indices of each block; blank lines fall between blocks."""
    out: list[tuple[int, int]] = []
    start = last = None
    fence: tuple[str, int] | None = None
    blank_before = False
    for i, line in enumerate(lines):
        if fence:
            marker = fence_marker(line)
            if marker and marker[0] == fence[0] and marker[1] >= fence[1] and not marker[2]:
                fence = None
            last = i
            continue
        if not line.strip():
            blank_before = True
            continue
        if start is None:
            start = i
        elif blank_before and not line[:1].isspace():
            out.append((start, last))
            start = i
        last = i
        blank_before = False
        marker = fence_marker(line)
        if marker:
            fence = (marker[0], marker[1])
    if start is not None:
        out.append((start, last))
    return out


def keep_whole(lines: list[str]) -> bool:
    """True for a block that must not be cut between lines: code, or a table."""
    return any(fence_marker(line) or _RST_CODE.search(line) or _TABLE_ROW.match(line) for line in lines)


def prose(text: str) -> str:
    """The text minus code: fenced blocks, rst literal blocks, inline code, URLs.

    Used to decide an entry's language: identifiers and commands are English
    in Chinese documents too, so they must not outvote the prose.
    """
    kept: list[str] = []
    fence: tuple[str, int] | None = None
    literal_indent: int | None = None
    for line in text.split("\n"):
        if fence:
            marker = fence_marker(line)
            if marker and marker[0] == fence[0] and marker[1] >= fence[1] and not marker[2]:
                fence = None
            continue
        marker = fence_marker(line)
        if marker:
            fence = (marker[0], marker[1])
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if indent > literal_indent:
                continue
            literal_indent = None
        if _RST_CODE.search(line):
            literal_indent = indent
            line = line.rstrip().removesuffix("::")
        if line.lstrip().startswith(".."):
            continue  # directives, targets, comments: markup, not prose
        kept.append(_URL.sub(" ", _INLINE_CODE.sub(" ", line)))
    return "\n".join(kept)
