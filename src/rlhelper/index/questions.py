"""The question bank: ways users ask for an entry, matched as well as the entry's own text.

Retrieval compares the user's words with the doc's words, and they are often different words
("the policy repeats itself" against "Model outputs are repetitive"). FAQ assistants close that
gap with alternative phrasings per answer, and search engines with document expansion; the bank
is both. Each answerable entry has questions written for it, kept as data beside the corpus:

    ingest/questions/<collection>/<doc>.jsonl
    {"collection": "official", "doc": "verl/faq.rst", "heading": "...", "questions": ["...", ...]}

keyed by document and heading, so the bank survives edits and re-ingest. A question whose entry
is gone is reported at ingest, never dropped silently. At ingest the questions are embedded (by
text: an unchanged question reuses its vector) and indexed for BM25 beside the entries; a search
ranks the questions too and an entry takes the best rank any of its questions reached
(retrieve.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import IndexCorruptError
from ..schema import Entry
from . import lexical

BANK_FOLDER = "questions"  # beside the collections, under config.corpus_dir()
MAX_QUESTION_CHARS = 2_000  # a question longer than a pasted log tail is not a question
MAX_QUESTIONS_PER_ENTRY = 40
# How the bank is indexed; part of its fingerprint, so an index built otherwise is brought up to date.
INDEXING = "headings-of-entries-without-questions"
# Index files (inside an index version folder).
QUESTIONS = "questions.jsonl"
QUESTION_VECTORS = "questions.npy"
QUESTION_LEXICAL = "questions_lexical"


@dataclass(frozen=True)
class BankQuestion:
    """One question of the bank, keyed to an entry by document and heading."""

    collection: str
    doc: str
    heading: str
    text: str
    # "shipped" (the bank beside the corpus), "user" (learned from feedback), "llm" (written by the
    # user's own model for their documents: question_writer.py) or "heading" (an entry with none of
    # these, asked for by its heading: never shown as "matched")
    source: str = "shipped"


@dataclass
class BankReport:
    """What reading the bank found: questions kept, questions whose entry is gone, bad lines."""

    questions: list[BankQuestion] = field(default_factory=list)
    orphans: list[tuple[str, str, str, int]] = field(default_factory=list)  # (collection, doc, heading, n)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (file:line, what is wrong)

    def notes(self) -> list[str]:
        """Lines for the ingest report."""
        lines = [f"question bank: {where}: {what}" for where, what in self.problems]
        for collection, doc, heading, n in self.orphans:
            lines.append(f"question bank: {n} question(s) for “{heading}” in {collection}/{doc}, "
                         "which the index no longer holds: fix the heading in the bank or remove them")
        return lines


def read_bank(folder: Path, collections: Iterable[str] | None = None) -> BankReport:
    """Every question under `folder` (<collection>/<doc>.jsonl files), in file order.

    `collections`: read only these collections' sub-folders. A malformed line is reported and
    skipped; the rest of its file is read.
    """
    report = BankReport()
    folder = Path(folder)
    if not folder.is_dir():
        return report
    wanted = set(collections) if collections is not None else None
    for file in sorted(folder.rglob("*.jsonl")):
        if file.is_symlink() or not file.is_file():
            continue
        collection = file.relative_to(folder).parts[0]
        if wanted is not None and collection not in wanted:
            continue
        report.questions += _read_file(file, folder, report)
    return report


def _read_file(file: Path, folder: Path, report: BankReport) -> list[BankQuestion]:
    where = file.relative_to(folder).as_posix()
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        report.problems.append((where, f"cannot be read ({exc})"))
        return []
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key = (str(row["collection"]), str(row["doc"]), str(row["heading"]))
            texts = row["questions"]
            if not isinstance(texts, list):
                raise TypeError("questions must be a list")
        except (ValueError, KeyError, TypeError) as exc:
            report.problems.append((f"{where}:{number}", f"not a bank line ({exc}); skipped"))
            continue
        seen = set()
        for text in texts[:MAX_QUESTIONS_PER_ENTRY]:
            text = " ".join(str(text).split()) if "\n" not in str(text) else str(text).strip()
            if text and len(text) <= MAX_QUESTION_CHARS and text not in seen:
                seen.add(text)
                found.append(BankQuestion(*key, text))
    return found


def section_rows(entries: list[Entry]) -> dict[tuple[str, str, str], int]:
    """(collection, doc, heading) -> the row of that section's first answerable part."""
    rows: dict[tuple[str, str, str], int] = {}
    for row, e in enumerate(entries):
        if e.answerable:
            rows.setdefault((e.collection, e.doc, e.heading), row)
            for place in e.also_at:  # a merged repeat: its questions belong to the entry kept
                if isinstance(place, dict) and "doc" in place:
                    key = (str(place.get("collection", e.collection)), str(place["doc"]),
                           str(place.get("heading", e.heading)))
                    rows.setdefault(key, row)
    return rows


def attach(report: BankReport, entries: list[Entry]) -> list[tuple[int, BankQuestion]]:
    """(entry row, question) for every question whose entry the index holds; the others are
    recorded in `report.orphans`, one line per heading."""
    rows = section_rows(entries)
    kept, missing = [], {}
    for q in report.questions:
        row = rows.get((q.collection, q.doc, q.heading))
        if row is None:
            key = (q.collection, q.doc, q.heading)
            missing[key] = missing.get(key, 0) + 1
        else:
            kept.append((row, q))
    report.orphans += [(*key, n) for key, n in missing.items()]
    return kept


def headings_as_questions(entries: list[Entry], attached: list[tuple[int, BankQuestion]]
                          ) -> list[tuple[int, BankQuestion]]:
    """Each answerable entry the bank has no question for, asked for by its heading. Without it, the
    questions' ranking lifts only entries that have questions, and an entry of the user's own docs
    would lose to a shipped entry that its exact heading matches less well."""
    asked = {row for row, _ in attached}
    out = []
    for (collection, doc, heading), row in section_rows(entries).items():
        if row not in asked and heading.strip():
            asked.add(row)
            out.append((row, BankQuestion(collection, doc, heading, heading[:MAX_QUESTION_CHARS], source="heading")))
    return out


def fingerprint(questions: Iterable[BankQuestion]) -> str:
    """A hash of the bank's content: an index built from another bank is brought up to date."""
    h = hashlib.sha256(INDEXING.encode())
    for q in questions:
        h.update(json.dumps([q.collection, q.doc, q.heading, q.text, q.source], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


def tokens(text: str) -> list[str]:
    """A question's BM25 tokens (its words and word pairs, as a query's are)."""
    return [sys.intern(t) for t in lexical.tokenize(text) + lexical.phrases(text)]


# --- the questions in an index -------------------------------------------------------

class QuestionIndex:
    """The bank as a search index: question i belongs to entry row `rows[i]`."""

    def __init__(self, rows: np.ndarray, texts: list[str], sources: list[str], vectors: np.ndarray,
                 bm25: lexical.BM25Index):
        self.rows = np.asarray(rows, dtype=np.int64)
        self.texts = texts
        self.sources = sources
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.bm25 = bm25

    def __len__(self) -> int:
        return len(self.texts)

    @classmethod
    def build(cls, attached: list[tuple[int, BankQuestion]], vectors: np.ndarray) -> QuestionIndex:
        return cls(np.array([row for row, _ in attached], dtype=np.int64), [q.text for _, q in attached],
                   [q.source for _, q in attached], vectors,
                   lexical.BM25Index.build([tokens(q.text) for _, q in attached]))

    def save(self, folder: Path, entries: list[Entry]) -> None:
        with (folder / QUESTIONS).open("w", encoding="utf-8") as f:
            for row, text, source in zip(self.rows, self.texts, self.sources, strict=True):
                f.write(json.dumps({"entry_id": entries[int(row)].id, "text": text, "source": source},
                                   ensure_ascii=False, separators=(",", ":")) + "\n")
        np.save(folder / QUESTION_VECTORS, self.vectors, allow_pickle=False)
        self.bm25.save(folder / QUESTION_LEXICAL)

    @classmethod
    def load(cls, folder: Path, row_of) -> QuestionIndex | None:
        """The index's questions, or None for an index built without a bank. `row_of(entry_id)`."""
        if not (folder / QUESTIONS).exists():
            return None
        try:
            lines = (folder / QUESTIONS).read_text(encoding="utf-8").splitlines()
            records = json.loads(f"[{','.join(lines)}]")  # one parse of the file: a process start pays for it
            rows = np.array([row_of(r["entry_id"]) for r in records], dtype=np.int64)
            vectors = np.load(folder / QUESTION_VECTORS, mmap_mode="r", allow_pickle=False)
            bm25 = lexical.BM25Index.load(folder / QUESTION_LEXICAL)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexCorruptError(f"the question bank in {folder} is damaged ({exc}); "
                                    "run `rlhelper ingest --rebuild` to rebuild the index.") from exc
        if len(vectors) != len(records) or len(bm25) != len(records):
            raise IndexCorruptError(f"the question bank in {folder} is inconsistent; "
                                    "run `rlhelper ingest --rebuild` to rebuild the index.")
        return cls(rows, [r["text"] for r in records], [r.get("source", "shipped") for r in records], vectors, bm25)

    def reusable_vectors(self) -> dict[str, np.ndarray]:
        """Question text -> its vector, for the next ingest (same embedder only)."""
        return dict(zip(self.texts, self.vectors, strict=True))

    # -- searching ----------------------------------------------------------------

    def lexical_ranking(self, query_tokens: list[str], extra: dict[str, float], allowed: np.ndarray,
                        depth: int) -> tuple[list[int], dict[int, int]]:
        """Entry rows ranked by their best-matching question (BM25), and that question per row."""
        ids, scores = self.bm25.search(query_tokens, depth * 4, allowed=allowed[self.rows], extra=extra)
        return by_entry(self.rows, ids[scores > 0], depth)

    def dense_ranking(self, qvec: np.ndarray, allowed: np.ndarray, depth: int
                      ) -> tuple[list[int], dict[int, int], np.ndarray]:
        """Entry rows ranked by their nearest question (cosine), that question per row, and every
        question's cosine."""
        cosines = self.vectors @ np.asarray(qvec, dtype=np.float32)
        masked = np.where(allowed[self.rows], cosines, -np.inf)
        ranked, best = by_entry(self.rows, best_first(masked, depth * 4), depth)
        return ranked, best, cosines

    def best_cosine(self, cosines: np.ndarray, row: int) -> float | None:
        """The highest cosine between the query and any question of entry `row`."""
        mine = cosines[self.rows == row]
        return float(mine.max()) if mine.size else None

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        """Every question's cosine with the query."""
        return self.vectors @ np.asarray(qvec, dtype=np.float32)

    def text(self, q: int) -> str:
        return self.texts[q]

    def source(self, q: int) -> str:
        return self.sources[q]


def best_first(masked: np.ndarray, want: int) -> np.ndarray:
    """Ids of the `want` highest finite values of `masked` (-inf: left out), best first."""
    top = np.argpartition(-masked, want - 1)[:want] if want < len(masked) else np.arange(len(masked))
    top = top[np.argsort(-masked[top], kind="stable")]
    return top[np.isfinite(masked[top])]


def by_entry(rows: np.ndarray, question_ids: Iterable[int], depth: int) -> tuple[list[int], dict[int, int]]:
    """Entry rows in the order their questions come (`rows[q]`; a row below 0 is no entry), and the
    first question of each, up to `depth` rows."""
    ranked: list[int] = []
    best: dict[int, int] = {}
    for q in question_ids:
        row = int(rows[int(q)])
        if row >= 0 and row not in best:
            best[row] = int(q)
            ranked.append(row)
            if len(ranked) >= depth:
                break
    return ranked, best


class VectorCache:
    """Vectors of questions by text and embedder, in one .npz file: the shipped bank's (read only),
    so a cold ingest of the default corpus does not embed three thousand questions. (The learned
    questions' are in an append-only file: learned.VectorLog; this format was theirs before.)"""

    def __init__(self, path: Path, dtype=np.float32):
        self.path = Path(path)
        self.dtype = dtype  # of the file; vectors are handed out as float32

    @staticmethod
    def key(embedder_id: str, text: str) -> str:
        return hashlib.sha256(f"{embedder_id}\0{text}".encode()).hexdigest()[:24]

    def vectors(self, embedder_id: str, texts: list[str], embed) -> np.ndarray:
        """Vectors of `texts`; those not cached are embedded with `embed(texts)` and saved."""
        held = self._read()
        keys = [self.key(embedder_id, t) for t in texts]
        fresh = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in held))
        if fresh:
            held.update(zip((self.key(embedder_id, t) for t in fresh), np.asarray(embed(fresh), dtype=np.float32),
                            strict=True))
            if len(held) > 4 * len(keys) + 1_000:  # questions removed long ago: keep the file small
                held = {k: held[k] for k in keys}
            self._write(held)
        return np.stack([held[k] for k in keys]).astype(np.float32)

    def held(self, embedder_id: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The vectors the file holds for `texts`, by text; nothing is embedded or written."""
        held = self._read()
        found = {t: held.get(self.key(embedder_id, t)) for t in texts}
        return {t: v.astype(np.float32) for t, v in found.items() if v is not None}

    def _read(self) -> dict[str, np.ndarray]:
        try:
            with np.load(self.path, allow_pickle=False) as data:
                return dict(zip((str(k) for k in data["keys"]), data["vectors"], strict=True))
        except (OSError, ValueError, KeyError):  # none yet, or damaged: embed again
            return {}

    def _write(self, held: dict[str, np.ndarray]) -> None:
        import os

        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as out:
                np.savez(out, keys=np.array(list(held), dtype=str),
                         vectors=np.stack(list(held.values())).astype(self.dtype))
            os.replace(tmp, self.path)
        except OSError:  # a read-only data folder: embed again next time
            with contextlib.suppress(OSError):
                tmp.unlink()


SHIPPED_VECTORS = "vectors"  # folder of the bank: <embedder>.npz, made by `make bank-vectors`


def shipped_vector_cache(bank_dir: Path, embedder_id: str) -> VectorCache:
    """The shipped bank's vectors for one embedder. float16 halves the file; a cosine moves by
    about 1e-4, far below the gaps that order entries."""
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in embedder_id)
    return VectorCache(Path(bank_dir) / SHIPPED_VECTORS / f"{name}.npz", dtype=np.float16)


def write_shipped_vectors(bank_dir: Path, embedder) -> tuple[Path, int]:
    """Embed every question of the shipped bank with `embedder` and write its vector file anew."""
    texts = sorted({q.text for q in read_bank(bank_dir).questions})
    cache = shipped_vector_cache(bank_dir, embedder.id)
    cache.path.parent.mkdir(parents=True, exist_ok=True)
    cache.path.unlink(missing_ok=True)
    cache.vectors(embedder.id, texts, embedder.embed_documents)
    return cache.path, len(texts)


if __name__ == "__main__":  # make bank-vectors
    from . import embed

    written, count = write_shipped_vectors(Path(sys.argv[1]), embed.get_embedder(sys.argv[2] if len(sys.argv) > 2 else None))
    print(f"{count} questions -> {written}")
