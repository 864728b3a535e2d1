"""`rlhelper eval --write-baseline`: the regression gate's baselines are written by the command they record."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from rlhelper.cli import main as cli_group
from rlhelper.measure import baseline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cli import WAKE_UP, WAKE_UP_HEADING, rlhelper  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ANSWER = [{"doc": "000_17cc8c75aeb7db0e.txt", "heading": WAKE_UP_HEADING}]
ITEMS = [
    {"id": "t", "split": "test", "query": WAKE_UP, "kind": "error", "lang": "en", "expected": ANSWER},
    {"id": "u", "split": "test", "query": "What is the best recipe for sourdough bread with rye flour?",
     "kind": "unanswerable", "lang": "en", "expected": []},
    {"id": "d", "split": "dev", "query": WAKE_UP, "kind": "error", "lang": "en", "expected": ANSWER},
]


def test_the_command_is_the_default_one_for_the_default_files():
    assert baseline.baseline_command(baseline.DEFAULT_EVAL_FILE, baseline.DEFAULT_BASELINE, ["seeds"]) == (
        "rlhelper eval --write-baseline")
    assert baseline.baseline_command(REPO / "eval" / "issues.jsonl", REPO / "eval" / "baseline-issues.json",
                                     ["seeds", "official"]) == (
        "rlhelper eval --write-baseline --set eval/issues.jsonl --baseline eval/baseline-issues.json "
        "--collection seeds --collection official")


@pytest.mark.parametrize("path", sorted((REPO / "eval").glob("baseline*.json")), ids=lambda p: p.name)
def test_each_shipped_baseline_records_a_command_that_writes_it_again(path, monkeypatch):
    monkeypatch.chdir(REPO)  # the commands name repository-relative files
    stored = json.loads(path.read_text(encoding="utf-8"))
    words = shlex.split(stored["command"])
    assert words[:3] == ["rlhelper", "eval", "--write-baseline"]
    # The CLI accepts it, and it names this set, this file and these collections.
    params = cli_group.get_command(None, "eval").make_context("eval", words[2:]).params
    assert params["write_baseline"]
    assert Path(params["eval_set"] or baseline.DEFAULT_EVAL_FILE).name == stored["eval_file"]
    assert (REPO / (params["baseline_file"] or baseline.DEFAULT_BASELINE)).resolve() == path.resolve()
    assert list(params["collection"] or baseline.DEFAULT_COLLECTIONS) == stored["collections"]


def test_write_baseline_measures_the_test_split_and_records_its_command(seeds_index, tmp_path):
    eval_file, target = tmp_path / "set.jsonl", tmp_path / "gate" / "mine.json"
    eval_file.write_text("".join(json.dumps(i) + "\n" for i in ITEMS), encoding="utf-8")

    done = rlhelper("eval", "--set", str(eval_file), "--index", str(seeds_index), "--report", str(tmp_path),
                    "--write-baseline", "--baseline", str(target))
    assert done.returncode == 0, done.stderr
    assert f"baseline written: {target}" in done.stderr
    written = json.loads(target.read_text(encoding="utf-8"))
    assert (written["split"], written["mode"], written["n"]) == ("test", "hybrid", 2)  # the dev item left out
    assert written["eval_file"] == "set.jsonl" and written["collections"] == ["seeds"]
    assert set(written["metrics"]) == set(baseline.GATED_METRICS) and written["metrics"]["recall@1"] == 1.0
    assert written["command"] == f"rlhelper eval --write-baseline --set {eval_file} --baseline {target}"


def test_write_baseline_refuses_what_the_gate_does_not_measure(tmp_path):
    dev = rlhelper("eval", "--split", "dev", "--write-baseline")
    assert dev.returncode == 2 and "--write-baseline measures the test split" in dev.stderr
    alone = rlhelper("eval", "--baseline", str(tmp_path / "b.json"))
    assert alone.returncode == 2 and "add --write-baseline" in alone.stderr
    assert not (tmp_path / "b.json").exists()
