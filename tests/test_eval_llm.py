"""`rlhelper eval --llm`: the user's model judges every hybrid answer, against a real
OpenAI-compatible server (tests/openai_stub.py) and a real seeds index."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rlhelper.answer.llm import LLMSettings
from rlhelper.api import Helper
from rlhelper.measure import harness, report

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_stub import OpenAIStub, Reply  # noqa: E402
from test_cli import WAKE_UP, WAKE_UP_HEADING, rlhelper  # noqa: E402, F401

pytest.importorskip("langchain_openai", reason="the llm extra is not installed")

ITEMS = [
    {"id": "a", "query": WAKE_UP, "kind": "error", "lang": "en",
     "expected": [{"doc": "000_17cc8c75aeb7db0e.txt", "heading": WAKE_UP_HEADING}]},
    {"id": "u", "query": "What is the best recipe for sourdough bread with rye flour?", "kind": "unanswerable",
     "lang": "en", "expected": []},
]


@pytest.fixture
def eval_file(tmp_path) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in ITEMS), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def only_local_traffic(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def hybrid(result: harness.EvalResult, item_id: str) -> harness.Outcome:
    return next(r.outcomes["hybrid"] for r in result.items if r.item.id == item_id)


def test_the_models_no_answer_abstains_and_retrieval_figures_stay(seeds_index, eval_file):
    helper = Helper.load(seeds_index)
    alone = harness.run_eval(eval_file, helper=helper)
    assert not hybrid(alone, "a").abstained and hybrid(alone, "u").abstained  # rlhelper's own judgement
    with OpenAIStub(Reply("NO_ANSWER")) as stub:
        judged = harness.run_eval(eval_file, helper=helper, llm=LLMSettings(base_url=stub.url, model="stub-model"))
        assert len(stub.requests) == 1  # only the hybrid answer rlhelper did not abstain on is judged
    assert hybrid(judged, "a").abstained and hybrid(judged, "a").llm == "declined"
    assert hybrid(judged, "u").llm is None  # abstained already: the model is not asked
    assert judged.metrics("hybrid")["recall@1"] == alone.metrics("hybrid")["recall@1"] == 1.0  # ranking unchanged
    assert judged.metrics("hybrid")["wrongly_abstained"] == 1.0 and alone.metrics("hybrid")["wrongly_abstained"] == 0.0
    assert judged.metrics("lexical") == alone.metrics("lexical")  # the judge works on hybrid answers only
    assert "judged by the LLM 'stub-model'" in report.format_table(judged).splitlines()[0]
    assert judged.to_dict()["items"][0]["modes"]["hybrid"]["llm"] == "declined"


def test_a_model_that_fails_keeps_rlhelpers_abstention_and_says_so(seeds_index, eval_file):
    helper = Helper.load(seeds_index)
    with OpenAIStub(Reply(status=500)) as stub:
        judged = harness.run_eval(eval_file, helper=helper, llm=LLMSettings(base_url=stub.url, model="stub-model"))
    assert not hybrid(judged, "a").abstained
    assert judged.warnings[-1].startswith("the LLM failed on 1 item(s)") and "HTTP 500" in judged.warnings[-1]


def test_eval_llm_on_the_command_line(seeds_index, eval_file, tmp_path):
    with OpenAIStub(Reply("Raise the timeout [1].")) as stub:
        done = rlhelper("eval", "--set", str(eval_file), "--index", str(seeds_index), "--json", "--report",
                        str(tmp_path), "--llm", "--llm-base-url", stub.url, "--llm-model", "stub-model")
        assert done.returncode == 0, done.stderr
        figures = json.loads(done.stdout)
        assert figures["llm"] == f"'stub-model' at {stub.url}"
        assert figures["metrics"]["hybrid"]["wrongly_abstained"] == 0.0
    refused = rlhelper("eval", "--set", str(eval_file), "--split", "dev", "--calibrate", "--llm",
                       "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m")
    assert refused.returncode == 2 and "run it without --llm" in refused.stderr
