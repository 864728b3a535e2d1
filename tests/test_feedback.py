"""feedback.py: votes in SQLite, changed/taken back in place, exported as JSON Lines."""

from __future__ import annotations

import io
import json
import sqlite3
import threading

import pytest

from rlhelper.measure import feedback
from rlhelper.measure.feedback import FeedbackStore


def test_default_file_is_under_the_data_dir(isolated_home):
    assert FeedbackStore().path == isolated_home / ".local" / "share" / "rlhelper" / "feedback.sqlite3"


def test_record_and_columns(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3")
    row = store.record("OOM in rollout", "Lower gpu_memory_utilization [1]", ["seeds/a#1", "seeds/b"], 1)
    with sqlite3.connect(store.path) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(feedback)")]
        values = conn.execute("SELECT * FROM feedback WHERE id = ?", (row,)).fetchone()
    assert cols == ["id", "time", "query", "answer", "cited_entry_ids", "vote", "comment"]
    assert values[2:] == ("OOM in rollout", "Lower gpu_memory_utilization [1]", '["seeds/a#1", "seeds/b"]', 1, None)
    assert values[1].endswith("+00:00")  # UTC, ISO 8601


def test_the_file_never_appears_without_its_table(tmp_path, monkeypatch):
    """A reader polling the file (the web tests, `feedback export` while the server runs) must not find
    it created but empty: the flake of issue 29 read "no such table: feedback" in that window."""
    path = tmp_path / "f.sqlite3"
    seen: list[list[str]] = []
    connect = sqlite3.connect

    def watching(target, *args, **kwargs):
        if path.exists():  # what any other reader would find at this moment
            with connect(f"file:{path}?mode=ro", uri=True) as conn:
                seen.append([r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")])
        return connect(target, *args, **kwargs)

    monkeypatch.setattr(feedback.sqlite3, "connect", watching)
    FeedbackStore(path).record("q", "a", [], 1)
    assert seen and all("feedback" in tables for tables in seen), seen
    assert [p.name for p in tmp_path.iterdir()] == ["f.sqlite3"]  # the draft is gone


def test_two_first_writers_both_keep_their_votes(tmp_path):
    path = tmp_path / "f.sqlite3"
    stores = [FeedbackStore(path) for _ in range(8)]
    threads = [threading.Thread(target=s.record, args=(f"q{i}", "a", [], 1)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r["query"] for r in FeedbackStore(path).rows()) == [f"q{i}" for i in range(8)]


def test_change_comment_remove(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3")
    row = store.record("q", "a", [], -1)
    store.change_vote(row, 1)
    store.set_comment(row, "  exactly what I needed  ")
    assert [(r["vote"], r["comment"]) for r in store.rows()] == [(1, "exactly what I needed")]
    store.remove(row)
    assert store.rows() == []


def test_only_plus_or_minus_one(tmp_path):
    with pytest.raises(ValueError):
        FeedbackStore(tmp_path / "f.sqlite3").record("q", "a", [], 0)


def test_huge_query_is_capped(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3")
    store.record("x" * 1_000_000, "a", [], 1)
    assert len(store.rows()[0]["query"]) == feedback.MAX_QUERY_CHARS


def test_export_json_lines_to_stream_file_and_stdout(tmp_path, capsys):
    db = tmp_path / "f.sqlite3"
    store = FeedbackStore(db)
    store.record("显存不足", "答案 [1]", ["seeds/x"], 1, comment="好")
    store.record("q2", "a2", [], -1)
    buf = io.StringIO()
    assert feedback.export(buf, db=db) == 2
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert lines[0]["query"] == "显存不足" and lines[0]["cited_entry_ids"] == ["seeds/x"] and lines[0]["vote"] == 1
    assert lines[1]["vote"] == -1 and lines[1]["comment"] is None
    assert set(lines[0]) == {"id", "time", "query", "answer", "cited_entry_ids", "vote", "comment"}
    out = tmp_path / "sub" / "fb.jsonl"
    assert feedback.export(out, db=db) == 2 and len(out.read_text(encoding="utf-8").splitlines()) == 2
    assert "显存不足" in out.read_text(encoding="utf-8")  # not \u-escaped
    assert feedback.export("-", db=db) == 2
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_export_without_any_feedback_writes_nothing_and_creates_no_file(tmp_path):
    buf = io.StringIO()
    assert feedback.export(buf, db=tmp_path / "none.sqlite3") == 0
    assert buf.getvalue() == "" and not (tmp_path / "none.sqlite3").exists()


def test_concurrent_writers(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3")

    def vote(i):
        for j in range(10):
            store.record(f"q{i}-{j}", "a", [], 1 if j % 2 else -1)

    threads = [threading.Thread(target=vote, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.rows()) == 80


def test_votes_become_eval_items_and_thumbs_down_is_left_out(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3")
    store.record("wake_up timed out", "Raise wake_timeout [1]", ["e1"], 1)
    store.record("how do I bake bread", "No matching entry in the docs for this query.", [], 1)
    store.record("oom in rollout", "wrong fix [1]", ["e1"], -1)
    store.record("Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'a'", "[1]", ["e2"], 1)
    store.record("权重同步超时", "[1]", ["gone"], 1)
    places = {"e1": ("seeds/000.txt", "Error: wake_up timed out"), "e2": ("seeds/003.txt", "KeyError")}
    items, left_out = feedback.eval_items(store.rows(), places.get, lambda q: q.startswith("Traceback"))
    assert [(i["query"][:9], i["kind"], i["expected"]) for i in items] == [
        ("wake_up t", "question", [{"doc": "seeds/000.txt", "heading": "Error: wake_up timed out"}]),
        ("how do I ", "unanswerable", []),
        ("Traceback", "traceback", [{"doc": "seeds/003.txt", "heading": "KeyError"}]),
    ]
    assert left_out == {"thumbs down": 1, "cited entry no longer indexed": 1}
    assert {i["split"] for i in items} <= {"dev", "test"} and [i["id"] for i in items] == [
        "feedback-1", "feedback-2", "feedback-4"]
    again, _ = feedback.eval_items(store.rows(), places.get, lambda q: False)
    assert [i["split"] for i in again] == [i["split"] for i in items]  # the split is fixed, not random


# -- bounded writes (issue 17, point 8 of the attack report) ------------------------------------------


def test_the_file_and_a_folder_it_creates_are_the_users_alone(tmp_path):
    store = FeedbackStore(tmp_path / "new" / "deeper" / "f.sqlite3")
    store.record("a path /home/me/run.sh", "a", [], 1)
    assert store.path.stat().st_mode & 0o777 == 0o600
    assert store.path.parent.stat().st_mode & 0o777 == 0o700


def test_a_world_readable_file_from_an_older_version_is_tightened(tmp_path):
    path = tmp_path / "f.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    path.chmod(0o644)
    FeedbackStore(path).record("q", "a", [], 1)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_comment_over_the_limit_is_refused_not_cut(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3")
    row = store.record("q", "a", [], 1)
    store.set_comment(row, "y" * feedback.MAX_COMMENT_CHARS)
    with pytest.raises(feedback.FeedbackRefused, match="6,000 characters long and the limit is 2,000"):
        store.set_comment(row, "z" * 6_000)
    with pytest.raises(feedback.FeedbackRefused):
        store.record("q", "a", [], 1, comment="z" * 6_000)
    assert [r["comment"] for r in store.rows()] == ["y" * feedback.MAX_COMMENT_CHARS]


def test_a_full_store_refuses_new_votes_and_says_how_to_make_room(tmp_path):
    store = FeedbackStore(tmp_path / "f.sqlite3", max_bytes=64 * 1024)
    with pytest.raises(feedback.FeedbackRefused, match="is full .* `rlhelper feedback export"):
        for _ in range(100):
            store.record("q" * 5_000, "a" * 5_000, [], 1)
    kept = len(store.rows())
    assert 0 < kept < 100 and store.path.stat().st_size < 64 * 1024 + 20_000
    store.change_vote(store.rows()[0]["id"], -1)  # changing a vote adds nothing: still allowed


def test_write_limiter_bounds_each_client_per_minute():
    now = [1000.0]
    limiter = feedback.WriteLimiter(3, clock=lambda: now[0])
    assert [limiter.allow("session:a", "host:1") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("session:b", "host:2")  # another client
    assert not limiter.allow("session:c", "host:1")  # a new session from the same address
    now[0] += 61
    assert limiter.allow("session:a", "host:1")  # a minute later


def test_write_limiter_is_thread_safe():
    limiter = feedback.WriteLimiter(50)
    allowed = []

    def burst():
        allowed.extend(limiter.allow("session:x") for _ in range(40))

    threads = [threading.Thread(target=burst) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 50
