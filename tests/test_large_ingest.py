"""Large ingests (issue 17, point 6): twin linking in bounded memory (a page of 100k sections once
made twins.py ask for a 100000 x 199988 array and broke every later ingest of its folder), and
progress lines when stderr is not a terminal."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from clirun import cli_env, rlhelper

from rlhelper.ingest import twins
from rlhelper.schema import Entry

pytestmark = pytest.mark.slow  # aligns pages at the section limit


def pages(sections: int, docs=("a.md", "b.md"), seed: int = 0) -> tuple[list[Entry], np.ndarray]:
    """`docs` pages that are copies of each other: same identifiers, near-equal vectors, in order."""
    entries = [Entry(id=f"{doc}#{n}", collection="c", doc=doc, doc_title=doc, framework="verl", lang="en",
                     breadcrumb=[f"s{n}"], heading=f"s{n}", anchor=f"s{n}", line_start=n + 1, line_end=n + 1,
                     text=f"set option_{n} to {n + 10} and flag_{n % 50}")
               for doc in docs for n in range(sections)]
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((sections, 32)).astype(np.float32)
    vectors = np.concatenate([base + 0.01 * rng.standard_normal(base.shape).astype(np.float32) for _ in docs])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return entries, vectors


def peak_mb(fn) -> tuple[object, float]:
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_pages_past_the_section_limit_are_not_aligned_and_cost_little():
    entries, vectors = pages(6000)  # two pages of 6,000: 144 MB per full similarity matrix
    linked, peak = peak_mb(lambda: twins.link(entries, vectors))
    assert linked == 0 and not any(e.twins for e in entries)
    assert peak < 40, peak


def test_pages_at_the_limit_align_in_bounded_memory():
    entries, vectors = pages(twins.MAX_SECTIONS)
    linked, peak = peak_mb(lambda: twins.link(entries, vectors))
    assert linked == twins.MAX_SECTIONS  # every section found its copy
    assert entries[7].twins[0]["heading"] == "s7" and entries[7].twins[0]["doc"] == "b.md"
    # A few |A| x |B| float32 matrices (16 MB each) and one block of identifiers: not |A| x vocabulary.
    assert peak < 160, peak


def test_identifier_blocks_give_the_same_similarity_as_one_block():
    entries, vectors = pages(300)
    identifiers = twins._identifier_ids(entries)
    rows_a, rows_b = list(range(300)), list(range(300, 600))
    whole = twins._similarity(rows_a, rows_b, vectors, identifiers, block_cells=1 << 30)
    blocked = twins._similarity(rows_a, rows_b, vectors, identifiers, block_cells=300 * 50)
    assert np.allclose(whole, blocked)


def test_a_piped_ingest_prints_progress_lines(tmp_path, usem3_cache_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.md").write_text("# Big page\n\n" + "".join(f"## Option {n}\n\nSet option_{n} to {n + 10}.\n\n"
                                                              for n in range(400)))
    env = cli_env(tmp_path / "home", usem3_cache_dir, RLHELPER_PROGRESS_SECONDS="0.2")
    done = rlhelper(["ingest", "--index", str(tmp_path / "idx"), str(docs)], env)  # stderr is a pipe
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ingest: ")]
    assert len(lines) >= 2 and any("embedding" in line for line in lines), done.stderr
    quiet = rlhelper(["ingest", "--quiet", "--rebuild", "--index", str(tmp_path / "idx"), str(docs)], env)
    assert quiet.returncode == 0 and "ingest: " not in quiet.stderr
