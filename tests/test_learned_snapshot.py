"""learned_snapshot.py on a real index (issue 38, point 2): a large bank's state is written once after a full
read; a new process restores it (nothing parsed, normalized or sorted again), applies the journal's lines
written since, and finds exactly what a process that reads the whole bank finds."""

from __future__ import annotations

import json
import os

import pytest

from rlhelper.api import Helper
from rlhelper.index import learned_snapshot
from rlhelper.index.lastanswer import entry_key
from rlhelper.index.userbank import UserBank

QUERIES = ["the trainer hangs forever after the first step", "CUDA out of memory during rollout",
           "rewards are all zero", "weight sync between trainer and rollout times out"]


def settled(helper: Helper) -> Helper:
    helper.search(QUERIES[0], k=1)
    while helper.retriever._live_learned.waiting:
        helper.search(QUERIES[0], k=1)
    return helper


def answers(helper: Helper, queries: list[str]) -> list:
    out = []
    for query in queries:
        got = helper.retrieve(query, k=5)
        out.append(([(h.entry.id, round(h.score, 9), h.matched_question) for h in got.hits], got.abstained,
                    round(got.confidence, 9)))
    return out


def read_whole(path, bank_path, monkeypatch) -> Helper:
    """A helper that reads the whole bank, as before snapshots (nor does it write one)."""
    with monkeypatch.context() as m:
        m.setattr(learned_snapshot, "restore", lambda live: False)
        m.setattr(learned_snapshot, "save", lambda live: False)
        return settled(Helper.load(path, user_bank=bank_path))


@pytest.fixture
def bank(seeds_index, tmp_path, monkeypatch):
    """A bank of 120 learned questions, snapshotted from 50 records on: the first process's full read writes it."""
    monkeypatch.setattr(learned_snapshot, "SNAPSHOT_MIN", 50)
    bank = UserBank(tmp_path / "questions.jsonl")
    plain = Helper.load(seeds_index, user_bank=False)
    entries = [e for e in plain.entries if e.answerable]
    rows = [{"text": f"when {entries[(7 * n) % len(entries)].heading.lower()} shows up in run {n}",
             **entry_key(entries[(7 * n) % len(entries)]), "vote": 1 if n % 5 else -1, "source": "web"}
            for n in range(120)]
    bank.path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = settled(Helper.load(seeds_index, user_bank=bank.path))
    assert first.retriever._live_learned.full_reads == 1
    assert list(bank.cache_dir.glob("snapshot-*/meta.json"))
    return bank


def queries_of(bank: UserBank) -> list[str]:
    texts = [r.text for r in bank.records()]
    return [*QUERIES, texts[0], texts[3], texts[-1], texts[10].upper() + "?"]  # learned ones pin (or demote)


def test_a_new_process_restores_the_snapshot_and_finds_the_same(seeds_index, bank, monkeypatch):
    restored = settled(Helper.load(seeds_index, user_bank=bank.path))
    live = restored.retriever._live_learned
    assert live.restored and live.full_reads == 0
    assert answers(restored, queries_of(bank)) == answers(read_whole(seeds_index, bank.path, monkeypatch),
                                                          queries_of(bank))


def test_lines_written_after_the_snapshot_are_applied(seeds_index, bank, monkeypatch):
    plain = Helper.load(seeds_index, user_bank=False)
    question = QUERIES[0]
    third = plain.search(question, k=5)[2].entry
    bank.add(question, entry_key(third), 1, "web")
    removed = bank.records()[4]
    bank.remove(entry=removed.entry_id)
    again = bank.records()[7]  # an old question voted again: its vector and tokens are before the snapshot's end
    bank.add(again.text, entry_key(third), 1, "web")
    restored = settled(Helper.load(seeds_index, user_bank=bank.path))
    live = restored.retriever._live_learned
    assert live.restored and live.full_reads == 0
    queries = queries_of(bank) + [removed.text, again.text]
    assert answers(restored, queries) == answers(read_whole(seeds_index, bank.path, monkeypatch), queries)
    assert restored.search(question, k=1)[0].entry.id == third.id

    bank.add(question, entry_key(third), -1, "web")  # a vote after the restore, in the same process
    assert answers(restored, queries) == answers(read_whole(seeds_index, bank.path, monkeypatch), queries)
    assert restored.search(question, k=1)[0].entry.id != third.id


def test_a_bank_replaced_by_another_file_is_read_whole(seeds_index, bank, monkeypatch):
    lines = bank.path.read_text().splitlines(keepends=True)
    other = bank.path.with_name("other.jsonl")
    other.write_text("".join(lines[60:]) + "".join(lines[:60]))  # the same records, another file and order
    os.replace(other, bank.path)
    helper = settled(Helper.load(seeds_index, user_bank=bank.path))
    live = helper.retriever._live_learned
    assert not live.restored and live.full_reads == 1
    assert answers(helper, queries_of(bank)) == answers(read_whole(seeds_index, bank.path, monkeypatch),
                                                        queries_of(bank))
