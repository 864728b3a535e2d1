"""The timing toolkit both benches share (bench.py: the shipped corpus; synthetic.py: scale).

    measured = measure_process(argv)                    # wall seconds and that process's own peak RSS
    figures = run_worker("search", index=..., queries=...)   # a worker in a fresh interpreter (workers.py)
    row("search_p50", "warm search p50", percentile(latencies, 50), "ms")

Every figure that a user would feel as a process (ingest, `rlhelper ask`) is
measured as a process: a fresh interpreter started through a tiny wrapper
whose only child is the measured command, so the wrapper's
`getrusage(RUSAGE_CHILDREN).ru_maxrss` is exactly that command's peak RSS.
Percentiles are numpy's (linear interpolation between the closest ranks), the
same definition as the web load test's.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

WORKERS_MODULE = "rlhelper.measure.workers"
# Warm-up queries differ from the timed ones: the retriever caches query vectors,
# and a timed query whose vector is cached would hide the embedding cost.
WARMUP_QUERIES = (
    "warm-up: ray worker died unexpectedly",
    "warm-up: NCCL timeout in all_reduce",
    "warm-up: 训练时显存不足",
)
FALLBACK_QUERIES = (
    "CUDA out of memory during rollout", "NCCL error: unhandled system error", "wake_up timed out after 60s",
    "ModuleNotFoundError: No module named 'sglang'", "how do I resume training from a checkpoint",
    "vllm engine hangs at startup", "weight sync between trainer and rollout is slow", "ray actor died",
    "loss becomes nan after a few steps", "如何设置 tensor parallel 大小",
)

# name -> (target, unit); value <= target passes.
TARGETS = {
    "cold_ingest": (10.0, "s"),
    "reingest": (1.0, "s"),
    "search_p50": (10.0, "ms"),
    "search_p95": (30.0, "ms"),
    "ask_process": (1.5, "s"),
    "judge_added_p50": (30.0, "ms"),  # what the judge mode, the default, adds to a warm hybrid search (issue 27)
    "ask_vs_numpy": (4.0, "x"),  # `rlhelper ask`, whole process, over `python -c 'import numpy'` (issues 27, 38)
    "ask_log_vs_numpy": (5.0, "x"),  # `rlhelper ask --json -` on a 300-line pasted log, likewise (issue 38)
    "judge_search_p50": (10.0, "ms"),  # warm search in the default (judge) mode (issue 38)
    "judge_search_p95": (30.0, "ms"),
    "learned_first_search": (1.0, "s"),  # 20k learned questions: a process's first search (issue 38)
    "learned_ask_vs_numpy": (6.0, "x"),
    "learned_peak_rss_ask": (400.0, "MB"),
    "judge_installed_mb": (150.0, "MB"),  # what the judge adds to the default install (issue 27)
    "sync_nochange": (2.0, "s"),  # `rlhelper sync` of four git doc sources with nothing new (issue 30)
    "learned_vote_added_p50": (50.0, "ms"),  # 20k learned questions: a search right after a vote (issue 31)
    "peak_rss_query": (400.0, "MB"),
    "peak_rss_query_judge": (400.0, "MB"),
    "peak_rss_ask": (300.0, "MB"),  # issue 38
    "scale_p50_100000": (50.0, "ms"),
    "scale_peak_100000": (2048.0, "MB"),
}


# --- measuring a process ----------------------------------------------------------------

_WRAPPER = r"""
import json, resource, subprocess, sys, time
argv = json.loads(sys.argv[1])
t = time.perf_counter()
p = subprocess.run(argv, capture_output=True, text=True)
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall": wall, "maxrss": peak, "returncode": p.returncode,
                  "stdout": p.stdout, "stderr": p.stderr[-4000:]}))
"""


def measure_process(argv: Sequence[str], *, env: dict | None = None, timeout: float = 900) -> dict:
    """Run argv as a process; wall seconds, peak RSS in MB, exit status and output.

    The wrapper's only child is argv, so RUSAGE_CHILDREN's high-water mark is argv's own.
    """
    import subprocess

    done = subprocess.run([sys.executable, "-c", _WRAPPER, json.dumps(list(argv))], capture_output=True,
                          text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {argv[:3]} failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout)
    # ru_maxrss is KiB on Linux, bytes on macOS.
    out["peak_rss_mb"] = out.pop("maxrss") / (1024 * 1024 if sys.platform == "darwin" else 1024)
    if out["returncode"] != 0:
        raise RuntimeError(f"{' '.join(map(str, argv[:4]))} exited {out['returncode']}: {out['stderr'][-2000:]}")
    return out


def paired_ratio(argv_a: Sequence[str], argv_b: Sequence[str], runs: int = 5,
                 env: dict | None = None) -> tuple[float, list[float]]:
    """The median over `runs` pairs of A's wall time over B's, A and B run in turn (A B A B ...), so a
    machine whose speed drifts moves both of a pair alike; one untimed run of each first."""
    import statistics

    measure_process(argv_a, env=env)
    measure_process(argv_b, env=env)
    ratios = []
    for _ in range(max(1, runs)):
        a = measure_process(argv_a, env=env)["wall"]
        ratios.append(a / measure_process(argv_b, env=env)["wall"])
    return statistics.median(ratios), ratios


def worker_argv(task: str, **args) -> list[str]:
    """A bench worker in a fresh interpreter: `python -m rlhelper.measure.workers <task> <json args>`."""
    return [sys.executable, "-m", WORKERS_MODULE, task, json.dumps(args)]


def run_worker(task: str, *, env: dict | None = None, timeout: float = 900, **args) -> dict:
    measured = measure_process(worker_argv(task, **args), env=env, timeout=timeout)
    lines = [line for line in measured["stdout"].splitlines() if line.startswith("{")]
    return {**json.loads(lines[-1]), "process_seconds": measured["wall"], "peak_rss_mb": measured["peak_rss_mb"]}


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's percentile (q in 0..100, linear interpolation); NaN when there are no values."""
    return float(np.percentile(values, q)) if len(values) else math.nan


def load_queries(eval_file: Path | None, limit: int | None = None) -> list[str]:
    """Every eval query (all splits: timing, not quality), else a small built-in list."""
    queries = []
    if eval_file and Path(eval_file).is_file():
        for line in Path(eval_file).read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    queries.append(json.loads(line)["query"])
                except (ValueError, KeyError, TypeError):
                    continue
    queries = queries or list(FALLBACK_QUERIES)
    return queries[:limit] if limit else queries



# --- what a worker measures, and how figures are kept ----------------------------------


def worker_search(index: str, queries: list[str], repeats: int = 1, k: int = 5, mode: str = "hybrid") -> dict:
    """Warm search latency: the model is loaded and warmed on other queries, then each query is timed."""
    from ..api import Helper

    load_started = time.perf_counter()
    helper = Helper.load(index, mode=mode)
    load_seconds = time.perf_counter() - load_started
    for q in WARMUP_QUERIES:
        helper.search(q, k=k)
    latencies = []
    for _ in range(max(1, repeats)):
        _clear_query_cache(helper)
        for q in queries:
            started = time.perf_counter()
            try:
                helper.search(q, k=k)
            except Exception:  # noqa: BLE001 - an unsearchable query still took this long
                pass
            latencies.append((time.perf_counter() - started) * 1000)
    return {"load_seconds": load_seconds, "latencies_ms": latencies, "entries": len(helper.entries)}


def _clear_query_cache(helper) -> None:
    """Forget cached query vectors so a repeated pass embeds again (the first pass never hits the cache)."""
    fn = getattr(type(getattr(helper, "retriever", None)), "query_vector", None)
    if hasattr(fn, "cache_clear"):
        fn.cache_clear()



def row(key: str | None, name: str, value: float | None, unit: str, note: str = "") -> dict:
    target = TARGETS.get(key, (None, unit))[0] if key else None
    passed = None if target is None or value is None else bool(value <= target)
    return {"key": key, "name": name, "value": value, "unit": unit, "target": target, "pass": passed, "note": note}



def machine() -> dict:
    """Where the figures were measured; the load average says whether the machine was shared at the time."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "load_avg_1m": round(load[0], 2) if load else None}


def write_json(figures: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    figures.setdefault("written_to", str(path))
    return path

