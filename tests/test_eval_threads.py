"""eval/threads: the invented thread corpus, its labels and eval/threads.jsonl pass eval/threads/check.py,
and the check catches what it is there to catch."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

THREADS = Path(__file__).resolve().parent.parent / "eval" / "threads"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("threads_check", THREADS / "check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["threads_check"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def copy(check, tmp_path, monkeypatch):
    """A writable copy of the corpus, labels and set, which the check then reads."""
    shutil.copytree(THREADS / "corpus", tmp_path / "corpus")
    shutil.copy(THREADS / "labels.jsonl", tmp_path / "labels.jsonl")
    shutil.copy(THREADS.parent / "threads.jsonl", tmp_path / "threads.jsonl")
    monkeypatch.setattr(check, "CORPUS", tmp_path / "corpus")
    monkeypatch.setattr(check, "LABELS", tmp_path / "labels.jsonl")
    monkeypatch.setattr(check, "QUERIES", tmp_path / "threads.jsonl")
    return tmp_path


def problems(check, capsys) -> list[str]:
    check.main([])
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("PROBLEM")]


def test_the_committed_corpus_passes_with_its_minimum_sizes(check, capsys):
    assert check.main(["--final"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["threads"] >= 220 and figures["notice_threads"] >= 40
    assert set(figures["by_repo"]) == {"verl-project/verl", "THUDM/slime", "NovaSky-AI/SkyRL", "RLinf/RLinf"}


def test_a_copied_cleanup_notice_is_caught(check, copy, capsys):
    labels = [json.loads(line) for line in (copy / "labels.jsonl").read_text(encoding="utf-8").splitlines()]
    first, second = [row for row in labels if "triage-notice" in row["shapes"] and row["repo"] == "verl-project/verl"][:2]
    path = copy / "corpus" / "verl.json"
    if first["export"].startswith("verl-volcengine"):
        path = copy / "corpus" / "verl-volcengine-2025-09.json"
    issues = json.loads(path.read_text(encoding="utf-8"))
    comments = {c["url"]: c for item in issues for c in item["comments"]}
    notice_one = comments.get(first["boilerplate"][0])
    notice_two = comments.get(second["boilerplate"][0])
    assert notice_one and notice_two and notice_one["body"] != notice_two["body"]
    notice_two["body"] = notice_one["body"]
    path.write_text(json.dumps(issues), encoding="utf-8")
    assert any("byte-identical" in line for line in problems(check, capsys))


def test_a_report_expecting_a_thread_without_a_resolution_is_caught(check, copy, capsys):
    labels = [json.loads(line) for line in (copy / "labels.jsonl").read_text(encoding="utf-8").splitlines()]
    bare = next(row for row in labels if not row["has_resolution"])
    rows = [json.loads(line) for line in (copy / "threads.jsonl").read_text(encoding="utf-8").splitlines()]
    answerable = next(row for row in rows if row["expected"] and row["split"] == bare["split"])
    answerable["expected"].append({"repo": bare["repo"], "number": bare["number"]})
    (copy / "threads.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                        encoding="utf-8")
    assert any("holds no resolution" in line for line in problems(check, capsys))


def test_a_label_naming_a_missing_comment_is_caught(check, copy, capsys):
    lines = (copy / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    fixed = next(row for row in rows if row["resolution"]["comment_urls"])
    fixed["resolution"]["comment_urls"][0] += "0"
    (copy / "labels.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                       encoding="utf-8")
    assert any("not in the thread" in line for line in problems(check, capsys))
