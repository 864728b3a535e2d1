"""Heading text as a reader sees it, and the anchors a renderer gives it.

Breadcrumbs hold *reader-visible* text: the eval set, the UI and the citation
all quote headings the way GitHub or Sphinx display them, so inline markup is
removed (`code` -> code, **bold** -> bold, [text](url) -> text, rst ``lit``
-> lit, `text <url>`_ -> text, :role:`text <target>` -> text) and runs of
whitespace collapse to one space.

Anchors follow the renderer of each format, so a cited URL lands on the
section:

* Markdown/MDX: GitHub's slugger (github-slugger): lowercase, drop punctuation
  and symbols except "-" and "_", every space becomes "-", letters of any
  script (CJK included) are kept, repeats get "-1", "-2", ...
* reStructuredText: docutils ids, via `docutils.nodes.make_id`. A title with
  no ASCII letters (a Chinese title) has an empty id; docutils then numbers it
  with `auto_id_prefix`, which Sphinx sets to "id": "id1", "id2", ... in
  document order. The counter is shared with every other node that needs an
  automatic id, and so is the set of used ids, so explicit targets
  (`.. _label:`) and named hyperlink targets (`text <url>`_) are registered
  too, in document order, exactly as docutils does while parsing.

All regexes here run on single heading lines capped at `MAX_HEADING_CHARS`, so
even pathological input stays cheap.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

MAX_HEADING_CHARS = 1000

_WS = re.compile(r"\s+")
# Never part of visible text: C0 controls (minus tab/newline), DEL, C1 controls (U+009B is a
# terminal's CSI) and bidi overrides/isolates, which make a terminal or page show a command
# in another order than the one copied (the "Trojan Source" trick).
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# --- Markdown ---------------------------------------------------------------
# Character classes exclude the delimiters, so no pattern rescans text
# (linear time, whatever the heading holds).
_MD_MARKUP_CHARS = re.compile(r"[`*_\[<~\\]")
_BACKTICKS = re.compile(r"`+")
_MD_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]*\)")
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\](?:\([^()\n]*\)|\[[^\[\]\n]*\])")
_MD_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^<>\s]*)>")
_HTML_TAG = re.compile(r"</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>")
_MD_STRONG = re.compile(r"\*\*([^*\s](?:[^*]*[^*\s])?)\*\*|(?<!\w)__([^_\s](?:[^_]*[^_\s])?)__(?!\w)")
_MD_EM = re.compile(r"\*([^*\s](?:[^*]*[^*\s])?)\*|(?<!\w)_([^_\s](?:[^_]*[^_\s])?)_(?!\w)")
_MD_STRIKE = re.compile(r"~~([^~\s](?:[^~]*[^~\s])?)~~")
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_PARKED = 0xF0000
_PARKED_CHAR = re.compile("[\U000F0021-\U000F007E]")
_PARKED_SPAN = re.compile("\x00(\\d+)\x00")

# --- reStructuredText -------------------------------------------------------
_RST_MARKUP_CHARS = re.compile(r"[`*]")
_RST_LITERAL = re.compile(r"``((?:[^`]|`(?!`))++)``")
_RST_ROLE_PREFIX = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`([^`]+)`")
_RST_ROLE_SUFFIX = re.compile(r"`([^`]+)`:[\w.+-]+(?::[\w.+-]+)*:")
_RST_EMBEDDED = re.compile(r"`([^`<]*)<([^<>`]+)>`__?")  # name stripped by the caller
_RST_REF = re.compile(r"`([^`]+)`__?")
_RST_INTERPRETED = re.compile(r"`([^`]+)`")
_RST_STRONG = re.compile(r"\*\*([^*\s](?:[^*]*[^*\s])?)\*\*")
_RST_EM = re.compile(r"(?<![\w*])\*([^*\s](?:[^*]*[^*\s])?)\*(?![\w*])")
_RST_TARGET_TEXT = re.compile(r"\s*<[^<>]+>$")  # "GSM8K example<../x>" inside a role


def drop_controls(text: str) -> str:
    """`text` as a terminal or page shows it as written: no control or bidi characters (tab and
    newline stay). Everything printed that came from outside goes through here."""
    return CONTROL_CHARS.sub("", text)


def clean_text(text: str) -> str:
    """One line: whitespace collapsed, control characters dropped."""
    return _WS.sub(" ", drop_controls(text)).strip()


def markdown_heading_text(raw: str) -> str:
    """Visible text of a Markdown heading's inline content (no leading #'s)."""
    text = raw[:MAX_HEADING_CHARS]
    if not _MD_MARKUP_CHARS.search(text):
        return clean_text(text)  # the common case: nothing to strip
    # Code spans are literal: park them as \x00<n>\x00 so the markup rules skip them.
    spans: list[str] = []
    parked = []
    for is_code, piece in _split_code_spans(text):
        if is_code:
            spans.append(piece)
            parked.append(f"\x00{len(spans) - 1}\x00")
        else:
            parked.append(piece)
    text = "".join(parked)
    # Escaped punctuation (\*) is literal too: park it in the private-use plane.
    text = _MD_ESCAPE.sub(lambda m: chr(_PARKED + ord(m.group(1))), text)
    text = _MD_IMAGE.sub(r"\1", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _MD_AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _MD_STRONG.sub(lambda m: m.group(1) or m.group(2), text)
    text = _MD_EM.sub(lambda m: m.group(1) or m.group(2), text)
    text = _MD_STRIKE.sub(r"\1", text)
    text = _PARKED_CHAR.sub(lambda m: chr(ord(m.group(0)) - _PARKED), text)
    text = _PARKED_SPAN.sub(lambda m: spans[int(m.group(1))], text)
    return clean_text(text)


def _split_code_spans(text: str) -> list[tuple[bool, str]]:
    """[(is_code, text)]: a run of n backticks opens a span closed by the next run of exactly n."""
    runs = [(m.start(), m.end() - m.start()) for m in _BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for k, (_, length) in enumerate(runs):
        by_length.setdefault(length, []).append(k)
    pieces: list[tuple[bool, str]] = []
    plain_from, k = 0, 0
    while k < len(runs):
        start, length = runs[k]
        same = by_length[length]
        nxt = bisect_right(same, k)
        if nxt == len(same):
            k += 1  # no closer: these backticks are literal text
            continue
        close = same[nxt]
        pieces.append((False, text[plain_from:start]))
        inner = text[start + length : runs[close][0]]
        pieces.append((True, inner.strip() or inner))
        plain_from = runs[close][0] + length
        k = close + 1
    pieces.append((False, text[plain_from:]))
    return pieces


def rst_heading_text(raw: str) -> str:
    """Visible text of a reStructuredText title (what docutils' astext() gives)."""
    text = raw[:MAX_HEADING_CHARS]
    if not _RST_MARKUP_CHARS.search(text):
        return clean_text(text)
    literals: list[str] = []

    def keep_literal(m: re.Match) -> str:
        literals.append(m.group(1))
        return f"\x00{len(literals) - 1}\x00"

    text = _RST_LITERAL.sub(keep_literal, text)
    text = _RST_ROLE_PREFIX.sub(lambda m: _RST_TARGET_TEXT.sub("", m.group(1)), text)
    text = _RST_ROLE_SUFFIX.sub(r"\1", text)
    text = _RST_EMBEDDED.sub(lambda m: m.group(1).strip() or m.group(2), text)
    text = _RST_REF.sub(r"\1", text)
    text = _RST_INTERPRETED.sub(r"\1", text)
    text = _RST_STRONG.sub(r"\1", text)
    text = _RST_EM.sub(r"\1", text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: literals[int(m.group(1))], text)
    return clean_text(text)


def rst_named_targets(line: str) -> list[str]:
    """Names of the hyperlink targets an rst line defines inline (`text <url>`_).

    Anonymous ones (`text <url>`__) define no target, hence no id.
    """
    if "<" not in line or "`" not in line:
        return []
    return [m.group(1).strip() or m.group(2) for m in _RST_EMBEDDED.finditer(line) if not m.group(0).endswith("__")]


def github_slug(text: str) -> str:
    """GitHub's heading slug of already-visible text (github-slugger's rule)."""
    out = []
    for ch in text.lower():
        # Letters, marks and digits of every script stay (CJK included);
        # '-', '_' and ' ' stay; other punctuation and symbols go.
        if ch in " -_" or unicodedata.category(ch)[0] in "LMN":
            out.append(ch)
    return "".join(out).replace(" ", "-")


class GithubSlugger:
    """Unique slugs within one rendered Markdown file, as github-slugger makes them."""

    def __init__(self) -> None:
        self.occurrences: dict[str, int] = {}

    def slug(self, text: str) -> str:
        original = github_slug(text)
        result = original
        while result in self.occurrences:
            self.occurrences[original] += 1
            result = f"{original}-{self.occurrences[original]}"
        self.occurrences[result] = 0
        return result


class DocutilsIds:
    """The ids docutils assigns in document order (`document.set_id`), with Sphinx's settings.

    Sphinx sets `auto_id_prefix = "id"`, so a name without an id of its own
    (no ASCII letters, or already taken) becomes "id1", "id2", ...
    """

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.counter = 0

    def register(self, name: str) -> str:
        from docutils.nodes import make_id  # docutils: for rst anchors at ingest, not on a query's path

        candidate = make_id(" ".join(name.split()))
        if not candidate or candidate in self.ids:
            while True:
                self.counter += 1
                candidate = f"id{self.counter}"
                if candidate not in self.ids:
                    break
        self.ids.add(candidate)
        return candidate
