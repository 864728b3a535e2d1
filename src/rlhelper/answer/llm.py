"""Optional LLM-written answers from the retrieved entries, grounded and checked.

The user's own model (SGLang, vLLM, Ollama or a hosted OpenAI-compatible API)
writes a short answer in the question's language from the numbered sources
rlhelper retrieved (llm_prompt.py); rlhelper then checks it (grounding.py):
citations of sources it was not given are removed, commands/flags/keys found in
no cited source are reported as unverified. Any failure of the model (timeout,
HTTP error, no server, empty reply) falls back to the extractive answer with a
notice (llm_client.py words them), so `--llm` never makes an answer worse than
without it.

LangChain's ChatOpenAI is imported only when an answer is generated:
`import rlhelper.answer.llm` stays cheap and works without the `llm` extra.

    settings = LLMSettings.resolve(base_url="http://127.0.0.1:30000/v1", model="qwen")
    stream = helper.write(helper.ask(query), settings)                # an LLMStream
    for piece in stream: print(piece, end="")                         # then stream.answer
    answer = helper.write(helper.ask(query), settings, stream=False).finish()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..catalogue import Phrase
from ..schema import Hit
from .extractive import citation_for, no_match_text
from .grounding import check_citations, unverified_tokens
from .language import language_of
from .llm_client import (
    LLMSettings,
    NoAnswerFilter,
    ThinkFilter,
    chat_messages,
    chat_model,
    content_text,
    empty_notice,
    failure_notice,
    strip_thinking,
)
from .llm_prompt import Source, declines, select_sources
from .model import Answer, Citation

__all__ = ["LLMResult", "LLMSettings", "LLMStream", "NOT_ASKED_NOTICE", "answer_with_llm", "generate"]

NOT_ASKED_NOTICE = "No matching entry in the docs, so the LLM was not asked: it would have nothing to ground an answer in."


# -- the result ----------------------------------------------------------------------


@dataclass
class LLMResult:
    """The checked answer, or fallback=True with a notice saying why the extractive one stays."""

    text: str
    citations: list[Citation] = field(default_factory=list)  # numbered as in the prompt
    removed_citations: list[int] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    fallback: bool = False
    notice: str | None = None
    raw_text: str = ""  # the model's reply before checks
    sources: list[Source] = field(default_factory=list)
    declined: bool = False  # the model found no answer in the sources (it replied NO_ANSWER)
    cut_at: int | None = None  # characters kept of a reply longer than the answer's budget

    @property
    def messages(self) -> list[str]:
        """Lines to show the user under the answer."""
        lines = [self.notice] if self.notice else []
        if self.cut_at is not None:
            lines.append(f"The LLM's answer was longer than {self.cut_at:,} characters: cut there, the rest not read.")
        lines += [f"removed citation [{n}]: no such source" for n in self.removed_citations]
        lines += [f"unverified: {t} (not in any cited source)" for t in self.unverified]
        return lines


def check_reply(query: str, reply: str, sources: list[Source]) -> LLMResult:
    """Run the grounding checks on a complete reply."""
    checked = check_citations(reply, len(sources))
    by_number = {s.number: s for s in sources}
    cited = [by_number[n] for n in checked.cited]
    notice = None
    if not cited:  # nothing to hold it to but everything it was given
        cited = sources
        notice = f"The LLM answer cites none of its {len(sources)} source(s); all are listed."
    haystacks = [_source_haystack(s) for s in cited]
    return LLMResult(
        text=checked.text.strip(),
        citations=[citation_for(s.hit, s.number) for s in cited],
        removed_citations=checked.removed,
        unverified=unverified_tokens(checked.text, haystacks, also_allowed=query),
        notice=notice,
        raw_text=reply,
        sources=sources,
    )


def _source_haystack(source: Source) -> str:
    e = source.hit.entry
    return "\n".join([e.doc_title, *e.breadcrumb, e.heading, e.text])  # the full text, not the cut one


class LLMStream:
    """An answer as the user's LLM writes it (Helper.write builds one): iterate for the visible text
    pieces, then read `.answer`, the Answer to show at the end, and `.result`, what the checks found.

    CLI:    for piece in stream: print(piece, end="", flush=True)
    Gradio: for text in stream.growing(): yield text   (the last value is the checked text)

    Checks run once the reply is complete; if the model fails mid-way, `.result.fallback` is True
    (pieces already shown should be replaced) and `.answer` is the extractive one with the notice
    saying why. An answer that found no entry is not sent (`.asked` is False): iterating gives
    nothing and `.answer` says why. `streaming=False` asks for the whole reply at once (one request
    without server-sent events, for JSON output): iterating gives nothing, then `.answer`.
    """

    def __init__(self, query: str, hits: list[Hit], settings: LLMSettings, *, base: Answer | None = None,
                 streaming: bool = True):
        self.query, self.hits, self.settings, self.base, self.streaming = query, hits, settings, base, streaming
        self.result: LLMResult | None = None
        self.asked = bool(hits) and not (base is not None and base.abstained)
        if not self.asked:  # nothing to ground an answer in: no model, no request
            self.sources: list[Source] = []
            notice = NOT_ASKED_NOTICE if base is not None else "No sources to give the LLM; showing the extractive answer."
            self.result = LLMResult(text="", fallback=True, notice=notice)
            return
        self._model = chat_model(settings, streaming=streaming)  # a missing extra fails now, not mid-iteration
        self.sources = select_sources(hits, settings.max_context_tokens)

    @classmethod
    def for_answer(cls, answer: Answer, settings: LLMSettings, *, streaming: bool = True) -> LLMStream:
        return cls(answer.question, answer.hits, settings, base=answer, streaming=streaming)

    def __iter__(self) -> Iterator[str]:
        if not self.asked:
            return
        if not self.streaming:
            self.result = self._whole_reply()
            return
        think, marker, raw, started, received = ThinkFilter(), NoAnswerFilter(), [], False, 0
        budget = self.settings.max_answer_chars
        try:
            for chunk in self._model.stream(chat_messages(self.query, self.sources)):
                token = content_text(chunk.content)[:budget - received]
                received += len(token)
                raw.append(token)
                started = started or bool(token)
                visible = marker.feed(think.feed(token))
                if visible:
                    yield visible
                if received >= budget:
                    raw.append(" ")  # one past the budget: _finish reports the cut
                    break  # leaving the loop closes the response: the rest is never read
        except Exception as exc:
            notice = failure_notice(exc, self.settings, started=started)
            if notice is None:
                raise
            self.result = LLMResult(text="", fallback=True, notice=notice, raw_text="".join(raw),
                                    sources=self.sources)
            return
        rest = marker.feed(think.flush()) + marker.flush()
        if rest:
            yield rest
        self.result = _finish(self.query, "".join(raw), self.sources, self.settings)

    def _whole_reply(self) -> LLMResult:
        try:
            reply = content_text(self._model.invoke(chat_messages(self.query, self.sources)).content)
        except Exception as exc:
            notice = failure_notice(exc, self.settings, started=False)
            if notice is None:
                raise
            return LLMResult(text="", fallback=True, notice=notice, sources=self.sources)
        return _finish(self.query, reply, self.sources, self.settings)

    def growing(self) -> Iterator[str]:
        """The text so far after each piece; finally the checked text (or the fallback answer's)."""
        text = ""
        for piece in self:
            text += piece
            yield text
        yield self.answer.text if self.base is not None else self.result.text

    def finish(self) -> Answer:
        """Read the rest of the reply unseen and return `.answer`."""
        for _ in self:
            pass
        return self.answer

    @property
    def answer(self) -> Answer:
        if self.base is None or self.result is None:
            raise RuntimeError("LLMStream.answer needs for_answer(...) and a finished iteration")
        return merge_into_answer(self.base, self.result, self.settings)

    @property
    def draft(self) -> Answer:
        """The answer to show while the model writes: `[n]` numbers the entries as the model was
        given them, and the notices wait for `.answer`."""
        if self.base is None:
            raise RuntimeError("LLMStream.draft needs for_answer(...)")
        return dataclasses.replace(self.base, notices=[], citations=[
            citation_for(hit, number) for number, hit in enumerate(self.base.hits, start=1)])


def _finish(query: str, raw: str, sources: list[Source], settings: LLMSettings) -> LLMResult:
    cut_at = settings.max_answer_chars if len(raw) > settings.max_answer_chars else None
    reply = strip_thinking(raw[:settings.max_answer_chars]).strip()
    if not reply:
        return LLMResult(text="", fallback=True, notice=empty_notice(raw, settings), raw_text=raw,
                         sources=sources)
    if declines(reply):
        return LLMResult(text="", declined=True, raw_text=raw, sources=sources,
                         notice=f"The LLM {settings.model!r} read the {len(sources)} nearest entries and found no "
                                "answer to this question in them.")
    return dataclasses.replace(check_reply(query, reply, sources), cut_at=cut_at)


def generate(
    query: str,
    hits: list[Hit],
    settings: LLMSettings,
    *,
    stream: bool = False,
    on_token: Callable[[str], None] | None = None,
) -> LLMResult:
    """Have the model answer `query` from `hits` (best first); checks run on the complete reply.

    Never raises for an outage: timeout, HTTP error, no server or an empty
    reply give `fallback=True` and a `notice`, and the caller keeps its
    extractive answer. Raises LLMError when langchain-openai is missing.
    """
    writing = LLMStream(query, hits, settings, streaming=stream or on_token is not None)
    for piece in writing:
        if on_token is not None:
            on_token(piece)
    return writing.result


def merge_into_answer(base: Answer, result: LLMResult, settings: LLMSettings) -> Answer:
    """The Answer to show: the LLM's checked text and citations, `base` with the fallback notice,
    or, when the model found no answer in the entries, no match (the entries listed as related)."""
    if result.fallback:
        return dataclasses.replace(base, notices=[*base.notices, *result.messages])
    if result.declined:
        return dataclasses.replace(base, abstained=True, text=no_match_text(bool(base.hits), language_of(base.query)),
                                   parts=[], citations=[], weak_match=False, notices=[*base.notices, *result.messages])
    written_by = Phrase("notice.llm_written", model=settings.model)
    return dataclasses.replace(
        base,
        text=result.text,
        parts=[],  # parts are verbatim extracts; this text is not one
        citations=result.citations,
        notices=[*base.notices, written_by, *result.messages],
    )


def answer_with_llm(
    answer: Answer,
    settings: LLMSettings,
    *,
    stream: bool = False,
    on_token: Callable[[str], None] | None = None,
) -> Answer:
    """Replace an extractive Answer's text with a checked LLM answer over the same hits.

    An abstained answer is returned as it is: with no matching entry there is
    nothing to ground an LLM answer in.
    """
    if answer.abstained or not answer.hits:
        return answer
    result = generate(answer.question, answer.hits, settings, stream=stream, on_token=on_token)
    return merge_into_answer(answer, result, settings)

