"""How a pasted OOM traceback's parts are weighed on the default index (seeds + official), issue 20:
the exception's first sentence names the error; the allocator's statistics after it ("GPU 0 has a
total capacity of ... of which ... is free") once made SkyRL's "Hard Aborted/SIGABRT crash with GPU
memory still free", an entry about a crash that is *not* a CUDA OOM, lead verl's rollout OOM."""

from __future__ import annotations

import pytest

from rlhelper import Helper
from rlhelper.search.query import normalize_query
from rlhelper.search.ranking import QueryTerms

SIGABRT = "Hard Aborted/SIGABRT crash with GPU memory still free"
OOM_MESSAGE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 2 has a total capacity "
               "of 79.33 GiB of which 2.91 GiB is free. Including non-PyTorch memory, this process has 76.40 GiB "
               "memory in use.")


def traceback(path: str, func: str) -> str:
    return (f'Traceback (most recent call last):\n  File "{path}", line 301, in {func}\n'
            f"    outputs = self.step()\n{OOM_MESSAGE}\n")


VERL_ROLLOUT = traceback("/usr/lib/python3.10/site-packages/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py",
                         "generate_sequences")
SKYRL_TRAINING = traceback("/home/u/SkyRL/skyrl-train/skyrl_train/workers/fsdp/fsdp_worker.py", "forward_backward")


@pytest.fixture(scope="module")
def helper(full_index) -> Helper:
    return Helper.load(full_index)


def test_the_message_detail_is_kept_apart():
    q = normalize_query(VERL_ROLLOUT)
    assert q.detail.startswith("Tried to allocate 3.50 GiB. GPU 2 has a total capacity")
    assert normalize_query("RuntimeError: KV cache pool is full").detail == ""
    assert normalize_query(OOM_MESSAGE).detail.startswith("Tried to allocate")  # pasted alone, too


@pytest.mark.parametrize("log", [VERL_ROLLOUT, SKYRL_TRAINING])
def test_bm25_does_not_lead_with_the_crash_that_is_not_an_oom(helper, log):
    retriever = helper.retriever
    normalized = normalize_query(log)
    terms = QueryTerms.of(normalized, retriever.corrector)
    assert "capacity" not in terms.tokens and terms.extra["capacity"] < 1  # a detail word weighs less
    lexical = retriever.lexical_ranking(terms, retriever.allowed_mask(), 5)
    assert retriever.index.entries[lexical[0]].heading != SIGABRT


@pytest.mark.parametrize("log, framework, heading", [
    (VERL_ROLLOUT, "verl", "OOM during rollout (vLLM)"),
    (SKYRL_TRAINING, "skyrl", "Error: CUDA out of memory during training"),
])
def test_the_lead_is_the_named_frameworks_oom_entry(helper, log, framework, heading):
    hits = helper.ask(log).hits
    assert (hits[0].entry.framework, hits[0].entry.heading) == (framework, heading)
    assert SIGABRT not in [h.entry.heading for h in hits[:3]]
