"""From a document file to index entries: read, parse, split, label, dedupe.

    read_document(path)                     -> text (or DocumentError saying why not)
    build_entries(text, collection=, doc=, meta=, max_tokens=400)
                                            -> (entries, warnings)
    merge_duplicates(entries)               -> entries, repeats folded into `also_at`
                                               (identical anywhere; near-identical within a document)

Design choices:

* Entry text is the section's own lines, verbatim (rst adornment lines and
  other invisible markup blanked), so line i of an entry's text is line
  `line_start + i` of the file. Quoting and citing stay exact.
* A section over the token budget is split between blocks (see
  `parse.blocks`): never inside a code block, and a code block bigger than the
  budget stays whole. Every part keeps the section's breadcrumb and anchor and
  gets its own line range and `part`/`parts`. Later parts do not repeat the
  heading line; the breadcrumb carries it.
* Ids hash (collection, doc, breadcrumb, part) and nothing positional, so an
  entry keeps its id when lines are added above it; the rare repeat (two
  sections with the same breadcrumb) gets "-2", "-3" in document order.
* Language is decided per entry from its prose (code removed): Chinese FAQs
  quote English errors, and English guides are not Chinese because of one
  quoted message.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import replace
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from ..errors import DocumentError
from ..schema import MAX_QUOTED_CHARS, Entry, Section
from ..tokens import count_tokens
from .parse import detect_format, parse_with_warnings
from .parse.blocks import blocks, keep_whole, prose
from .parse.inline import drop_controls, markdown_heading_text, rst_heading_text
from .parse.markdown import atx_heading

NO_HEADINGS = "no headings: indexed as one entry per paragraph group"
ID_HEX_CHARS = 12
# A Han character carries about as much as three Latin letters (a word is ~5
# letters, ~1.5 characters), so prose is "zh" when weighted Han reaches 30 %.
HAN_WEIGHT = 3
ZH_MIN_SHARE = 0.3
BINARY_CONTROL_SHARE = 0.1

_BINARY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # \t \n \f \r are text
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


# --- reading -----------------------------------------------------------------

def read_document(path) -> str:
    """The file's text: UTF-8, BOM stripped, CRLF -> LF (line numbers unchanged).

    Raises DocumentError saying why a file cannot be indexed: unreadable,
    empty, binary, UTF-16, not UTF-8 (with the offending byte's offset and
    line), or whitespace only.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DocumentError(f"{path}: cannot read the file ({e.strerror or e})") from e
    if not data:
        raise DocumentError(f"{path}: empty file")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError(f"{path}: UTF-16 text; convert it to UTF-8 to index it")
    nul = data.find(b"\x00")
    if nul != -1:
        raise DocumentError(f"{path}: binary file (NUL byte at offset {nul}); only text documents can be indexed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DocumentError(
            f"{path}: not UTF-8: invalid byte 0x{data[e.start]:02x} at byte offset {e.start} (line {line}); "
            "re-save the file as UTF-8"
        ) from e
    text = text.removeprefix("\ufeff")
    sample = text[:65536]
    controls = len(_BINARY_CONTROL.findall(sample))
    if controls > BINARY_CONTROL_SHARE * len(sample):
        raise DocumentError(
            f"{path}: binary file ({100 * controls // len(sample)}% control characters); only text documents can be indexed"
        )
    # A lone \r is left alone: line numbers count \n only, as git, GitHub and `wc -l` do.
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise DocumentError(f"{path}: only whitespace, nothing to index")
    return text


# --- building ----------------------------------------------------------------

GIANT_SECTION_CHARS = 100_000  # a section this long is likely a pasted log or a page without headings


def giant_section_warning(section: Section) -> str | None:
    if len(section.text) < GIANT_SECTION_CHARS:
        return None
    name = " › ".join(section.breadcrumb) or "text before the first heading"
    return (f"section “{name}” (lines {section.line_start}-{section.line_end}) holds {len(section.text):,} "
            f"characters: an answer quotes its first {MAX_QUOTED_CHARS:,}; headings inside it would make it searchable "
            "in parts")


def build_entries(
    text: str, *, collection: str, doc: str, meta: dict | None, max_tokens: int = 400
) -> tuple[list[Entry], list[str]]:
    """Entries of one document, in document order, and warnings about it.

    `meta` is the manifest record (title, framework, lang, format, repo,
    repo_path, commit); every key may be missing.
    """
    meta = meta or {}
    fmt = meta.get("format") or detect_format(PurePosixPath(doc), text)
    sections, warnings = parse_with_warnings(text, fmt)
    warnings = list(warnings)
    headed = [s for s in sections if s.breadcrumb]
    if sections and not headed:
        warnings.append(NO_HEADINGS)
    doc_title = meta.get("title") or (headed[0].breadcrumb[0] if headed else PurePosixPath(doc).name)
    framework = meta.get("framework") or "unknown"
    default_lang = meta.get("lang") or "en"

    entries: list[Entry] = []
    used_ids: dict[str, int] = {}
    warnings += filter(None, map(giant_section_warning, sections))
    for section in sections:
        breadcrumb = section.breadcrumb or [doc_title]
        url = _url(meta, section.anchor, getattr(section, "embedded_path", ""))
        parts = split_section(section, max_tokens)
        for number, (first, last, part_text) in enumerate(parts, start=1):
            entries.append(
                Entry(
                    # Hash the section's own breadcrumb: text before the first
                    # heading (none) must not take the title section's id.
                    id=_unique(entry_id(collection, doc, section.breadcrumb, number), used_ids),
                    collection=collection,
                    doc=doc,
                    doc_title=doc_title,
                    framework=framework,
                    lang=detect_lang(part_text, default_lang),
                    breadcrumb=list(breadcrumb),
                    heading=breadcrumb[-1],
                    anchor=section.anchor,
                    line_start=first,
                    line_end=last,
                    text=drop_controls(part_text),
                    url=url,
                    part=number,
                    parts=len(parts),
                    answerable=section.answerable,
                )
            )
    return entries, warnings


def split_section(section: Section, max_tokens: int) -> list[tuple[int, int, str]]:
    """(line_start, line_end, text) of each part of a section within `max_tokens`."""
    text = section.text
    total = count_tokens(text)
    if total <= max_tokens:
        return [(section.line_start, section.line_end, text)]
    lines = text.split("\n")
    units: list[tuple[int, int, int]] = []  # (first, last, tokens): never split further
    spans = blocks(lines)
    for a, b in spans:
        chunk = lines[a : b + 1]
        tokens = total if len(spans) == 1 else count_tokens("\n".join(chunk))
        if tokens > max_tokens and a < b and not keep_whole(chunk):
            # An oversized paragraph or list: fall back to whole lines.
            units.extend((i, i, count_tokens(lines[i])) for i in range(a, b + 1) if lines[i].strip())
        else:
            units.append((a, b, tokens))

    if len(units) > 1 and units[0][0] == units[0][1]:
        # Never leave the heading line alone in a part: it goes with what follows.
        (a, _, t1), (_, b, t2) = units[0], units[1]
        units[:2] = [(a, b, t1 + 1 + t2)]
    parts: list[list[int]] = []
    size = 0
    for a, b, tokens in units:
        if parts and size + 1 + tokens <= max_tokens:
            parts[-1][1] = b
            size += 1 + tokens  # +1: the newline(s) joining two blocks are one token
        else:
            parts.append([a, b])
            size = tokens
    start = section.line_start
    return [(start + a, start + b, "\n".join(lines[a : b + 1])) for a, b in parts]


def entry_id(collection: str, doc: str, breadcrumb: list[str], part: int) -> str:
    key = "|".join([collection, doc, " > ".join(breadcrumb), str(part)])
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:ID_HEX_CHARS]


def detect_lang(text: str, default: str = "en") -> str:
    """ "zh" when Han characters are a substantial share of the prose, else "en"."""
    words = prose(text)
    han = HAN_WEIGHT * len(_HAN.findall(words))
    latin = len(_LATIN.findall(words))
    if han + latin == 0:
        return default  # code only: the document's language is the best guess
    return "zh" if han >= ZH_MIN_SHARE * (han + latin) else "en"


def _unique(candidate: str, used: dict[str, int]) -> str:
    """`candidate`, or candidate-2, -3, ... when taken (a counter per candidate keeps it O(1))."""
    result = candidate
    while result in used:
        used[candidate] += 1
        result = f"{candidate}-{used[candidate]}"
    used[result] = 1
    return result


def _url(meta: dict, anchor: str, embedded_path: str) -> str | None:
    repo, path, web = meta.get("repo"), meta.get("repo_path"), meta.get("web")
    if not ((repo or web) and path):
        return None
    if embedded_path:
        # A file captured inside a page lives next to the page's file in the repository.
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), embedded_path))
    if web:  # a git source's file view at the commit read (ingest/git/remote.py); its names are untrusted
        url = f"{web}{quote(path)}"
    else:
        url = f"https://github.com/{repo}/blob/{meta.get('commit') or 'main'}/{path}"
        if _LINE_ANCHOR.fullmatch(anchor):  # a line (a FAQ list's question): the rendered page has no anchor there
            url += "?plain=1"
    return f"{url}#{anchor}" if anchor else url


_LINE_ANCHOR = re.compile(r"L\d+")


# --- deduplicating -----------------------------------------------------------

def merge_duplicates(entries: list[Entry]) -> list[Entry]:
    """Fold repeated sections into one entry that lists the other places in `also_at`.

    Identical sections fold into the first, in any document: same heading and
    the same whitespace-collapsed body. The heading line itself is left out of
    the comparison, so the same entry under "###" in one file and "####" in
    another (or under another parent) still matches.

    Near-identical sections fold within one document, into the fullest copy:
    a captured page can quote a section again with a line added (the slime
    skill page repeats its troubleshooting issues, expanded, in a companion
    file further down). Searching the fuller copy finds what either says,
    and one hit listing both places beats two hits saying nearly the same.

    Empty or tiny bodies never fold: bare category headings are not
    duplicates of each other. Order is kept. The input entries are not modified.
    """
    folded_into = _near_duplicates(entries)
    kept: list[Entry] = []
    first_of: dict[tuple, Entry] = {}
    copy_of: dict[int, Entry] = {}
    for row, entry in enumerate(entries):
        if row in folded_into:
            continue
        body = _normalised_body(entry)
        key = (entry.heading, body, entry.answerable)
        first = first_of.get(key) if body else None
        if first is None:
            first = copy_of[row] = replace(entry, also_at=list(entry.also_at), breadcrumb=list(entry.breadcrumb))
            if body:
                first_of[key] = first
            kept.append(first)
            continue
        copy_of[row] = first
        _add_place(first, entry)
    for row, into in folded_into.items():
        _add_place(copy_of[into], entries[row])
    return kept


# Share of the smaller copy's distinct words found in the larger one, from which two
# sections with one heading in one document are the same section: set between what true
# repeats and different sections that share a heading measure (eval/DECISIONS.md).
NEAR_DUPLICATE = 0.8
MIN_WORDS = 8  # tiny bodies share their few words by chance


def _near_duplicates(entries: list[Entry]) -> dict[int, int]:
    """Row -> row of the fuller copy it folds into, for near-identical sections of one document."""
    from ..index.lexical import (
        tokenize,  # lexical imports nothing of ours; kept local to stay off the parse path
    )

    groups: dict[tuple, list[int]] = {}
    for row, e in enumerate(entries):
        if e.parts == 1 and e.answerable:  # parts of one long section are not copies of each other
            groups.setdefault((e.collection, e.doc, e.heading), []).append(row)
    folded: dict[int, int] = {}
    for rows in groups.values():
        if len(rows) < 2:
            continue
        words = {row: set(tokenize(_normalised_body(entries[row]))) for row in rows}
        fullest_first = sorted(rows, key=lambda row: (-len(words[row]), row))
        for i, big in enumerate(fullest_first):
            if big in folded:
                continue
            for small in fullest_first[i + 1:]:
                few = words[small]
                if small not in folded and len(few) >= MIN_WORDS and len(few & words[big]) / len(few) >= NEAR_DUPLICATE:
                    folded[small] = big
    return folded


def _add_place(target: Entry, other: Entry) -> None:
    target.also_at.append(
        {
            "doc": other.doc,
            "doc_title": other.doc_title,  # the page is named by its title, as its own row names it
            "heading": other.heading,
            "breadcrumb": list(other.breadcrumb),
            "line_start": other.line_start,
            "line_end": other.line_end,
            "url": other.url,
        }
    )
    target.also_at.extend(other.also_at)


def _normalised_body(entry: Entry) -> str:
    lines = entry.text.split("\n")
    if entry.part == 1 and lines and _heading_of_line(lines[0]) == entry.heading:
        lines = lines[1:]
    return " ".join(" ".join(lines).split())


def _heading_of_line(line: str) -> str:
    atx = atx_heading(line) if line.lstrip().startswith("#") else None
    return markdown_heading_text(atx[1]) if atx else rst_heading_text(line.strip())
