"""Fuzzing (hypothesis) of what ingest and search do to untrusted text: no crash, bounded time.

Documents go through the same steps as in ingest (read_document, build_entries,
lexical tokens, the embedded texts, the JSON line the index stores) and must
come out as valid entries; queries go through normalize_query and must stay
within their budget. Inputs are built from fragments that have broken parsers
before (fences, nesting, brackets, directives, control and bidi characters)
plus hypothesis' own text, and scaled up to 1 MB (one endless line, or a
pathological unit repeated).

Time bounds use CPU time (`time.process_time`), which a busy machine does not
inflate, and are 10-20x what was measured: they catch a quadratic blow-up (hours
on 1 MB), never a slow neighbour. Runs are derandomized: the same examples every time.
"""

from __future__ import annotations

import json
import math
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlhelper.errors import DocumentError
from rlhelper.index.embed import entry_texts
from rlhelper.ingest.entries import build_entries, merge_duplicates, read_document
from rlhelper.ingest.parse import parse_with_warnings
from rlhelper.ingest.parse.inline import CONTROL_CHARS
from rlhelper.ingest.pipeline import lexical_tokens
from rlhelper.measure.faults import NASTY_DOC_FRAGMENTS, NASTY_LOG_LINES
from rlhelper.schema import Entry
from rlhelper.search.query import normalize_query

pytestmark = pytest.mark.slow  # thousands of generated documents and megabyte inputs

MB = 1_000_000
FORMATS = ["markdown", "mdx", "rst", "webpage", "text"]
SMALL = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BIG = settings(max_examples=6, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# CPU seconds for one 1 MB document or query. Measured: 0.1-1.5 s for most, 8.5 s at worst
# (500,000 one-letter lines: parse, entries and tokens); 1 MB of quadratic work would take hours.
MB_CPU_BUDGET = 60.0
SMALL_CPU_BUDGET = 5.0  # measured: well under 0.1 s per small document

fragment = st.one_of(st.sampled_from(NASTY_DOC_FRAGMENTS), st.text(max_size=12))
small_doc = st.lists(fragment, min_size=1, max_size=150).map("".join)


@st.composite
def nested_doc(draw) -> str:
    """Deep nesting: quotes in lists in quotes, indented fences, thousands of levels."""
    prefix = draw(st.sampled_from(["> ", "- ", "  ", "1. ", "    ", "* > ", "> - ", "\t", ".. note::\n   "]))
    depth = draw(st.integers(min_value=1, max_value=3000))
    body = draw(st.sampled_from(["x", "```", "# h", "[a](", "**b", "Title\n=====", "`c"]))
    stepped = draw(st.booleans())
    if stepped:  # one level deeper on each line
        return "".join(prefix * d + body + "\n" for d in range(1, min(depth, 600)))
    return prefix * depth + body + "\n"


@st.composite
def megabyte_doc(draw) -> str:
    """About 1 MB: one endless line, or a nasty unit repeated."""
    if draw(st.booleans()):
        char = draw(st.sampled_from(list("`#[*_<>|\\ \t=-~") + ["\x01", "中", "\u202e"]))
        return draw(st.sampled_from(["", "# ", "```\n", "> " * 50])) + char * MB
    unit = draw(st.one_of(small_doc, nested_doc()).filter(bool))
    return (unit * math.ceil(MB / len(unit)))[:MB]


# --- documents ---------------------------------------------------------------------------


def ingest_like(text: str, fmt: str) -> list[Entry]:
    """What ingest does with a document's text, checking what the index relies on."""
    entries, warnings = build_entries(text, collection="fuzz", doc="doc.md", meta={"format": fmt})
    assert all(isinstance(w, str) for w in warnings)
    lines = text.count("\n") + 1
    assert len({e.id for e in entries}) == len(entries)
    for entry in entries:
        assert 1 <= entry.line_start <= entry.line_end <= lines, (entry.line_start, entry.line_end, lines)
        assert not CONTROL_CHARS.search(entry.text + entry.heading + "".join(entry.breadcrumb))
        lexical_tokens(entry)
        entry_texts(entry)
        line = json.dumps(entry.to_dict(), ensure_ascii=False)  # as entries.jsonl stores it
        assert Entry.from_dict(json.loads(line.encode("utf-8").decode("utf-8"))) == entry
    merge_duplicates(entries)
    return entries


def cpu_seconds(fn, *args) -> float:
    started = time.process_time()
    fn(*args)
    return time.process_time() - started


@SMALL
@given(text=st.one_of(small_doc, nested_doc()), fmt=st.sampled_from(FORMATS))
def test_nasty_documents_become_valid_entries(text, fmt):
    assert cpu_seconds(ingest_like, text, fmt) < SMALL_CPU_BUDGET


@BIG
@given(text=megabyte_doc(), fmt=st.sampled_from(FORMATS))
def test_megabyte_documents_parse_in_bounded_cpu_time(text, fmt):
    assert len(text) >= MB * 0.9
    assert cpu_seconds(ingest_like, text, fmt) < MB_CPU_BUDGET


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_megabyte_of_deepest_nesting_in_every_format(fmt):
    """Fixed worst cases of nesting (hypothesis above samples shallower ones)."""
    for text in ("> " * (MB // 2) + "x\n", "- " * (MB // 2) + "x\n", "".join("  " * d + "- x\n" for d in range(900)),
                 "```\n" * (MB // 4), ".. note::\n" + "   " * (MB // 3) + "x\n"):
        assert cpu_seconds(parse_with_warnings, text, fmt) < MB_CPU_BUDGET


# --- bytes: mixed encodings through read_document ----------------------------------------

ENCODINGS = ["utf-8", "latin-1", "cp1252", "utf-16-le", "utf-16-be", "gb18030", "shift_jis", "utf-32"]


@st.composite
def mixed_bytes(draw) -> bytes:
    """A file made of pieces in different encodings, raw bytes and BOMs; half of them
    valid UTF-8 (with BOMs and CRLFs), so the parsers downstream get fed too."""
    if draw(st.booleans()):
        head = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
        text = draw(st.lists(st.one_of(small_doc, st.sampled_from(["\r\n", "\r"])), max_size=20))
        return head + "".join(text).encode("utf-8")
    head = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"]))
    pieces = draw(st.lists(st.one_of(
        st.tuples(st.one_of(small_doc, st.text(max_size=40)), st.sampled_from(ENCODINGS)).map(
            lambda p: p[0].encode(p[1], errors="replace")),
        st.binary(max_size=40),
        st.sampled_from([b"\r\n", b"\n", b"\r", b"\x00", b"\xe9", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]),
    ), max_size=40))
    return head + b"".join(pieces)


@SMALL
@given(data=mixed_bytes(), suffix=st.sampled_from([".md", ".mdx", ".rst", ".txt"]))
def test_files_in_mixed_encodings_are_read_or_refused_with_a_reason(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("fuzz") / f"doc{suffix}"
    path.write_bytes(data)
    try:
        text = read_document(path)
    except DocumentError as err:
        message = str(err)
        assert message.startswith(f"{path}: ") and "\n" not in message
        return
    assert text.count("\n") == data.count(b"\n")  # line numbers are the file's
    assert not text.startswith("\ufeff") and text.strip()
    fmt = {".md": "markdown", ".mdx": "mdx", ".rst": "rst"}.get(suffix, "text")
    ingest_like(text, fmt)


# --- queries: tracebacks and log noise --------------------------------------------------------

_path_part = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters='"\n'), max_size=15)
_frame = st.builds(lambda p, n, f: f'  File "/{p}/x.py", line {n}, in {f}', _path_part,
                   st.integers(0, 10**12), st.text(max_size=10))
_exception = st.builds(lambda n, m: f"{n}Error: {m}", st.from_regex(r"[A-Za-z_.]{0,40}", fullmatch=True),
                       st.text(max_size=80))
log_line = st.one_of(_frame, _exception, st.sampled_from(NASTY_LOG_LINES), st.text(max_size=60))
log_text = st.builds(lambda lines, sep: sep.join(lines), st.lists(log_line, max_size=80),
                     st.sampled_from(["\n", "\r\n", "\r", "\n\n"]))
_QUERY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def check_normalized(raw: str, max_chars: int) -> None:
    q = normalize_query(raw, max_chars=max_chars)
    assert len(q.text) <= max_chars
    assert not _QUERY_CONTROL.search(q.text) and "\x1b" not in q.text
    assert all(0 < v <= 1 for v in q.frameworks.values())
    assert all(isinstance(n, str) and "\n" not in n for n in q.notices)


@SMALL
@given(raw=log_text, max_chars=st.sampled_from([200, 4000]))
def test_pasted_logs_normalise_within_budget(raw, max_chars):
    assert cpu_seconds(check_normalized, raw, max_chars) < SMALL_CPU_BUDGET


@BIG
@given(unit=log_text.filter(bool), endless=st.booleans())
def test_megabyte_logs_normalise_in_bounded_cpu_time(unit, endless):
    raw = unit.replace("\n", " ") * math.ceil(MB / len(unit)) if endless else unit * math.ceil(MB / len(unit))
    assert cpu_seconds(check_normalized, raw[:MB], 4000) < MB_CPU_BUDGET
