"""Running the web chat: `rlhelper serve` and `python ui/app.py` (serve), tests and the load test
(start, non-blocking), with Gradio's launch options, the page's theme, style and script.

Privacy: binds 127.0.0.1 by default, never a Gradio share link (a public tunnel), analytics, run history
and monitoring off, no extra file paths served, system fonts only (no Google Fonts).

What a visitor can make the server do (anyone who reaches the port, unless `--auth-file` names who
may sign in: auth.py):
- LLM answers go only to the endpoints the operator configured at start (`rlhelper serve --llm ...`);
  a visitor picks one by name or none, never a URL, and a key goes only to the endpoint it was
  configured with. With none configured the page offers no LLM and the API refuses one.
- Every event the page fires can also be called by hand, so each handler checks its arguments
  (arguments.py); a bad one is refused with its reason (HTTP 400 for the direct events: ClientErrorStatus).
- One answer may take `time_budget` seconds; past it the visitor gets a notice and the worker is
  abandoned (its result dropped). Answers share a pool of CONCURRENCY workers and a queue of at most
  QUEUE_SIZE waiting requests, so one slow question does not stop the others.
- Votes and comments are bounded per visitor and per address, and in total (feedback.py). A vote
  teaches the visitor who gave it, and others only once the operator approves it (visitors.py,
  votes.py), unless the server was started with `learn_from_votes`.
- What a request may bring (gate.py): a bounded body, no files, a bounded number of sessions per
  address, each let go after an hour idle. Proxy headers (X-Forwarded-For) count only from the
  addresses the operator names (`trusted_proxies`); by default from none.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
import threading
from collections.abc import Sequence
from contextlib import contextmanager
from functools import cache
from importlib.resources import files
from pathlib import Path

import gradio as gr
from starlette.middleware import Middleware

from ..answer import html as render
from ..catalogue import LANGS, say
from ..errors import ConfigError, RlhelperError
from ..measure.feedback import FeedbackStore
from .answering import TIME_BUDGET
from .app import PAGE_WORDS, build_app
from .arguments import MAX_MESSAGE_CHARS, llm_endpoints
from .gate import MAX_SESSIONS, VisitorGate


@cache
def _asset(name: str) -> str:
    """A file shipped beside this module (style.css, script.js), read once."""
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def _script_words() -> str:
    """The catalogue's words the page's script says itself (a copy button's "Copied"), by language: the
    chat's sanitiser drops data- attributes, so they cannot ride on the button."""
    most = f"{MAX_MESSAGE_CHARS:,}"
    labels = ("title", "answer_label", "message_label", "Like", "Liked", "Dislike", "Disliked")
    words = {lang: {"copied": say("answer.copied", lang), "too_long": say("script.too_long", lang, n="{n}", most=most),
                    **{label: say(f"script.{label}", lang) for label in labels}}
             for lang in LANGS}
    return f"window.RL_WORDS = {json.dumps(words, ensure_ascii=False)};\n"


def theme() -> gr.themes.Base:
    # System fonts: the default theme would fetch fonts from Google.
    return gr.themes.Soft(
        primary_hue="indigo",
        neutral_hue="slate",
        font=["ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    )


class ClientErrorStatus:
    """ASGI middleware: Gradio answers a direct call its handler refused (a gr.Error, whose message it
    sends even with show_error off) with HTTP 500; that is the caller's mistake, so it becomes 400.
    A real server error still answers 500 with {"error": null} (details in the server log)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        held: dict = {}
        body: list[bytes] = []

        async def relay(message):
            if message["type"] == "http.response.start" and message["status"] == 500:
                held["start"] = message
                return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            data, status = b"".join(body), 500
            try:
                if isinstance(json.loads(data).get("error"), str):
                    status = 400
            except (ValueError, AttributeError):
                pass
            await send({**held["start"], "status": status})
            await send({"type": "http.response.body", "body": data})

        await self.app(scope, receive, relay)


def bare_host(host: str) -> str:
    """`[::1]` as `::1`: how an IPv6 address is bound and resolved."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def gradio_host(host: str) -> str:
    """An IPv6 address in brackets: Gradio makes its own URL (and checks it) from the name it binds,
    and `http://:::7860/` is no URL."""
    host = bare_host(host)
    return f"[{host}]" if ":" in host else host


def launch_options(host: str = "127.0.0.1", port: int | None = 7860) -> dict:
    """Keyword arguments for Blocks.launch: local only, private, our look (Gradio 6 takes css/theme here)."""
    return {
        "server_name": gradio_host(host),
        "server_port": port,
        "share": False,
        "inbrowser": False,
        "show_error": False,
        "footer_links": [],
        "run_history": False,  # no per-browser record of questions and answers
        "enable_monitoring": False,
        "ssr_mode": False,
        "mcp_server": False,
        "pwa": False,
        "max_file_size": "1kb",  # the page takes no files (gate.py refuses the upload routes)
        "state_session_capacity": MAX_SESSIONS,
        "app_kwargs": {"middleware": [Middleware(VisitorGate), Middleware(ClientErrorStatus)]},
        "theme": theme(),
        "css": _asset("style.css"),
        "head": f"<script>\n{_script_words()}{_asset('script.js')}</script>\n",
        "i18n": PAGE_WORDS,  # the page's own words in the browser's language
    }


# -- running it -----------------------------------------------------------------------------


def _warm_up(helper) -> None:
    """Load the embedding model and the page's Markdown renderer (markdown-it, Pygments) once before
    the first visitor (and before many threads race to), and matplotlib: Gradio imports it on the
    event loop around the first event (to pin its backend), which stalled every open request for
    0.6 s under load."""
    try:
        render.answer_html(helper.ask("CUDA out of memory", k=1))
    except RlhelperError:
        pass
    try:
        import matplotlib

        matplotlib.get_backend()
    except ImportError:
        pass


def is_loopback(host: str, port: int | None = None) -> bool:
    """Whether binding `host` keeps the server on this machine; ConfigError when it does not resolve."""
    try:
        infos = socket.getaddrinfo(bare_host(host), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as err:
        raise ConfigError(f"--host {host!r} cannot be resolved ({getattr(err, 'strerror', None) or err}): pass an "
                          "address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface).") from None
    return all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def trusted_proxies(addresses: Sequence[str] | None) -> list[str]:
    """The operator's `--trusted-proxy` values, checked: addresses or networks (10.0.0.0/8)."""
    checked = []
    for address in addresses or ():
        try:
            checked.append(str(ipaddress.ip_network(address.strip(), strict=False)))
        except ValueError:
            raise ConfigError(f"--trusted-proxy {address!r} is not an IP address or network (such as 127.0.0.1 "
                              "or 10.0.0.0/8).") from None
    return checked


_LAUNCHING = threading.Lock()


@contextmanager
def forwarded_from(proxies: Sequence[str]):
    """uvicorn reads whose X-Forwarded-For it believes from FORWARDED_ALLOW_IPS when Gradio makes its
    config, inside launch(); its default, 127.0.0.1, would let anyone behind a local proxy claim any
    address. Set to the operator's proxies ("": nobody) for that moment only."""
    with _LAUNCHING:
        saved = os.environ.get("FORWARDED_ALLOW_IPS")
        os.environ["FORWARDED_ALLOW_IPS"] = ",".join(proxies)
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("FORWARDED_ALLOW_IPS", None)
            else:
                os.environ["FORWARDED_ALLOW_IPS"] = saved


def exposure_warning(host: str, port: int, llm: Sequence | None, feedback_path: Path,
                     writes_per_minute: int, users: int = 0) -> str:
    """What `serve` prints when it binds beyond loopback: who can reach it, and what they can use."""
    who = (f"with sign-in ({users} user{'s' if users != 1 else ''} in --auth-file): whoever signs in"
           if users else "with no authentication: anyone who reaches this port")
    lines = [f"Warning: serving on {gradio_host(host)}:{port}, reachable from other machines, {who} can ask questions, "
             "have the LLM below answer, and vote."]
    endpoints = llm_endpoints(llm)
    for name, one in endpoints.items():
        key = (f"the key in ${one.api_key_env}" if os.environ.get(one.api_key_env)
               else f"no key (${one.api_key_env} is unset)")
        lines.append(f"  LLM: visitors may have {name!r} at {one.base_url} write answers; {key} goes there only.")
    if not endpoints:
        lines.append("  LLM: off (`rlhelper serve --llm --llm-base-url URL --llm-model NAME` offers one).")
    lines.append(f"  Feedback: votes and comments are stored in {feedback_path} "
                 f"(at most {writes_per_minute} writes a minute per visitor).")
    if not users:
        lines.append("  Put it behind a reverse proxy with authentication, or start it with --auth-file: README, "
                     "\"Serving beyond this machine\".")
    return "\n".join(lines)


def learning_note(learn_from_votes: bool, bank) -> str:
    """What `serve` says at start about whom votes teach (issue 31)."""
    if learn_from_votes:
        return ("--learn-from-votes: every visitor's vote teaches everyone (the operator's own records stay). "
                "Use it only when every visitor is trusted, behind authentication.")
    note = ("Votes teach the visitor who gives them; others see them once you approve them: "
            "`rlhelper questions review`.")
    try:
        earlier = sum(r.source == "web" for r in bank.records()) if bank is not None else 0
    except RlhelperError:
        earlier = 0
    if earlier:
        note += (f" {earlier} question{'s' if earlier != 1 else ''} in your bank came from web votes (source web: "
                 "before review existed, or from --learn-from-votes) and teach everyone: `rlhelper questions list`.")
    return note


def start(helper, host: str = "127.0.0.1", port: int | None = None, *, feedback_db=None, llm: Sequence | None = None,
          time_budget: float = TIME_BUDGET, writes_per_minute: int | None = None, auth_file=None,
          proxies: Sequence[str] = (), learn_from_votes: bool = False, visitor_bank=None,
          new_visitors_per_hour: int | None = None) -> tuple[gr.Blocks, str]:
    """Launch in a background thread; returns (app, local URL). `app.close()` stops it.
    `auth_file`: who may sign in (auth.py); `proxies`: the addresses whose X-Forwarded-For is believed;
    `learn_from_votes`: every vote teaches everyone; `visitor_bank`: where visitors' votes go;
    `new_visitors_per_hour`: visitor ids handed to one address an hour (visitors.py's default)."""
    from .auth import checker, read_users

    is_loopback(host, port)  # an unresolvable host says so, not Gradio's "Cannot find empty port"
    proxies = trusted_proxies(proxies)
    users = read_users(auth_file) if auth_file else None
    app = build_app(helper, feedback_db=feedback_db, llm=llm, time_budget=time_budget,
                    writes_per_minute=writes_per_minute, visitor_bank=visitor_bank, learn_from_votes=learn_from_votes,
                    **({} if new_visitors_per_hour is None else {"new_visitors_per_hour": new_visitors_per_hour}))
    _warm_up(helper)
    options = launch_options(host, port)
    if users:
        options.update(auth=checker(users), auth_message="rlhelper: sign in with the name and password you were given.")
    try:
        # quiet: Gradio's own banner suggests share=True, a public link this app never makes.
        with forwarded_from(proxies):
            app.launch(prevent_thread_lock=True, quiet=True, **options)
    except OSError as err:
        raise ConfigError(f"Cannot serve on {host}:{port} ({err}): pass another --port.") from err
    return app, app.local_url.rstrip("/")


def serve(host: str = "127.0.0.1", port: int = 7860, index=None, *, feedback_db=None, llm: Sequence | None = None,
          time_budget: float = TIME_BUDGET, mode: str | None = None, auth_file=None, proxies: Sequence[str] = (),
          learn_from_votes: bool = False, new_visitors_per_hour: int | None = None) -> None:
    """Serve the chat until interrupted (`rlhelper serve`). `llm`: the LLMSettings visitors may use;
    `mode`: the search mode of every answer (the operator's choice, not a visitor's; default: the judge's
    where it can run); the rest as `start`."""
    from ..api import Helper
    from ..measure.feedback import WRITES_PER_MINUTE
    from .auth import read_users

    loopback = is_loopback(host, port)
    trusted_proxies(proxies)
    users = read_users(auth_file) if auth_file else {}  # a bad file stops here, before the index loads
    helper = Helper.load(index, mode=mode)
    app, url = start(helper, host, port, feedback_db=feedback_db, llm=llm, time_budget=time_budget,
                     auth_file=auth_file, proxies=proxies, learn_from_votes=learn_from_votes,
                     new_visitors_per_hour=new_visitors_per_hour)
    if not loopback:
        print(exposure_warning(host, port, llm, FeedbackStore(feedback_db).path, WRITES_PER_MINUTE, len(users)),
              file=sys.stderr, flush=True)
    print(learning_note(learn_from_votes, helper.user_bank), file=sys.stderr, flush=True)
    llm_note = f"; LLM answers by {', '.join(map(repr, llm_endpoints(llm)))}" if llm else ""
    mode_note = f"; {helper.mode} search"
    auth_note = f"; sign-in for {len(users)} user{'s' if len(users) != 1 else ''}" if users else ""
    proxy_note = f"; X-Forwarded-For believed from {', '.join(trusted_proxies(proxies))}" if proxies else ""
    print(f"rlhelper web chat on {url} ({len(helper.entries):,} entries{mode_note}{llm_note}{auth_note}{proxy_note}; "
          "Ctrl+C stops it)", flush=True)
    app.block_thread()
