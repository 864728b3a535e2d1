"""Plain text: no markup, so no headings; the whole document is one section.

The entry builder splits it into paragraph groups within the token budget and
heads each with the document title (with a warning, since a reader then has
no heading to go by).
"""

from __future__ import annotations

from ...schema import Section
from .outline import build_sections


def parse_text(text: str, *, first_line: int = 1) -> tuple[list[Section], list[str]]:
    lines = text.split("\n")
    hidden = [False] * len(lines)
    noise = [not line.strip() for line in lines]
    return build_sections(lines, [], noise=noise, hidden=hidden, first_line=first_line), []
