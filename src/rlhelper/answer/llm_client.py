"""Talking to the user's model server: its settings, the bounded LangChain client, what to tell the
user when it fails, and the filters that keep a reasoning block and the NO_ANSWER marker off the
screen while a reply streams in.

LangChain's ChatOpenAI (the `llm` extra) is imported only when a request is made, so importing
this module stays cheap and works without the extra.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass

from .. import config
from ..errors import ConfigError, RlhelperError
from .llm_prompt import NO_ANSWER, Source, build_messages, declines

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
# Local servers ignore the key but the OpenAI client insists on one; "EMPTY" is vLLM's convention.
NO_KEY = "EMPTY"
INSTALL_HINT = "install the llm extra: pip install -e '.[llm]'"


class LLMError(RlhelperError):
    """LLM answers cannot be set up here (the llm extra is missing)."""


@dataclass
class LLMSettings:
    """Where the model runs and how much to give it."""

    base_url: str
    model: str
    api_key_env: str = DEFAULT_API_KEY_ENV  # the NAME of the variable, never the key
    timeout: float = 30.0  # seconds without a byte from the server
    deadline: float = 120.0  # seconds for the whole reply, however lively the server (bounded_http.py)
    max_context_tokens: int = 3000  # budget of the numbered sources (cl100k tokens)
    temperature: float = 0.0
    max_answer_tokens: int = 1500  # bounds a rambling model; reasoning models need room to think
    # The same bound on our side, for a server that ignores max_tokens: past it the reply is cut and
    # no longer read. Characters, so counting costs nothing while streaming.
    max_answer_chars: int = 12_000
    max_reply_bytes: int = 4_000_000  # one body in bytes: a streamed reply carries JSON around each piece

    @classmethod
    def resolve(cls, base_url=None, model=None, api_key_env=None, timeout=None) -> LLMSettings:
        """Argument > RLHELPER_LLM_* > config file (llm_base_url, llm_model, ...) > default."""
        base_url = config.setting("llm_base_url", base_url)
        if not base_url:
            raise ConfigError(
                "No LLM server given: pass --llm-base-url http://127.0.0.1:30000/v1, or set "
                "RLHELPER_LLM_BASE_URL, or llm_base_url in ~/.config/rlhelper/config.toml (see docs/llm.md)."
            )
        base_url = str(base_url).strip().rstrip("/")
        if not re.match(r"^https?://[^/\s]+", base_url):
            raise ConfigError(
                f"LLM base URL {base_url!r} is not an http(s) URL: give the server's OpenAI endpoint, "
                "e.g. --llm-base-url http://127.0.0.1:30000/v1."
            )
        model = config.setting("llm_model", model)
        if not model:
            raise ConfigError(
                "No LLM model named: pass --llm-model NAME (the name the server serves; "
                f"`curl {base_url}/models` lists it), or set RLHELPER_LLM_MODEL or llm_model in the config file."
            )
        return cls(
            base_url=base_url,
            model=str(model),
            api_key_env=str(config.setting("llm_api_key_env", api_key_env, default=DEFAULT_API_KEY_ENV)),
            timeout=_positive("llm_timeout", config.setting("llm_timeout", timeout, default=30.0), float),
            deadline=_positive("llm_answer_deadline", config.setting("llm_answer_deadline", default=120.0), float),
            max_context_tokens=_positive(
                "llm_max_context_tokens", config.setting("llm_max_context_tokens", default=3000), int
            ),
        )

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env) or NO_KEY


def _positive(name: str, value, kind):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number <= 0:
        raise ConfigError(
            f"{name} must be a positive number, got {value!r}: fix RLHELPER_{name.upper()} or {name} in the config file."
        )
    return number


def client_installed() -> bool:
    """True when langchain-openai (the `llm` extra) is installed, without importing it."""
    return importlib.util.find_spec("langchain_openai") is not None


# -- talking to the model ----------------------------------------------------------------


def chat_model(settings: LLMSettings, streaming: bool, max_reply_bytes: int | None = None):
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise LLMError(f"LLM answers need langchain-openai: {INSTALL_HINT}") from exc
    from .bounded_http import bounded_client

    return ChatOpenAI(
        http_client=bounded_client(settings.deadline, max_reply_bytes or settings.max_reply_bytes, settings.timeout),
        http_socket_options=(),  # our client, as it is: langchain would warn that its socket options shadow a proxy
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key(),
        timeout=settings.timeout,
        max_retries=0,  # a retry doubles the wait before the fallback
        temperature=settings.temperature,
        max_tokens=settings.max_answer_tokens,
        streaming=streaming,
        stream_usage=False,  # some servers reject stream_options
        use_responses_api=False,  # local servers speak chat completions only
    )


def chat_messages(query: str, sources: list[Source]):
    from langchain_core.messages import HumanMessage, SystemMessage

    system, user = build_messages(query, sources)
    return [SystemMessage(content=system), HumanMessage(content=user)]


def content_text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content or [])


def failure_notice(exc: BaseException, settings: LLMSettings, *, started: bool) -> str | None:
    """What to tell the user when the model failed; None for errors that are bugs, not outages."""
    import httpx
    import openai

    from .bounded_http import OutOfTime, reply_limit

    where = f"The LLM at {settings.base_url}"
    tail = "; showing the extractive answer."
    limit = reply_limit(exc)
    if isinstance(limit, OutOfTime):
        return f"{where} did not finish within {settings.deadline:g} s{tail}"
    if limit is not None:
        return f"{where} sent more than {settings.max_reply_bytes / 1e6:g} MB{tail}"
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        if started:
            return f"{where} stopped in mid-answer (nothing for {settings.timeout:g} s){tail}"
        return f"{where} did not answer within {settings.timeout:g} s{tail}"
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return f"{where} could not be reached (is the server running, and is the URL right?){tail}"
    if isinstance(exc, openai.APIStatusError):
        hints = {
            401: f"check the API key in ${settings.api_key_env}, or name another variable with --llm-api-key-env",
            403: f"check the API key in ${settings.api_key_env}",
            404: f"is {settings.model!r} the name it serves, and does the URL end in /v1?",
            429: "rate limited: try again later",
        }
        hint = hints.get(exc.status_code)
        return f"{where} answered HTTP {exc.status_code}{f' ({hint})' if hint else ''}{tail}"
    if isinstance(exc, openai.OpenAIError):
        return f"{where} failed: {str(exc)[:200]}{tail}"
    if isinstance(exc, ValueError | LookupError | TypeError | AttributeError):
        # Raised while parsing what the server sent (not JSON, not UTF-8, a broken SSE event,
        # JSON of another shape): the server's fault, named by the error's type.
        return f"{where} sent a reply rlhelper could not read ({type(exc).__name__}){tail}"
    return None


def empty_notice(raw: str, settings: LLMSettings) -> str:
    if raw.strip():  # only a <think> block
        return (f"The LLM at {settings.base_url} gave only its reasoning, no answer; "
                "showing the extractive answer.")
    return f"The LLM at {settings.base_url} returned an empty answer; showing the extractive answer."


_THINK = re.compile(r"^\s*<think>.*?(</think>\s*|$)", re.DOTALL)


def strip_thinking(text: str) -> str:
    """Drop a leading <think>…</think> block that reasoning models put in the content."""
    return _THINK.sub("", text, count=1)


class ThinkFilter:
    """Streaming twin of strip_thinking: holds tokens back while inside a leading <think> block."""

    def __init__(self):
        self.state, self.buffer = "start", ""

    def feed(self, token: str) -> str:
        if self.state == "pass":
            return token
        self.buffer += token
        if self.state == "start":
            head = self.buffer.lstrip()
            if head.startswith("<think>"):
                self.state = "think"
            elif "<think>".startswith(head):
                return ""  # not decided yet
            else:
                self.state, out, self.buffer = "pass", self.buffer, ""
                return out
        end = self.buffer.find("</think>")
        if end < 0:
            return ""
        self.state, out, self.buffer = "pass", self.buffer[end + len("</think>"):].lstrip(), ""
        return out

    def flush(self) -> str:
        out = self.buffer if self.state == "start" else ""
        self.buffer = ""
        return out


class NoAnswerFilter:
    """Holds the reply back while it may still be NO_ANSWER, so the marker never reaches the screen."""

    def __init__(self):
        self.holding, self.held = True, ""

    def feed(self, text: str) -> str:
        if not self.holding:
            return text
        self.held += text
        head = self.held.lstrip(" \n`*_").upper().replace(" ", "_")  # as `declines` reads it
        if NO_ANSWER.startswith(head) or head.startswith(NO_ANSWER):
            return ""  # the marker, or its beginning
        self.holding, out, self.held = False, self.held, ""
        return out

    def flush(self) -> str:
        out = "" if (not self.holding or declines(self.held)) else self.held
        self.held = ""
        return out


# -- one plain request (the question bank's writer uses it: question_writer.py) ------------------


class LLMRequestError(RlhelperError):
    """One request to the model failed. `reason` is short ("HTTP 500", "timeout"); `retryable`
    says whether the same request may succeed if sent again (timeouts, 5xx, 429, no connection)."""

    def __init__(self, reason: str, *, retryable: bool = False):
        super().__init__(reason)
        self.reason, self.retryable = reason, retryable


WRITER_MAX_REPLY_BYTES = 32_000_000  # its replies are parsed and capped by the writer, never shown whole


def complete(system: str, user: str, settings: LLMSettings) -> str:
    """The model's reply to one (system, user) exchange, a leading <think> block removed.

    Raises LLMRequestError when the request fails (no retry here: the caller decides),
    LLMError when langchain-openai is missing.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    model = chat_model(settings, streaming=False, max_reply_bytes=WRITER_MAX_REPLY_BYTES)
    try:
        reply = model.invoke([SystemMessage(content=system), HumanMessage(content=user)])
    except Exception as exc:
        failure = request_failure(exc)
        if failure is None:
            raise
        raise failure from exc
    return strip_thinking(content_text(reply.content)).strip()


def request_failure(exc: BaseException) -> LLMRequestError | None:
    """The short reason a request failed, or None for errors that are bugs, not outages."""
    import httpx
    import openai

    from .bounded_http import TooLarge, reply_limit

    if isinstance(reply_limit(exc), TooLarge):
        return LLMRequestError(f"reply over {WRITER_MAX_REPLY_BYTES / 1e6:g} MB")
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):  # before APIConnectionError: a subclass
        return LLMRequestError("timeout", retryable=True)
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return LLMRequestError("could not be reached", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        return LLMRequestError(f"HTTP {code}", retryable=code >= 500 or code == 429)
    if isinstance(exc, openai.OpenAIError):
        return LLMRequestError(" ".join(str(exc).split())[:200] or type(exc).__name__)
    return None
