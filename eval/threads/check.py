"""Check the invented thread corpus, its labels and eval/threads.jsonl; print the counts.

    python eval/threads/check.py            # consistency checks + counts (exit 1 on an error)
    python eval/threads/check.py --final    # also the minimum sizes the corpus was written to

What is checked:
- every file is valid JSON in the shape `gh issue list --json ...` / `gh pr list --json ...` writes;
- threads: URLs, dates in order, each (repo, number) once per export, the pull requests that closed
  an issue exist in that repository's PR export, name the issue back and were merged before it closed;
- labels.jsonl: one row per thread; every URL it names is a comment of that thread; a resolution
  by pull request names a PR that closed the issue; cleanup notices are never byte-identical;
- threads.jsonl: the fields, one split per thread, every expected thread exists and holds a
  resolution by the labels, `expected` is empty exactly for unanswerable reports, and no report
  copies a long stretch of its thread's prose (fenced logs and code are left out: a later report of
  the same error pastes the same program output).

It prints counts only (never a report's text), so it can be run without reading the eval set.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from difflib import SequenceMatcher
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
LABELS = HERE / "labels.jsonl"
QUERIES = HERE.parent / "threads.jsonl"
RENAMES = {"volcengine/verl": "verl-project/verl"}  # old name -> the repository's name today
ISSUE_KEYS = {"number", "title", "body", "comments", "labels", "state", "stateReason", "closedAt", "updatedAt",
              "url", "author", "closedByPullRequestsReferences"}
COMMENT_KEYS = {"author", "authorAssociation", "body", "createdAt", "url", "reactionGroups"}
PR_KEYS = {"number", "title", "body", "url", "mergedAt", "closingIssuesReferences"}
QUERY_KEYS = {"id", "split", "query", "kind", "lang", "expected"}
ASSOCIATIONS = {"OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE"}
KINDS = {"error", "question", "traceback", "unanswerable"}
BOTS = {"github-actions", "stale"}  # bot logins as gh (GraphQL) writes them, without "[bot]"
COPY_LIMIT = 100  # characters a report may share verbatim with its thread (error lines are shared)
MINIMUMS = {"threads": 220, "answerable": 70, "unanswerable": 25, "notice_threads": 40}
URL = re.compile(r"^https://github\.com/([^/]+/[^/]+)/(issues|pull)/(\d+)(?:#issuecomment-(\d+))?$")


class Problems(list):
    def add(self, where: str, what: str) -> None:
        self.append(f"{where}: {what}")


def canonical(url: str) -> str:
    match = URL.match(url or "")
    if not match:
        return url
    repo = RENAMES.get(match.group(1), match.group(1))
    return url.replace(f"github.com/{match.group(1)}/", f"github.com/{repo}/", 1)


def repo_of(url: str) -> str:
    match = URL.match(url or "")
    return RENAMES.get(match.group(1), match.group(1)) if match else ""


def load_json(path: Path, problems: Problems):
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.add(path.name, f"not valid JSON ({exc})")
        return None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        problems.add(path.name, "not a JSON array of objects")
        return None
    return data


def check_issue(item: dict, where: str, problems: Problems) -> None:
    missing = ISSUE_KEYS - item.keys()
    if missing:
        problems.add(where, f"missing {sorted(missing)}")
        return
    match = URL.match(item["url"])
    if not match or match.group(2) != "issues" or int(match.group(3)) != item["number"]:
        problems.add(where, f"bad url {item['url']}")
    if item["state"] not in ("OPEN", "CLOSED"):
        problems.add(where, f"state {item['state']}")
    if (item["state"] == "CLOSED") != bool(item["closedAt"]):
        problems.add(where, "closedAt does not match the state")
    if not isinstance(item["author"], dict) or not item["author"].get("login"):
        problems.add(where, "author without login")
    times = []
    for i, comment in enumerate(item["comments"]):
        missing = COMMENT_KEYS - comment.keys()
        if missing:
            problems.add(f"{where} comment {i}", f"missing {sorted(missing)}")
            continue
        if comment["authorAssociation"] not in ASSOCIATIONS:
            problems.add(f"{where} comment {i}", f"association {comment['authorAssociation']}")
        if not comment["url"].startswith(item["url"] + "#issuecomment-"):
            problems.add(f"{where} comment {i}", "url is not under the issue")
        if not str(comment["body"]).strip():
            problems.add(f"{where} comment {i}", "empty body")
        times.append(comment["createdAt"])
    if times != sorted(times):
        problems.add(where, "comments out of order")
    if item["closedAt"] and times and item["closedAt"] < times[-1]:
        problems.add(where, "closed before its last comment")
    if item["updatedAt"] < max([item["closedAt"] or ""] + times):
        problems.add(where, "updatedAt before the last event")


def read_corpus(problems: Problems):
    """threads[(repo, number)] -> list of (file, item); prs[repo][number] -> item."""
    threads, prs = defaultdict(list), defaultdict(dict)
    for path in sorted(CORPUS.glob("*.json")):
        data = load_json(path, problems)
        if data is None:
            continue
        if path.name.endswith("-prs.json"):
            for pr in data:
                missing = PR_KEYS - pr.keys()
                if missing:
                    problems.add(path.name, f"PR without {sorted(missing)}")
                    continue
                match = URL.match(pr["url"])
                if not match or match.group(2) != "pull" or int(match.group(3)) != pr["number"]:
                    problems.add(path.name, f"bad PR url {pr['url']}")
                    continue
                repo = repo_of(pr["url"])
                if pr["number"] in prs[repo]:
                    problems.add(path.name, f"PR #{pr['number']} twice")
                prs[repo][pr["number"]] = pr
            continue
        seen = set()
        for item in data:
            where = f"{path.name}#{item.get('number')}"
            check_issue(item, where, problems)
            if item.get("number") in seen:
                problems.add(where, "twice in one export")
            seen.add(item.get("number"))
            threads[(repo_of(item.get("url", "")), item.get("number"))].append((path.name, item))
    for (repo, number), copies in threads.items():
        if len({item["title"] for _, item in copies}) > 1:
            problems.add(f"{repo}#{number}", "exports disagree on the title")
        for name, item in copies:
            for ref in item["closedByPullRequestsReferences"]:
                pr = prs[repo].get(ref.get("number"))
                if pr is None:
                    problems.add(f"{name}#{number}", f"closing PR #{ref.get('number')} not in the PR export")
                elif number not in [r.get("number") for r in pr["closingIssuesReferences"]]:
                    problems.add(f"{name}#{number}", f"PR #{pr['number']} does not name the issue")
                elif item["closedAt"] and (pr["mergedAt"] or "~") > item["closedAt"]:
                    problems.add(f"{name}#{number}", f"closed before PR #{pr['number']} was merged")
                if ref.get("number") in {n for r, n in threads if r == repo}:
                    problems.add(f"{name}#{number}", f"PR #{ref.get('number')} has an issue's number")
    return threads, prs


def read_jsonl(path: Path, problems: Problems) -> list[dict]:
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        problems.add(path.name, f"cannot read ({exc})")
        return rows
    for i, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError:
            problems.add(f"{path.name}:{i}", "not JSON")
            continue
        rows.append(row)
    return rows


def comment_index(copies) -> dict[str, dict]:
    """canonical comment url -> comment, over every export holding the thread."""
    found = {}
    for _, item in copies:
        for comment in item["comments"]:
            found[canonical(comment["url"])] = comment
    return found


def check_labels(threads, prs, problems: Problems):
    labels = {}
    for row in read_jsonl(LABELS, problems):
        key = (row.get("repo"), row.get("number"))
        where = f"labels {key[0]}#{key[1]}"
        if key in labels:
            problems.add(where, "twice")
        labels[key] = row
        if key not in threads:
            problems.add(where, "no such thread in the corpus")
            continue
        if row.get("split") not in ("dev", "test"):
            problems.add(where, f"split {row.get('split')}")
        comments = comment_index(threads[key])
        res = row.get("resolution") or {}
        named = list(res.get("comment_urls") or []) + list(row.get("boilerplate") or []) \
            + list(row.get("confirmations") or []) + list(row.get("asks") or []) \
            + ([res["answers"]] if res.get("answers") else [])
        for url in named:
            if canonical(url) not in comments:
                problems.add(where, f"names a comment that is not in the thread: {url}")
        if bool(res.get("kinds")) != bool(row.get("has_resolution")):
            problems.add(where, "has_resolution disagrees with the resolution kinds")
        if "comment" in (res.get("where") or []) and not res.get("comment_urls"):
            problems.add(where, "resolution in a comment without its url")
        if res.get("pr"):
            number = res["pr"]["number"]
            closing = {ref.get("number") for _, item in threads[key] for ref in item["closedByPullRequestsReferences"]}
            if number not in closing or number not in prs[key[0]]:
                problems.add(where, f"resolution PR #{number} did not close the issue")
        if "short-answer" in (res.get("kinds") or []) and not res.get("answers"):
            problems.add(where, "a short answer without the question it answers")
    for key in threads:
        if key not in labels:
            problems.add(f"{key[0]}#{key[1]}", "thread without labels")
    return labels


def notice_bodies(threads, labels) -> list[tuple[str, str, str]]:
    """(thread, author, body) of every cleanup notice a person (not a bot) posted."""
    found = []
    for key, row in labels.items():
        if key not in threads:
            continue
        comments = comment_index(threads[key])
        for url in row.get("boilerplate") or []:
            comment = comments.get(canonical(url))
            if comment and comment["author"]["login"] not in BOTS:
                found.append((f"{key[0]}#{key[1]}", comment["author"]["login"], comment["body"]))
    return found


def check_notices(threads, labels, problems: Problems) -> list:
    notices = notice_bodies(threads, labels)
    by_body = defaultdict(list)
    for where, _, body in notices:
        by_body[body].append(where)
    for places in by_body.values():
        if len(places) > 1:
            problems.add(", ".join(places), "byte-identical cleanup notices")
    # a triage account's comments never hold a fix (a maintainer's one-line close is boilerplate too,
    # but the same maintainer fixes other threads, so only the triage accounts are held to this)
    triage = {f"{r}#{n}" for (r, n), row in labels.items() if "triage-notice" in (row.get("shapes") or [])}
    accounts = {author for where, author, _ in notices if where in triage}
    for key, row in labels.items():
        fixes = {canonical(u) for u in (row.get("resolution") or {}).get("comment_urls") or []}
        for url, comment in comment_index(threads.get(key, [])).items():
            if comment["author"]["login"] in accounts and url in fixes:
                problems.add(f"{key[0]}#{key[1]}", "a cleanup account's comment is labelled as the fix")
    return notices


FENCE = re.compile(r"```.*?(```|$)", re.S)


def thread_prose(copies) -> str:
    """The thread's own words: title, body and comments without their fenced logs and code, which a
    later report of the same error shares legitimately (program output is nobody's text)."""
    parts = []
    for _, item in copies[:1]:
        parts.append(item["title"])
        parts.append(FENCE.sub(" ", item["body"] or ""))
        parts += [FENCE.sub(" ", c["body"]) for c in item["comments"]]
    return "\n".join(parts)


def longest_shared(a: str, b: str) -> int:
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.find_longest_match(0, len(a), 0, len(b)).size


def check_queries(threads, labels, problems: Problems) -> list[dict]:
    rows = read_jsonl(QUERIES, problems)
    ids, split_of_thread = set(), {}
    for row in rows:
        where = f"threads.jsonl {row.get('id')}"
        if set(row) != QUERY_KEYS:
            problems.add(where, f"fields {sorted(row)}")
            continue
        if not re.fullmatch(r"thr-q\d{3}", row["id"]) or row["id"] in ids:
            problems.add(where, "bad or repeated id")
        ids.add(row["id"])
        if row["split"] not in ("dev", "test") or row["kind"] not in KINDS or row["lang"] not in ("en", "zh"):
            problems.add(where, "bad split, kind or lang")
        if (row["kind"] == "unanswerable") != (row["expected"] == []):
            problems.add(where, "expected must be [] exactly for unanswerable reports")
        if not str(row["query"]).strip():
            problems.add(where, "empty query")
        for exp in row["expected"]:
            key = (exp.get("repo"), exp.get("number"))
            if key not in threads:
                problems.add(where, f"expects {key[0]}#{key[1]}, not in the corpus")
                continue
            label = labels.get(key) or {}
            if not label.get("has_resolution"):
                problems.add(where, f"expects {key[0]}#{key[1]}, which holds no resolution")
            if label.get("split") != row["split"]:
                problems.add(where, f"{key[0]}#{key[1]} is labelled {label.get('split')}")
            if split_of_thread.setdefault(key, row["split"]) != row["split"]:
                problems.add(where, f"{key[0]}#{key[1]} is expected in both splits")
            shared = longest_shared(row["query"], thread_prose(threads[key]))
            if shared > COPY_LIMIT:
                problems.add(where, f"shares {shared} characters verbatim with {key[0]}#{key[1]}")
    return rows


def counts(threads, labels, queries, notices, prs) -> dict:
    by_repo = Counter(repo for repo, _ in threads)
    shapes, langs, splits, kinds = Counter(), Counter(), Counter(), Counter()
    exports = Counter()
    for key, row in labels.items():
        shapes.update(row.get("shapes") or [])
        langs[(key[0], row.get("lang"))] += 1
        splits[row.get("split")] += 1
        kinds.update((row.get("resolution") or {}).get("kinds") or ["none"])
        exports[row.get("export")] += 1
    notice_langs = Counter()
    triage = {f"{r}#{n}" for (r, n), row in labels.items() if "triage-notice" in (row.get("shapes") or [])}
    for where, _, body in notices:
        if where not in triage:
            continue
        has_zh = bool(re.search(r"[\u4e00-\u9fff]", body))
        has_en = len(re.findall(r"\b(the|and|this|is|for|with|no|of)\b", body, re.I)) >= 5
        notice_langs["both" if has_zh and has_en else "zh" if has_zh else "en"] += 1
    q = Counter()
    for row in queries:
        answerable = "answerable" if row["expected"] else "unanswerable"
        q[(row["split"], answerable)] += 1
        q[("lang", row["lang"])] += 1
        q[("kind", row["kind"])] += 1
        for exp in row["expected"][:1]:
            q[("repo", exp["repo"])] += 1
    return {"threads": sum(by_repo.values()), "by_repo": dict(by_repo), "exports": dict(exports),
            "prs": {repo: len(v) for repo, v in prs.items()},
            "shapes": dict(sorted(shapes.items())), "thread_lang": {f"{r} {lg}": n for (r, lg), n in sorted(langs.items())},
            "label_split": dict(splits), "resolution_kinds": dict(kinds),
            "notice_threads": sum("triage-notice" in (row.get("shapes") or []) for row in labels.values()),
            "notice_lang": dict(notice_langs),
            "queries": len(queries),
            "answerable": sum(n for (s, a), n in q.items() if a == "answerable" and s in ("dev", "test")),
            "unanswerable": sum(n for (s, a), n in q.items() if a == "unanswerable" and s in ("dev", "test")),
            "query_split": {f"{s} {a}": n for (s, a), n in sorted(q.items()) if s in ("dev", "test")},
            "query_lang": {k[1]: n for k, n in q.items() if k[0] == "lang"},
            "query_kind": {k[1]: n for k, n in q.items() if k[0] == "kind"},
            "answerable_by_repo": {k[1]: n for k, n in q.items() if k[0] == "repo"}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--final", action="store_true", help="also require the corpus's minimum sizes")
    args = parser.parse_args(argv)
    problems = Problems()
    threads, prs = read_corpus(problems)
    labels = check_labels(threads, prs, problems)
    notices = check_notices(threads, labels, problems)
    queries = check_queries(threads, labels, problems)
    figures = counts(threads, labels, queries, notices, prs)
    print(json.dumps(figures, ensure_ascii=False, indent=1))
    if args.final:
        for name, least in MINIMUMS.items():
            if figures[name] < least:
                problems.add("sizes", f"{name} {figures[name]} < {least}")
    for problem in problems:
        print("PROBLEM", problem, file=sys.stderr)
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
