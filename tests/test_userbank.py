"""userbank.py: the user's own question bank (records, permissions, import/export), and what it
does to a search (questions.learned, fusion.pin_and_demote, Retriever.apply_votes)."""

from __future__ import annotations

import json
import stat

import numpy as np
import pytest
from click.testing import CliRunner

from rlhelper.cli import main
from rlhelper.errors import UserBankError
from rlhelper.index import learned, learned_store
from rlhelper.index.bankimport import import_file
from rlhelper.index.bankrecord import normalize, record_id
from rlhelper.index.userbank import UserBank
from rlhelper.search.fusion import pin_and_demote

ENTRY = {"entry_id": "seeds/a.txt#x", "collection": "seeds", "doc": "a.txt", "heading": "Rewards are always 0"}
OTHER = {"entry_id": "seeds/b.txt#y", "collection": "seeds", "doc": "b.txt", "heading": "Model outputs are repetitive"}


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- the store -----------------------------------------------------------------------------


def test_default_file_is_beside_the_feedback_store(isolated_home):
    assert UserBank().path == isolated_home / ".local" / "share" / "rlhelper" / "questions.jsonl"


def test_add_writes_a_0600_file_keyed_like_the_shipped_bank(tmp_path):
    bank = UserBank(tmp_path / "data" / "questions.jsonl")
    record = bank.add("my rewards are stuck at zero", ENTRY, 1, "web")
    assert mode(bank.path) == 0o600
    row = json.loads(bank.path.read_text())
    assert row == {"id": record.id, "text": "my rewards are stuck at zero", "entry_id": "seeds/a.txt#x",
                   "collection": "seeds", "doc": "a.txt", "heading": "Rewards are always 0", "vote": 1,
                   "time": record.time, "source": "web"}
    assert record.time.endswith("+00:00")


def test_a_second_vote_on_the_same_pair_replaces_the_first(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("Rewards stuck at zero?", ENTRY, 1, "web")
    bank.add("rewards   stuck at ZERO", ENTRY, -1, "cli")  # the same question, normalized
    bank.add("rewards stuck at zero", OTHER, 1, "chat")
    assert [(r.entry_id, r.vote, r.source) for r in bank.records()] == [
        ("seeds/a.txt#x", -1, "cli"), ("seeds/b.txt#y", 1, "chat")]


def test_normalize_and_ids_are_stable():
    assert normalize("  Rewards  stuck at ZERO？ ") == normalize("rewards stuck at zero") == "rewards stuck at zero"
    assert record_id("Rewards stuck at zero?", "seeds", "a.txt", "h") == record_id("rewards stuck at zero", "seeds",
                                                                                   "a.txt", "h")
    assert len(record_id("q", "c", "d", "h")) == 10


def test_remove_by_id_prefix_and_by_entry(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    a = bank.add("first question", ENTRY, 1, "web")
    bank.add("second question", ENTRY, -1, "web")
    c = bank.add("third question", OTHER, 1, "web")
    assert [r.id for r in bank.remove([a.id[:6]])] == [a.id]
    assert len(bank.remove(entry="seeds/a.txt#x")) == 1
    assert [r.id for r in bank.records()] == [c.id]
    assert bank.remove(entry="seeds/b.txt#Model outputs are repetitive") and bank.records() == []


def test_remove_unknown_says_so(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("first question", ENTRY, 1, "web")
    with pytest.raises(UserBankError, match="no learned question has the id 'ffffff'"):
        bank.remove(["ffffff"])
    with pytest.raises(UserBankError, match="questions list"):
        bank.remove(entry="nope")


def test_too_long_or_empty_questions_are_refused(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    with pytest.raises(UserBankError, match="at most 2,000"):
        bank.add("x" * 3000, ENTRY, 1, "web")
    with pytest.raises(UserBankError, match="empty"):
        bank.add("   ", ENTRY, 1, "web")
    assert not bank.path.exists()


def test_a_damaged_line_is_skipped_not_fatal(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("first question", ENTRY, 1, "web")
    with bank.path.open("a") as f:
        f.write('{"text": "half a line\n')
    assert [r.text for r in bank.records()] == ["first question"]
    assert "q.jsonl:2" in bank.problems()[0]


def test_export_then_import_twice_changes_nothing(tmp_path):
    mine = UserBank(tmp_path / "mine.jsonl")
    mine.add("my rewards are stuck at zero", ENTRY, 1, "web")
    mine.add("the policy repeats itself", OTHER, -1, "cli")
    shared = tmp_path / "shared.jsonl"
    assert mine.export(shared) == 2
    theirs = UserBank(tmp_path / "theirs.jsonl")
    assert import_file(theirs, shared).counts() == counts(added=2)
    before = theirs.path.read_bytes()
    assert import_file(theirs, shared).counts() == counts(unchanged=2)
    assert theirs.path.read_bytes() == before and mode(theirs.path) == 0o600
    assert [(r.text, r.vote, r.source) for r in theirs.records()] == [
        ("my rewards are stuck at zero", 1, "import"), ("the policy repeats itself", -1, "import")]


def test_import_takes_a_newer_different_vote(tmp_path):
    bank = UserBank(tmp_path / "q.jsonl")
    bank.add("my rewards are stuck at zero", ENTRY, 1, "web")
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"text": "My rewards are stuck at zero?", **ENTRY, "vote": -1,
                                 "time": "2999-01-01T00:00:00+00:00"}) + "\n")
    assert import_file(bank, newer).counts() == counts(changed=1)
    assert [(r.vote, r.source) for r in bank.records()] == [(-1, "import")]


def counts(**some) -> dict:
    return {name: some.get(name, 0) for name in ("added", "changed", "unchanged", "evicted", "over_cap", "too_long",
                                                 "malformed")}


@pytest.mark.parametrize("line, why", [
    ("not json", "Expecting value"),
    (json.dumps({"text": "q", "collection": "seeds", "doc": "a.txt", "heading": "h"}), "missing vote"),
    (json.dumps({"text": "q", "collection": "seeds", "doc": "a.txt", "heading": "h", "vote": 2}), "vote must be"),
    (json.dumps(["a list"]), "not a JSON object"),
    ("[" * 100_000 + "]" * 100_000, "longer than"),
    ("[" * 30_000 + "]" * 30_000, "nested too deeply"),
    (json.dumps({"text": "q", "collection": "seeds", "doc": "a.txt", "heading": "h", "vote": 1, "removed": True}),
     "a removal"),
])
def test_a_bad_import_line_is_skipped_named_and_counted(tmp_path, line, why):
    bank = UserBank(tmp_path / "q.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "fine", **ENTRY, "vote": 1}) + "\n" + line + "\n")
    report = import_file(bank, bad)
    assert report.added == 1 and report.skipped == 1
    assert "bad.jsonl:2" in report.first_problems[0] and why in report.first_problems[0]
    assert [r.text for r in bank.records()] == ["fine"]


# -- the CLI over it -----------------------------------------------------------------------


def test_questions_commands(isolated_home, tmp_path):
    bank = UserBank()
    record = bank.add("my rewards are stuck at zero", ENTRY, 1, "web")
    runner = CliRunner()
    listed = runner.invoke(main, ["questions", "list"])
    assert listed.exit_code == 0 and record.id in listed.output and "Rewards are always 0" in listed.output
    as_json = runner.invoke(main, ["questions", "list", "--json"])
    assert json.loads(as_json.output.splitlines()[0])["entry_id"] == "seeds/a.txt#x"
    out = tmp_path / "out.jsonl"
    assert runner.invoke(main, ["questions", "export", str(out)]).exit_code == 0
    again = runner.invoke(main, ["questions", "import", str(out)])
    assert again.exit_code == 0 and "0 added, 0 changed" in again.output and "1 already held" in again.output
    assert "0 skipped" in again.output and "0 older imported questions evicted" in again.output
    assert runner.invoke(main, ["questions", "remove", record.id]).exit_code == 0
    assert bank.records() == []


@pytest.mark.parametrize("args, message", [
    (["questions", "import", "missing.jsonl"], "no such file to import"),
    (["questions", "remove", "abcdef"], "no learned question has the id"),
    (["feedback", "accept"], "no answer to accept yet: run `rlhelper ask"),
])
def test_questions_bad_input_is_one_line(isolated_home, args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


# -- what it does to a ranking ---------------------------------------------------------------


def test_pin_and_demote_pure():
    fused = [(1, 0.5), (2, 0.4), (3, 0.3), (4, 0.2)]
    assert [i for i, _ in pin_and_demote(fused, [3], [])] == [3, 1, 2, 4]
    assert [i for i, _ in pin_and_demote(fused, [], [1])] == [2, 1, 3, 4]  # below the next, never leads
    both = [i for i, _ in pin_and_demote(fused, [], [1, 2])]
    assert both[0] == 3 and sorted(both) == [1, 2, 3, 4]  # two demoted in a row: neither leads
    assert [i for i, _ in pin_and_demote(fused, [9], [])] == [9, 1, 2, 3, 4]  # a pin not found is added
    assert [i for i, _ in pin_and_demote(fused, [3], [3])] == [1, 2, 4, 3]  # demotion wins
    scores = [s for _, s in pin_and_demote(fused, [4], [1])]
    assert scores == sorted(scores, reverse=True)
    grouped = pin_and_demote(fused, [13], [], group=lambda i: i % 10)  # 13 is the same result as 3
    assert [i for i, _ in grouped] == [3, 1, 2, 4]


def test_pairs_match_the_same_or_a_near_identical_question():
    vectors = np.eye(3, dtype=np.float32)
    segment = learned.LearnedSegment(3, 10.0)
    segment.add([(("rewards stuck at zero", "c", "d", "h"), 7, "Rewards stuck at zero?", 1),
                 (("other", "c", "d", "h2"), 8, "other", 1)], vectors[:2], np.array([True, True]))
    view = segment.snapshot()
    pairs = learned.Votes(view, view.accepted)
    assert pairs.near("rewards stuck at zero", None) == [(7, "Rewards stuck at zero?", 1.0)]
    near = np.array([0.2, 0.98, 0.0], dtype=np.float32)
    assert [row for row, _, _ in pairs.near("something else", near / np.linalg.norm(near))] == [8]
    assert pairs.near("something else", np.array([0.5, 0.5, 0.7], dtype=np.float32)) == []
    assert learned.Votes(view, view.demoted).near("rewards stuck at zero", None) == []


def test_vector_log_keeps_each_text_once_per_embedder(tmp_path):
    log = learned_store.VectorLog(tmp_path / "q.jsonl.vectors", "usem3", 4)
    log.add(["a", "b"], np.ones((2, 4), dtype=np.float32))
    again = learned_store.VectorLog(tmp_path / "q.jsonl.vectors", "usem3", 4)
    assert sorted(again.get(["b", "a", "c"])) == ["a", "b"]
    assert learned_store.VectorLog(tmp_path / "q.jsonl.vectors", "other-embedder", 4).get(["a"]) == {}
    assert mode(log.path) == 0o600
    with log.path.open("ab") as f:  # a record cut by a crash
        f.write(b"\x01" * 7)
    log.add(["c"], np.full((1, 4), 2.0, dtype=np.float32))
    third = learned_store.VectorLog(tmp_path / "q.jsonl.vectors", "usem3", 4).get(["a", "c"])
    assert third["c"].tolist() == [2.0] * 4 and third["a"].tolist() == [1.0] * 4


def test_token_log_tokenizes_each_text_once_across_processes(tmp_path, monkeypatch):
    from rlhelper.index import questions

    made = []
    tokens = questions.tokens
    monkeypatch.setattr(questions, "tokens", lambda text: made.append(text) or tokens(text))
    text = "rewards are stuck at zero rewards"
    [(hashes, counts, length)] = learned_store.TokenLog(tmp_path / "cache").of([text])
    assert hashes[0] == learned_store.term_hash("reward") and counts[0] == 2 and length == 7
    learned_store.TokenLog(tmp_path / "cache").of(["the policy repeats itself"])
    other = learned_store.TokenLog(tmp_path / "cache")  # another process
    again = other.of(["the policy repeats itself", text])
    assert again[1][0].tolist() == hashes.tolist() and again[1][1].tolist() == counts.tolist()
    assert made == [text, "the policy repeats itself"]
    assert mode(other.path) == 0o600
    with other.path.open("ab") as f:  # an entry cut by a crash
        f.write(b"\x00" * 9)
    learned_store.TokenLog(tmp_path / "cache").of(["a third question"])
    third = learned_store.TokenLog(tmp_path / "cache").of(["a third question", text])
    assert third[0][0].tolist() == [learned_store.term_hash(t) for t in ("third", "question", "third+question")]
    assert made == [text, "the policy repeats itself", "a third question"]


# -- on a real index -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seeds_helper(seeds_index, tmp_path_factory):
    from rlhelper.api import Helper

    # Hybrid: the bank's rules on the pipeline's order (how the judge mode keeps a vote's say:
    # test_judge_mode.py, test_web_trust.py).
    return Helper.load(seeds_index, user_bank=tmp_path_factory.mktemp("bank") / "questions.jsonl", mode="hybrid")


def test_accepted_question_leads_and_says_matched_then_a_demotion_undoes_it(seeds_helper):
    helper = seeds_helper
    question = "the trainer hangs forever after the first step"
    before = helper.search(question, k=5)
    third = before[2].entry
    helper.user_bank.add(question, {"entry_id": third.id, "collection": third.collection, "doc": third.doc,
                                    "heading": third.heading}, 1, "cli")
    after = helper.retrieve(question, k=5)
    assert after.hits[0].entry.id == third.id and after.hits[0].matched_question == question
    assert not after.abstained
    assert helper.search(question.upper() + "?", k=1)[0].entry.id == third.id  # the same, normalized

    helper.user_bank.add(question, {"entry_id": third.id, "collection": third.collection, "doc": third.doc,
                                    "heading": third.heading}, -1, "web")
    demoted = helper.search(question, k=5)
    assert demoted[0].entry.id != third.id
    assert third.id in [h.entry.id for h in demoted]
    helper.user_bank.remove(entry=third.id)
    assert [h.entry.id for h in helper.search(question, k=5)] == [h.entry.id for h in before]


def test_a_demoted_lead_never_leads_for_that_question(seeds_helper):
    helper = seeds_helper
    question = "CUDA out of memory during rollout"
    lead = helper.search(question, k=3)[0].entry
    helper.user_bank.add(question, {"entry_id": lead.id, "collection": lead.collection, "doc": lead.doc,
                                    "heading": lead.heading}, -1, "web")
    try:
        hits = helper.search(question, k=3)
        assert hits[0].entry.id != lead.id and hits[1].entry.id == lead.id
        assert helper.search("cuda out of memory during rollout!", k=3)[0].entry.id != lead.id
    finally:
        helper.user_bank.remove(entry=lead.id)


def test_a_record_for_an_entry_the_index_lacks_is_left_out(seeds_helper):
    helper = seeds_helper
    helper.user_bank.add("some question", {"entry_id": "gone#1", "collection": "seeds", "doc": "gone.txt",
                                           "heading": "Gone"}, 1, "web")
    try:
        assert helper.search("some question", k=3)
    finally:
        helper.user_bank.remove(entry="gone#1")


def test_without_a_bank_the_shipped_questions_are_searched_as_before(seeds_index):
    from rlhelper.api import Helper

    plain = Helper.load(seeds_index, user_bank=False)
    assert plain.user_bank is None
    learned = plain.retriever.learned()
    assert learned.empty and learned.questions is plain.index.questions


# -- the web chat's vote handler and the "matched:" line --------------------------------------


def _visitors(helper, folder):
    from rlhelper.index.visitorbank import VisitorBank
    from rlhelper.web.visitors import Visitors

    return Visitors(helper, VisitorBank(folder / "visitors.sqlite3"), b"k" * 32)


def test_a_web_vote_teaches_its_visitor_and_suggests_it_to_the_operator(seeds_helper, monkeypatch, tmp_path):
    from rlhelper.web import answering, votes
    from rlhelper.web import session as web_session

    monkeypatch.setattr(answering, "STREAM_PAUSE", 0)
    helper, session = seeds_helper, web_session.new_session("v-alice")
    visitors = _visitors(helper, tmp_path)
    question = "wake_up timed out after 60s, what now"
    *_, (history, session) = answering.respond(helper, question, [], "", "", session)
    position = len(history) - 1
    lead = session["answers"][position]["entry_ids"][0]
    held = helper.user_bank.records()
    said = votes.learn_from_vote(helper, session, position, "Like", visitors=visitors, visitor="v-alice",
                                 address="198.51.100.7")
    assert "will lead for this question for you" in said and "once the server's operator approves it" in said
    [record] = visitors.bank.votes_of("v-alice")
    assert (record.entry_id, record.vote) == (lead, 1)
    assert helper.user_bank.records() == held  # the operator's bank is not touched
    [suggestion] = visitors.bank.suggestions(helper.user_bank)
    assert (suggestion.visitors, suggestion.addresses, suggestion.vote) == (1, 1, 1)
    assert "will not lead" in votes.learn_from_vote(helper, session, [position, 0], "Dislike", visitors=visitors,
                                                 visitor="v-alice")
    assert [r.vote for r in visitors.bank.votes_of("v-alice")] == [-1]
    votes.learn_from_vote(helper, session, position, "", visitors=visitors, visitor="v-alice")  # taken back
    assert visitors.bank.votes_of("v-alice") == [] and visitors.bank.suggestions(helper.user_bank) == []
    assert helper.user_bank.records() == held


def test_a_vote_on_no_match_or_a_question_teaches_nothing(seeds_helper, monkeypatch, tmp_path):
    from rlhelper.web import answering, votes
    from rlhelper.web import session as web_session

    monkeypatch.setattr(answering, "STREAM_PAUSE", 0)
    session, visitors = web_session.new_session("v-bob"), _visitors(seeds_helper, tmp_path)
    *_, (history, session) = answering.respond(seeds_helper, "What is the best recipe for sourdough bread with rye flour?",
                                         [], "", "", session)
    assert votes.learn_from_vote(seeds_helper, session, len(history) - 1, "Like", visitors=visitors) == ""
    assert votes.learn_from_vote(seeds_helper, session, 0, "Like", visitors=visitors) == ""  # the user's own message
    assert visitors.bank.votes_of("v-bob") == []


def test_matched_is_escaped_and_short():
    from rlhelper.answer import html as render

    html = render.matched_html("<script>alert(1)</script> " + "x" * 500)
    assert "<script>" not in html and "&lt;script&gt;" in html and html.count("x") < 200
    assert render.matched_html(None) == ""
