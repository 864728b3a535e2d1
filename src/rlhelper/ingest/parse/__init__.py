"""Document parsers: text in, heading-scoped `Section`s out, in document order.

    parse_document(text, fmt)   -> list[Section]
    parse_with_warnings(...)    -> (list[Section], list[str])  # what ingest uses
    detect_format(path, text)   -> "markdown" | "mdx" | "rst" | "text" | "webpage"

One module per format (markdown, rst, text, webpage), sharing the heading-text
and anchor rules (inline), the headings-to-sections assembly (outline) and the
answerability rules (shape). Parsers never raise on odd input: whatever they
cannot make sense of becomes text of the enclosing section plus a warning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import DocumentError

if TYPE_CHECKING:
    from ...schema import Section
    from .detect import detect_format
    from .webpage import EmbeddedSection

FORMATS = ("markdown", "mdx", "rst", "text", "webpage")
# Spellings a hand-written manifest may use for the same formats.
ALIASES = {"md": "markdown", "restructuredtext": "rst", "rest": "rst", "txt": "text", "plain": "text"}

__all__ = ["FORMATS", "EmbeddedSection", "detect_format", "parse_document", "parse_with_warnings"]


def __getattr__(name: str):
    # The parsers are imported when first used: a module that needs one helper of this package (the
    # terminal's inline.clean_text, on `rlhelper ask`'s path) does not import every parser with it.
    if name == "detect_format":
        from .detect import detect_format

        return detect_format
    if name == "EmbeddedSection":
        from .webpage import EmbeddedSection

        return EmbeddedSection
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_with_warnings(text: str, fmt: str) -> tuple[list[Section], list[str]]:
    """Sections of `text` read as `fmt`, and warnings about what had to be guessed."""
    from .markdown import parse_markdown
    from .rst import parse_rst
    from .text import parse_text
    from .webpage import parse_webpage

    fmt = ALIASES.get(fmt.lower(), fmt.lower()) if isinstance(fmt, str) else fmt
    if fmt == "markdown":
        return parse_markdown(text)
    if fmt == "mdx":
        return parse_markdown(text, mdx=True)
    if fmt == "rst":
        return parse_rst(text)
    if fmt == "webpage":
        return parse_webpage(text)
    if fmt == "text":
        return parse_text(text)
    raise DocumentError(f"unknown document format {fmt!r}: expected one of {', '.join(FORMATS)}")


def parse_document(text: str, fmt: str) -> list[Section]:
    return parse_with_warnings(text, fmt)[0]
