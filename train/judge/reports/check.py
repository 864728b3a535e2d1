"""Check the judge's report-shaped training data (train/judge/reports/).

Validates every <collection>/<doc>.jsonl against the dump of answerable entries
(the answerable entries of index/default/entries.jsonl, or --entries): JSON, keys, the entry's (collection, doc,
heading, entry_id), at least two reports with one English and one Chinese, languages that match
the text, known shapes, no duplicate or near-duplicate texts (word
sets overlapping by more than 80 %) within the reports and the unanswerable file, no copy of a
question of the bank under ingest/questions. Prints counts per shape and language.

    python train/judge/reports/check.py              # what is written so far
    python train/judge/reports/check.py --complete   # every entry covered, >= 200 unanswerable
"""

import argparse
import collections
import itertools
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SHAPES = {"issue", "config", "log", "chat", "traceback", "question"}
LANGS = {"en", "zh"}
CJK = re.compile(r"[\u4e00-\u9fff]")
ENTRY_KEYS = {"collection", "doc", "heading", "entry_id", "reports"}
REPORT_KEYS = {"text", "lang", "shape"}

REPO = Path(__file__).resolve().parents[3]  # the repository: train/judge/reports/check.py


def normalized(text):
    return " ".join(text.lower().split())


def words(text):
    return set(re.findall(r"[\u4e00-\u9fff]|[a-z0-9_]+", text.lower()))


def check_report(report, where, errors):
    if not isinstance(report, dict) or set(report) != REPORT_KEYS:
        errors.append(f"{where}: a report needs exactly the keys {sorted(REPORT_KEYS)}")
        return False
    text, lang, shape = report["text"], report["lang"], report["shape"]
    if not isinstance(text, str) or len(text.strip()) < 15:
        errors.append(f"{where}: text too short")
    if lang not in LANGS:
        errors.append(f"{where}: lang {lang!r}")
    if shape not in SHAPES:
        errors.append(f"{where}: shape {shape!r}")
    has_cjk = bool(CJK.search(text or ""))
    if lang == "zh" and not has_cjk:
        errors.append(f"{where}: lang zh without Chinese characters")
    if lang == "en" and has_cjk:
        errors.append(f"{where}: lang en with Chinese characters")
    return True


def load_lines(path, errors):
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            errors.append(f"{path}:{number}: invalid JSON ({error})")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default=str(REPO / "index" / "default" / "entries.jsonl"),
                        help="entries.jsonl of an index of the shipped corpus (default: index/default, after "
                             "`rlhelper ingest`); its answerable entries are the ones the reports answer")
    parser.add_argument("--complete", action="store_true", help="require every entry and 200 unanswerable")
    args = parser.parse_args()

    entries = {}
    for line in Path(args.entries).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("answerable", True):
            entries[entry["id"]] = entry

    errors, warnings = [], []
    seen_texts = {}
    covered = set()
    counts = collections.Counter()
    per_doc = collections.Counter()

    def remember(text, where):
        key = normalized(text)
        if key in seen_texts:
            errors.append(f"{where}: duplicate of {seen_texts[key]}")
        seen_texts[key] = where

    for path in sorted(HERE.glob("*/**/*.jsonl")):
        relative = path.relative_to(HERE)
        collection, doc = relative.parts[0], "/".join(relative.parts[1:])[: -len(".jsonl")]
        for number, row in load_lines(path, errors):
            where = f"{relative}:{number}"
            if not isinstance(row, dict) or set(row) != ENTRY_KEYS:
                errors.append(f"{where}: needs exactly the keys {sorted(ENTRY_KEYS)}")
                continue
            entry = entries.get(row["entry_id"])
            if entry is None:
                errors.append(f"{where}: unknown entry_id {row['entry_id']}")
                continue
            if (row["collection"], row["doc"], row["heading"]) != (entry["collection"], entry["doc"], entry["heading"]):
                errors.append(f"{where}: collection/doc/heading differ from entry {row['entry_id']}")
            if (row["collection"], row["doc"]) != (collection, doc):
                errors.append(f"{where}: the line belongs in {row['collection']}/{row['doc']}.jsonl")
            if row["entry_id"] in covered:
                errors.append(f"{where}: entry {row['entry_id']} appears twice")
            covered.add(row["entry_id"])
            reports = row["reports"]
            if not isinstance(reports, list) or len(reports) < 2:
                errors.append(f"{where}: fewer than 2 reports")
                continue
            langs = set()
            for index, report in enumerate(reports):
                if not check_report(report, f"{where} report {index}", errors):
                    continue
                langs.add(report["lang"])
                remember(report["text"], f"{where} report {index}")
                counts[("answerable", report["lang"], report["shape"])] += 1
                if len(report["text"].splitlines()) >= 15:
                    counts[("answerable", "long")] += 1
                heading = entry["heading"]
                if len(heading) > 30 and heading in report["text"]:
                    warnings.append(f"{where} report {index}: contains the heading verbatim")
            if langs != LANGS:
                errors.append(f"{where}: needs at least one en and one zh report (has {sorted(langs)})")
            per_doc[f"{collection}/{doc}"] += 1

    unanswerable = HERE / "unanswerable.jsonl"
    if unanswerable.exists():
        for number, row in load_lines(unanswerable, errors):
            where = f"unanswerable.jsonl:{number}"
            if check_report(row, where, errors):
                remember(row["text"], where)
                counts[("unanswerable", row["lang"], row["shape"])] += 1
                if len(row["text"].splitlines()) >= 15:
                    counts[("unanswerable", "long")] += 1

    # Near copies: word sets (a Chinese character counts as a word) overlapping by more than 80 %.
    word_sets = [(where, words(text)) for text, where in ((t, w) for t, w in seen_texts.items())]
    for (where_a, a), (where_b, b) in itertools.combinations(word_sets, 2):
        if a and len(a & b) / len(a | b) > 0.8:
            errors.append(f"{where_a}: near copy of {where_b}")

    bank_texts = {}
    for path in sorted((ROOT / "ingest" / "questions").glob("**/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for question in json.loads(line)["questions"]:
                bank_texts[normalized(question)] = path.name
    bank_word_sets = [words(question) for question in bank_texts]
    near_bank = 0
    for key, where in seen_texts.items():
        if key in bank_texts:
            errors.append(f"{where}: copies a question of the bank ({bank_texts[key]})")
        report_words = words(key)
        if any(report_words and len(report_words & b) / len(report_words | b) > 0.8 for b in bank_word_sets):
            near_bank += 1
    print(f"reports overlapping a bank question by more than 80 % (word sets): {near_bank}")

    expected_docs = collections.Counter(f"{e['collection']}/{e['doc']}" for e in entries.values())
    for doc, number in sorted(per_doc.items()):
        if number != expected_docs[doc]:
            errors.append(f"{doc}: {number} of its {expected_docs[doc]} entries have reports")
    if args.complete:
        missing = set(entries) - covered
        if missing:
            errors.append(f"{len(missing)} entries without reports")
        total_unanswerable = sum(v for k, v in counts.items() if k[0] == "unanswerable" and len(k) == 3)
        if total_unanswerable < 200:
            errors.append(f"only {total_unanswerable} unanswerable reports")

    for part in ("answerable", "unanswerable"):
        total = sum(v for k, v in counts.items() if k[0] == part and len(k) == 3)
        if not total:
            continue
        print(f"{part}: {total} reports" + (f" for {len(covered)} of {len(entries)} entries in {len(per_doc)} docs" if part == "answerable" else ""))
        for lang in sorted(LANGS):
            row = {shape: counts[(part, lang, shape)] for shape in sorted(SHAPES)}
            print(f"  {lang}: {sum(row.values()):4d}  " + "  ".join(f"{s} {n}" for s, n in row.items()))
        print(f"  reports of 15 lines or more: {counts[(part, 'long')]}")
    for warning in warnings:
        print("warning:", warning)
    for error in errors:
        print("error:", error)
    print(f"{len(errors)} errors, {len(warnings)} warnings")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
