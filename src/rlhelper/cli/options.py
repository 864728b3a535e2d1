"""Options and helpers the commands share: filters, how to reach the LLM, reading a query."""

from __future__ import annotations

import sys

import click

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


# search.retrieve.MODES, spelt out: importing the search stack would slow every command's start.
mode_option = click.option(
    "--mode", type=click.Choice(["judge", "hybrid", "lexical", "dense"]), default=None,
    help="judge (the default): BM25 and embeddings fused, then the trained judge's say; hybrid: without the "
         "judge (the default where the judge cannot run); lexical: BM25 only; dense: embeddings only.")


def llm_connection_options(fn):
    """Where the LLM is, without ask's --llm flag (ingest has its own)."""
    return _apply(_llm_options[1:], fn)


def filters_of(framework, collection, lang) -> dict:
    return {"framework": list(framework) or None, "collection": list(collection) or None, "lang": lang}


def llm_settings(llm, base_url, model, api_key_env, timeout, extra=None, purpose="write the answer"):
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


def read_query(query: str) -> str:
    if query == "-":
        if sys.stdin.isatty():  # not piped: say what is expected instead of waiting in silence
            click.echo("Paste the error, traceback or log, then press Ctrl-D on an empty line.", err=True)
        data = sys.stdin.buffer.read()
        return data.decode("utf-8", errors="replace")
    return query


def load_helper(index, embedder=None, **kw):
    from ..api import Helper

    return Helper.load(index, embedder=embedder, **kw)


def load_helper_to_answer(index, mode=None):
    """The helper of a command that answers one question and exits (`rlhelper ask`): its models start
    loading at once, on threads of their own, while the search path is imported and the index read."""
    from .. import config
    from ..index.embed import preload
    from ..index.folders import recorded_embedder

    path = config.resolve_index(index)
    if mode != "lexical":
        preload(recorded_embedder(path))  # before the imports below: they hold the GIL, its load does not
    from ..api import Helper

    return Helper.load(path, mode=mode, preload=True)
