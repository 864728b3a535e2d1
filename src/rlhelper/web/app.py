"""The web chat's page (Gradio): its parts and the events that tie them to the handlers.

    build_app(helper, feedback_db=None, llm=None) -> gr.Blocks   # the page and its events

Who is asking: the page keeps a signed visitor id in the browser (gr.BrowserState, visitors.py),
minted when the page first opens and sent with every question and vote, so a visitor's own votes
apply to their own searches (with `serve --auth-file`, the signed-in user is the visitor). The
public `ask` API takes no visitor: it answers as for a new one.

The handlers are plain functions taking the Helper / FeedbackStore explicitly, so tests call them
without a browser or a server: answering.py (a question), votes.py (votes and comments), with
arguments.py checking what a visitor sends and llm_view.py showing an LLM-written answer. The
chatbot shows the HTML answer/html.py makes as is (render_markdown=False), and Gradio's sanitiser
runs on top of it. Running it (launch options, privacy, what a visitor can do): server.py.

Languages: the page's own words (catalogue.py) follow the browser's language: the components'
labels, placeholders and buttons through Gradio's i18n (PAGE_WORDS, one key per text), the header,
whose lines hold several, written in both languages for the page's script to show one (in_both);
an answer and what is said about it (notices, sources, vote messages) follow the question's language.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gradio as gr

from ..addresses import address_key
from ..answer import html as render
from ..answer.extractive import FRAMEWORK_NAMES
from ..answer.language import language_of
from ..catalogue import LANGS, WORDS, in_language, page_words, say
from ..index.visitorbank import VisitorBank
from ..index.visitorbank import default_path as visitor_default_path
from ..measure.feedback import MAX_COMMENT_CHARS, FeedbackStore, WriteLimiter
from .answering import TIME_BUDGET, respond
from .arguments import MAX_MESSAGE_CHARS, RequestError, checked_ask, linked_question, llm_endpoints, text_arg
from .llm_view import llm_available
from .session import new_session
from .visitors import MINTS_PER_HOUR, Visitors, load_key
from .votes import add_comment, learn_from_vote, position_of, record_vote, vote_of

CONCURRENCY = 4  # answers computed at once; more only queues on a 2-core laptop
QUEUE_SIZE = 128  # requests waiting for a worker; beyond it Gradio answers "the queue is full"
NO_LLM = ""  # the LLM choice that quotes the docs only
TITLE = "rlhelper — RL training troubleshooting"
THUMBS = {1: "Like", -1: "Dislike"}
# The box's Enter, in the browser: a blank one sends nothing (null) and leaves the box; one over the limit
# sends nothing, keeps the text and says why under the box (#rl-status); otherwise the text moves on.
OVER_THE_LIMIT_JS = (
    "(text, note) => { if (!text.trim()) return [null, text, note];"
    f" if (text.length > {MAX_MESSAGE_CHARS}) {{"
    " const lang = document.documentElement.getAttribute('data-rl-lang') === 'zh' ? 'zh' : 'en';"
    " const said = ((window.RL_WORDS || {})[lang] || {}).too_long || 'Not sent: over the limit of {n} characters.';"
    f" return [null, text, said.replace('{{n}}', text.length.toLocaleString('en-US'))]; }}"
    " return [text, '', note]; }"
)  # a vote as the chat's thumbs show it (feedback_value)

EXAMPLES = [
    {"display_text": "Weight sync timed out between the trainer and the inference engines. How do I fix it?",
     "text": "Weight sync timed out between the trainer and the inference engines. How do I fix it?"},
    {"display_text": "rollout 阶段显存不足怎么办？",
     "text": "rollout 阶段显存不足怎么办？"},
    {"display_text": "Traceback … torch.OutOfMemoryError: CUDA out of memory",
     "text": (
         "Traceback (most recent call last):\n"
         '  File "/workspace/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 248, in generate_sequences\n'
         "    outputs = self.inference_engine.generate(prompts=vllm_inputs, sampling_params=self.sampling_params)\n"
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
         "of 79.15 GiB of which 1.02 GiB is free."
     )},
]

# The page's own words, looked up by key in the browser's language (launch(i18n=PAGE_WORDS), server.py).
# Gradio replaces one key in a text, so a text holding several is written with in_both instead.
WORDS_BY_LANG = page_words()
PAGE_WORDS = gr.I18n(**WORDS_BY_LANG)


def in_both(html_in) -> str:
    """`html_in(lang)` for each language, each in a span the page's script shows for its browser's
    language only (script.js, style.css: .rl-en, .rl-zh)."""
    return "".join(f'<span class="rl-{lang}">{html_in(lang)}</span>' for lang in LANGS)


def _collections_in_words(names: list[str], lang: str) -> str:
    """"seed guides (troubleshooting pages gathered from repositories) and official docs (...)"; yours by their names."""
    words = [say(f"collection.{n}.words", lang) if f"collection.{n}.words" in WORDS else n for n in names]
    if len(words) < 2:
        return "".join(words)
    return say("list.and", lang).join([", ".join(words[:-1]), words[-1]])


def _header_html(helper) -> str:
    intro = in_both(lambda lang: render.esc(WORDS_BY_LANG[lang]["page.intro"]))
    stats = in_both(lambda lang: render.esc(say("page.stats", lang, n=len(helper.entries),
                                                collections=_collections_in_words(helper.collections, lang))))
    return f'<div id="rl-header"><h1><span class="rl-mark">rl</span>helper</h1><p>{intro}</p><p class="rl-stats">{stats}</p></div>'


def votes_hint(teaches: bool, learn_from_votes: bool = False):
    """What a vote does, said before anyone votes: it teaches the voter's browser at once and everyone
    else once the operator approves it; everyone at once on a server run with --learn-from-votes;
    with nothing to teach (no question bank), it only tells the operator."""
    if not teaches:
        return PAGE_WORDS("page.votes_recorded")
    return PAGE_WORDS("page.votes_teach_all" if learn_from_votes else "page.votes_teach_you")


def reset_feedback():
    """The vote's note, the comment row and box, and the clear-filters offer, as on a fresh page."""
    return "", gr.update(visible=False), "", gr.update(visible=False)


def reset_feedback_unless_blank(text):
    """reset_feedback for a question; a blank Enter (no message) asks nothing and changes nothing."""
    return reset_feedback() if text is not None else (gr.skip(),) * 4


def shown_votes(session: dict | None) -> list[str | None]:
    """The thumbs of the chat's answers, in order: the vote given on each. Set as the chat's
    feedback_value, they stay drawn when the chat changes (they vanished at the next question). An
    answer's position in the chat is 2n+1: each message gets one reply (a blank one is not sent)."""
    given = (session or {}).get("thumbs") or {}
    return [given.get(2 * n + 1) for n in range(max(given, default=-1) // 2 + 1)]


def said_about(session: dict | None, position, status) -> str:
    """A vote or comment message in the language of the answer it is about, escaped for the status line."""
    turn = (session or {}).get("answers", {}).get(position) if isinstance(position, int) else None
    lang = language_of(turn["query"]) if turn else "en"
    return render.esc(in_language(status, lang))


def offer_clear_filters(session):
    return gr.update(visible=bool((session or {}).get("filtered_miss")))


def _choices(label: str, values: list[str]) -> list[tuple[str, str]]:
    """Dropdown choices: "All ..." first, then each value under its docs' spelling (SkyRL, not skyrl)."""
    return [(label, "")] + [(FRAMEWORK_NAMES.get(v, v), v) for v in values]


def address_of(request: gr.Request | None) -> str:
    """The visitor's address: the connection's, or what a proxy the operator trusts said (server.py);
    an IPv6 one as its /64, the unit every per-address limit counts (addresses.py)."""
    return address_key(str(getattr(getattr(request, "client", None), "host", None) or "?"))


def client_keys(request: gr.Request | None, visitor: str | None) -> tuple[str, ...]:
    """Who a write counts against: the visitor (a browser's id, or a signed-in user) and the address
    it came from. Not the session: a new one is free. Behind a reverse proxy the operator has not
    named (`--trusted-proxy`) every visitor shares the proxy's address: a bound for them all."""
    if request is None:
        return ()
    who = f"visitor:{visitor}" if visitor else f"session:{getattr(request, 'session_hash', None) or '?'}"
    return (who, f"host:{address_of(request)}")


def build_app(helper, *, feedback_db: str | Path | None = None, llm: Sequence | None = None,
              time_budget: float = TIME_BUDGET, writes_per_minute: int | None = None,
              visitor_bank: VisitorBank | None = None, learn_from_votes: bool = False,
              new_visitors_per_hour: int = MINTS_PER_HOUR) -> gr.Blocks:
    """The chat page for `helper`; votes go to `feedback_db` (default: config.data_dir()/feedback.sqlite3).
    `llm`: the LLMSettings of the endpoints a visitor may have write the answer (none: no LLM option).
    `visitor_bank`: where visitors' votes and suggestions are kept (default: beside the helper's
    user bank; none when it has no bank). `learn_from_votes`: every vote also teaches everyone (the
    page says what a vote does before anyone votes). `new_visitors_per_hour`: visitor ids handed to
    one address (IPv6: one /64) an hour.
    Each request answers from the index's version live when it starts (api.LiveHelper): an ingest or
    `rlhelper sync` is picked up without a restart."""
    from ..api import LiveHelper

    live = helper if isinstance(helper, LiveHelper) else LiveHelper(helper)
    helper = live.current()
    store = FeedbackStore(feedback_db)
    endpoints = llm_endpoints(llm)
    limiter = WriteLimiter(**({} if writes_per_minute is None else {"per_minute": writes_per_minute}))
    visitors = None
    if helper.user_bank is not None or visitor_bank is not None:
        visitor_bank = visitor_bank or VisitorBank(visitor_default_path(helper.user_bank))
        visitors = Visitors(live, visitor_bank, load_key(visitor_bank.path.parent),
                            mints_per_hour=new_visitors_per_hour)

    def refused(err: RequestError) -> gr.Error:
        return gr.Error(f"Refused: {err}.", print_exception=False)

    def visitor_of(token, request: gr.Request | None) -> str | None:
        """The signed-in user, or the visitor the browser's token names (None: forged or none)."""
        name = getattr(request, "username", None)
        if name:
            return f"user:{name}"
        return visitors.verify(token) if visitors is not None else None

    def welcome(token, session, request: gr.Request):
        """On opening the page: the visitor the browser holds, or a new one (bounded per address)."""
        session = session if isinstance(session, dict) else new_session()
        visitor = visitor_of(token, request)
        if visitor is None and visitors is not None:
            token = visitors.mint(address_of(request)) or ""
            visitor = visitors.verify(token)
        session["visitor"] = visitor
        return token or "", session

    def answer(message, history, framework, collection, session, llm_name, visitor):
        helper = live.current()
        try:
            message, history, framework, collection, settings = checked_ask(
                helper, endpoints, message, history, framework, collection, llm_name)
        except RequestError as err:
            raise refused(err) from None
        session = session if isinstance(session, dict) else new_session()
        session["visitor"] = visitor
        own = visitors.own_votes(visitor) if visitors is not None else None
        yield from respond(helper, message, history, framework, collection, session, settings, budget=time_budget,
                           own_votes=own)

    def ask(message, history, framework, collection, session, llm_name, request: gr.Request):
        """The public API: a question as from a new visitor (a signed-in user's own votes apply)."""
        yield from answer(message, history, framework, collection, session, llm_name, visitor_of(None, request))

    def ask_page(message, history, framework, collection, session, llm_name, token, request: gr.Request):
        if message is None:  # a blank Enter (the page's script sends no message): nothing asked, nothing shown
            yield gr.skip(), gr.skip()
            return
        yield from answer(message, history, framework, collection, session, llm_name, visitor_of(token, request))

    def vote(session, token, data: gr.EventData, request: gr.Request):
        payload = getattr(data, "_data", None)
        if not isinstance(payload, dict):
            raise refused(RequestError("a vote is an object with index and liked"))
        visitor = visitor_of(token, request)
        if isinstance(session, dict):
            session["visitor"] = visitor
        try:
            session, status = record_vote(store, session, payload.get("index"), payload.get("liked"),
                                          allowed=lambda: limiter.allow(*client_keys(request, visitor)))
        except RequestError as err:
            raise refused(err) from None
        position = position_of(payload.get("index"))
        said = said_about(session, position, status)
        if status.startswith(("Thanks", "Vote removed")):  # recorded: refused or full votes teach nothing
            learned = learn_from_vote(live.current(), session, payload.get("index"), payload.get("liked"),
                                      visitors=visitors, visitor=visitor, address=address_of(request),
                                      learn_for_all=learn_from_votes)
            said += said_about(session, position, learned)
            session.setdefault("thumbs", {})[position] = THUMBS.get(vote_of(payload.get("liked")))
        return session, said, gr.update(visible=True), gr.update(feedback_value=shown_votes(session))

    def comment(session, token, text, request: gr.Request):
        visitor = visitor_of(token, request)
        try:
            session, kept = add_comment(store, session, text,
                                        allowed=lambda: limiter.allow(*client_keys(request, visitor)))
        except RequestError as err:
            raise refused(err) from None
        # A refused comment stays in the box, to shorten or send later.
        return (session, said_about(session, session.get("last_vote"), kept),
                "" if kept.startswith("Comment saved") else gr.skip())

    def open_link(request: gr.Request):
        question, framework_name, collection_name = linked_question(dict(request.query_params))
        helper = live.current()  # the filters offer what the index holds now
        return (question,
                gr.update(choices=_choices(PAGE_WORDS("page.all_frameworks"), helper.frameworks),
                          value=framework_name if framework_name in helper.frameworks else ""),
                gr.update(choices=_choices(PAGE_WORDS("page.all_collections"), helper.collections),
                          value=collection_name if collection_name in helper.collections else ""))

    def ask_linked(message, history, framework, collection, session, llm_name, token, request: gr.Request):
        if message:  # no ?q=: the page opens empty
            yield from ask_page(message, history, framework, collection, session, llm_name, token, request)
        else:
            yield gr.skip(), gr.skip()

    def example_text(data: gr.EventData):
        value = (getattr(data, "_data", None) or {}).get("value") if isinstance(getattr(data, "_data", None), dict) \
            else None
        text = value.get("text", "") if isinstance(value, dict) else value
        try:
            return text_arg(text, "an example", MAX_MESSAGE_CHARS)
        except RequestError as err:
            raise refused(err) from None

    with gr.Blocks(title=TITLE, analytics_enabled=False, fill_width=False) as app:
        gr.HTML(_header_html(helper))
        session = gr.State(new_session())
        # The visitor's signed id, kept in the browser (encrypted with a key derived from the server's),
        # under a fixed name, so a reload or a restarted server finds it again.
        visitor = gr.BrowserState("", storage_key="rlhelper-visitor",
                                  secret=visitors.storage_secret if visitors is not None else None)
        with gr.Row(elem_id="rl-filters", equal_height=True):
            framework = gr.Dropdown(_choices(PAGE_WORDS("page.all_frameworks"), helper.frameworks), value="",
                                    label="Framework",
                                    show_label=False, container=False, scale=1, min_width=180,
                                    elem_id="rl-framework")
            collection = gr.Dropdown(_choices(PAGE_WORDS("page.all_collections"), helper.collections), value="",
                                     label="Collection", show_label=False, container=False, scale=1,
                                     min_width=180, elem_id="rl-collection")
            gr.HTML(f'<div class="rl-filter-note">{PAGE_WORDS("page.filters_note")}</div>', scale=2,
                    min_width=160, padding=False, elem_id="rl-filter-note")
        chatbot = gr.Chatbot(
            label="Answers",
            show_label=False,
            height=600,
            render_markdown=False,  # render.py makes the HTML; no second Markdown pass over doc text
            sanitize_html=True,
            allow_tags=False,
            group_consecutive_messages=False,  # one bubble per answer, so a vote points at one answer
            feedback_options=("Like", "Dislike"),
            buttons=[],
            placeholder=PAGE_WORDS("page.welcome"),
            examples=EXAMPLES,
            elem_id="rl-chat",
            autoscroll=False,  # the page's script shows each new answer from its start (HEAD)
        )
        textbox = gr.Textbox(
            show_label=False,
            placeholder=PAGE_WORDS("page.input"),
            lines=1,  # Enter sends; a pasted traceback keeps its lines and the box grows
            max_lines=12,
            submit_btn=PAGE_WORDS("page.ask"),
            elem_id="rl-input",
            autofocus=False,  # focused by the page's script without scrolling a phone's page down (HEAD)
        )
        # Under the box: what a vote does (shown once there is an answer, style.css), then, in its place,
        # what the vote did, and its comment row; the chat's height leaves room for them (script.js).
        gr.HTML(f'<div class="rl-vote-hint">{votes_hint(visitors is not None, learn_from_votes)}</div>', elem_id="rl-vote-hint",
                padding=False)
        status = gr.Markdown("", elem_id="rl-status")
        clear_filters_btn = gr.Button(PAGE_WORDS("page.clear_filters"), visible=False, size="sm",
                                      elem_id="rl-clear-filters")
        with gr.Row(visible=False, equal_height=True, elem_id="rl-comment-row") as comment_row:
            comment_box = gr.Textbox(show_label=False, placeholder=PAGE_WORDS("page.comment"),
                                     max_length=MAX_COMMENT_CHARS, scale=5, elem_id="rl-comment")
            comment_btn = gr.Button(PAGE_WORDS("page.save_comment"), scale=1, size="sm", elem_id="rl-comment-save")
        # The endpoints the operator configured, by name; "" quotes the docs. Without any the choice is
        # hidden and accepts only "", so the `ask` API keeps one shape and refuses an LLM.
        llm_choices = [(PAGE_WORDS("page.llm_off"), NO_LLM)] + [(name, name) for name in endpoints]
        with gr.Accordion(PAGE_WORDS("page.llm_title"), open=False, elem_id="rl-llm", visible=bool(endpoints)):
            gr.Markdown(PAGE_WORDS("page.llm_text"))
            gr.Markdown(PAGE_WORDS("page.llm_unavailable"), visible=not llm_available())
            llm_choice = gr.Radio(llm_choices, value=NO_LLM, label="Who writes the answer", show_label=False,
                                  interactive=llm_available(), elem_id="rl-use-llm")

        settings = [chatbot, framework, collection, session, llm_choice, visitor]
        quiet = {"queue": False, "show_progress": "hidden", "api_visibility": "private"}
        outputs = [chatbot, session]
        # Every way of asking shares one pool of CONCURRENCY workers (concurrency_id), so a question
        # from a link or an example cannot take more than the page's share.
        answering = {"concurrency_limit": CONCURRENCY, "concurrency_id": "ask", "show_progress": "hidden"}
        # The message moves to a hidden box and the input is emptied at once, before the answer:
        # cleared by the answer's own updates, it lost what the user had started typing meanwhile.
        # The hidden box is also what the `ask` API endpoint takes as its message.
        asked = gr.Textbox(visible=False)
        # A blank Enter sends no message (null), and leaves the box as it was: the page does nothing, where
        # it added a red "The query is empty" and hid the examples (the API still answers "" with that).
        # Over the limit, nothing is sent (the server's refusal replaced the chat with a red "Error" for
        # seconds and the text was gone): the text stays in the box and the note under it says why, in
        # the page's language (script.js's words, RL_WORDS).
        moved = textbox.submit(None, [textbox, status], [asked, textbox, status], js=OVER_THE_LIMIT_JS, **quiet)
        moved.then(ask_page, [asked, *settings], outputs, api_visibility="private", **answering).then(
            offer_clear_filters, [session], [clear_filters_btn], **quiet)
        # The public API (`/ask`, the Gradio client): the same answer, without a browser's visitor id. The
        # page never fires it (the box is hidden).
        asked.submit(ask, [asked, *settings[:-1]], outputs, api_name="ask", **answering)
        picked = gr.State("")  # an example's text goes straight to the answer, not through the box
        chatbot.example_select(example_text, None, [picked], **quiet).then(
            ask_page, [picked, *settings], outputs, api_visibility="private", **answering).then(
            offer_clear_filters, [session], [clear_filters_btn], **quiet)
        # A question's link (?q=..., under each question) asks it as the page opens.
        linked = gr.State("")
        app.load(welcome, [visitor, session], [visitor, session], **quiet).then(
            open_link, None, [linked, framework, collection], **quiet).then(
            ask_linked, [linked, *settings], outputs, api_visibility="private", **answering)
        chatbot.clear(lambda s: (new_session((s or {}).get("visitor") if isinstance(s, dict) else None),
                                 gr.update(feedback_value=[])), [session], [session, chatbot], queue=False,
                      api_visibility="private")
        # A vote's note and comment box belong to the answer voted on: a new question or Clear removes them.
        feedback_parts = [status, comment_row, comment_box, clear_filters_btn]
        moved.then(reset_feedback_unless_blank, [asked], feedback_parts, **quiet)
        for event in (chatbot.example_select, chatbot.clear):
            event(reset_feedback, None, feedback_parts, **quiet)
        again = gr.State("")
        clear_filters_btn.click(lambda s: ("", "", (s or {}).get("filtered_miss") or "", gr.update(visible=False)),
                                [session], [framework, collection, again, clear_filters_btn], **quiet).then(
            ask_linked, [again, *settings], outputs, api_visibility="private", **answering)
        chatbot.like(vote, [session, visitor], [session, status, comment_row, chatbot], queue=False,
                     api_visibility="private")
        comment_box.submit(comment, [session, visitor, comment_box], [session, status, comment_box], queue=False,
                           api_visibility="private")
        comment_btn.click(comment, [session, visitor, comment_box], [session, status, comment_box], queue=False,
                          api_visibility="private")
    app.queue(default_concurrency_limit=CONCURRENCY, max_size=QUEUE_SIZE)
    return app
