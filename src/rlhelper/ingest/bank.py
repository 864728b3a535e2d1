"""The question bank at ingest: where the shipped bank lives, and the question index built from
it, from the questions an LLM wrote (`ingest --llm`) and from GitHub threads' titles."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import config
from ..errors import IndexCorruptError
from ..index import build, embed, folders, questions
from ..schema import Entry

Progress = Callable[[int, int, str], None]  # done, total, what


def question_bank_dir() -> Path:
    """The shipped question bank: `questions/` beside the collections (setting question_bank_dir)."""
    return Path(config.setting("question_bank_dir", default=str(config.corpus_dir() / questions.BANK_FOLDER)))


def thread_titles(bank: questions.BankReport, contents: build.IndexContents) -> dict[str, np.ndarray]:
    """A GitHub thread's title is how its reporter asked: it joins the bank as its entry's question
    (source "issue"), so a thread is ranked through the bank as a doc entry with questions is, not
    only by its text. Its vector is the entry's own, which embeds the title already (embedding
    every title again would double a repository's embedding time). Returns title -> vector."""
    given: dict[str, np.ndarray] = {}
    for entry, row in zip(contents.entries, contents.rows, strict=True):
        if entry.kind == "issue" and entry.heading:
            bank.questions.append(questions.BankQuestion(entry.collection, entry.doc, entry.heading, entry.heading,
                                                         source="issue"))
            given.setdefault(entry.heading, contents.parsed_vectors[row])
    return given


@dataclass
class QuestionIndexReport:
    notes: list[str] = field(default_factory=list)  # questions whose entry is gone, ...
    embedded: int = 0  # questions embedded in this run (none had a vector to reuse)


def question_index(bank: questions.BankReport, entries: list[Entry], emb: embed.Embedder,
                   previous_index: Path | None, progress: Progress | None,
                   given: dict[str, np.ndarray] | None = None
                   ) -> tuple[questions.QuestionIndex | None, QuestionIndexReport]:
    """The bank's questions keyed to `entries`, embedded (a question the previous index of the same
    embedder holds keeps its vector, one in `given` takes that vector, the shipped bank's vector file
    gives most others), and what to report: questions whose entry is gone, how many were embedded."""
    report = QuestionIndexReport()
    attached = questions.attach(bank, entries)
    held = {e.collection for e in entries}
    bank.orphans = [o for o in bank.orphans if o[0] in held]  # another index's collections are not lost
    report.notes += bank.notes()
    if not attached:
        return None, report
    attached += questions.headings_as_questions(entries, attached)
    reuse: dict[str, np.ndarray] = {}
    folder = folders.live_folder(previous_index) if previous_index is not None else None
    if folder is not None:
        try:
            old = questions.QuestionIndex.load(folder, lambda _id: 0)
            reuse = old.reusable_vectors() if old is not None else {}
        except IndexCorruptError:
            reuse = {}
    reuse.update(given or {})
    fresh = list(dict.fromkeys(q.text for _, q in attached if q.text not in reuse))
    if fresh:
        reuse.update(questions.shipped_vector_cache(question_bank_dir(), emb.id).held(emb.id, fresh))
        fresh = [t for t in fresh if t not in reuse]
    if fresh:
        total = len(fresh)

        def say(done: int, total: int) -> None:
            if progress is not None:
                progress(done, total, "embedding questions")

        say(0, total)
        step = embed.BATCH_SIZE
        for start in range(0, total, step):
            batch = fresh[start:start + step]
            reuse.update(zip(batch, emb.embed_documents(batch), strict=True))
            say(min(start + step, total), total)
    report.embedded = len(fresh)
    vectors = np.stack([reuse[q.text] for _, q in attached]).astype(np.float32)
    return questions.QuestionIndex.build(attached, vectors), report
