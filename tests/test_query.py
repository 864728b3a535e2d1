"""Error-signature extraction from pasted logs, framework hints, binary detection."""

from __future__ import annotations

import dataclasses
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlhelper.search import query
from rlhelper.search.frameworks import detect_frameworks
from rlhelper.search.query import NormalizedQuery, is_binary, normalize_query

CHAINED_TRACEBACK = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 212, in generate_sequences
    output = self.inference_engine.generate(prompts=None, sampling_params=self.sampling_params)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1654, in execute_model
    hidden_or_intermediate_states = model_executable(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/alice/runs/verl/trainer/main_ppo.py", line 64, in main
    run_ppo(config)
  File "/home/alice/runs/verl/trainer/ppo/ray_trainer.py", line 1023, in fit
    gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)
RuntimeError: Rollout failed after CUDA OOM; lower actor_rollout_ref.rollout.gpu_memory_utilization
"""

RAY_ACTOR_DIED = """\
2025-03-01 12:00:01,123\tINFO worker.py:1832 -- Started a local Ray instance. View the dashboard at 127.0.0.1:8265
(TaskRunner pid=81234, ip=10.0.0.1) Traceback (most recent call last):
(TaskRunner pid=81234, ip=10.0.0.1)   File "/opt/verl/verl/trainer/main_ppo.py", line 292, in run
(TaskRunner pid=81234, ip=10.0.0.1)     trainer.fit()
(TaskRunner pid=81234, ip=10.0.0.1) ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
(TaskRunner pid=81234, ip=10.0.0.1) \tclass_name: create_colocated_worker_cls.<locals>.WorkerDict
(TaskRunner pid=81234, ip=10.0.0.1) \tactor_id: 8b3ae0c1d5c04f1a8a6f1f8e01000000
(TaskRunner pid=81234, ip=10.0.0.1) \tpid: 82001
(TaskRunner pid=81234, ip=10.0.0.1) \tip: 10.0.0.2
(TaskRunner pid=81234, ip=10.0.0.1) The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR (1) The process is killed by SIGKILL by OOM killer due to high memory usage.
(raylet) [2025-08-29 23:30:23,740 E 2711113 2711113] (raylet) worker_pool.cc:586: Some workers of the worker process(2769699) have not registered within the timeout. [repeated 4x across cluster]
"""

SGLANG_SCHEDULER = """\
[2025-03-01 12:00:01 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=12.31 GB
[2025-03-01 12:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2345, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/mem_cache/memory_pool.py", line 120, in alloc
    raise RuntimeError("KV cache pool is full")
RuntimeError: KV cache pool is full. Retry with a smaller --mem-fraction-static

[2025-03-01 12:00:05] Received sigquit from a child process. It usually means the child failed.
"""

NCCL_LOG = """\
node-1:12345:12400 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node-1:12345:12400 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
node-1:12345:12401 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43215> failed : Software caused connection abort
[rank0]:[E301 12:00:01.123456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600012 milliseconds before timing out.
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5
"""

GLOO_LOG = """\
[E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error
RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete
"""

VLLM_WARNINGS = """\
\x1b[33mWARNING 03-01 12:00:01 [config.py:1234]\x1b[0m Casting torch.bfloat16 to torch.float16.
\x1b[32mINFO 03-01 12:00:02 [llm_engine.py:234]\x1b[0m Initializing an LLM engine (v0.8.5) with config: model='Qwen/Qwen2.5-7B'
I0301 12:00:01.123456 12345 gcs_server.cc:123] Started GCS server
Loading safetensors checkpoint shards: 100%|██████████| 4/4 [00:02<00:00,  1.85it/s]
\x1b[31mERROR 03-01 12:00:09 [engine.py:160]\x1b[0m RuntimeError('CUDA error: an illegal memory access was encountered')
"""


def lines_of(q: NormalizedQuery) -> list[str]:
    return q.text.split("\n")


# --- tracebacks and logs -----------------------------------------------------------


def test_chained_traceback_keeps_both_errors_final_first():
    q = normalize_query(CHAINED_TRACEBACK)
    assert q.is_log and not q.truncated
    assert lines_of(q)[0].startswith("RuntimeError: Rollout failed after CUDA OOM")
    assert lines_of(q)[1].startswith("torch.OutOfMemoryError: CUDA out of memory.")
    for noise in ('File "', "line 212", "generate_sequences(", "^^^", "During handling", "Traceback", "/home/alice"):
        assert noise not in q.text
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" in q.text
    assert q.notices and "error signature" in q.notices[0]


def test_frameworks_come_from_module_paths_even_when_frames_are_dropped():
    hints = normalize_query(CHAINED_TRACEBACK).frameworks
    assert hints["verl"] >= 0.9 and hints["vllm"] >= 0.9


def test_ray_actor_died_dump_loses_ids_pids_and_prefixes():
    q = normalize_query(RAY_ACTOR_DIED)
    assert lines_of(q)[0] == "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
    assert "killed by SIGKILL by OOM killer" in q.text  # the message goes on under the exception line
    assert "worker_pool.cc: Some workers of the worker process" in q.text
    for noise in ("TaskRunner pid", "ip=", "10.0.0", "8b3ae0c1", "82001", "actor_id", "repeated 4x", "2025-08-29", "(raylet)"):
        assert noise not in q.text
    assert "Started a local Ray instance" not in q.text  # INFO chatter
    assert q.frameworks["verl"] >= 0.9


def test_sglang_scheduler_exception():
    q = normalize_query(SGLANG_SCHEDULER)
    assert lines_of(q)[0] == "RuntimeError: KV cache pool is full. Retry with a smaller --mem-fraction-static"
    assert "Scheduler hit an exception:" in q.text and "Traceback" not in q.text
    assert "TP0" not in q.text and "2025-03-01" not in q.text
    assert "Load weight end" not in q.text
    assert q.frameworks == {"sglang": pytest.approx(0.98)}


def test_nccl_log_keeps_warn_lines_and_the_final_error():
    q = normalize_query(NCCL_LOG)
    first = lines_of(q)[0]
    assert first.startswith("torch.distributed.DistBackendError: NCCL error in:")
    assert "ProcessGroupNCCL.cpp unhandled system error" in first  # path -> file name, line number gone
    assert "NCCL WARN socketStartConnect" in q.text
    assert "Watchdog caught collective operation timeout" in q.text
    assert "NCCL INFO" not in q.text and "10.0.0" not in q.text and "12345" not in q.text


def test_gloo_paths_keep_library_and_file_names():
    q = normalize_query(GLOO_LOG)
    assert lines_of(q)[0] == "RuntimeError: gloo unbound_buffer.cc Timed out waiting 1800000ms for recv operation to complete"
    assert "third_party" not in q.text and "transport" not in q.text


def test_warnings_with_timestamps_ansi_and_progress_bars():
    q = normalize_query(VLLM_WARNINGS)
    assert lines_of(q) == [
        "RuntimeError('CUDA error: an illegal memory access was encountered')",
        "Casting torch.bfloat16 to torch.float16.",
    ]
    assert "\x1b" not in q.text


def test_repeated_errors_from_many_ranks_collapse():
    log = "".join(
        f"(WorkerDict pid={100 + r}, ip=10.0.0.{r}) [rank{r}]: RuntimeError: NCCL communicator was aborted on rank {r}\n"
        for r in range(8)
    )
    q = normalize_query(log)
    assert lines_of(q) == ["RuntimeError: NCCL communicator was aborted on rank 7"]


def test_python_logging_and_glog_prefixes():
    log = (
        "INFO:root:starting step 10\n"
        "ERROR:verl.trainer:Weight sync timed out after 600s\n"
        "W0301 12:00:01.123456 1234 socket.cc:88] connection reset by peer\n"
    )
    q = normalize_query(log)
    assert lines_of(q)[0] == "Weight sync timed out after 600s"
    assert "connection reset by peer" in q.text and "starting step" not in q.text
    assert q.frameworks["verl"] >= 0.8  # the logger name


def test_python_warning_drops_its_source_line_and_metric_names_are_not_paths():
    log = (
        "(WorkerDict pid=2345, ip=10.1.2.3) /usr/lib/python3.10/site-packages/torch/distributed/fsdp/"
        "_state_dict_utils.py:773: UserWarning: full_state_dict will be returned.\n"
        "(WorkerDict pid=2345, ip=10.1.2.3)   warnings.warn(\n"
        "(main_task pid=1234) Training Progress:  12%|█▏        | 12/100 [10:01<1:13:00, 49.8s/it]\n"
        "(main_task pid=1234) step:12 - actor/grad_norm:nan - critic/score/mean:0.1\n"
    )
    q = normalize_query(log)
    assert lines_of(q) == [
        "step:12 - actor/grad_norm:nan - critic/score/mean:0.1",
        "torch distributed _state_dict_utils.py UserWarning: full_state_dict will be returned.",
    ]


def test_torchrun_failure_report_keeps_the_root_cause():
    log = (
        "E0301 12:00:02.000000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
        "local_rank: 0 (pid: 12345) of binary: /usr/bin/python\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        + "=" * 60 + "\ntrain.py FAILED\n" + "-" * 60 + "\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 12345\n"
    )
    q = normalize_query(log)
    assert lines_of(q)[0] == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"
    assert "Signal 9 (SIGKILL)" in q.text and "failed (exitcode: -9)" in q.text
    assert "====" not in q.text and "12:00:02" not in q.text


RAY_DRIVER_TAIL = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/verl/verl/trainer/main_ppo.py", line 51, in run_ppo\n'
    "    ray.get(runner.run.remote(config))\n"
    "ray.exceptions.RayTaskError(RuntimeError): ray::TaskRunner.run() (pid=1201, ip=10.0.0.2, "
    "repr=<main_ppo.TaskRunner object at 0x7f>)\n"
    '  File "/workspace/verl/verl/single_controller/ray/base.py", line 49, in func\n'
    "    output = ray.get(output)\n"
    "ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_generate_sequences() "
    "(pid=1544, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7f>)\n"
)


def test_ray_wrapper_lines_give_way_to_the_error_they_carry():
    # Ray re-raises a worker's exception under "RayTaskError(X): ray::Actor.method()": the class and
    # method names say where it crossed a process boundary, and matched install pages, not the error.
    q = normalize_query(RAY_DRIVER_TAIL + "RuntimeError: CUDA Error: out of memory at cumem_allocator.cpp:62\n")
    assert q.text == "RuntimeError: CUDA Error: out of memory at cumem_allocator.cpp"
    only_wrappers = normalize_query(RAY_DRIVER_TAIL)  # a paste cut before the error: the wrappers are all there is
    assert "ray::WorkerDict.actor_rollout_generate_sequences()" in only_wrappers.text


def test_a_torchrun_report_pasted_without_log_prefixes_is_read_as_a_log():
    report = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" + "=" * 60 + "\n"
              "slime/train.py FAILED\n" + "-" * 60 + "\nRoot Cause (first observed failure):\n"
              "  exitcode  : 1 (pid: 1234)\n" + "=" * 60 + "\n")
    q = normalize_query(report)
    assert q.is_log and lines_of(q)[0] == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"
    assert "====" not in q.text and "----" not in q.text
    assert not normalize_query("RuntimeError: CUDA error: out of memory\nhow do I fix it?").is_log  # two lines: a question


def test_logging_name_level_format():
    q = normalize_query("2025-03-01 12:00:01,123 - verl.trainer.main_ppo - ERROR - Weight sync timed out\n")
    assert q.text == "Weight sync timed out"


def test_log_without_any_error_falls_back_to_its_last_lines():
    log = "".join(f"2025-03-01 12:00:{i:02d} step {i} reward=0.{i}\n" for i in range(40))
    q = normalize_query(log)
    assert q.is_log and "step 39" in q.text and "step 10" not in q.text
    assert "no error line" in q.notices[0]


# --- plain questions ---------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("  How do I fix   OOM during rollout?\n", "How do I fix OOM during rollout?"),
        ("rollout 阶段显存不足怎么办", "rollout 阶段显存不足怎么办"),
        ("RuntimeError: CUDA error: out of memory", "RuntimeError: CUDA error: out of memory"),
        ("What does\n--sglang-mem-fraction-static\ndo?", "What does --sglang-mem-fraction-static do?"),
    ],
)
def test_questions_and_short_errors_pass_through(raw, expected):
    q = normalize_query(raw)
    assert q.text == expected and not q.is_log and not q.truncated and q.notices == []


def test_long_question_keeps_its_head_with_a_notice():
    q = normalize_query("why " * 3000, max_chars=100)
    assert q.truncated and len(q.text) <= 100 and q.text.startswith("why why")
    assert "12,000 characters" in q.notices[-1]


def test_result_is_frozen():
    q = normalize_query("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.text = "y"


# --- size limits ---------------------------------------------------------------------


@pytest.mark.slow
def test_one_megabyte_log_is_cut_to_its_tail_with_a_notice():
    chatter = "(WorkerDict pid=4242, ip=10.0.0.3) INFO 03-01 12:00:01 [model_runner.py:1234] step 12 loss=0.123\n"
    raw = chatter * (1_048_576 // len(chatter)) + CHAINED_TRACEBACK
    started = time.process_time()  # CPU time: other processes on a busy machine do not count
    q = normalize_query(raw)
    assert time.process_time() - started < 10
    assert q.truncated and q.is_log
    assert any(f"{len(raw):,} characters" in n for n in q.notices)
    assert lines_of(q)[0].startswith("RuntimeError: Rollout failed after CUDA OOM")


@pytest.mark.parametrize("raw", ["x" * 1_048_576, "a/" * 524_288, "[" * 1_048_576, "\n" * 1_048_576,
                                 'File "x", line 1\n' * 60_000, "trainer." * 131_072])
@pytest.mark.slow
def test_hostile_megabyte_inputs_finish(raw):
    started = time.process_time()  # CPU time: other processes on a busy machine do not count
    q = normalize_query(raw)
    assert time.process_time() - started < 10
    assert q.truncated and len(q.text) <= 4000


def test_signature_respects_max_chars_and_says_what_was_left_out():
    q = normalize_query(NCCL_LOG, max_chars=200)
    assert len(q.text) <= 200 and q.truncated
    assert lines_of(q)[0].startswith("torch.distributed.DistBackendError")
    assert any("left out" in n for n in q.notices)


def test_very_long_error_line_is_clipped():
    q = normalize_query("Traceback (most recent call last):\nValueError: " + "bad " * 2000)
    assert q.truncated and q.text.startswith("ValueError: bad bad")
    assert any("cut to their first 2,000 characters" in n for n in q.notices)


# --- control characters and binary ----------------------------------------------------


def test_the_controls_removed_are_counted_over_the_whole_message_not_the_tail_searched():
    """Issue 36, point 7: 50,000 NULs through a long log were reported as "Removed 10,527"
    (those in the tail that is searched)."""
    raw = "step 3 loss=0.1\x00 reward=0.0\n" * 50_000 + "RuntimeError: CUDA error: an illegal memory access"
    assert len(raw) > query.MAX_SCAN_CHARS
    notices = [str(n) for n in query.normalize_query(raw).notices]
    assert "Removed 50,000 control characters from the query." in notices, notices


def test_control_and_bidi_characters_are_removed_with_a_notice():
    q = normalize_query("\u202eevil\u200b text\x07 here\x00")
    assert q.text == "evil text here"
    assert q.notices == ["Removed 4 control characters from the query."]


def test_carriage_return_progress_keeps_the_last_redraw():
    q = normalize_query("downloading 10%\rdownloading 55%\rRuntimeError: connection reset")
    assert q.text == "RuntimeError: connection reset"


@pytest.mark.parametrize(
    "raw, binary",
    [
        ("\x00\x01\x02abc" * 100, True),
        ("\ufffd\ufffdPNG\ufffd" * 100, True),
        ("\x1b[31mred\x1b[0m text\n" * 100, False),
        ("普通的中文问题：显存不足", False),
        ("", False),
        (CHAINED_TRACEBACK, False),
    ],
)
def test_is_binary(raw, binary):
    assert is_binary(raw) is binary


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.text(max_size=3000))
def test_never_raises_and_stays_within_budget(raw):
    q = normalize_query(raw, max_chars=500)
    assert len(q.text) <= 500
    assert "\x00" not in q.text and "\x1b" not in q.text


# --- framework hints ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, framework",
    [
        ("python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8", "verl"),
        ("actor_rollout_ref.rollout.gpu_memory_utilization=0.3", "verl"),
        ("python -m skyrl_train.entrypoints.main_base generator.backend=sglang", "skyrl"),
        ("trainer.placement.colocate_all=true", "skyrl"),
        ("export SKYRL_RAY_PG_TIMEOUT_IN_S=600", "skyrl"),
        ("python train.py --actor-num-nodes 1 --sglang-mem-fraction-static 0.8", "slime"),
        ("--rollout-health-check-timeout 5 --use-fault-tolerance", "slime"),
        ('File "/root/slime/slime/utils/arguments.py", line 10', "slime"),
        ("check cluster.component_placement", "rlinf"),
        ("bash examples/embodiment/run_embodiment.sh maniskill_ppo_openpi_pi05", "rlinf"),
    ],
)
def test_detect_frameworks_strong_hints(text, framework):
    hints = detect_frameworks(text)
    assert hints[framework] >= 0.6
    assert max(hints, key=hints.get) == framework


def test_ambiguous_keys_are_weak_evidence():
    hints = detect_frameworks("trainer.total_epochs=3 rollout.n=4")
    assert 0 < hints["verl"] < 0.5 and 0 < hints["skyrl"] < 0.5 and 0 < hints["rlinf"] < 0.5


def test_keys_inside_longer_keys_and_method_calls_are_not_hints():
    assert "rlinf" not in detect_frameworks("actor_rollout_ref.rollout.n=4")
    assert detect_frameworks("self.trainer.fit() then trainer.fit()") == {}


def test_names_and_engines():
    assert detect_frameworks("SkyRL with vLLM") == {"skyrl": 0.8, "vllm": 0.8}
    assert detect_frameworks("RLinf and SGLang") == {"rlinf": 0.8, "sglang": 0.8}
    assert detect_frameworks("CUDA out of memory") == {}


def test_hints_from_the_head_of_a_long_log_survive_the_cut():
    raw = "python3 -m verl.trainer.main_ppo\n" + "step\n" * 300_000 + "RuntimeError: boom\n"
    q = normalize_query(raw)
    assert q.truncated and q.frameworks.get("verl", 0) >= 0.9


def test_the_deepest_framework_frame_gives_the_context():
    log = textwrap.dedent('''\
        Traceback (most recent call last):
          File "/home/u/verl/verl/trainer/main_ppo.py", line 10, in main
            run()
          File "/home/u/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 248, in generate_sequences
            outputs = self.inference_engine.generate(prompts=vllm_inputs)
          File "/usr/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 10, in generate
            x = 1
        torch.OutOfMemoryError: CUDA out of memory.
        ''')
    q = normalize_query(log)
    assert q.context == "workers rollout vllm rollout vllm rollout spmd generate_sequences"
    assert "rollout" not in q.text  # the context is kept apart: it is a hint, not the error
    plain = normalize_query('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nKeyError: 1')
    assert plain.context == "" and normalize_query("CUDA out of memory").context == ""


# --- long logs: noise is not the signature -------------------------------------------

STEP_LINES = "".join(
    f"(TaskRunner pid=4242) step:{i} - actor/pg_loss:0.{i % 10} - critic/score/mean:0.5 - timing/gen:12.{i % 7}\n"
    for i in range(60)
)
WATCHDOG = ("[rank3]:[E301 12:10:01.123456 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE) ran for 600012 milliseconds before timing out.\n")


def heartbeats(n: int, line: str) -> str:
    return "".join(f"2025-03-01 12:11:{i % 60:02d},{100 + i} {line.format(i=i)}\n" for i in range(n))


@pytest.mark.parametrize("beat", [
    "worker heartbeat ok",
    "worker {i} heartbeat ok (timeout=30s, errors=0)",
    "INFO rollout health check passed: engine alive, no errors",
    "(RolloutWorker pid=77) heartbeat from rank {i}: ok, last timeout 0",
])
def test_an_error_amid_heartbeats_is_the_signature_and_heartbeats_count_once(beat):
    q = normalize_query(STEP_LINES + WATCHDOG + heartbeats(30, beat))
    assert lines_of(q)[0].startswith("[Rank 3] Watchdog caught collective operation timeout")
    assert "heartbeat" not in q.text and "health check" not in q.text
    assert "1 error line" in q.notices[0]


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_the_error_wins_wherever_it_stands(where):
    info = "".join(f"INFO:verl.trainer:rollout {i} timed out waiting, retrying (attempt {i})\n" for i in range(40))
    warnings = "".join(f"WARNING:root:slow batch {i}\n" for i in range(5))
    error = "ERROR:verl.trainer:Weight sync failed: NCCL connection closed by remote peer\n"
    log = {"start": error + warnings + info, "middle": warnings + error + info, "end": warnings + info + error}[where]
    q = normalize_query(log)
    assert lines_of(q)[0] == "Weight sync failed: NCCL connection closed by remote peer"
    assert lines_of(q)[1] == "slow batch 4"  # a warning line before INFO chatter with error words
    assert sum("timed out waiting" in line for line in lines_of(q)) <= 1


def test_a_warning_beats_info_lines_with_error_words():
    log = ("WARNING 03-01 12:00:01 [scheduler.py:90] KV cache usage 99%, preempting requests\n"
           + "".join(f"INFO 03-01 12:00:{i:02d} [engine.py:12] request {i} timeout budget 30s\n" for i in range(20)))
    q = normalize_query(log)
    assert lines_of(q)[0] == "KV cache usage 99%, preempting requests"


def test_a_log_of_repeated_lines_without_errors_searches_each_once():
    log = "".join(f"2025-03-01 12:00:{i:02d} step {i} reward=0.{i}\n" for i in range(20)) + heartbeats(30, "worker heartbeat ok")
    q = normalize_query(log)
    assert q.text.count("heartbeat") == 1 and q.text.count("step") == 1
    assert "no error line" in q.notices[0]


# -- issue 29, point 1: a line with its own log prefix starts a new record ------------------------------


WATCHDOG_THEN_ABORT = (
    "[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1402, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.\n"
    "(WorkerDict pid=48211) torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3.\n"
)


@pytest.mark.parametrize("beat", ["(raylet) [2025-01-01 12:00:00] worker heartbeat ok",
                                  "2025-01-01 12:00:00,123 worker heartbeat ok",
                                  "(raylet) worker heartbeat ok"])
def test_the_lines_after_an_exception_with_their_own_prefix_are_not_its_message(beat):
    q = normalize_query(WATCHDOG_THEN_ABORT + f"{beat}\n" * 30)
    assert lines_of(q)[0] == "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3."
    assert "heartbeat" not in q.text
    assert "(2 error lines, last error first)" in q.notices[0]


def test_a_ray_workers_message_goes_on_under_the_same_actor_prefix():
    log = ("(WorkerDict pid=48211) RuntimeError: weight sync failed\n"
           "(WorkerDict pid=48211) the NCCL group was torn down before the broadcast finished\n"
           "(WorkerDict pid=50000) INFO step 3 done\n")
    q = normalize_query(log)
    assert lines_of(q)[:2] == ["RuntimeError: weight sync failed",
                               "the NCCL group was torn down before the broadcast finished"]
    assert "(2 lines, 1 error line, last error first)" in q.notices[0]  # says what was searched


def test_an_actor_name_alone_does_not_name_the_framework():
    from rlhelper.answer.extractive import NAMED

    hinted = normalize_query("(TaskRunner pid=81234) RuntimeError: CUDA error: an illegal memory access\n"
                             "(TaskRunner pid=81234) INFO shutting down\n").frameworks
    assert 0 < hinted.get("verl", 0) < NAMED
