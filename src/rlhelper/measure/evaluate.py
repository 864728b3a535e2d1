"""Measure retrieval against an eval set: ranking quality, abstention, breakdowns, reports.

    result = run_eval(Path("eval/seeds.jsonl"), split="test")   # lexical, dense, hybrid in one run
    print(format_table(result))
    write_report(result, Path("eval/reports"))                  # Markdown + PNG
    calibration.run_calibration(Path("eval/seeds.jsonl"))         # abstention model, dev only

In the spirit of sentence-transformers' InformationRetrievalEvaluator: the
metrics are small pure functions over a relevance list (1 where the hit at
that rank matches an expected entry), tested on hand-made rankings; the
harness only turns `Helper.retrieve` results into such lists.

Conventions (they decide the numbers, so they are written down):

* An eval item lists the doc sections that answer it; any one of them answers,
  so Recall@k is "some expected entry is in the top k" (a hit rate).
* Ranking metrics are over answerable items and ignore abstention: they judge
  the ranking. "answered correctly" judges what the user sees (not abstained
  and the top hit is right); abstention precision/recall treat "should
  abstain" (nothing expected) as the positive class, over all items.
* Abstention is also judged without its threshold: the AUROC of the
  confidence (answerable vs unanswerable items), and the share of answerable
  items abstained on if the threshold were moved to abstain on 80 % of the
  unanswerable ones. A calibration change moves the first two figures; only a
  better confidence signal moves these.
* Between "no match" and a plain answer sits the weak match (confidence.py):
  "unanswerable abstained or weak" is the share of unanswerable items where
  the user was told nothing matched or that the match is weak; "answerable
  flagged weak" is what that costs on the answerable ones.
* nDCG@10 uses binary gains; a hit only gains when it matches an expected entry
  no earlier hit matched (so the two halves of one long section do not count
  twice), and the ideal DCG has min(distinct expected entries, k) gains.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from .. import config
from ..errors import ConfigError, RlhelperError

DEFAULT_EVAL_FILE = config.REPO_ROOT / "eval" / "seeds.jsonl"
DEFAULT_REPORT_DIR = config.REPO_ROOT / "eval" / "reports"
DEFAULT_BASELINE = config.REPO_ROOT / "eval" / "baseline.json"

MODES = ("lexical", "dense", "hybrid")
CUTOFFS = (1, 3, 5)
K = 10
KINDS = ("error", "question", "traceback", "unanswerable")
SPLITS = ("dev", "test")
# Calibration: at most this share of answerable dev items may be abstained on.
WARNINGS_SHOWN = 10  # on the terminal; the report and --json keep them all
MISSING_DOCUMENTS = "the index holds no document named"
MAX_WRONGLY_ABSTAINED = 0.05
# The abstention target (share of unanswerable items abstained on) the trade-off row is read at.
TARGET_ABSTENTION_RECALL = 0.8
# Metrics where higher is better; the regression gate watches these.
GATED_METRICS = ("recall@1", "recall@3", "recall@5", "mrr@10", "ndcg@10", "abstention_precision",
                 "abstention_recall", "unanswerable_abstained_or_weak")
GATE_TOLERANCE = 0.02
TOP_SHOWN = 3  # hits listed per miss in reports


# --- the eval set --------------------------------------------------------------------


@dataclass
class EvalItem:
    id: str
    query: str
    kind: str
    lang: str
    expected: list[dict]  # [{"doc": ..., "heading": ...}]; empty: the docs do not answer
    split: str | None = None  # None: the item belongs to every split
    # A conversation's messages before `query` (one, or a list in order): asked first (followup.py);
    # small talk among them ("thanks") gets its word back and leaves the topic as it was (smalltalk.py).
    previous: str | list[str] | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.expected)

    def to_dict(self) -> dict:
        return {"id": self.id, "split": self.split, **({"previous": self.previous} if self.previous else {}),
                "query": self.query, "kind": self.kind, "lang": self.lang,
                "expected": [dict(e) for e in self.expected]}


def _previous(raw) -> str | list[str] | None:
    if not raw:
        return None
    return [str(m) for m in raw] if isinstance(raw, list) else str(raw)


def asked_before(helper, previous: str | list[str], **search):
    """The answer a conversation's earlier messages leave as `previous`, as the web chat keeps it:
    the last one that found an entry; small talk is not searched."""
    from ..answer.smalltalk import reply

    answer = None
    for message in [previous] if isinstance(previous, str) else previous:
        if reply(message) is not None:
            continue
        found = helper.ask(message, previous=answer, **search)
        answer = found if not found.abstained else answer
    return answer


def load_eval_set(path: Path, split: str | None = None) -> list[EvalItem]:
    """Read a JSON Lines eval file; `split` keeps that split's items (and split-less ones).

    A malformed line raises ConfigError naming the line, because a silently
    skipped item would change every number.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"Cannot read the eval file {path}: {e.strerror or e}") from e
    items, seen = [], set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            expected = [{"doc": str(e["doc"]), "heading": str(e["heading"])} for e in raw.get("expected") or []]
            item = EvalItem(
                id=str(raw.get("id", number)),
                query=str(raw["query"]),
                kind=str(raw.get("kind") or ("question" if expected else "unanswerable")),
                lang=str(raw.get("lang") or "en"),
                expected=expected,
                split=raw.get("split") or None,
                previous=_previous(raw.get("previous")),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ConfigError(f"{path}:{number}: not an eval item ({e}); expected "
                              '{"id", "split", "query", "kind", "lang", "expected": [{"doc", "heading"}]} '
                              '(and "previous" for a follow-up)') from e
        if item.id in seen:
            raise ConfigError(f"{path}:{number}: duplicate id {item.id!r}")
        seen.add(item.id)
        if split is None or item.split in (None, split):
            items.append(item)
    return items


# --- matching a hit to an expected entry ----------------------------------------------


def normalize_heading(text: str) -> str:
    """Heading text compared loosely: inline markup and backticks gone, NFKC, spaces collapsed, casefolded."""
    from ..ingest.parse.inline import markdown_heading_text, rst_heading_text

    text = rst_heading_text(markdown_heading_text(text or "")).replace("`", "")
    # NFKC folds full-width punctuation ("：" -> ":") that Chinese headings mix freely.
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def doc_matches(actual: str, expected: str) -> bool:
    """Same document: equal paths, or one path is the tail of the other ("faq.rst" ~ "verl/faq.rst"),
    or the expected name is the actual file's stem ("000_17cc8c75aeb7db0e")."""
    a, e = PurePosixPath(actual.replace("\\", "/")).parts, PurePosixPath(expected.replace("\\", "/")).parts
    if not a or not e:
        return False
    n = min(len(a), len(e))
    if a[-n:] == e[-n:]:
        return True
    return len(e) == 1 and not PurePosixPath(e[0]).suffix and PurePosixPath(a[-1]).stem == e[0]


def entry_locations(entry) -> list[tuple[str, str]]:
    """(doc, heading) of every place an entry's text lives: itself, its merged duplicates, and
    its twins (the same section translated, or another version of the page: twins.py), since
    the search shows a section once across them, in the asker's language.

    Docs are prefixed with the collection so an expected "seeds/x.txt" matches as well as "x.txt".
    """
    collection = getattr(entry, "collection", "") or ""

    def where(doc: str, in_collection: str = collection) -> str:
        return f"{in_collection}/{doc}" if in_collection else doc

    places = [(where(entry.doc), entry.heading)]
    places += [(where(a.get("doc", entry.doc)), a.get("heading", "")) for a in getattr(entry, "also_at", None) or []]
    places += [(where(t["doc"], t.get("collection", "")), t["heading"]) for t in getattr(entry, "twins", None) or []]
    return places


def matching_expected(locations: Iterable[tuple[str, str]], expected: Sequence[dict]) -> set[int]:
    """Indexes of the expected entries that one of these (doc, heading) locations matches."""
    found = set()
    places = [(doc, normalize_heading(heading)) for doc, heading in locations]
    for i, want in enumerate(expected):
        heading = normalize_heading(want["heading"])
        if any(h == heading and doc_matches(doc, want["doc"]) for doc, h in places):
            found.add(i)
    return found


def relevance_gains(ranked_locations: Sequence[Iterable[tuple[str, str]]], expected: Sequence[dict]) -> list[int]:
    """Binary gain per rank: 1 when the hit matches an expected entry that no earlier hit matched."""
    credited: set[int] = set()
    gains = []
    for locations in ranked_locations:
        new = matching_expected(locations, expected) - credited
        gains.append(1 if new else 0)
        credited |= new
    return gains


def distinct_expected(expected: Sequence[dict]) -> int:
    return len({(PurePosixPath(e["doc"]).name, normalize_heading(e["heading"])) for e in expected})


# --- metrics: pure functions over one ranking -----------------------------------------


def recall_at_k(gains: Sequence[int], k: int) -> float:
    """1.0 when some expected entry is in the top k (any expected entry answers the query)."""
    return 1.0 if any(gains[:k]) else 0.0


def reciprocal_rank(gains: Sequence[int], k: int = K) -> float:
    """1/rank of the first relevant hit within the top k, else 0."""
    for rank, gain in enumerate(gains[:k], start=1):
        if gain:
            return 1.0 / rank
    return 0.0


def dcg(gains: Sequence[int], k: int = K) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains[:k], start=1))


def ndcg_at_k(gains: Sequence[int], n_relevant: int, k: int = K) -> float:
    """DCG of the ranking over the DCG of min(n_relevant, k) relevant hits on top."""
    ideal = dcg([1] * min(n_relevant, k), k)
    return dcg(gains, k) / ideal if ideal else 0.0


def first_relevant_rank(gains: Sequence[int]) -> int | None:
    return next((rank for rank, g in enumerate(gains, start=1) if g), None)


def ratio(numerator: int, denominator: int) -> float | None:
    """None (not 0) when there is nothing to divide by: "no abstentions" is not "all wrong"."""
    return numerator / denominator if denominator else None


def abstention_scores(abstained: Sequence[bool], should_abstain: Sequence[bool]) -> dict:
    """Abstention as a classifier whose positive class is "the docs do not answer".

    precision: correct abstentions / all abstentions; recall: correct abstentions /
    unanswerable items; wrongly_abstained: abstentions on answerable items / answerable items.
    """
    pairs = list(zip(abstained, should_abstain, strict=True))
    correct = sum(1 for a, s in pairs if a and s)
    wrong = sum(1 for a, s in pairs if a and not s)
    unanswerable = sum(1 for _, s in pairs if s)
    return {
        "abstention_precision": ratio(correct, correct + wrong),
        "abstention_recall": ratio(correct, unanswerable),
        "wrongly_abstained": ratio(wrong, len(pairs) - unanswerable),
    }


def share_ceiling(scores: Sequence[float], share: float) -> float:
    """The lowest score at or below which at least `share` of `scores` fall (scores must be non-empty)."""
    return sorted(scores)[math.ceil(share * len(scores)) - 1]


def abstention_separation(answerable: Sequence[float], unanswerable: Sequence[float],
                          recall: float = TARGET_ABSTENTION_RECALL) -> dict:
    """How well the confidence separates the two classes, whatever the threshold.

    auroc: the chance that an unanswerable item gets a lower confidence than an
    answerable one (ties count half). wrongly_abstained_at_target: the share of
    answerable items a threshold would abstain on if it were set to abstain on
    `recall` of the unanswerable ones, the price of meeting the target on this set.
    """
    if not answerable or not unanswerable:
        return {"abstention_auroc": None, "wrongly_abstained_at_target": None}
    below = sum(sum(1.0 if u < a else 0.5 if u == a else 0.0 for u in unanswerable) for a in answerable)
    cutoff = share_ceiling(unanswerable, recall)  # a threshold just above it abstains on `recall` of them
    return {"abstention_auroc": below / (len(answerable) * len(unanswerable)),
            "wrongly_abstained_at_target": sum(1 for a in answerable if a <= cutoff) / len(answerable)}


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


# --- running the eval ---------------------------------------------------------------


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
    "doc": lambda r: sorted({e["doc"] for e in r.item.expected}) or ["(unanswerable)"],
    "lang": lambda r: [r.item.lang],
    "kind": lambda r: [r.item.kind],
    "crosslingual": lambda r: [] if r.cross_lingual is None else ["cross-lingual" if r.cross_lingual else "same-language"],
}


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
            "items": [r.to_dict() for r in self.items],
        }


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
            found = {lang for doc, lang in langs_at.get(normalize_heading(want["heading"]), [])
                     if doc_matches(doc, want["doc"])}
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
) -> EvalResult:
    """Evaluate lexical, dense and hybrid retrieval side by side on one index.

    index: an existing index (path or name) to evaluate, searched within `collections`
    when given. Without it a temporary index of `collections` (default: seeds) is
    built with `embedder` (default: the default embedder). `helper` skips loading
    altogether (tests, notebooks). The abstention threshold is whatever the Helper
    reads (its calibrated confidence model, see confidence.py). `llm` (LLMSettings): the
    model judges each hybrid answer as with `--llm`, and its NO_ANSWER abstains.
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
            h = Helper.load(where, embedder=embedder, user_bank=False)  # votes must not move figures
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


# --- choosing an abstention threshold (calibration.py fits the model) ---------------------


def choose_threshold(answerable: Sequence[float], unanswerable: Sequence[float],
                     max_wrongly_abstained: float = MAX_WRONGLY_ABSTAINED) -> float:
    """Threshold t (abstain when confidence < t) that abstains on the most unanswerable items
    while abstaining on at most `max_wrongly_abstained` of the answerable ones.

    Every threshold between two neighbouring confidences gives the same outcome,
    so candidates are the midpoints (and just below the lowest value: abstain on
    nothing); ties go to fewer wrong abstentions, then the lower threshold.
    """
    values = sorted(set(answerable) | set(unanswerable))
    if not values:
        return 0.0
    candidates = [values[0] - 1e-6] + [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)]
    candidates.append(values[-1] + 1e-6)
    best, best_key = candidates[0], None
    for t in candidates:
        wrong = sum(1 for c in answerable if c < t)
        if answerable and wrong / len(answerable) > max_wrongly_abstained:
            continue
        key = (sum(1 for c in unanswerable if c < t), -wrong, -t)
        if best_key is None or key > best_key:
            best, best_key = t, key
    return round(best, 6)


# --- regression baseline -------------------------------------------------------------


def baseline_of(result: EvalResult, mode: str = "hybrid",
                command: str = "python -m rlhelper.measure.evaluate --write-baseline") -> dict:
    """What eval/baseline.json holds: the gated metrics of one mode, and how they were measured."""
    metrics = result.metrics(mode)
    return {
        "eval_file": Path(result.eval_file).name,
        "split": result.split,
        "mode": mode,
        "embedder": result.embedder,
        "collections": result.collections or ["seeds"],
        "created": result.created,
        "n": metrics["n"],
        "tolerance": GATE_TOLERANCE,
        "abstain_threshold": result.thresholds.get(mode),
        "metrics": {name: (round(metrics[name], 4) if metrics[name] is not None else None) for name in GATED_METRICS},
        "command": command,
    }


def regressions(current: dict, baseline: dict, tolerance: float = GATE_TOLERANCE) -> list[str]:
    """Gated metrics that fell more than `tolerance` below the baseline (a None now, a number then, counts)."""
    out = []
    for name, before in baseline.items():
        if before is None:
            continue
        now = current.get(name)
        if now is None or now < before - tolerance:
            out.append(f"{name}: {before:.4f} -> {'n/a' if now is None else f'{now:.4f}'} (tolerance {tolerance})")
    return out


# --- output: terminal table, Markdown report, chart -----------------------------------

ROWS = (("recall@1", "Recall@1"), ("recall@3", "Recall@3"), ("recall@5", "Recall@5"), ("mrr@10", "MRR@10"),
        ("ndcg@10", "nDCG@10"), ("answered_correctly", "answered correctly"), ("correct", "correct end to end"),
        ("abstention_precision", "abstention precision"), ("abstention_recall", "abstention recall"),
        ("wrongly_abstained", "wrongly abstained"),
        ("unanswerable_abstained_or_weak", "unanswerable abstained or weak"),
        ("answerable_weak", "answerable flagged weak"), ("abstention_auroc", "abstention AUROC"),
        ("wrongly_abstained_at_target", f"wrongly abstained at {TARGET_ABSTENTION_RECALL:.0%} recall"))
BREAKDOWN_TITLES = {"doc": "By document", "lang": "By query language", "kind": "By kind",
                    "crosslingual": "Cross-lingual (query language != expected entry language)"}


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _overall_rows(result: EvalResult) -> list[list[str]]:
    per_mode = {m: result.metrics(m) for m in result.modes}
    return [[label, *(_fmt(per_mode[m][key]) for m in result.modes)] for key, label in ROWS]


def _breakdown_rows(result: EvalResult, name: str) -> tuple[list[str], list[list[str]]]:
    per_mode = {m: result.breakdown(name, m) for m in result.modes}
    groups = list(per_mode[result.modes[0]])
    slash = lambda key, g: " / ".join(_fmt(per_mode[m][g][key]) for m in result.modes)  # noqa: E731
    # Wrongly abstained per group: a language or kind the abstention model is unfair to shows here.
    header = [name, "n", "R@1", "R@3", "R@5", "MRR@10", "wrongly abstained", "correct end to end"]
    rows = [[g, str(per_mode[result.modes[0]][g]["n"]), slash("recall@1", g), slash("recall@3", g),
             slash("recall@5", g), slash("mrr@10", g), slash("wrongly_abstained", g), slash("correct", g)]
            for g in groups]
    return header, rows


def _summary_line(result: EvalResult) -> str:
    n = len(result.items)
    unanswerable = sum(1 for r in result.items if not r.item.answerable)
    known = {m: t for m, t in result.thresholds.items() if t is not None}
    thresholds = f"; abstain below {', '.join(f'{m} {t:.3f}' for m, t in known.items())}" if known else ""
    judge = f"; hybrid answers judged by the LLM {result.llm}" if result.llm else ""
    return (f"{Path(result.eval_file).name}, split {result.split or 'all'}: {n} items ({n - unanswerable} answerable, "
            f"{unanswerable} unanswerable); index: {result.index}; embedder: {result.embedder}; k={result.k}"
            f"{thresholds}{judge}; {result.seconds:.1f} s")


def format_table(result: EvalResult) -> str:
    """The terminal view: metrics by mode, then the breakdowns (cells are lexical / dense / hybrid)."""
    parts = [_summary_line(result)]
    # Every miss has one cause then: said above the figures it explains, not after them.
    parts += [f"warning: {w}" for w in result.warnings if w.startswith(MISSING_DOCUMENTS)]
    parts += ["", _grid(["metric", *result.modes], _overall_rows(result))]
    for name, title in BREAKDOWN_TITLES.items():
        header, rows = _breakdown_rows(result, name)
        if rows:
            parts += ["", f"{title} — cells: {' / '.join(result.modes)}", _grid(header, rows)]
    rest = [w for w in result.warnings if not w.startswith(MISSING_DOCUMENTS)]
    parts += [f"warning: {warning}" for warning in rest[:WARNINGS_SHOWN]]
    if len(rest) > WARNINGS_SHOWN:
        parts.append(f"... and {len(rest) - WARNINGS_SHOWN} more warnings (all of them in the report and in --json)")
    return "\n".join(parts)


def _miss_lines(misses: Sequence[ItemResult], mode: str) -> list[str]:
    lines = []
    for r in misses:
        o = r.outcomes[mode]
        want = "; ".join(f"{e['doc']} > {e['heading']}" for e in r.item.expected) or "(nothing: should abstain)"
        got = "; ".join(f"#{t['rank']} {t['doc']} > {t['heading']}" for t in o.top[:TOP_SHOWN]) or "(no hits)"
        state = "abstained" if o.abstained else "answered"
        query = " ".join(r.item.query.split())
        query = (query if len(query) <= 160 else query[:157] + "...").replace("`", "'")
        lines.append(f"- **{r.item.id}** ({r.item.kind}, {r.item.lang}, {state}, confidence {o.confidence:.3f}) "
                     f"`{query}`  \n  expected: {want}  \n  got: {got}")
        if o.error:
            lines.append(f"  error: {o.error}")
    return lines


def format_markdown(result: EvalResult, chart_name: str | None = None) -> str:
    parts = [f"# Retrieval eval: {result.split or 'all'} split", "", _summary_line(result), "",
             f"Created {result.created}.", "", "## Metrics by mode", "",
             _md_table(["metric", *result.modes], _overall_rows(result))]
    if chart_name:
        parts += ["", f"![Recall@k and MRR by mode and by document]({chart_name})"]
    for name, title in BREAKDOWN_TITLES.items():
        header, rows = _breakdown_rows(result, name)
        if rows:
            parts += ["", f"## {title}", "", f"Cells: {' / '.join(result.modes)}.", "", _md_table(header, rows)]
    if result.warnings:
        parts += ["", "## Eval set warnings", "", *(f"- {w}" for w in result.warnings)]
    mode = "hybrid" if "hybrid" in result.modes else result.modes[-1]
    misses = result.misses(mode)
    open_misses = [r for r in misses if r.item.split != "test"]
    test_misses = [r for r in misses if r.item.split == "test"]
    parts += ["", f"## Misses ({mode})", "", *(_miss_lines(open_misses, mode) or ["None."])]
    if test_misses:
        # eval/README.md: test results are for reporting only; folded so nobody tunes on them by accident.
        parts += ["", f"<details><summary>{len(test_misses)} test-split misses: for reporting only, never tune "
                  "on them (eval/README.md)</summary>", "", *_miss_lines(test_misses, mode), "", "</details>"]
    return "\n".join(parts) + "\n"


def write_chart(result: EvalResult, path: Path) -> Path:
    """PNG: Recall@1/3/5, MRR@10 and nDCG@10 by mode, the same by document for hybrid, and, when the
    set has unanswerable items, abstention by mode."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the eval runs in terminals and CI
    import matplotlib.pyplot as plt

    keys = [("recall@1", "R@1"), ("recall@3", "R@3"), ("recall@5", "R@5"), ("mrr@10", "MRR"), ("ndcg@10", "nDCG")]
    abstention = [("abstention_recall", "unanswerable\nabstained"), ("wrongly_abstained", "answerable wrongly\nabstained")]
    mode = "hybrid" if "hybrid" in result.modes else result.modes[-1]
    overall = {m: result.metrics(m) for m in result.modes}
    by_doc = {d: m for d, m in result.breakdown("doc", mode).items() if m["n_answerable"]}
    panels = [("By mode", [label for _, label in keys], {m: [overall[m][k] for k, _ in keys] for m in result.modes}),
              (f"By document ({mode})", [_short_doc(d) for d in by_doc],
               {label: [m[k] for m in by_doc.values()] for k, label in keys})]
    if overall[mode]["n_unanswerable"]:
        panels.append(("Abstention by mode", [label for _, label in abstention],
                       {m: [overall[m][k] for k, _ in abstention] for m in result.modes}))
    widths = [1, max(1.5, len(by_doc) / 3), 0.6][: len(panels)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * sum(widths), 4.8), gridspec_kw={"width_ratios": widths})
    for ax, (title, groups, series) in zip(axes, panels, strict=True):
        _bars(ax, groups, series, title)
    fig.suptitle(f"{Path(result.eval_file).name} — {result.split or 'all'} split, {len(result.items)} items")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _bars(ax, groups: list[str], series: dict[str, list[float | None]], title: str) -> None:
    """Grouped bars, one colour per series, the legend under the axes so that it hides no bar."""
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(groups))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=label)
    tilted = len(groups) > 5
    ax.set_xticks(range(len(groups)), groups, rotation=20 if tilted else 0, ha="right" if tilted else "center",
                  fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14 if not tilted else -0.2),
              ncol=len(series), frameon=False)


def _short_doc(doc: str) -> str:
    """Seeds' hashed names -> "000"; other documents keep their path (two pages may share a name)."""
    return re.sub(r"^(?:.*/)?(\d{3})_[0-9a-f]{16}\.txt$", r"\1", doc)


def write_report(result: EvalResult, report_dir: Path) -> list[Path]:
    """Markdown report (timestamped and latest-<split>.md), its PNG chart, and the JSON; returns the paths."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    split = result.split or "all"
    stamp = result.created.replace("-", "").replace(":", "").replace("T", "-").rstrip("Z")
    chart = write_chart(result, report_dir / f"{split}-{stamp}.png")
    latest_chart = report_dir / f"latest-{split}.png"
    latest_chart.write_bytes(chart.read_bytes())
    md = report_dir / f"{split}-{stamp}.md"
    md.write_text(format_markdown(result, chart.name), encoding="utf-8")
    latest = report_dir / f"latest-{split}.md"
    latest.write_text(format_markdown(result, latest_chart.name), encoding="utf-8")
    data = report_dir / f"latest-{split}.json"
    data.write_text(json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return [md, chart, latest, latest_chart, data]


# --- python -m rlhelper.measure.evaluate --write-baseline -------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Write eval/baseline.json from the test split, hybrid mode, default embedder, seeds collection
    (another set, baseline file or collections with --set, --baseline, --collection)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rlhelper.measure.evaluate", description=main.__doc__)
    parser.add_argument("--write-baseline", action="store_true", help="write the baseline file")
    parser.add_argument("--set", dest="eval_file", type=Path, default=DEFAULT_EVAL_FILE)
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    parser.add_argument("--collection", dest="collections", action="append",
                        help="collections to index and search (repeatable; default: seeds)")
    parser.add_argument("--index", help="evaluate this index instead of a fresh one of the collections")
    args = parser.parse_args(argv)
    collections = args.collections or ["seeds"]
    result = run_eval(args.eval_file, split="test", collections=collections, index=args.index)
    print(format_table(result))
    if args.write_baseline:
        command = "python -m rlhelper.measure.evaluate --write-baseline"
        if args.eval_file != DEFAULT_EVAL_FILE or args.baseline != DEFAULT_BASELINE:
            command += f" --set {_repo_relative(args.eval_file)} --baseline {_repo_relative(args.baseline)}"
        command += "".join(f" --collection {c}" for c in collections if collections != ["seeds"])
        args.baseline.parent.mkdir(parents=True, exist_ok=True)
        args.baseline.write_text(json.dumps(baseline_of(result, command=command), indent=2) + "\n",
                                 encoding="utf-8")
        print(f"baseline written: {args.baseline}")
    return 0


def _repo_relative(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(config.REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


if __name__ == "__main__":
    raise SystemExit(main())
