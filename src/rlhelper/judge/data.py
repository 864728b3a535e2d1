"""Training pairs for the judge: (question, entry passage, label), built from data beside the corpus.

    label 1  a question of the shipped bank (ingest/questions/) and its entry; a Chinese question
             also with its entry's English twin, so the English-only start model sees the answer in
             words it reads
    label 0  the retriever's near misses for that bank question: the first entries of its search
             on the index that are neither its entry, nor a part, repeat or twin of it
    label 0  each question of train/judge/unanswerable.jsonl (in-domain questions the docs do not
             answer) with the entries the retriever ranks first for it

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
from ..search.ranking import section_key

SEED = 13
TRAIN_DIR = REPO_ROOT / "train" / "judge"
UNANSWERABLE = TRAIN_DIR / "unanswerable.jsonl"
PAIRS = TRAIN_DIR / "pairs.jsonl"
NEAR_MISSES = 3  # hard negatives per bank question
UNANSWERED_TOP = 3  # retrieved entries paired with each unanswerable question
SEARCH_DEPTH = 10  # hits looked at to find NEAR_MISSES that are not the answer in another form
COPY_OVERLAP = 0.8


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


def _pair(query: str, entry: Entry, label: int, source: str, lang: str, qid: str) -> dict:
    return {"qid": qid, "query": query, "entry_id": entry.id, "passage": passage(entry),
            "label": label, "source": source, "lang": lang}


def bank_pairs(helper, near_misses: int = NEAR_MISSES, progress=None) -> tuple[list[dict], Counter]:
    """Positives and near-miss negatives for every shipped bank question the index holds.
    `progress(done, total)` is called every few hundred questions (a search each)."""
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
        pairs.append(_pair(q.text, entry, 1, "bank", lang, qid))
        if lang == "zh":
            for twin in entry.twins:
                if twin.get("lang") == "en" and twin.get("entry_id") in by_id:
                    pairs.append(_pair(q.text, by_id[twin["entry_id"]], 1, "twin", lang, qid))
        try:
            hits = helper.search(q.text, k=SEARCH_DEPTH)
        except RlhelperError:
            skipped["bank questions without near misses (the retriever refused the query)"] += 1
            continue
        misses = [h.entry for h in hits if not is_answer(h.entry, entry)][:near_misses]
        pairs += [_pair(q.text, e, 0, "near_miss", lang, qid) for e in misses]
    skipped["bank questions whose entry the index lacks"] += sum(n for *_, n in report.orphans)
    return pairs, skipped


def unanswerable_pairs(helper, questions: list[dict], top: int = UNANSWERED_TOP) -> list[dict]:
    pairs = []
    for q in questions:
        for hit in helper.search(q["query"], k=top):
            pairs.append(_pair(q["query"], hit.entry, 0, "unanswerable", q["lang"], q["id"]))
    return pairs


def build(helper, questions: list[dict], seed: int = SEED, progress=None) -> tuple[list[dict], Counter]:
    """All pairs, shuffled with `seed` (the same inputs give the same file)."""
    pairs, skipped = bank_pairs(helper, progress=progress)
    pairs += unanswerable_pairs(helper, questions)
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
    """(source, lang, label) -> pairs: what `build-data` prints."""
    return Counter((p["source"], p["lang"], p["label"]) for p in pairs)


def drop_copies(path: Path = UNANSWERABLE, overlap: float = COPY_OVERLAP, *, rewrite: bool = False) -> tuple[int, int]:
    """(questions, copies of an eval query) in the unanswerable file; `rewrite` drops the copies.
    Counts only: which eval query a question resembled is never shown."""
    rows = read_unanswerable(path)
    hits = set(copies([r["query"] for r in rows], eval_queries(), overlap))
    if rewrite and hits:
        kept = [r for i, r in enumerate(rows) if i not in hits]
        Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    return len(rows), len(hits)
