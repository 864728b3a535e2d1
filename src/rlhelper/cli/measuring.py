"""`rlhelper eval` and `rlhelper bench`: the eval sets, speed and reliability."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .options import llm_options, llm_settings


@click.command("eval")
@click.option("--set", "eval_set", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Eval file (JSON Lines; default eval/seeds.jsonl).")
@click.option("--split", type=click.Choice(["dev", "test"]), help="Only items of this split.")
@click.option("--collection", "-c", multiple=True, help="Collections the index must hold (default: seeds).")
@click.option("--embedder", help="Embedder spec (builds a temporary index with it).")
@click.option("--index", "index", help="Evaluate this existing index instead of building one.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON instead of a table.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write the Markdown report and PNG chart here (default eval/reports).")
@click.option("--calibrate", is_flag=True,
              help="Fit the abstention model on the dev split first (saved to the calibration_file setting).")
@click.option("--fit-ranking", is_flag=True,
              help="With a thread set and --split dev: fit how threads rank against doc entries first (saved to the "
                   "ranking_file setting; search/tradeoff.py).")
@click.option("--write-baseline", is_flag=True,
              help="Write the regression gate's baseline: test split, hybrid mode (default collections: seeds).")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline file --write-baseline writes (default eval/baseline.json).")
@click.option("--judge", "with_judge", is_flag=True,
              help="Insist on the judge mode's column (it is there by default wherever the judge can run).")
@click.option("--modes", "mode_list", help="Comma-separated modes to run, e.g. hybrid,judge (default: lexical, "
              "dense, hybrid, and judge with --judge).")
@click.option("--judge-model", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The judge mode's model folder (default: the one shipped; `rlhelper judge train` writes one).")
@llm_options
def eval_(eval_set, split, collection, embedder, index, as_json, report_dir, calibrate, fit_ranking, write_baseline,
          baseline_file, with_judge, mode_list, judge_model, llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout):
    """Measure retrieval: Recall@1/3/5, MRR@10, nDCG@10, abstention; lexical, dense, hybrid and judge
    (the default mode), with the judge's difference from hybrid and its 95 % interval.

    With --llm your model judges every hybrid answer, as `rlhelper ask --llm` does (one request per
    item): its "no answer in these entries" counts as an abstention.
    """
    from ..measure import baseline, harness, report, sets

    eval_file = eval_set or sets.DEFAULT_EVAL_FILE
    settings = llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    if calibrate and settings is not None:
        raise click.UsageError("--calibrate fits rlhelper's own abstention model: run it without --llm")
    if baseline_file is not None and not write_baseline:
        raise click.UsageError("--baseline names the file --write-baseline writes: add --write-baseline")
    if write_baseline:
        # The gate compares rlhelper's own test-split figures: no dev split, no LLM, no calibration in between.
        if split not in (None, baseline.BASELINE_SPLIT) or calibrate or settings is not None or embedder:
            raise click.UsageError("--write-baseline measures the test split with the default embedder and "
                                   "rlhelper's own abstention: drop --split dev, --calibrate, --embedder and --llm")
        split = baseline.BASELINE_SPLIT
        collection = collection or baseline.DEFAULT_COLLECTIONS
    if calibrate:
        if split != "dev":
            raise click.UsageError("calibrate on the dev split (--split dev), never on test")
        from ..measure.calibration import run_calibration, run_thread_calibration

        if index is None and _expects_threads(eval_file):  # a thread at the top: its own bands (confidence.py)
            model, saved = run_thread_calibration(eval_file, collections=list(collection) or None,
                                                  notify=lambda message: click.echo(f"note: {message}", err=True))
        else:
            model, saved = run_calibration(eval_file, collections=list(collection) or None, embedder=embedder,
                                           index=index)
            click.echo("note: the judge mode's confidence rests on this model: run `rlhelper judge calibrate` next",
                       err=True)
            if not model.kind_bands:  # they rest on the weights just refitted: set again, not kept stale
                click.echo("note: a thread's confidence bands, if the file had them, are left out: calibrate them "
                           "again with --set eval/threads.jsonl --split dev --calibrate", err=True)
        click.echo(f"abstention model for {model.embedder} written: {saved}", err=True)
    if with_judge and write_baseline:
        raise click.UsageError("the baseline gates the hybrid mode's figures: drop --judge")
    modes = harness.default_modes(with_judge)
    if mode_list:
        from ..search.retrieve import MODES as SEARCH_MODES

        modes = tuple(m.strip() for m in mode_list.split(",") if m.strip())
        unknown = [m for m in modes if m not in SEARCH_MODES]
        if unknown or not modes:
            raise click.UsageError(f"--modes takes some of {', '.join(SEARCH_MODES)}; got {mode_list!r}")
    threads = index is None and _expects_threads(eval_file)
    if fit_ranking and calibrate:
        raise click.UsageError("--fit-ranking and --calibrate: run them one after the other (fit the ranking first, "
                               "then calibrate on what it ranks)")
    if fit_ranking:
        if not threads or split != "dev" or embedder:
            raise click.UsageError("--fit-ranking fits on a thread set's dev split (--set eval/threads.jsonl "
                                   "--split dev) with the default embedder, without --index")
        from ..measure.tradeoff import run_fit

        model, saved = run_fit(eval_file, collections=list(collection) or None,
                               notify=lambda message: click.echo(f"note: {message}", err=True))
        click.echo(f"ranking trade-off written: {saved} (a thread counts x{model.factor(is_log=False):.3g} "
                   f"against a question, x{model.factor(is_log=True):.3g} against a pasted log)", err=True)
    if threads:
        if write_baseline or settings is not None:
            raise click.UsageError("a thread set (it expects GitHub threads) is measured without --write-baseline "
                                   "and --llm")
        _thread_eval(eval_file, split, collection, embedder, modes, as_json, report_dir)
        return
    result = harness.run_eval(eval_file, split=split, collections=list(collection) or None, embedder=embedder,
                              index=index, llm=settings, modes=modes, judge_folder=judge_model)
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(report.format_table(result))
    paths = report.write_report(result, report_dir or report.DEFAULT_REPORT_DIR)
    for path in paths:
        click.echo(f"report: {path}", err=True)
    if write_baseline:
        target = baseline_file or baseline.DEFAULT_BASELINE
        baseline.write_baseline(result, target, baseline.baseline_command(eval_file, target, collection))
        click.echo(f"baseline written: {target}", err=True)


def _expects_threads(eval_file: Path) -> bool:
    from ..measure import sets, threadeval

    return threadeval.expects_threads(sets.load_eval_set(eval_file))


def _thread_eval(eval_file, split, collection, embedder, modes, as_json, report_dir):
    """A set that expects GitHub threads: its corpus's threads indexed beside the docs, and every item
    searched among the threads only and beside the docs (measure/threadeval.py)."""
    from ..measure import report, threadeval

    results = threadeval.run_thread_eval(eval_file, split=split, collections=list(collection) or None,
                                         embedder=embedder, modes=modes,
                                         notify=lambda message: click.echo(f"note: {message}", err=True))
    if as_json:
        click.echo(json.dumps({"views": {view: r.to_dict() for view, r in results.items()}}, ensure_ascii=False,
                              indent=2))
    for view, result in results.items():
        if not as_json:
            click.echo(f"== {view} ==")
            click.echo(report.format_table(result))
            click.echo("")
        folder = (report_dir or report.DEFAULT_REPORT_DIR) / f"{Path(eval_file).stem}-{view.replace(' ', '-')}"
        for path in report.write_report(result, folder):
            click.echo(f"report: {path}", err=True)


@click.group(invoke_without_command=True)
@click.pass_context
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures as JSON here.")
def bench(ctx, json_out):
    """Print speed and memory figures (ingest, query latency, whole-process ask, peak memory)."""
    if ctx.invoked_subcommand:
        return
    from ..measure import bench as benchmarks

    figures = benchmarks.run_bench(json_out=json_out)
    click.echo(benchmarks.format_bench(figures))


@bench.command("scale")
@click.option("--sizes", default="10000,100000", show_default=True,
              help="Comma-separated entry counts (empty: none).")
@click.option("--threads", default="", help="Comma-separated counts of synthetic GitHub issue threads to ingest.")
@click.option("--thread-kb", default=0, show_default=True, type=click.IntRange(min=0),
              help="With --threads: the size of each synthetic thread in KB (0: a report and a fix, about 2 KB).")
def bench_scale(sizes, threads, thread_kb):
    """Synthetic corpora of 10k and 100k entries: throughput, size on disk, latency, memory."""
    from ..measure import bench as benchmarks

    def counts(text):
        return tuple(int(s) for s in text.split(",") if s.strip())

    figures = benchmarks.run_scale_bench(sizes=counts(sizes), threads=counts(threads), thread_bytes=thread_kb * 1024)
    click.echo(benchmarks.format_bench(figures))


@bench.command("web")
@click.option("--clients", default=20, show_default=True, help="Concurrent clients.")
@click.option("--questions", default=10, show_default=True, help="Questions per client.")
@click.option("--duration", type=float, help="Seconds to keep asking, instead of a number of questions.")
@click.option("--url", help="A running server (default: start one on 127.0.0.1 for the run).")
def bench_web(clients, questions, duration, url):
    """Concurrent clients against the web app: errors, p50/p95/p99 response time, throughput."""
    from ..web.loadtest import run_load_cli

    click.echo(run_load_cli(url=url, clients=clients, questions=questions, duration=duration))


@bench.command("reliability")
@click.option("--index", "index", help="Index folder or name to copy and try (default: index/default).")
@click.option("--kills", default=20, show_default=True, help="SIGKILLed ingests (0 skips them).")
@click.option("--fuzz", default=200, show_default=True, help="Fuzzed documents and logs (0 skips them).")
@click.option("--clients", default=50, show_default=True, help="Concurrent web clients in the load trial.")
@click.option("--seconds", default=60.0, show_default=True,
              help="Length of the load and memory trials (0 skips them).")
@click.option("--seed", default=0, show_default=True, help="Random seed of the kill points and fuzzed inputs (same seed, same trials).")
@click.option("--skip", multiple=True, type=click.Choice(["kills", "lock", "corruption", "queries", "fuzz", "load", "web",
                                                              "trust", "memory", "store", "ipv6net", "concurrent",
                                                              "escapes", "llm", "giant", "symlinks", "sections",
                                                              "gitlinks", "exports", "github", "bank", "ipv6"]),
              help="Leave a trial out. Repeatable.")
def bench_reliability(index, kills, fuzz, clients, seconds, seed, skip):
    """Try to break rlhelper on a copy of the index (kills, two ingests, damaged files, hostile
    queries, fuzzing, load, web and CLI attacks) and print what was tried and what held; exit 1 if anything did not."""
    from ..measure.reliability import format_report, run_reliability
    from ..web.benchrows import RELIABILITY_STEPS

    rows = run_reliability(index, kills=kills, fuzz=fuzz, clients=clients, seconds=seconds, seed=seed, skip=skip,
                           say=lambda line: click.echo(line, err=True), web_steps=RELIABILITY_STEPS)
    click.echo(format_report(rows))
    if not all(row.ok for row in rows):
        sys.exit(1)
