"""The judge's entry vectors in the index (issue 27): computed at ingest, stored with the index and
versioned by the judge's fingerprint, so a search encodes the query alone; an index without them
still answers in judge mode, encoding what it needs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlhelper.index.folders import JUDGE_VECTORS
from rlhelper.search import judge

pytestmark = [pytest.mark.slow]

GUIDE = """# Rollout guide

## CUDA out of memory during rollout

Lower `gpu_memory_utilization` to 0.5 and retry with a smaller `max_num_seqs`.

## NCCL timeout in weight sync

Raise `NCCL_TIMEOUT` and check the network between the trainer and the rollout engine.

## Ray worker died

Look at the raylet log in /tmp/ray/session_latest/logs for the worker's exit reason.
"""


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    assert judge.judge_available()
    folder = tmp_path / "corpus" / "mine"
    folder.mkdir(parents=True)
    (folder / "guide.md").write_text(GUIDE, encoding="utf-8")
    monkeypatch.setenv("RLHELPER_CORPUS_DIR", str(tmp_path / "corpus"))
    return folder


class Counting:
    """Counts the texts a judge encodes."""

    def __init__(self, monkeypatch):
        self.texts = []
        real = judge.Judge.embed

        def embed(judge_self, texts):
            self.texts += list(texts)
            return real(judge_self, texts)

        monkeypatch.setattr(judge.Judge, "embed", embed)


def test_ingest_stores_every_passage_vector_and_a_search_encodes_the_query_alone(corpus, tmp_path, monkeypatch):
    from rlhelper.api import Helper
    from rlhelper.ingest.pipeline import ingest

    index = tmp_path / "index"
    report = ingest([corpus], index=index)
    assert report.judged == 4  # the page's title and three sections, none shipped
    helper = Helper.load(index, user_bank=False, mode="judge")
    manifest = helper.index.manifest
    print_ = judge.fingerprint()
    assert manifest["judge"] == {"fingerprint": print_, "vectors": 4} and manifest["settings"]["judge"] == print_
    stored = helper.index.judge_vectors(print_)
    passages = judge.entry_passages(helper.index.entries)
    assert sorted(stored) == sorted(judge.passage_key(p) for p in passages)
    fresh = judge.Judge.load(judge.PACKAGED).encode_passages(passages)
    for p, vector in zip(passages, fresh, strict=True):
        assert np.allclose(stored[judge.passage_key(p)], vector, atol=2e-3)  # float16 on disk
    assert helper.index.judge_vectors("another judge") == {}

    counted = Counting(monkeypatch)
    found = helper.retrieve("vllm ran out of GPU memory while generating", k=3)
    assert found.signals.judge is not None and found.hits[0].entry.heading == "CUDA out of memory during rollout"
    assert len(counted.texts) == 1 and counted.texts[0].startswith(helper.retriever.judge.query_prefix)

    again = ingest([corpus], index=index)  # nothing changed: nothing written, nothing encoded
    assert not again.written and again.judged == 0


def test_a_changed_judge_encodes_again_and_an_index_without_vectors_still_answers(corpus, tmp_path, monkeypatch):
    from rlhelper.api import Helper
    from rlhelper.ingest import pipeline

    index = tmp_path / "index"
    monkeypatch.setattr(pipeline.judge, "judge_available", lambda *a, **k: False)  # built where no judge could run
    pipeline.ingest([corpus], index=index)
    monkeypatch.undo()
    helper = Helper.load(index, user_bank=False, mode="judge")
    assert "judge" not in helper.index.manifest and not (helper.index.folder / JUDGE_VECTORS).exists()
    counted = Counting(monkeypatch)
    found = helper.retrieve("NCCL watchdog timeout during weight sync", k=3)
    assert found.hits[0].entry.heading == "NCCL timeout in weight sync" and found.signals.judge is not None
    assert len(counted.texts) == 1 + 3  # the query, and the passages it needed, encoded on the spot

    report = pipeline.ingest([corpus], index=index)  # a judge can run now: the index gets its vectors
    assert report.written and report.judged == 4
    monkeypatch.setattr(pipeline.judge, "fingerprint", lambda *a, **k: "a retrained judge")
    retrained = pipeline.ingest([corpus], index=index)
    assert retrained.written and retrained.judged == 4
    manifest = json.loads((Helper.load(index).index.folder / "manifest.json").read_text())
    assert manifest["judge"]["fingerprint"] == "a retrained judge"
