"""userbank.py as a journal (issue 31, point 5 and 7): a vote appends a line, a follower reads only
what was appended (a compaction included), the bank is capped without evicting the user's own
records for imported ones, and an import is streamed, bounded and reported truthfully."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from rlhelper.errors import UserBankError
from rlhelper.index import userbank
from rlhelper.index.bankimport import import_file
from rlhelper.index.userbank import BankFollower, UserBank

ENTRY = {"entry_id": "seeds/a.txt#x", "collection": "seeds", "doc": "a.txt", "heading": "Rewards are always 0"}


def entry(n: int) -> dict:
    return {"entry_id": f"seeds/d{n}.txt#h", "collection": "seeds", "doc": f"d{n}.txt", "heading": f"Heading {n}"}


def line(text: str, n: int = 0, vote: int = 1, **more) -> str:
    return json.dumps({"text": text, **entry(n), "vote": vote, **more}) + "\n"


def test_a_vote_appends_one_line_and_leaves_the_rest_as_it_was(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    for n in range(5):
        bank.add(f"question {n}", entry(n), 1, "web")
    before = bank.path.read_bytes()
    bank.add("question 2", entry(2), -1, "web")  # a changed vote: one more line, not a rewrite
    after = bank.path.read_bytes()
    assert after.startswith(before) and after[len(before):].count(b"\n") == 1
    assert bank.forget("question 3", entry(3)) and not bank.forget("question 3", entry(3))
    assert [(r.text, r.vote) for r in UserBank(bank.path).records()] == [
        ("question 0", 1), ("question 1", 1), ("question 4", 1), ("question 2", -1)]


def test_a_follower_reads_only_what_was_appended(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    follower = BankFollower(bank.path)
    assert not follower.poll()  # no file yet: nothing, and no reset
    bank.add("first question", entry(1), 1, "web")
    first = follower.poll()
    assert first.reset and [c.record.text for c in first.changes] == ["first question"]
    assert not follower.poll()  # nothing new: nothing read
    bank.add("second question", entry(2), 1, "cli")
    bank.forget("first question", entry(1))
    delta = follower.poll()
    assert not delta.reset
    assert [(c.record.text, c.removed) for c in delta.changes] == [("second question", False),
                                                                   ("first question", True)]


def test_a_half_written_line_waits_for_its_end(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("first question", entry(1), 1, "web")
    follower = BankFollower(bank.path)
    follower.poll()
    half = line("second question", 2)
    with bank.path.open("a") as f:
        f.write(half[:20])
    assert not follower.poll().changes
    with bank.path.open("a") as f:
        f.write(half[20:])
    assert [c.record.text for c in follower.poll().changes] == ["second question"]


def test_a_line_cut_by_a_crash_stays_one_skipped_line(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("first question", entry(1), 1, "web")
    with bank.path.open("a") as f:
        f.write('{"text": "cut by a cra')
    bank.add("second question", entry(2), 1, "web")
    assert [r.text for r in UserBank(bank.path).records()] == ["first question", "second question"]
    assert "q.jsonl:2" in UserBank(bank.path).problems()[0]


def test_compaction_keeps_the_records_and_a_follower_goes_on_without_reading_them_again(tmp_path, monkeypatch):
    monkeypatch.setattr(userbank, "COMPACT_MIN_DEAD", 10)
    bank = UserBank(tmp_path / "q.jsonl")
    follower = BankFollower(bank.path)
    for n in range(6):
        bank.add(f"question {n}", entry(n), 1, "web")
    assert follower.poll().reset
    inode = bank.path.stat().st_ino
    for _ in range(6):  # votes changed back and forth: superseded lines pile up
        bank.add("question 0", entry(0), -1, "web")
        bank.add("question 0", entry(0), 1, "web")
    assert bank.path.stat().st_ino != inode  # compacted: a new file
    header = json.loads(bank.path.read_text().splitlines()[0])
    assert header[userbank.HEADER_KEY] == userbank.FORMAT and header["records"] == 6
    assert len(bank.path.read_text().splitlines()) < 12
    bank.add("question 9", entry(9), 1, "web")
    delta = follower.poll()
    assert not delta.reset  # the compacted records were not handed out again
    assert [c.record.text for c in delta.changes][-1] == "question 9"
    assert [r.text for r in UserBank(bank.path).records()] == [f"question {n}" for n in (1, 2, 3, 4, 5, 0, 9)]


def test_a_file_replaced_by_hand_is_read_whole(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("first question", entry(1), 1, "web")
    follower = BankFollower(bank.path)
    follower.poll()
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(line("other question", 3))
    replacement.replace(bank.path)
    delta = follower.poll()
    assert delta.reset and [c.record.text for c in delta.changes] == ["other question"]


# -- the cap ----------------------------------------------------------------------------------


def test_an_import_never_evicts_the_users_own_records(tmp_path, monkeypatch):
    monkeypatch.setattr(userbank, "MAX_RECORDS", 5)
    bank = UserBank(tmp_path / "q.jsonl")
    for n in range(3):
        bank.add(f"my question {n}", entry(n), 1, "web")
    source = tmp_path / "team.jsonl"
    source.write_text("".join(line(f"team question {n}", 10 + n) for n in range(8)))
    report = import_file(bank, source)
    assert (report.added, report.over_cap, report.evicted) == (2, 6, 0)
    assert "2 added" in report.summary() and "6 over the cap of 5 records" in report.summary()
    kept = [r.text for r in bank.records()]
    assert kept[:3] == [f"my question {n}" for n in range(3)] and len(kept) == 5


def test_a_newer_import_takes_the_place_of_older_imported_records_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(userbank, "MAX_RECORDS", 5)
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("my question", entry(0), 1, "web")
    old = tmp_path / "old.jsonl"
    old.write_text("".join(line(f"old question {n}", 10 + n) for n in range(4)))
    assert import_file(bank, old).added == 4
    new = tmp_path / "new.jsonl"
    new.write_text("".join(line(f"new question {n}", 20 + n) for n in range(6)))
    report = import_file(bank, new)
    assert (report.added, report.evicted, report.over_cap) == (4, 4, 2)
    assert "4 older imported questions evicted" in report.summary()
    assert sorted(r.text for r in bank.records()) == ["my question", *[f"new question {n}" for n in range(4)]]


def test_a_vote_on_a_full_bank_takes_the_place_of_an_imported_record(tmp_path, monkeypatch):
    monkeypatch.setattr(userbank, "MAX_RECORDS", 3)
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("mine", entry(0), 1, "web")
    source = tmp_path / "team.jsonl"
    source.write_text("".join(line(f"team question {n}", 10 + n) for n in range(2)))
    import_file(bank, source)
    bank.add("my new question", entry(5), 1, "web")
    assert [r.text for r in bank.records()] == ["mine", "team question 1", "my new question"]


# -- bounded fields and a streamed import ----------------------------------------------------------


@pytest.mark.parametrize("field, size", [("heading", 10_000_000), ("heading", 5_000), ("doc", 5_000),
                                         ("entry_id", 5_000), ("time", 500)])
def test_long_fields_are_refused_and_counted_as_too_long(tmp_path, field, size):
    bank = UserBank(tmp_path / "q.jsonl")
    source = tmp_path / "long.jsonl"
    source.write_text(line("fine", 1) + json.dumps({"text": "long one", **entry(2), "vote": 1, field: "h" * size})
                      + "\n" + line("also fine", 3))
    report = import_file(bank, source)
    assert (report.added, report.too_long, report.malformed) == (2, 1, 0)
    assert "1 too long" in report.summary()
    if field == "time":  # a vote's time is the clock's
        return
    with pytest.raises(UserBankError, match="at most"):
        bank.add("a question", {**entry(4), field: "h" * size}, 1, "web")


@pytest.mark.slow  # 40 MB of input
def test_an_import_is_read_line_by_line(tmp_path, monkeypatch):
    """A file far larger than the bank may hold is read without holding it: memory stays small."""
    monkeypatch.setattr(userbank, "MAX_RECORDS", 200)
    source = tmp_path / "big.jsonl"
    filler = "padding " * 150
    with source.open("w") as f:
        for n in range(30_000):  # about 40 MB
            f.write(line(f"question {n} {filler}", n))
    bank = UserBank(tmp_path / "q.jsonl")
    tracemalloc.start()
    try:
        report = import_file(bank, source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (report.added, report.over_cap) == (200, 29_800)
    assert peak < 12_000_000, f"peak {peak / 1e6:.1f} MB for a {source.stat().st_size / 1e6:.0f} MB file"
