"""phase.py: the phase of an RL step a traceback failed in, and the phase an entry's heading names
(issue 29, point 2), and what the ranking makes of them on the default index."""

from __future__ import annotations

import pytest

from rlhelper.api import Helper
from rlhelper.search import phase
from rlhelper.search.query import normalize_query
from rlhelper.web.app import EXAMPLES

VERL_TRAINING_OOM = """\
(WorkerDict pid=91822) Traceback (most recent call last):
(WorkerDict pid=91822)   File "/opt/conda/lib/python3.10/site-packages/verl/single_controller/ray/base.py", line 663, in func
(WorkerDict pid=91822)     return getattr(self.worker_dict[key], name)(*args, **kwargs)
(WorkerDict pid=91822)   File "/opt/conda/lib/python3.10/site-packages/verl/workers/fsdp_workers.py", line 741, in update_actor
(WorkerDict pid=91822)     metrics = self.actor.update_policy(data=data)
(WorkerDict pid=91822)   File "/opt/conda/lib/python3.10/site-packages/verl/workers/actor/dp_actor.py", line 478, in update_policy
(WorkerDict pid=91822)     loss.backward()
(WorkerDict pid=91822)   File "/opt/conda/lib/python3.10/site-packages/torch/_tensor.py", line 626, in backward
(WorkerDict pid=91822)     torch.autograd.backward(
(WorkerDict pid=91822) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB. GPU 0 has a total \
capacity of 79.10 GiB of which 2.11 GiB is free. Including non-PyTorch memory, this process has 76.98 GiB memory in use.
"""


def traceback(*frames: tuple[str, str], error: str = "RuntimeError: boom") -> str:
    body = "".join(f'  File "{path}", line 10, in {func}\n    x()\n' for path, func in frames)
    return f"Traceback (most recent call last):\n{body}{error}\n"


@pytest.mark.parametrize(("frames", "expected"), [
    ([("/x/verl/trainer/ppo/ray_trainer.py", "fit"), ("/x/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py",
                                                      "generate_sequences"), ("/x/torch/nn/functional.py", "softmax")],
     "generation"),
    ([("/x/verl/trainer/ppo/ray_trainer.py", "fit"), ("/x/verl/workers/actor/dp_actor.py", "update_policy"),
      ("/x/torch/_tensor.py", "backward")], "training"),
    ([("/x/skyrl_train/trainer.py", "train"), ("/x/sglang/srt/managers/tp_worker.py",
                                               "update_weights_from_distributed")], "weight sync"),
    ([("/x/verl/trainer/ppo/ray_trainer.py", "_save_checkpoint"), ("/x/torch/serialization.py", "save")],
     "checkpoint"),
    ([("/x/verl/trainer/main_ppo.py", "main"), ("/x/verl/utils/dataset/rl_dataset.py", "__getitem__")], ""),
])
def test_the_deepest_frame_that_names_a_phase_says_it(frames, expected):
    assert normalize_query(traceback(*frames)).phase == expected


def test_a_question_names_rollout_or_training_and_nothing_else_counts_as_a_phase():
    assert normalize_query("rollout 阶段显存不足怎么办？").phase == "generation"
    assert normalize_query("OOM during training with FSDP, what should I lower?").phase == "training"
    assert normalize_query("the merged checkpoint gives garbage outputs").phase == ""  # a topic, not a phase
    assert normalize_query("weight sync times out").phase == ""


def test_entries_named_for_another_phase_are_held_back_only_when_the_frames_said_it():
    from rlhelper.schema import Entry

    def entry(heading: str) -> Entry:
        return Entry(id=heading, collection="c", doc="d", doc_title="", framework="verl", lang="en",
                     breadcrumb=[heading], heading=heading, anchor="", line_start=1, line_end=2, text=heading, url="")

    entries = [entry("OOM during rollout (vLLM)"), entry("OOM during training"), entry("OOM with large models")]
    assert phase.phase_factors("training", range(3), entries) == {0: phase.PHASE_CONFLICT, 1: 1 + phase.PHASE_BOOST}
    assert phase.phase_factors("training", range(3), entries, from_frames=False) == {1: 1 + phase.PHASE_BOOST}
    assert phase.phase_factors(None, range(3), entries) == {}


# -- on the default index -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def helper(full_index):
    return Helper.load(full_index, user_bank=False)


def test_a_verl_oom_in_the_backward_pass_leads_with_verls_training_oom_entry(helper):
    hits = helper.search(VERL_TRAINING_OOM, k=5)
    assert (hits[0].entry.framework, hits[0].entry.heading) == ("verl", "OOM during training")
    assert "OOM during rollout (vLLM)" not in [h.entry.heading for h in hits[:2]]


def test_heartbeats_after_an_nccl_abort_do_not_pull_the_answer_to_health_checks(helper):
    log = ("[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1402, "
           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600015 milliseconds before timing "
           "out.\n(WorkerDict pid=48211) torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3.\n"
           + "(raylet) [2025-01-01 12:00:00] worker heartbeat ok\n" * 30)
    lead = helper.ask(log).hits[0].entry
    assert "NCCL" in lead.heading or "NCCL" in lead.text, lead.heading
    assert "Health" not in lead.heading


# Each example the page offers is what a new user clicks first (issue 29, point 10).
FITTING = {0: ("weight sync",), 1: ("oom during rollout", "out of memory during generation"), 2: ("oom during rollout",)}


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_each_example_on_the_page_leads_with_a_fitting_entry_and_no_warning(helper, n):
    answer = helper.ask(EXAMPLES[n]["text"])
    assert not answer.abstained and not answer.weak_match
    assert any(words in answer.hits[0].entry.heading.lower() for words in FITTING[n]), answer.hits[0].entry.heading


# -- "matched:" in the asker's language (issue 29, point 4) ---------------------------------------------


@pytest.mark.parametrize(("question", "zh"), [("OOM during rollout vllm verl", False),
                                              ("weight sync timed out between trainer and sglang", False),
                                              ("rollout 阶段显存不足怎么办？", True), ("权重同步超时", True)])
def test_a_matched_question_is_shown_only_in_the_askers_language(helper, question, zh):
    from rlhelper.index.lexical import has_han

    shown = [h.matched_question for h in helper.search(question, k=8) if h.matched_question]
    assert all(has_han(q) == zh for q in shown), shown
