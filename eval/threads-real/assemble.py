"""Assemble the writers' re-told real threads into one corpus, labels and reports, with splits.

python eval/threads-real/assemble.py STAGING OUT
STAGING holds one folder per writer (threads.jsonl, labels.jsonl, reports.jsonl: the writers' drafts, with real
logins, not kept in the repository); it also needs ../shared/holdout-sources.txt and STAGING/eval-sources.txt (the
`source` URLs of eval/issues.jsonl). Writes OUT/corpus/<repo>.json (gh issue list shape), OUT/labels.jsonl and
OUT/reports.jsonl (copied to eval/threads_real.jsonl). Kept as the record of how eval/threads-real/ was made.
- logins are pseudonymised consistently (bots keep theirs); @mentions follow;
- volcengine/verl is named verl-project/verl; duplicates by URL keep the first;
- splits are by thread group: a report's expected threads and the report share one split.
"""
import hashlib
import json
import re
import sys
from pathlib import Path

SRC = Path(sys.argv[1]) / "threads"
OUT = Path(sys.argv[2])
SHARED = Path(__file__).resolve().parents[3] / "shared"
BOTS = {"github-actions", "stale", "dependabot", "copilot"}
HELD = {line.strip().lower() for line in open(SHARED / "holdout-sources.txt") if line.strip() and not line.startswith("#")}
EVAL_SOURCES = {line.strip() for line in open(SRC.parent / "eval-sources.txt") if line.strip()}


def canon(url):
    return url.replace("github.com/volcengine/verl/", "github.com/verl-project/verl/").split("#")[0].rstrip("/")


def key(url):
    m = re.search(r"github\.com/([^/]+/[^/]+)/issues/(\d+)", canon(url))
    return f"{m.group(1)}#{m.group(2)}"


def pseudo(login):
    if not login or login.lower().replace("[bot]", "") in BOTS or login.endswith("[bot]"):
        return login
    return "user-" + hashlib.sha1(login.lower().encode()).hexdigest()[:8]


def mention_sub(text, logins):
    for login in sorted(logins, key=len, reverse=True):
        text = re.sub(rf"@{re.escape(login)}\b", "@" + pseudo(login), text)
    return text


def load(name):
    rows = []
    for f in sorted(SRC.glob(f"*/{name}")):
        for i, line in enumerate(open(f, encoding="utf-8")):
            if line.strip():
                try:
                    rows.append((f.parent.name, json.loads(line)))
                except json.JSONDecodeError as e:
                    print(f"skip {f}:{i + 1}: {e}", file=sys.stderr)
    return rows


def held(url):
    k = key(url).lower()
    return k in HELD or k.replace("verl-project/verl", "volcengine/verl") in HELD


def bucket(k):
    return "dev" if int(hashlib.sha1(k.encode()).hexdigest(), 16) % 2 == 0 else "test"


threads, labels = {}, {}
for _helper, t in load("threads.jsonl"):
    k = key(t["url"])
    if held(t["url"]) or canon(t["url"]) in EVAL_SOURCES or k in threads:
        continue
    t["url"] = canon(t["url"])
    threads[k] = t
for _helper, lab in load("labels.jsonl"):
    k = key(lab["url"])
    if k in threads and k not in labels:
        labels[k] = lab
threads = {k: t for k, t in threads.items() if k in labels}

logins = set()
for t in threads.values():
    logins.add(t["author"]["login"])
    logins.update(c["author"]["login"] for c in t.get("comments", []))
for t in threads.values():
    t["author"]["login"] = pseudo(t["author"]["login"])
    t["body"] = mention_sub(t.get("body") or "", logins)
    for i, c in enumerate(t.get("comments", [])):
        c["author"]["login"] = pseudo(c["author"]["login"])
        c["body"] = mention_sub(c.get("body") or "", logins)
        if not c.get("url") or "#comment-" in c["url"] or "issuecomment" not in c["url"]:
            c["url"] = f"{t['url']}#issuecomment-{900000000 + int(t['number']) * 100 + i}"
        else:
            c["url"] = canon(c["url"]) + "#" + c["url"].split("#", 1)[1]
        c.setdefault("id", "")
    t["number"] = int(t["number"])

# Splits: union-find over threads joined by a report.
parent = {k: k for k in threads}
def find(k):
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k
reports = []
for _helper, r in load("reports.jsonl"):
    src = r.get("source", "")
    if not src or held(src) or canon(src) in EVAL_SOURCES or key(src) in threads:
        continue
    exp = [f"{e['repo'].replace('volcengine/verl', 'verl-project/verl')}#{int(e['number'])}" for e in r.get("expected", [])]
    exp = [e for e in exp if e in threads and labels[e].get("has_resolution")]
    if r.get("expected") and not exp:
        continue  # its thread was dropped or holds no fix
    r["expected"] = [{"repo": e.split("#")[0], "number": int(e.split("#")[1])} for e in exp]
    if not exp:
        r["kind"] = "unanswerable"
    for a, b in zip(exp, exp[1:], strict=False):
        parent[find(a)] = find(b)
    reports.append(r)
seen_src = set()
out_reports = []
for r in reports:
    if canon(r["source"]) in seen_src:
        continue
    seen_src.add(canon(r["source"]))
    exp = [f"{e['repo']}#{e['number']}" for e in r["expected"]]
    r["split"] = bucket(find(exp[0])) if exp else bucket(key(r["source"]))
    r["source"] = canon(r["source"])
    # The writer's language tag is checked against the text: a report mostly in Han characters is zh.
    han = sum(1 for ch in r["query"] if "\u4e00" <= ch <= "\u9fff")
    r["lang"] = "zh" if han >= 10 else "en"
    out_reports.append(r)

(OUT / "corpus").mkdir(parents=True, exist_ok=True)
by_repo = {}
for k, t in threads.items():
    by_repo.setdefault(k.split("#")[0], []).append(t)
for old in (OUT / "corpus").glob("*.json"):
    old.unlink()
for repo, ts in by_repo.items():
    ts.sort(key=lambda t: t.get("updatedAt") or "", reverse=True)
    (OUT / "corpus" / f"{repo.split('/')[1].lower()}.json").write_text(json.dumps(ts, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
with open(OUT / "labels.jsonl", "w") as f:
    for k, lab in labels.items():
        if k not in threads:
            continue
        t = threads[k]
        comments = t.get("comments", [])
        def urls(idx, comments=comments):
            return [comments[i]["url"] for i in idx if isinstance(i, int) and 0 <= i < len(comments)]

        res = lab.get("resolution") or {}
        row = {"repo": k.split("#")[0], "number": int(k.split("#")[1]), "url": t["url"], "split": bucket(find(k)),
               "lang": lab.get("lang"), "state": lab.get("state"), "state_reason": lab.get("state_reason", ""),
               "partial": bool(lab.get("partial")), "has_resolution": bool(lab.get("has_resolution")),
               "resolution": {"kinds": res.get("kinds", []), "comments": res.get("comments", []),
                              "comment_urls": urls(res.get("comments", [])), "in_body": bool(res.get("in_body")),
                              "pr": res.get("pr")},
               "confirmations": urls(lab.get("confirmations", [])), "boilerplate": urls(lab.get("boilerplate", [])),
               "triage_advice": urls(lab.get("triage_advice", [])), "asks": urls(lab.get("asks", [])),
               "duplicate_of": lab.get("duplicate_of"), "topic": lab.get("topic"), "fix": lab.get("fix")}
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
for i, r in enumerate(out_reports, 1):
    r["id"] = f"real-q{i:03d}"
with open(OUT / "reports.jsonl", "w") as f:
    for r in out_reports:
        f.write(json.dumps({k: r[k] for k in ("id", "split", "query", "kind", "lang", "expected", "source")}, ensure_ascii=False) + "\n")
ans = sum(1 for r in out_reports if r["expected"])
print(f"{len(threads)} threads ({sum(1 for lab in labels.values() if lab.get('has_resolution'))} with a fix), "
      f"{len(out_reports)} reports ({ans} answerable) -> {OUT}")
