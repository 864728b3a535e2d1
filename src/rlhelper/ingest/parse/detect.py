"""Which parser a file needs: by extension, or by sniffing a `.txt` file.

Seed documents arrive as `.txt` whatever they really are, so for `.txt` we
look at the text. Three shapes are told apart:

* a captured web page: several lines of short chrome (or a YAML front matter
  block) before the wrapped document's first `# ` heading, with no Markdown
  structure in that chrome;
* reStructuredText: titles underlined (or over- and underlined) with a
  repeated punctuation character, directives (`.. x::`), ``literals``;
* Markdown: ATX `#` headings, ``` fences, [links](url).

Each side scores its own markers and the higher score wins; with no marker at
all the file is plain text. Other extensions are plain text too: we do not
guess at formats we were not asked to read.
"""

from __future__ import annotations

import re
from pathlib import Path

from .markdown import atx_heading, fence_marker, scan_fences
from .webpage import article_start

EXTENSIONS = {".md": "markdown", ".markdown": "markdown", ".mdx": "mdx", ".rst": "rst", ".rest": "rst"}
SNIFF_LINES = 20000  # enough to decide; keeps sniffing cheap on huge files

_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_RST_MARKUP = re.compile(r"^\s*\.\.\s+[\w:-]+::|``[^`]+``|`[^`]+`_")
_MD_MARKUP = re.compile(r"\]\([^)\s]*\)|\*\*\S")


def detect_format(path: Path, text: str) -> str:
    ext = Path(path).suffix.lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    if ext == ".txt":
        return sniff_format(text)
    return "text"


def sniff_format(text: str) -> str:
    lines = text.split("\n", SNIFF_LINES)[:SNIFF_LINES]
    if looks_like_capture(lines):
        return "webpage"
    in_code, _ = scan_fences(lines, [False] * len(lines))
    md = rst = 0
    previous_blank = True
    for i, line in enumerate(lines):
        if in_code[i]:
            md += fence_marker(line) is not None
            previous_blank = False
            continue
        if line.startswith("#") and atx_heading(line):
            md += 3
        elif previous_blank and line.strip() and i + 1 < len(lines) and _RST_ADORNMENT.match(lines[i + 1]) \
                and not _RST_ADORNMENT.match(line):
            rst += 3
        md += bool(_MD_MARKUP.search(line))
        rst += bool(_RST_MARKUP.search(line))
        previous_blank = not line.strip()
    if md == rst == 0:
        return "text"
    return "markdown" if md >= rst else "rst"


def looks_like_capture(lines: list[str]) -> bool:
    start = article_start(lines)
    if start == 0:
        return False
    chrome = [line.strip() for line in lines[:start] if line.strip()]
    if any(fence_marker(line) or (line.startswith("#") and atx_heading(line)) for line in chrome):
        return False  # structured text before the first heading: a document's own preamble
    if lines[start].rstrip() == "---":
        return len(chrome) >= 3
    short = sum(1 for line in chrome if len(line) <= 60)
    return len(chrome) >= 8 and short >= 0.6 * len(chrome)
