"""Run an eval set over an index: every item through lexical, dense and hybrid search.

    result = run_eval(Path("eval/seeds.jsonl"), split="dev")   # a temporary index of seeds
    result.metrics("hybrid"), result.breakdown("lang"), result.misses()

The harness only turns `Helper.retrieve` (or `Helper.ask`, for conversations
and the LLM judge) results into relevance lists and abstention outcomes; the
figures come from metrics.py, the tables and charts from report.py.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from .. import config
from ..errors import ConfigError, RlhelperError
from .metrics import (
    CUTOFFS,
    K,
    abstention_scores,
    abstention_separation,
    first_relevant_rank,
    mean,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)
from .sets import (
    ANY_HEADING,
    EvalItem,
    distinct_expected,
    doc_matches,
    entry_locations,
    load_eval_set,
    normalize_heading,
    relevance_gains,
)

MODES = ("lexical", "dense", "hybrid")


def default_modes(with_judge: bool = False) -> tuple[str, ...]:
    """The modes `rlhelper eval` runs: the three retrievers and, wherever it can run (or when asked,
    to fail loudly where it cannot), the judge mode, the default path."""
    from ..search.judge import judge_available

    return (*MODES, "judge") if with_judge or judge_available() else MODES


MISSING_DOCUMENTS = "the index holds no document named"


def asked_before(helper, previous: str | list[str], **search):
    """The answer a conversation's earlier messages leave as `previous`, as the web chat keeps it:
    the last one searched, found or not; small talk is not searched."""
    from ..answer.smalltalk import reply

    answer = None
    for message in [previous] if isinstance(previous, str) else previous:
        if reply(message) is not None:
            continue
        answer = helper.ask(message, previous=answer, **search)
    return answer


@dataclass
class Outcome:
    """What one mode returned for one item."""

    gains: list[int]
    abstained: bool
    confidence: float
    top: list[dict]  # {"rank", "doc", "heading", "score", "lang", "relevant"} for the top hits
    error: str | None = None  # the query could not be searched (counts as abstained, no hits)
    weak: bool = False  # answered with a weak-match flag (confidence.py)
    llm: str | None = None  # with an LLM judge: "answered", "declined" (its NO_ANSWER) or why it failed

    def to_dict(self, n_relevant: int) -> dict:
        out = {
            "rank": first_relevant_rank(self.gains),
            "abstained": self.abstained,
            "weak": self.weak,
            "confidence": round(self.confidence, 6),
            "ndcg@10": round(ndcg_at_k(self.gains, n_relevant), 6) if n_relevant else None,
            "top": self.top,
            "error": self.error,
        }
        return {**out, "llm": self.llm} if self.llm else out


@dataclass
class ItemResult:
    item: EvalItem
    outcomes: dict[str, Outcome]
    expected_langs: list[str] = field(default_factory=list)

    @property
    def cross_lingual(self) -> bool | None:
        """True when no expected entry is in the query's language; None for unanswerable items."""
        if not self.item.answerable or not self.expected_langs:
            return None
        return self.item.lang not in self.expected_langs

    @property
    def n_relevant(self) -> int:
        return distinct_expected(self.item.expected)

    def to_dict(self) -> dict:
        return {**self.item.to_dict(), "expected_langs": self.expected_langs, "cross_lingual": self.cross_lingual,
                "modes": {mode: o.to_dict(self.n_relevant) for mode, o in self.outcomes.items()}}


def summarize(results: Sequence[ItemResult], mode: str) -> dict:
    """All metrics of one mode over a group of items (None where the group has nothing to measure)."""
    answerable = [r for r in results if r.item.answerable]
    outcomes = [r.outcomes[mode] for r in answerable]
    metrics: dict = {"n": len(results), "n_answerable": len(answerable), "n_unanswerable": len(results) - len(answerable)}
    for c in CUTOFFS:
        metrics[f"recall@{c}"] = mean(recall_at_k(o.gains, c) for o in outcomes)
    metrics["mrr@10"] = mean(reciprocal_rank(o.gains, K) for o in outcomes)
    metrics["ndcg@10"] = mean(ndcg_at_k(o.gains, r.n_relevant, K) for r, o in zip(answerable, outcomes, strict=True))
    metrics.update(abstention_scores([r.outcomes[mode].abstained for r in results],
                                     [not r.item.answerable for r in results]))
    unanswerable = [r.outcomes[mode] for r in results if not r.item.answerable]
    # What the user is told: "no match", or an entry flagged as a weak match they should check.
    metrics["unanswerable_abstained_or_weak"] = mean(float(o.abstained or o.weak) for o in unanswerable)
    metrics["answerable_weak"] = mean(float(o.weak) for o in outcomes)
    metrics.update(abstention_separation([o.confidence for o in outcomes], [o.confidence for o in unanswerable]))
    metrics["answered_correctly"] = mean(float(_answered_correctly(o)) for o in outcomes)
    # End to end, what the user sees: the right top entry, or an honest "nothing matches".
    metrics["correct"] = mean(float(_answered_correctly(r.outcomes[mode]) if r.item.answerable
                                    else r.outcomes[mode].abstained) for r in results)
    metrics["errors"] = sum(1 for r in results if r.outcomes[mode].error)
    return metrics


def _answered_correctly(o: Outcome) -> bool:
    return not o.abstained and bool(o.gains[:1] and o.gains[0])


BREAKDOWNS: dict[str, Callable[[ItemResult], list[str]]] = {
    # An item expecting sections of two documents counts in both documents' rows. Documents are
    # named as the eval file names them: rlinf/faq.rst and verl/faq.rst are two rows.
    "doc": lambda r: sorted({_document_group(e) for e in r.item.expected}) or ["(unanswerable)"],
    "lang": lambda r: [r.item.lang],
    "kind": lambda r: [r.item.kind],
    "crosslingual": lambda r: [] if r.cross_lingual is None else ["cross-lingual" if r.cross_lingual else "same-language"],
}


def _document_group(want: dict) -> str:
    """An expected thread counts in its repository's row (one row per thread would be the whole set)."""
    return f"github:{want['repo']}" if want["heading"] == ANY_HEADING and "repo" in want else want["doc"]


def grouped(results: Sequence[ItemResult], key: Callable[[ItemResult], list[str]]) -> dict[str, list[ItemResult]]:
    groups: dict[str, list[ItemResult]] = {}
    for r in results:
        for name in key(r):
            groups.setdefault(name, []).append(r)
    return dict(sorted(groups.items()))


@dataclass
class EvalResult:
    eval_file: str
    split: str | None
    modes: tuple[str, ...]
    k: int
    index: str
    embedder: str
    collections: list[str] | None
    items: list[ItemResult]
    created: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    thresholds: dict[str, float | None] = field(default_factory=dict)  # abstention threshold per mode
    llm: str | None = None  # the model that judged hybrid answers ("model at url"), if any

    def metrics(self, mode: str = "hybrid") -> dict:
        return summarize(self.items, mode)

    def breakdown(self, name: str, mode: str = "hybrid") -> dict[str, dict]:
        return {group: summarize(rs, mode) for group, rs in grouped(self.items, BREAKDOWNS[name]).items()}

    def misses(self, mode: str = "hybrid") -> list[ItemResult]:
        """Items the user would see wrong: answerable but not answered correctly, or unanswerable but answered."""
        out = []
        for r in self.items:
            o = r.outcomes[mode]
            if not (_answered_correctly(o) if r.item.answerable else o.abstained):
                out.append(r)
        return out

    def to_dict(self) -> dict:
        """Stable shape for `rlhelper eval --json`: keys are only ever added."""
        return {
            "eval_file": self.eval_file,
            "split": self.split,
            "created": self.created,
            "index": self.index,
            "embedder": self.embedder,
            "collections": self.collections,
            "k": self.k,
            "modes": list(self.modes),
            "seconds": round(self.seconds, 3),
            "warnings": list(self.warnings),
            "thresholds": dict(self.thresholds),
            "llm": self.llm,
            "metrics": {mode: _rounded(self.metrics(mode)) for mode in self.modes},
            "breakdowns": {
                name: {mode: {g: _rounded(m) for g, m in self.breakdown(name, mode).items()} for mode in self.modes}
                for name in BREAKDOWNS
            },
            "comparisons": self.comparisons(),
            "items": [r.to_dict() for r in self.items],
        }

    def comparisons(self) -> dict:
        """Each mode against hybrid: the paired bootstrap differences (bootstrap.py), by metric."""
        from . import bootstrap

        if "hybrid" not in self.modes:
            return {}
        return {f"{mode}-hybrid": {d.metric: d.to_dict() for d in bootstrap.compare(self.items, "hybrid", mode)}
                for mode in self.modes if mode != "hybrid"}


def _rounded(metrics: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}


def _hit_summary(hit, gain: int) -> dict:
    e = hit.entry
    return {"rank": hit.rank, "doc": e.doc, "heading": e.heading, "score": round(float(hit.score), 6),
            "lang": e.lang, "relevant": bool(gain)}


def evaluate_helper(helper, items: Sequence[EvalItem], *, modes: Sequence[str] = MODES, k: int = K,
                    collections: Sequence[str] | None = None, doc_langs: dict[str, str] | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    llm=None) -> tuple[list[ItemResult], list[str]]:
    """Run every item through every mode of one Helper; returns per-item results and warnings.

    Warnings name expected entries that are in no indexed entry: a typo in the
    eval set would otherwise read as a retrieval miss. With `llm` (LLMSettings), the
    model judges every hybrid answer, as `--llm` does for a user: its NO_ANSWER abstains.
    """
    entries = list(getattr(helper, "entries", []) or [])
    langs_at = _langs_by_location(entries)
    indexed_docs = {loc_doc for e in entries for loc_doc, _ in entry_locations(e)}
    warnings = []
    missing_docs = set()
    results = []
    for n, item in enumerate(items, start=1):
        expected_langs = set()
        for want in item.expected:
            candidates = [place for places in langs_at.values() for place in places] \
                if want["heading"] == ANY_HEADING else langs_at.get(normalize_heading(want["heading"]), [])
            found = {lang for doc, lang in candidates if doc_matches(doc, want["doc"])}
            if entries and not found:
                warnings.append(f"{item.id}: expected entry not in the index: {want['doc']} > {want['heading']}")
                if not any(doc_matches(doc, want["doc"]) for doc in indexed_docs):
                    missing_docs.add(want["doc"])
            fallback = (doc_langs or {}).get(PurePosixPath(want["doc"]).name)
            expected_langs |= found or ({fallback} if fallback else set())
        outcomes = {}
        for mode in modes:
            outcomes[mode] = _search(helper, item, mode=mode, k=k, collections=collections,
                                     llm=llm if mode == "hybrid" else None)
        results.append(ItemResult(item, outcomes, sorted(expected_langs)))
        if progress:
            progress(n, len(items))
    if missing_docs:  # one cause for many lines: say it first, with what to run
        warnings.insert(0, missing_documents_note(sorted(missing_docs)))
    failed = [o.llm for r in results for o in r.outcomes.values() if o.llm not in (None, "answered", "declined")]
    if failed:
        warnings.append(f"the LLM failed on {len(failed)} item(s), which keep rlhelper's own abstention: {failed[0]}")
    return results, warnings


def missing_documents_note(docs: Sequence[str], corpus: Path | None = None) -> str:
    """What to say when the eval set expects sections of documents the index does not hold: which
    documents, and the collections under the corpus folder that hold them."""
    corpus = corpus or config.corpus_dir()
    holders = sorted({folder.name for doc in docs for folder in (corpus.iterdir() if corpus.is_dir() else [])
                      if folder.is_dir() and ((folder / doc).is_file() or any(folder.rglob(PurePosixPath(doc).name)))})
    shown = ", ".join(docs[:4]) + (f" and {len(docs) - 4} more" if len(docs) > 4 else "")
    if holders:
        named = ", ".join(holders)
        advice = (f"they are in {named} under {corpus}: add {' '.join(f'--collection {c}' for c in holders)} "
                  "to the collections evaluated, or pass --index an index that holds them")
    else:
        advice = "ingest them, or pass --index an index that holds them"
    return f"{MISSING_DOCUMENTS} {shown}, which this eval set expects: {advice}."


def _search(helper, item: EvalItem, *, mode: str, k: int, collections, llm=None) -> Outcome:
    search = {"k": k, "mode": mode, "collection": list(collections) if collections else None}
    try:
        if item.previous:  # a conversation: the follow-up is asked after the answer to `previous`
            found = helper.ask(item.query, previous=asked_before(helper, item.previous, **search), **search)
            weak = found.weak_match
        elif llm is not None:  # the model is given what a user's --llm gives it: the answer's question
            found = helper.ask(item.query, **search)
            weak = found.weak_match
        else:
            found = helper.retrieve(item.query, **search)
            weak = found.weak
    except RlhelperError as err:  # an unsearchable query is the system's answer too: nothing
        return Outcome(gains=[], abstained=True, confidence=0.0, top=[], error=str(err))
    abstained, verdict = bool(found.abstained), None
    if llm is not None and not abstained and found.hits:
        from ..answer.llm import generate

        judged = generate(found.question, found.hits, llm)
        abstained = judged.declined
        if judged.fallback:  # an outage: rlhelper's own answer stands, and the warning counts it
            verdict = judged.notice or "failed"
        else:
            verdict = "declined" if judged.declined else "answered"
    gains = relevance_gains([entry_locations(h.entry) for h in found.hits], item.expected)
    top = [_hit_summary(h, g) for h, g in zip(found.hits[:k], gains, strict=False)]
    return Outcome(gains=gains, abstained=abstained, confidence=float(found.confidence), top=top,
                   weak=bool(weak) and not abstained, llm=verdict)


def _langs_by_location(entries) -> dict[str, list[tuple[str, str]]]:
    """Normalised heading -> [(doc, language)] of every indexed location with that heading."""
    out: dict[str, list[tuple[str, str]]] = {}
    for e in entries:
        for doc, heading in entry_locations(e):
            out.setdefault(normalize_heading(heading), []).append((doc, e.lang))
    return out


def manifest_langs(corpus: Path | None = None) -> dict[str, str]:
    """Document file name -> language from the shipped collections' manifests (fallback for cross-lingual)."""
    out = {}
    for manifest in sorted((corpus or config.corpus_dir()).glob("*/manifest.json")):
        try:
            docs = json.loads(manifest.read_text(encoding="utf-8")).get("documents", [])
        except (OSError, ValueError):
            continue
        for d in docs:
            if d.get("path") and d.get("lang"):
                out.setdefault(PurePosixPath(d["path"]).name, d["lang"])
    return out


@contextmanager
def eval_index(index=None, collections: Sequence[str] | None = None, embedder: str | None = None):
    """The index to evaluate: the one named, or a fresh temporary one of `collections` (default: seeds)."""
    if index is not None:
        yield index
        return
    from ..ingest.pipeline import ingest

    names = list(collections or ["seeds"])
    sources = [config.corpus_dir() / name for name in names]
    for source in sources:
        if not source.is_dir():
            raise ConfigError(f"No collection {source.name!r} under {config.corpus_dir()}; "
                              f"known: {', '.join(sorted(p.name for p in config.corpus_dir().iterdir() if p.is_dir()))}")
    with tempfile.TemporaryDirectory(prefix="rlhelper-eval-") as tmp:
        target = Path(tmp) / "index"
        ingest(sources, embedder=embedder, index=target, rebuild=True)
        yield target


def run_eval(
    eval_file: Path,
    *,
    split: str | None = None,
    collections: Sequence[str] | None = None,
    embedder: str | None = None,
    index=None,
    modes: Sequence[str] = MODES,
    k: int = K,
    helper=None,
    progress: Callable[[int, int], None] | None = None,
    llm=None,
    judge_folder: Path | None = None,
) -> EvalResult:
    """Evaluate lexical, dense and hybrid retrieval side by side on one index.

    index: an existing index (path or name) to evaluate, searched within `collections`
    when given. Without it a temporary index of `collections` (default: seeds) is
    built with `embedder` (default: the default embedder). `helper` skips loading
    altogether (tests, notebooks). The abstention threshold is whatever the Helper
    reads (its calibrated confidence model, see confidence.py). `llm` (LLMSettings): the
    model judges each hybrid answer as with `--llm`, and its NO_ANSWER abstains. `judge_folder`: the
    judge model of the judge mode (default: the one shipped).
    """
    items = load_eval_set(eval_file, split=split)
    if not items:
        raise ConfigError(f"{eval_file}: no items{f' in split {split!r}' if split else ''}")
    started = time.perf_counter()
    filter_collections = list(collections) if (collections and (index is not None or helper is not None)) else None
    if helper is not None:
        results, warnings = evaluate_helper(helper, items, modes=modes, k=k, collections=filter_collections,
                                            doc_langs=manifest_langs(), progress=progress, llm=llm)
        index_label, embedder_id = str(getattr(helper, "index", "helper")), str(getattr(helper, "embedder_spec", ""))
        thresholds = abstain_thresholds(helper, modes)
    else:
        from ..api import Helper

        with eval_index(index, collections, embedder) as where:
            h = Helper.load(where, embedder=embedder, user_bank=False, judge=judge_folder)  # votes must not move figures
            results, warnings = evaluate_helper(h, items, modes=modes, k=k, collections=filter_collections,
                                                doc_langs=manifest_langs(), progress=progress, llm=llm)
            index_label = str(where) if index is not None else f"temporary index of {', '.join(collections or ['seeds'])}"
            embedder_id = str(getattr(h.index, "embedder_id", embedder or config.DEFAULT_EMBEDDER))
            thresholds = abstain_thresholds(h, modes)
    return EvalResult(
        eval_file=str(eval_file), split=split, modes=tuple(modes), k=k, index=index_label, embedder=embedder_id,
        collections=list(collections) if collections else None, items=results,
        seconds=time.perf_counter() - started, warnings=warnings, thresholds=thresholds,
        llm=f"{llm.model!r} at {llm.base_url}" if llm is not None else None,
    )


def abstain_thresholds(helper, modes: Sequence[str]) -> dict[str, float | None]:
    """The threshold each mode's abstention used: the Helper's override, else the calibrated
    model's (None when the helper is not a real one). Abstention metrics mean nothing without it."""
    retriever = getattr(helper, "retriever", None)
    if retriever is None:
        return {mode: None for mode in modes}
    if getattr(retriever, "threshold", None) is not None:
        return {mode: float(retriever.threshold) for mode in modes}
    from ..search.retrieve import load_threshold

    embedder_id = str(getattr(helper.index, "embedder_id", config.DEFAULT_EMBEDDER))
    return {mode: load_threshold(mode, embedder_id) for mode in modes}
