"""Assign dev/test splits to a blind eval set in place, and check the file.

    python eval/split_set.py official          # rewrite the "split" field of every item (idempotent)
    python eval/split_set.py official --check  # validate the file and print counts (writes nothing)
    python eval/split_set.py issues --check    # the same for eval/issues.jsonl
    python eval/split_set.py written_reports --check  # the same for eval/written_reports.jsonl
    python eval/split_set.py --write-sections  # rewrite OFFICIAL-SECTIONS.md from index/default

The sets: `official` (eval/official.jsonl, the official pages, OFFICIAL.md), `issues`
(eval/issues.jsonl, problems users reported in the frameworks' GitHub issues, ISSUES.md) and
`written_reports` (eval/written_reports.jsonl, report-shaped queries written blind from the docs
of both collections, WRITTEN_REPORTS.md; each item also names its `shape`).

Split rule (by section, not by query), with each set's own salt:
  * answerable items are keyed "<doc>:<leaf heading>" of their FIRST expected entry and
    stratified by that doc (official; issues: one stratum); within a stratum, sections are
    visited in order of sha256(salt + key), and each section (with all its items) goes to
    whichever split currently holds fewer of the stratum's queries (ties go to dev);
  * unanswerable items are stratified by lang, ordered by sha256(salt + id) and alternated
    dev/test, starting with dev.

The check reads the section listing eval/OFFICIAL-SECTIONS.md (every section of the official
pages as rlhelper parses them, with their twins; the sets were written against it) and
eval/SECTIONS.md for seed documents. Only --write-sections needs rlhelper installed.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = HERE / "SECTIONS.md"
ENTRIES = HERE / "OFFICIAL-SECTIONS.md"
KINDS = {"error", "question", "traceback", "unanswerable"}
LANGS = {"en", "zh"}
FIELDS = {"id", "split", "query", "kind", "lang", "expected"}


@dataclass(frozen=True)
class EvalSet:
    path: Path
    salt: str
    id_prefix: str
    extra_fields: frozenset = frozenset()
    covers_listing: bool = False  # written to give every answerable official section an item
    stratify_by_doc: bool = True
    traceback_lines: tuple[int, int] = (5, 26)  # a pasted report's log may run longer


SETS = {
    "official": EvalSet(HERE / "official.jsonl", "rlhelper-eval-official-v1:", "off-q", covers_listing=True),
    "issues": EvalSet(HERE / "issues.jsonl", "rlhelper-eval-issues-v1:", "iss-q", frozenset({"source"}),
                      stratify_by_doc=False),  # 29 sections over 11 pages, most with one item
    "written_reports": EvalSet(HERE / "written_reports.jsonl", "rlhelper-eval-written-reports-v1:", "wr-q",
                               frozenset({"shape"}), traceback_lines=(5, 64),
                               stratify_by_doc=False),  # 114 sections over 24 pages, 10 pages with one item
}
SHAPES = {"issue", "config", "log", "chat", "traceback", "question"}


def h(s: str, salt: str) -> str:
    return hashlib.sha256((salt + s).encode("utf-8")).hexdigest()


def ws(s: str) -> str:
    return " ".join(s.split())


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def assign(items: list[dict], spec: EvalSet) -> None:
    # answerable: group items by section key, stratified by doc of the first expected entry
    # (or all in one stratum: a set with many one-item docs would send them all to dev)
    by_doc: dict[str, OrderedDict[str, list[dict]]] = defaultdict(OrderedDict)
    unans: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        if it["expected"]:
            first = it["expected"][0]
            key = f'{first["doc"]}:{first["heading"]}'
            by_doc[first["doc"] if spec.stratify_by_doc else ""].setdefault(key, []).append(it)
        else:
            unans[it["lang"]].append(it)
    for doc in sorted(by_doc):
        held = {"dev": 0, "test": 0}
        for key in sorted(by_doc[doc], key=lambda k: h(k, spec.salt)):
            group = by_doc[doc][key]
            side = "dev" if held["dev"] <= held["test"] else "test"
            for it in group:
                it["split"] = side
            held[side] += len(group)
    for lang in sorted(unans):
        for i, it in enumerate(sorted(unans[lang], key=lambda x: h(x["id"], spec.salt))):
            it["split"] = "dev" if i % 2 == 0 else "test"


def write(items: list[dict], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- check

def read_listing():
    """(doc, heading) -> {"lang", "answerable", "twins"} from the official listing."""
    out: dict[tuple[str, str], dict] = {}
    doc = None
    for line in ENTRIES.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^## (\S+)\s+\(", line)
        if m:
            doc = m.group(1)
            continue
        m = re.match(r"^- lines \d+-\d+ lang=(\w+) (answerable|NOT-answerable\([^)]*\)): (.*)$", line)
        if not (m and doc):
            continue
        rest = m.group(3)
        twins = []
        t = re.search(r"\s+\[twin of: (.*)\]$", rest)
        if t:
            rest = rest[: t.start()]
            twins = [tuple(ws(y) for y in x.split(" > ", 1)) for x in re.split(r", (?=[\w./-]+ > )", t.group(1))]
        leaf = ws(rest.split(" › ")[-1])
        rec = out.setdefault((doc, leaf), {"lang": m.group(1), "answerable": False, "twins": set()})
        rec["answerable"] |= m.group(2) == "answerable"
        rec["twins"].update(twins)
    return out


def read_seed_sections():
    out: dict[tuple[str, str], str] = {}
    doc = None
    for line in SECTIONS.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^## \d+: `([^`]+)`", line)
        if m:
            doc = m.group(1)
            continue
        m = re.match(r"^\| \d{3}-\d+ \| \d+ \| (.*?) \| [a-z]", line)
        if m and doc:
            out[(doc, ws(m.group(1)))] = "zh" if doc.startswith("001_") else "en"
    return out


def doc_lang(doc: str, listing) -> str:
    if doc.endswith(".txt"):
        return "zh" if doc.startswith("001_") else "en"
    langs = {v["lang"] for (d, _), v in listing.items() if d == doc}
    return langs.pop() if len(langs) == 1 else "en"


def section_langs(doc: str, heading: str, listing, seeds) -> set[str]:
    """Languages in which this section (with its twins) exists."""
    if doc.endswith(".txt"):
        return {seeds[(doc, heading)]}
    rec = listing[(doc, heading)]
    return {rec["lang"]} | {doc_lang(t, listing) for t, _ in rec["twins"]}


def check(items: list[dict], spec: EvalSet) -> int:
    listing = read_listing()
    seeds = read_seed_sections()
    errors: list[str] = []
    ids = Counter(it.get("id") for it in items)
    for k, n in ids.items():
        if n > 1:
            errors.append(f"duplicate id {k}")
    for n, it in enumerate(items, 1):
        iid = it.get("id")
        if not FIELDS <= set(it) <= FIELDS | spec.extra_fields:
            errors.append(f"{iid}: fields {sorted(it)}")
        if iid != f"{spec.id_prefix}{n:03d}":
            errors.append(f"{iid}: expected id {spec.id_prefix}{n:03d} (file order)")
        if it.get("kind") not in KINDS:
            errors.append(f"{iid}: bad kind {it.get('kind')}")
        if it.get("lang") not in LANGS:
            errors.append(f"{iid}: bad lang {it.get('lang')}")
        if it.get("split") not in {"dev", "test"}:
            errors.append(f"{iid}: bad split {it.get('split')}")
        if not isinstance(it.get("query"), str) or not it["query"].strip():
            errors.append(f"{iid}: empty query")
        exp = it.get("expected")
        if (it.get("kind") == "unanswerable") != (exp == []):
            errors.append(f"{iid}: unanswerable <=> expected empty violated")
        seen = set()
        for e in exp or []:
            key = (e["doc"], ws(e["heading"]))
            if key in seen:
                errors.append(f"{iid}: duplicate expected {key}")
            seen.add(key)
            if e["doc"].endswith(".txt"):
                if key not in seeds:
                    errors.append(f"{iid}: seed section not in SECTIONS.md: {key}")
            elif key not in listing:
                errors.append(f"{iid}: section not in listing: {key}")
            elif not listing[key]["answerable"]:
                errors.append(f"{iid}: section not answerable: {key}")
            if it.get("kind") == "question" and e["heading"].lower() in it["query"].lower():
                errors.append(f"{iid}: question contains its expected heading {e['heading']!r}")
        if "shape" in spec.extra_fields and it.get("shape") not in SHAPES:
            errors.append(f"{iid}: bad shape {it.get('shape')}")
        if it.get("kind") == "traceback":
            nl = it["query"].count("\n") + 1
            low, high = spec.traceback_lines
            if not low <= nl <= high:
                errors.append(f"{iid}: traceback has {nl} lines")
    # the split must be what the rule gives
    snapshot = [it.get("split") for it in items]
    probe = [dict(it) for it in items]
    assign(probe, spec)
    drift = [it["id"] for it, s in zip(probe, snapshot, strict=True) if it["split"] != s]
    if drift:
        errors.append(f"split differs from the rule for {len(drift)} items (run without --check): {drift[:5]}")

    # ---- counts
    def table(title, keyf):
        c = Counter((keyf(it), it["split"]) for it in items)
        rows = sorted({k for k, _ in c})
        print(f"\n{title:<24} {'dev':>5} {'test':>5} {'total':>6}")
        for r in rows:
            print(f"{str(r):<24} {c[(r, 'dev')]:>5} {c[(r, 'test')]:>5} {c[(r, 'dev')] + c[(r, 'test')]:>6}")

    print(f"{len(items)} items")
    table("kind", lambda it: it["kind"])
    table("lang", lambda it: it["lang"])
    table("first expected doc", lambda it: it["expected"][0]["doc"] if it["expected"] else "(unanswerable)")
    table("lang x kind", lambda it: f'{it["lang"]}/{it["kind"]}')
    if "shape" in spec.extra_fields:
        table("shape", lambda it: it["shape"])
        table("first expected collection", lambda it: ("seeds" if it["expected"][0]["doc"].endswith(".txt")
                                                       else "official") if it["expected"] else "(unanswerable)")
    table("split", lambda it: "all")
    if "source" in spec.extra_fields:
        table("source repository", lambda it: "/".join(it.get("source", "").split("/")[3:5]) or "(none)")

    zh_to_en = en_to_zh = 0
    for it in items:
        if not it["expected"]:
            continue
        try:
            langs = [section_langs(e["doc"], ws(e["heading"]), listing, seeds) for e in it["expected"]]
        except KeyError:
            continue
        if it["lang"] == "zh" and all(ls == {"en"} for ls in langs):
            zh_to_en += 1
        if it["lang"] == "en" and all(ls == {"zh"} for ls in langs):
            en_to_zh += 1
    multi = sum(1 for it in items if len(it["expected"]) > 1)
    print(f"\ncross-lingual: zh queries whose expected sections are all English with no Chinese twin: {zh_to_en}")
    print(f"cross-lingual: en queries whose expected sections are all Chinese with no English twin: {en_to_zh}")
    print(f"items listing more than one section: {multi}; "
          f"listing a seed section: {sum(1 for it in items if any(e['doc'].endswith('.txt') for e in it['expected']))}")
    sections = {(e["doc"], e["heading"]) for it in items for e in it["expected"][:1]}
    print(f"distinct first-expected sections: {len(sections)}")
    if spec.covers_listing:
        print_coverage(items, listing)
    if errors:
        print(f"\n{len(errors)} ERROR(S):")
        for e in errors:
            print("  " + e)
        return 1
    print("\nOK")
    return 0


def print_coverage(items: list[dict], listing) -> None:
    """Answerable sections of the listing that no item expects, directly or through a twin."""
    answerable = {k for k, v in listing.items() if v["answerable"]}
    covered = {(e["doc"], ws(e["heading"])) for it in items for e in it["expected"]}
    twin_covered = {k for k in answerable - covered
                    if set(listing[k]["twins"]) & covered
                    or any(k in set(listing[c]["twins"]) for c in covered if c in listing)}
    missing = sorted(answerable - covered - twin_covered)
    print(f"answerable listed sections expected only through a twin: {len(twin_covered)}")
    print(f"answerable listed sections never expected (nor a twin): {len(missing)}")
    for m in missing:
        print(f"  - {m[0]} :: {m[1]}")


def write_sections(path: Path = ENTRIES) -> None:
    """The listing the set is checked against, from the default index (seeds + official)."""
    from rlhelper import Helper

    out = ["# Sections of the `official` collection as rlhelper parses them\n",
           "Doc, line range, language, whether the section answers anything, heading path, and its twins",
           "(the same section in another page). An eval item's `heading` is the last element of the path.",
           "Written by `python eval/split_set.py --write-sections` from index/default."]
    doc = None
    entries = (e for e in Helper.load().entries if e.collection == "official")
    for e in sorted(entries, key=lambda e: (e.doc, e.line_start)):
        if e.doc != doc:
            doc = e.doc
            out.append(f"\n## {e.doc}  (framework {e.framework}, title: {e.doc_title})\n")
        twins = ", ".join(f"{t['doc']} > {t['heading']}" for t in e.twins)
        status = "answerable" if e.answerable else "NOT-answerable(intro/toc)"
        out.append(f"- lines {e.line_start}-{e.line_end} lang={e.lang} {status}: {' › '.join(e.breadcrumb)}"
                   + (f"  [twin of: {twins}]" if twins else ""))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if "--write-sections" in argv:
        write_sections()
        return 0
    names = [a for a in argv if not a.startswith("--")]
    if len(names) != 1 or names[0] not in SETS:
        print(f"usage: python eval/split_set.py {{{'|'.join(SETS)}}} [--check] | --write-sections", file=sys.stderr)
        return 2
    spec = SETS[names[0]]
    items = load(spec.path)
    if "--check" in argv:
        return check(items, spec)
    assign(items, spec)
    write(items, spec.path)
    print(f"split assigned: {Counter(it['split'] for it in items)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
