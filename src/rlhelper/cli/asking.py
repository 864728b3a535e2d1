"""`rlhelper ask`, `chat`, `search` and `serve` (with `auth`, who may sign in to it): questions in,
cited answers out (printing is in terminal.py and chat.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .options import (
    filter_options,
    filters_of,
    llm_options,
    llm_settings,
    load_helper,
    load_helper_to_answer,
    mode_option,
    read_query,
)


@click.command()
@click.argument("query")
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many entries to retrieve.")
@filter_options
@mode_option
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (schema: docs/json-schema.md).")
@llm_options
def ask(query, k, framework, collection, lang, index, mode, as_json, llm, llm_base_url, llm_model, llm_api_key_env,
        llm_timeout):
    """Answer QUERY (an error, a traceback or a question; '-' reads stdin) with cited doc entries.

    \b
    Examples:
      rlhelper ask "CUDA out of memory during rollout"
      python train.py 2>&1 | tail -80 | rlhelper ask -
      rlhelper ask --llm --llm-base-url http://127.0.0.1:30000/v1 --llm-model Qwen/Qwen2.5-7B-Instruct "..."
    """
    settings = llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    helper = load_helper_to_answer(index, mode)
    answer = helper.ask(read_query(query), k=k, mode=mode, **filters_of(framework, collection, lang))
    from ..index.lastanswer import remember_answer

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


@click.command()
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many entries to retrieve.")
@filter_options
@mode_option
@click.option("--json", "as_json", is_flag=True, help="One JSON answer per line (JSON Lines) instead of text.")
@llm_options
def chat(k, framework, collection, lang, index, mode, as_json, llm, llm_base_url, llm_model, llm_api_key_env,
         llm_timeout):
    """A conversation: ask, then follow up ("what about verl?"), the index loaded once.

    \b
    On a terminal a pasted traceback is one message. Piped, messages are
    separated by a blank line:
      printf 'NCCL timeout in weight sync\\n\\nwhat about slime?\\n' | rlhelper chat

    /new starts a new topic; /quit or Ctrl-D ends.
    """
    from .chat import GREETING, PROMPT, converse, messages

    settings = llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    helper = load_helper(index, mode=mode)  # every message of the conversation is searched so
    interactive = sys.stdin.isatty() and not as_json

    def show(answer):
        _show(helper, answer, settings, as_json, indent=None)  # JSON Lines: a script reads each as it comes
        if not as_json:
            click.echo()

    if interactive:
        click.secho(GREETING, dim=True, err=True)
    try:
        said = messages(sys.stdin, prompt=PROMPT if interactive else None)
        converse(helper, said, show, k=k, **filters_of(framework, collection, lang))
    except KeyboardInterrupt:  # Ctrl-C at the prompt ends the conversation quietly
        pass
    if interactive:
        click.echo(err=True)


@click.command()
@click.argument("query", required=False)
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many entries to list.")
@filter_options
@mode_option
@click.option("--batch", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='JSON Lines file of {"id": ..., "query": ...}; one result line per query.')
@click.option("--json", "as_json", is_flag=True, help="JSON output (one line per query with --batch).")
def search(query, k, framework, collection, lang, index, mode, batch, as_json):
    """List the entries that match QUERY ('-' reads stdin), or every query of --batch FILE."""
    if not query and not batch:
        raise click.UsageError("give a QUERY or --batch FILE")
    helper = load_helper(index)
    filters = filters_of(framework, collection, lang)
    if batch:
        filters = helper.filters(**filters)  # a bad filter fails once here, not on every line
        from .batch import run_batch

        for line in run_batch(helper, batch, k=k, mode=mode, **filters):
            click.echo(json.dumps(line, ensure_ascii=False) if as_json else _batch_line_text(line))
        return
    answer = helper.ask(read_query(query), k=k, mode=mode, **filters)
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


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (keep 127.0.0.1 unless you mean it).")
@click.option("--port", default=7860, show_default=True, help="Port to listen on.")
@click.option("--index", "index", help="Index folder or name.")
@mode_option
@llm_options
@click.option("--time-budget", type=click.FloatRange(min=1), default=60, show_default=True,
              help="Seconds one answer may take; past it the visitor gets a notice.")
@click.option("--auth-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Only the users in this file may sign in (made by `rlhelper auth add FILE NAME`; mode 600).")
@click.option("--trusted-proxy", "proxies", multiple=True, metavar="ADDR",
              help="A reverse proxy's address (or network) whose X-Forwarded-For names the visitor; repeatable. "
                   "Default: believe nobody's.")
@click.option("--learn-from-votes", is_flag=True,
              help="Every visitor's vote teaches everyone at once (for visitors you trust, behind authentication). "
                   "Default: a vote teaches its visitor, and others once you approve it (`rlhelper questions review`).")
@click.option("--new-visitors-per-hour", type=click.IntRange(min=1), default=None, metavar="N",
              help="New visitor ids (browsers whose votes teach them) handed to one address an hour; IPv6 counts "
                   "by /64. Default 600, for a team behind one address; raise it for a bigger one behind one NAT.")
def serve(host, port, index, mode, llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout, time_budget,
          auth_file, proxies, learn_from_votes, new_visitors_per_hour):
    """Start the web chat.

    With --llm, visitors may have that one model write the answer (the page shows it by name; they
    never choose a URL, and the key goes to that endpoint only). Without it the page offers no LLM.

    \b
    Examples:
      rlhelper serve
      rlhelper serve --llm --llm-base-url http://127.0.0.1:30000/v1 --llm-model Qwen/Qwen2.5-7B-Instruct
      rlhelper serve --auth-file ~/.config/rlhelper/users --trusted-proxy 127.0.0.1
    """
    from ..web.server import serve as run_server

    settings = llm_settings(llm, llm_base_url, llm_model, llm_api_key_env, llm_timeout)
    run_server(host=host, port=port, index=index, llm=[settings] if settings else None, time_budget=time_budget,
               mode=mode, auth_file=auth_file, proxies=proxies, learn_from_votes=learn_from_votes,
               new_visitors_per_hour=new_visitors_per_hour)


@click.group()
def auth():
    """Who may sign in to `rlhelper serve --auth-file FILE`."""


@auth.command("add")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin (scripts).")
def auth_add(file, name, password_stdin):
    """Add NAME to FILE (created 0600) with a salted scrypt hash of a password, or change theirs."""
    from ..web.auth import add_user

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True)
    new = add_user(file, name, password)
    click.echo(f"{name} {'added to' if new else 'has a new password in'} {file}; start the server with "
               f"`rlhelper serve --auth-file {file}` (it reads the file at start).")
