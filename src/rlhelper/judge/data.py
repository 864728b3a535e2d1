"""Training pairs for the judge: (question, entry passage, label), built from data beside the corpus.

    label 1  a question of the shipped bank (ingest/questions/) and its entry; a Chinese question
             also with its entry's English twin, so the English-only start model sees the answer in
             words it reads
    label 0  the retriever's near misses for that bank question: the first entries of its search
             on the index that are neither its entry, nor a part, repeat or twin of it
    label 0  each question of train/judge/unanswerable.jsonl (in-domain questions the docs do not
             answer) with the entries the retriever ranks first for it
    label 1  each report of train/judge/reports/ (report-shaped questions written from the docs: a
             GitHub-style title, versions, a config, a log, what was tried; English and Chinese) with
             its entry, and its near misses as for a bank question
    noisy    each bank and unanswerable question once more as a user would paste it (noise.py: log
             prefixes, timestamps, an environment block, unrelated lines, a cut, the line buried in a
             log), with its own near misses; dropped when the query normalizer's output no longer
             holds half of the question's words (the judge could not know what was asked)

A pair's `query` is what the judge reads at search time: the query normalizer's output for the text
(search/query.py: a pasted log's error lines), with the text itself in `raw` when they differ.
No eval data goes in: `copies` is the check that the unanswerable set holds no eval query.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ..config import REPO_ROOT, corpus_dir
from ..errors import ConfigError, RlhelperError
from ..index.questions import BANK_FOLDER, attach, read_bank
from ..schema import Entry, title_trail
from ..search.judge import passage
from ..search.query import normalize_query
from ..search.ranking import section_key
from . import noise

SEED = 13
TRAIN_DIR = REPO_ROOT / "train" / "judge"
UNANSWERABLE = TRAIN_DIR / "unanswerable.jsonl"
REPORTS = TRAIN_DIR / "reports"
UNANSWERED_REPORTS = "unanswerable.jsonl"  # beside the reports: report-shaped questions the docs do not answer
PAIRS = TRAIN_DIR / "pairs.jsonl"
NEAR_MISSES = 3  # hard negatives per bank question
UNANSWERED_TOP = 3  # retrieved entries paired with each unanswerable question
SEARCH_DEPTH = 10  # hits looked at to find NEAR_MISSES that are not the answer in another form
COPY_OVERLAP = 0.8
GUARD_OVERLAP = 0.5  # training texts this close to an eval query are left out unread (build-data)
NOISY_VARIANTS = 1  # noisy forms of each bank and unanswerable question
KEPT_WORDS = 0.5  # share of a question's words its noisy form's normalized text must still hold


def read_unanswerable(path: Path = UNANSWERABLE) -> list[dict]:
    """The in-domain questions the docs do not answer: {"id", "query", "lang", "kind"} per line."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append({"id": str(row["id"]), "query": str(row["query"]), "lang": str(row["lang"]),
                         "kind": str(row["kind"])})
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"{path}:{number}: not an unanswerable question ({e})") from e
    return rows


def read_reports(folder: Path = REPORTS) -> list[dict]:
    """Every report of every `<collection>/<doc>.jsonl` under `folder`, flat: {"collection", "doc",
    "heading", "entry_id", "text", "lang", "shape"}, in file order."""
    rows = []
    for path in sorted(Path(folder).rglob("*.jsonl")):
        if path == Path(folder) / UNANSWERED_REPORTS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows += [{"collection": str(row["collection"]), "doc": str(row["doc"]), "heading": str(row["heading"]),
                          "entry_id": str(row.get("entry_id", "")), "text": str(r["text"]), "lang": str(r["lang"]),
                          "shape": str(r.get("shape", ""))} for r in row["reports"]]
            except (ValueError, KeyError, TypeError) as e:
                raise ConfigError(f"{path}:{number}: not a line of reports ({e})") from e
    return rows


def read_unanswered_reports(folder: Path = REPORTS) -> list[dict]:
    """The report-shaped questions the docs do not answer (`reports/unanswerable.jsonl`: {"text", "lang",
    "shape"}), as unanswerable questions: {"id", "query", "lang", "kind"}."""
    path = Path(folder) / UNANSWERED_REPORTS
    if not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append({"id": f"ureport-{number:04d}", "query": str(row["text"]), "lang": str(row["lang"]),
                         "kind": f"report_{row.get('shape', '')}"})
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"{path}:{number}: not an unanswerable report ({e})") from e
    return rows


# --- the copy check -------------------------------------------------------------------

def word_set(text: str) -> frozenset[str]:
    """Lower-cased words; a Chinese character counts as a word."""
    return frozenset(re.findall(r"[a-z0-9_]+|[\u4e00-\u9fff]", text.lower()))


def copies(questions: list[str], others: Iterable[str], overlap: float = COPY_OVERLAP) -> list[int]:
    """Indices of `questions` whose words equal, or overlap by more than `overlap` (Jaccard),
    the words of any of `others`."""
    other_sets = [s for s in {word_set(t) for t in others} if s]
    hits = []
    for i, q in enumerate(questions):
        words = word_set(q)
        if words and any(words == o or len(words & o) / len(words | o) > overlap for o in other_sets):
            hits.append(i)
    return hits


def eval_queries(folder: Path = REPO_ROOT / "eval") -> list[str]:
    """Every query (and a follow-up's previous message) of every eval set: compared, never shown."""
    texts = []
    for file in sorted(Path(folder).glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts += [str(row[k]) for k in ("query", "previous") if row.get(k)]
    return texts


# --- pairs ----------------------------------------------------------------------------

def is_answer(candidate: Entry, entry: Entry) -> bool:
    """The answer in another form: a part of its section, its twin (a repeat is merged into it), or
    an entry under the same title trail (another version of the page, a part cut elsewhere). The
    judge reads the trail first: a "does not answer" label on the answer's own trail would teach it
    to contradict the positive pair."""
    return (section_key(candidate) == section_key(entry) or candidate.id in {t.get("entry_id") for t in entry.twins}
            or title_trail(candidate.doc_title, candidate.breadcrumb) == title_trail(entry.doc_title, entry.breadcrumb))


def judged_text(text: str) -> str:
    """What the judge reads of a query: the normalizer's output, as at search time."""
    return normalize_query(text).text


def still_asks(question: str, judged: str) -> bool:
    """Whether a noisy form's normalized text holds at least KEPT_WORDS of the question's words."""
    words = word_set(question)
    return bool(words) and len(words & word_set(judged)) / len(words) >= KEPT_WORDS


def _pair(query: str, entry: Entry, label: int, source: str, lang: str, qid: str, kind: str | None = None) -> dict:
    judged = judged_text(query)
    row = {"qid": qid, "query": judged, "entry_id": entry.id, "passage": passage(entry),
           "label": label, "source": source, "lang": lang}
    if judged != query:
        row["raw"] = query
    if kind:
        row["noise"] = kind
    return row


def _near_misses(helper, text: str, entry: Entry, near_misses: int) -> list[Entry] | None:
    """The retriever's first entries for `text` that are not `entry` in another form (None: refused)."""
    try:
        hits = helper.search(text, k=SEARCH_DEPTH)
    except RlhelperError:
        return None
    return [h.entry for h in hits if not is_answer(h.entry, entry)][:near_misses]


def noisy_forms(question: str, rng: random.Random, n: int = NOISY_VARIANTS) -> list[tuple[str, str]]:
    """(noisy text, kind) for `question`, those whose normalized text still asks it."""
    return [(text, kind) for text, kind in noise.variants(question, n, rng) if still_asks(question, judged_text(text))]


def answered_pairs(helper, text: str, entry: Entry, source: str, lang: str, qid: str,
                   near_misses: int = NEAR_MISSES, kind: str | None = None) -> tuple[list[dict], bool]:
    """(the positive pair and its near misses, whether the retriever searched the text at all)."""
    misses = _near_misses(helper, text, entry, near_misses)
    pairs = [_pair(text, entry, 1, source, lang, qid, kind)]
    pairs += [_pair(text, e, 0, "near_miss", lang, qid, kind) for e in misses or []]
    return pairs, misses is not None


def bank_pairs(helper, near_misses: int = NEAR_MISSES, progress=None,
               rng: random.Random | None = None) -> tuple[list[dict], Counter]:
    """Positives and near-miss negatives for every shipped bank question the index holds, and for
    a noisy form of each when `rng` is given. `progress(done, total)` is called every few hundred
    questions (a search or two each)."""
    entries = helper.index.entries
    by_id = {e.id: e for e in entries}
    report = read_bank(corpus_dir() / BANK_FOLDER)
    pairs, skipped = [], Counter()
    attached = attach(report, entries)
    for n, (row, q) in enumerate(attached):
        if progress and n % 500 == 0:
            progress(n, len(attached))
        entry, qid = entries[row], f"bank-{n:05d}"
        lang = "zh" if re.search(r"[\u4e00-\u9fff]", q.text) else "en"
        found, searched = answered_pairs(helper, q.text, entry, "bank", lang, qid, near_misses)
        pairs += found
        if not searched:
            skipped["bank questions without near misses (the retriever refused the query)"] += 1
        if lang == "zh":
            for twin in entry.twins:
                if twin.get("lang") == "en" and twin.get("entry_id") in by_id:
                    pairs.append(_pair(q.text, by_id[twin["entry_id"]], 1, "twin", lang, qid))
        for text, kind in (noisy_forms(q.text, rng) if rng is not None else []):
            noisy, searched = answered_pairs(helper, text, entry, "bank", lang, qid, near_misses, kind)
            if searched:
                pairs += noisy
            else:
                skipped["noisy bank questions the retriever refused (left out)"] += 1
    skipped["bank questions whose entry the index lacks"] += sum(n for *_, n in report.orphans)
    return pairs, skipped


def report_pairs(helper, reports: list[dict], near_misses: int = NEAR_MISSES) -> tuple[list[dict], Counter]:
    """Each report with its entry (found by id, else by collection, document and heading) and its
    near misses; a Chinese report also with its entry's English twin, as a bank question."""
    entries = helper.index.entries
    by_id = {e.id: e for e in entries}
    by_place = {}
    for e in entries:
        by_place.setdefault((e.collection, e.doc, e.heading), e)
    pairs, skipped = [], Counter()
    for n, r in enumerate(reports):
        entry = by_id.get(r["entry_id"]) or by_place.get((r["collection"], r["doc"], r["heading"]))
        if entry is None:
            skipped["reports whose entry the index lacks"] += 1
            continue
        qid = f"report-{n:05d}"
        found, searched = answered_pairs(helper, r["text"], entry, "report", r["lang"], qid, near_misses)
        pairs += found
        if not searched:
            skipped["reports without near misses (the retriever refused the text)"] += 1
        if r["lang"] == "zh":
            pairs += [_pair(r["text"], by_id[t["entry_id"]], 1, "twin", "zh", qid) for t in entry.twins
                      if t.get("lang") == "en" and t.get("entry_id") in by_id]
    return pairs, skipped


def unanswerable_pairs(helper, questions: list[dict], top: int = UNANSWERED_TOP,
                       rng: random.Random | None = None) -> list[dict]:
    """Each question (and, with `rng`, a noisy form of it) with the entries the retriever ranks first."""
    pairs = []
    for q in questions:
        forms = [(q["query"], None)] + (noisy_forms(q["query"], rng) if rng is not None else [])
        for text, kind in forms:
            try:
                hits = helper.search(text, k=top)
            except RlhelperError:
                continue
            pairs += [_pair(text, hit.entry, 0, "unanswerable", q["lang"], q["id"], kind) for hit in hits]
    return pairs


def build(helper, questions: list[dict], seed: int = SEED, progress=None, noisy: bool = True,
          reports: list[dict] | None = None) -> tuple[list[dict], Counter]:
    """All pairs, shuffled with `seed` (the same inputs give the same file)."""
    rng = random.Random(seed) if noisy else None
    pairs, skipped = bank_pairs(helper, progress=progress, rng=rng)
    if reports:
        found, missed = report_pairs(helper, reports)
        pairs += found
        skipped += missed
    pairs += unanswerable_pairs(helper, questions, rng=rng)
    random.Random(seed).shuffle(pairs)
    return pairs, skipped


def write(pairs: list[dict], path: Path = PAIRS) -> str:
    """Write JSON Lines; returns the file's sha256 (the manifest names the data a model saw)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n" for p in pairs).encode()
    path.write_bytes(body)
    return hashlib.sha256(body).hexdigest()


def read(path: Path = PAIRS) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def counts(pairs: list[dict]) -> Counter:
    """(source, lang, label) -> pairs: what `build-data` prints; a noisy pair's source ends in "+noise"."""
    return Counter((p["source"] + ("+noise" if p.get("noise") else ""), p["lang"], p["label"]) for p in pairs)


def without_eval_lookalikes(rows: list[dict], key: str, overlap: float = GUARD_OVERLAP) -> tuple[list[dict], int]:
    """`rows` less those whose `key` text overlaps an eval query by more than `overlap` (word sets):
    a guard against training on a near copy of an eval item, applied without showing either text."""
    hits = set(copies([r[key] for r in rows], eval_queries(), overlap))
    return [r for i, r in enumerate(rows) if i not in hits], len(hits)


def report_copies(folder: Path = REPORTS, overlap: float = COPY_OVERLAP) -> tuple[int, int]:
    """(reports, copies of an eval query) among every report, answered or not: counts only."""
    texts = [r["text"] for r in read_reports(folder)] + [r["query"] for r in read_unanswered_reports(folder)]
    return len(texts), len(copies(texts, eval_queries(), overlap))


def drop_copies(path: Path = UNANSWERABLE, overlap: float = COPY_OVERLAP, *, rewrite: bool = False) -> tuple[int, int]:
    """(questions, copies of an eval query) in the unanswerable file; `rewrite` drops the copies.
    Counts only: which eval query a question resembled is never shown."""
    rows = read_unanswerable(path)
    hits = set(copies([r["query"] for r in rows], eval_queries(), overlap))
    if rewrite and hits:
        kept = [r for i, r in enumerate(rows) if i not in hits]
        Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    return len(rows), len(hits)
