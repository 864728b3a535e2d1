"""What the judge reads of an entry: its heading trail and its first lines, not the whole text.

The judge's cost grows with the tokens it reads, so an entry is cut to about 128 tokens:
the document title and headings (which name the problem), then the entry's own lines in order,
skipping code fences and blank lines. Training and serving share this function, so the model
is scored on the text it was trained on.
"""

from __future__ import annotations

import re

from ..schema import Entry, title_trail

MAX_PASSAGE_CHARS = 600  # ~128 wordpiece tokens of English; the tokenizer truncates the rest

_FENCE = re.compile(r"^\s*(```|~~~|\.\. code-block::|::\s*$)")
_MARKUP = re.compile(r"[*`#>|]+")


def passage(entry: Entry, max_chars: int = MAX_PASSAGE_CHARS) -> str:
    """`Title › Heading: first lines…`, at most `max_chars` characters."""
    head = " › ".join(title_trail(entry.doc_title, entry.breadcrumb) or [entry.heading])
    lines = []
    for line in entry.text.splitlines():
        if _FENCE.match(line):
            continue
        words = " ".join(_MARKUP.sub(" ", line).split())
        if words and words.strip("-=~^") and words not in head:
            lines.append(words)
    text = f"{head}: {' '.join(lines)}" if lines else head
    return text[:max_chars].rstrip()
