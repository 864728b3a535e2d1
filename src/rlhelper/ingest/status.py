"""What an index holds and whether it still matches its documents: `rlhelper info`.

    index_info(path)  -> IndexInfo (collections, counts, embedder, abstention model, what is out of date)
    render_info(info) -> the text `rlhelper info` prints

Answers cite line ranges, so an index older than its documents can point a
reader at the wrong lines. This says so for the whole index; an answer says
so for the documents it cites (changes.changed_since_build, from Helper.ask). Both
read the manifest, and re-read a document only when its size or mtime moved
since the build (then compare content hashes, as ingest would).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import DocumentError
from ..index import questions
from ..index.folders import GITHUB_SOURCE
from ..search import confidence, judge
from . import twins
from .bank import question_bank_dir
from .changes import document_changed, parser_fingerprint
from .entries import read_document
from .sources import find_sources
from .sources_status import source_lines, source_status


@dataclass
class CollectionInfo:
    name: str
    title: str
    source: str
    documents: int
    entries: int
    whole_folder: bool = True  # False: only files picked from `source` were ever ingested
    # A source `rlhelper sync` follows (a git repository, GitHub issues): its record in the manifest, with
    # "behind": how far behind upstream the index is, as far as can be told offline (sources_status.py).
    sync: dict = field(default_factory=dict)
    # GitHub threads: how many were indexed and left out, by kind (github/entries.THREAD_COUNTS).
    threads: dict = field(default_factory=dict)


@dataclass
class IndexInfo:
    path: str
    built_at: str
    built_by: str  # rlhelper version
    embedder: str
    dim: int
    entries: int
    collections: list[CollectionInfo]
    frameworks: dict[str, int]
    languages: dict[str, int]
    abstention_model: str  # "shipped" or the user's calibration file
    update_command: str = "rlhelper ingest"
    # What `rlhelper ingest` would change, one line each; empty when the index is up to date.
    out_of_date: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Pages holding the same sections (twins.py: a translation or another version): "a ~ b" -> sections.
    twins: dict[str, int] = field(default_factory=dict)
    # "path: reason" of what the folders hold but ingest does not read (links out, loops, unreadable).
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def index_info(path: Path | str) -> IndexInfo:
    """Describe the index at `path` (IndexMissingError, IndexCorruptError ... when it cannot be read)."""
    from ..index.folders import rebuild_hint
    from ..index.store import Index  # numpy and FAISS: only for this command

    index = Index.load(Path(path))
    manifest, entries = index.manifest, index.entries
    per_collection = Counter(e.collection for e in entries)
    collections = [
        CollectionInfo(name, str(meta.get("title") or name), str(meta.get("source") or ""),
                       int(meta.get("documents") or 0), per_collection.get(name, 0), bool(meta.get("whole_folder", True)),
                       source_status(meta), _thread_counts(meta))
        for name, meta in manifest.get("collections", {}).items()
    ]
    abstention_model, note = _abstention_model(index.embedder_id)
    skipped: list[str] = []
    return IndexInfo(
        path=str(index.path), built_at=str(manifest.get("built_at", "")),
        built_by=str(manifest.get("rlhelper_version", "")), embedder=index.embedder_id, dim=index.dim,
        entries=len(entries), collections=collections,
        frameworks=dict(Counter(e.framework for e in entries).most_common()),
        languages=dict(Counter(e.lang for e in entries).most_common()),
        abstention_model=abstention_model, update_command=rebuild_hint(index.path, rebuild=False).replace("`", ""),
        out_of_date=_out_of_date(index, collections, skipped), notes=[note] if note else [],
        twins=_twin_pages(entries), skipped=skipped,
    )


def _thread_counts(meta: dict) -> dict:
    counts = meta.get("threads")
    return {str(k): int(v) for k, v in counts.items() if isinstance(v, int)} if isinstance(counts, dict) else {}


def thread_count_line(counts: dict) -> str:
    """"threads: 812 resolved, 97 open with an answer indexed; left out: 640 closed without a fix, ..."."""
    indexed = [f"{counts.get(k, 0):,} {k}" for k in ("resolved", "open with an answer")]
    left = [f"{counts.get(k, 0):,} {k}" for k in ("closed without a fix", "open without an answer")]
    return f"threads: {', '.join(indexed)} indexed; left out: {', '.join(left)}"


def _bank_fingerprint() -> str | None:
    bank = questions.read_bank(question_bank_dir())
    return questions.fingerprint(bank.questions) if bank.questions else None


def _twin_pages(entries) -> dict[str, int]:
    pairs = Counter(" ~ ".join(sorted((e.doc, t["doc"]))) for e in entries for t in e.twins)
    return {pages: n // 2 for pages, n in sorted(pairs.items())}  # each pair is listed from both sides


def _out_of_date(index, collections: list[CollectionInfo], skipped: list[str]) -> list[str]:
    """What an ingest of the index's own folders would change, one line each; what it would
    leave out of them (links out, loops, unreadable folders) goes to `skipped`."""
    reasons = []
    if index.bm25.stale:
        reasons.append(f"built with tokenizer {index.bm25.tokenizer_version}; searches refuse it until it is "
                       "re-ingested")
    elif index.manifest.get("settings", {}).get("parser") != parser_fingerprint():
        reasons.append("built by another version of the parser: entries may be cut differently now")
    if index.manifest.get("settings", {}).get("twins") != twins.VERSION:
        reasons.append("sections that two pages share (a translation, another version) are not linked as in "
                       "this rlhelper: results may show both copies")
    if index.manifest.get("settings", {}).get("questions") != _bank_fingerprint():
        reasons.append("the question bank changed since the build (new or edited questions are not searched yet)")
    judge_print = judge.fingerprint() if judge.judge_available() else None
    if judge_print and index.judge_fingerprint != judge_print:
        reasons.append("the judge's entry vectors are missing or another judge's: a search encodes the entries it "
                       "judges (slower) until the index is re-ingested")
    recorded = {(d["collection"], d["doc"]): d for d in index.manifest.get("documents", [])}
    for c in collections:
        if c.source.startswith(GITHUB_SOURCE) or c.sync:
            continue  # threads or a repository, not files: `rlhelper sync` follows them
        if not c.whole_folder:
            reasons += _picked_files_out_of_date(c, recorded)
            continue
        if not Path(c.source).is_dir():
            reasons.append(f"{c.name}: its folder {c.source} is gone")
            continue
        found = find_sources([Path(c.source)], c.name)
        skipped += [f"{path}: {reason}" for path, reason in found.not_followed]
        present = {(d.collection, d.doc): d.path for d in found.docs}
        for key, file in present.items():
            if key not in recorded:
                if not _unindexable(file):
                    reasons.append(f"{c.name}/{key[1]}: new, not indexed yet")
            elif document_changed(file, recorded[key]):
                reasons.append(f"{c.name}/{key[1]}: changed since the build (cited lines may be off)")
        reasons += [f"{c.name}/{doc}: indexed, but gone from {c.source}"
                    for name, doc in recorded if name == c.name and (name, doc) not in present]
    return reasons


def _picked_files_out_of_date(c: CollectionInfo, recorded: dict) -> list[str]:
    """A collection of files picked from a folder: its other files are not the index's business."""
    reasons = []
    for (name, doc), record in recorded.items():
        if name != c.name:
            continue
        file = Path(record.get("source") or Path(c.source) / doc)
        if not file.is_file():
            reasons.append(f"{c.name}/{doc}: indexed, but {file} is gone")
        elif document_changed(file, record):
            reasons.append(f"{c.name}/{doc}: changed since the build (cited lines may be off)")
    return reasons


def _unindexable(file: Path) -> bool:
    """A file ingest skips (empty, binary, not UTF-8, ...): unindexed, yet nothing an ingest would add."""
    try:
        read_document(file)
    except DocumentError:
        return True
    return False


def _abstention_model(embedder_id: str) -> tuple[str, str | None]:
    """Which calibration answers for this embedder, and a note when the user's own is passed over."""
    user = confidence.user_file()
    own = confidence.models_in(user).get(embedder_id)
    if own is None:
        return "shipped", None
    try:
        confidence.ConfidenceModel.from_dict(own)
    except (KeyError, TypeError, ValueError):  # what model_for() passes over, silently
        return "shipped", (f"{user} holds an abstention model for {embedder_id} fitted with other signals "
                           f"({', '.join(own.get('features') or [])}); it is not used. Refit it with "
                           "`rlhelper eval --split dev --calibrate` (and --set FILE for your own questions).")
    return str(user), None


def render_info(info: IndexInfo) -> str:
    lines = [
        f"index       {info.path}",
        f"built       {info.built_at} by rlhelper {info.built_by}",
        f"embedder    {info.embedder} ({info.dim} dimensions); abstention model: {info.abstention_model}",
        f"entries     {info.entries}",
        "collections",
    ]
    width = max((len(c.name) for c in info.collections), default=0)
    for c in info.collections:
        title = f"  {c.title}" if c.title != c.name else ""
        lines.append(f"  {c.name:<{width}}  {counted(c.documents, 'document')}, {counted(c.entries, 'entry', 'entries')}{title}")
        if c.sync:
            lines += [f"  {'':<{width}}  {line}" for line in source_lines(c.sync)]
        if c.threads:
            lines.append(f"  {'':<{width}}  {thread_count_line(c.threads)}")
        else:
            lines.append(f"  {'':<{width}}  {'from' if c.whole_folder else 'files picked from'} {c.source}")
    lines.append("frameworks  " + ", ".join(f"{name} {n}" for name, n in info.frameworks.items()))
    lines.append("languages   " + ", ".join(f"{name} {n}" for name, n in info.languages.items()))
    if info.twins:
        lines.append(f"twins       {counted(sum(info.twins.values()), 'section')} also in another page "
                     "(a translation or another version), shown once in results:")
        lines += [f"  {pages}  ({n})" for pages, n in info.twins.items()]
    if info.out_of_date:
        lines.append(f"status      out of date ({len(info.out_of_date)}); `{info.update_command}` updates it:")
        lines += [f"  - {reason}" for reason in info.out_of_date]
    elif info.skipped:
        lines.append(f"status      up to date with the documents it reads; {counted(len(info.skipped), 'item')} "
                     "in its folders skipped:")
    else:
        lines.append("status      up to date with its documents")
    if info.skipped:
        if info.out_of_date:
            lines.append(f"skipped     {counted(len(info.skipped), 'item')} in its folders, never read:")
        lines += [f"  - {item}" for item in info.skipped]
    lines += [f"note: {note}" for note in info.notes]
    return "\n".join(lines)


def counted(n: int, one: str, many: str | None = None) -> str:
    """'1 document', '2 documents', '1,200 entries'."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"
