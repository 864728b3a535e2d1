"""End to end in headless Chromium (Debian's package, driven by Playwright; never a downloaded browser).

Set-up (`make chromium`), also run by the session fixture `browser` (conftest.py) when either is missing:
    apt-get update && apt-get install -y chromium fonts-wqy-microhei
(the font: Chinese in the screenshots, not boxes). A page in Chinese is a context with locale="zh-CN".
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from rlhelper.api import Helper
from rlhelper.web import loadtest
from rlhelper.web import server as web_server

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
# The README's picture: written only when asked (RLHELPER_UPDATE_SCREENSHOT=1), so a test run
# leaves the work tree clean.
SCREENSHOT = REPO / "docs" / "screenshot.png"
HOSTILE = Path(__file__).resolve().parent / "hostile"
QUESTION = "Weight sync timed out between the trainer and SGLang. How do I fix it?"


@pytest.fixture(scope="module")
def feedback_db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fb") / "feedback.sqlite3"


@pytest.fixture(scope="module")
def seeds_url(seeds_index, feedback_db):
    app, url = web_server.start(Helper.load(index=seeds_index), port=loadtest.free_port(), feedback_db=feedback_db)
    yield url
    app.close()


def served(tmp_path_factory, paths: list[Path], collection: str):
    """The chat over a fresh index of `paths` (a real ingest), until the module's tests are done."""
    from rlhelper.ingest.pipeline import ingest

    index = tmp_path_factory.mktemp(collection) / "idx"
    ingest(paths, collection=collection, index=index)
    app, url = web_server.start(Helper.load(index=index), port=loadtest.free_port(),
                                feedback_db=tmp_path_factory.mktemp("fb") / "f.sqlite3")
    yield url
    app.close()


@pytest.fixture(scope="module")
def hostile_url(tmp_path_factory):
    yield from served(tmp_path_factory, [HOSTILE], "hostile")


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 1000}, device_scale_factor=1)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.dialogs = []  # every alert/confirm/prompt that fires: must stay empty
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.set_default_timeout(30_000)
    yield page
    context.close()


FINAL = ".rl-answer .rl-sources, .rl-answer .rl-abstain, .rl-error"  # an answer's last part, or an error


def ask(page, question: str) -> None:
    """Ask and wait for this answer's final message. Waiting on the last final message alone would
    return at once on a page that already holds an earlier answer (a slow server then reads that one)."""
    before = page.locator(FINAL).count()
    box = page.locator("#rl-input textarea")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length > n", arg=[FINAL, before])


def wait_for_row(db: Path, query: str, seconds: float = 30.0) -> tuple | None:
    """Wait for the vote's row, the state itself: not for the file, which the server writes meanwhile
    (read-only, so the poll never creates the file itself)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
                row = conn.execute("SELECT query, vote, cited_entry_ids FROM feedback WHERE query = ?",
                                   (query,)).fetchone()
        except sqlite3.OperationalError:  # not there yet, or no table yet, or locked by the writer
            row = None
        if row:
            return row
        time.sleep(0.2)
    return None


def test_ask_see_citation_expand_copy_vote(page, seeds_url, feedback_db, tmp_path):
    page.set_viewport_size({"width": 1280, "height": 900})  # a laptop's window: the README's picture
    page.goto(seeds_url)
    page.locator("#rl-header h1").wait_for()
    assert "helper" in page.inner_text("#rl-header h1")
    ask(page, QUESTION)

    link = page.locator(".rl-sources .rl-cite-link").first
    assert link.get_attribute("href").startswith("https://")
    assert link.get_attribute("target") == "_blank"
    assert page.locator(".rl-sources .rl-num").first.inner_text() == "1"
    assert "›" in link.inner_text()  # the heading breadcrumb
    assert page.locator(".rl-body .rl-ref a").count() >= 1  # [n] markers link to the section

    summary = page.locator(".rl-sources .rl-details summary").first
    summary.click()
    entry = page.locator(".rl-sources .rl-details .rl-entry").first
    entry.wait_for(state="visible")
    assert len(entry.inner_text()) > 20

    copy = page.locator(".rl-answer .rl-copy").first
    if copy.count():
        copy.click()
        page.wait_for_function("b => b.textContent === 'Copied'", arg=copy.element_handle())

    shot = SCREENSHOT if os.environ.get("RLHELPER_UPDATE_SCREENSHOT") == "1" else tmp_path / "screenshot.png"
    page.locator("#rl-chat [data-testid='user']").last.scroll_into_view_if_needed()  # the question on top
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    page.locator("#rl-chat button[aria-label='Like']").last.click()
    row = wait_for_row(feedback_db, QUESTION)
    assert row is not None, "the thumbs-up did not reach SQLite"
    assert row[1] == 1 and row[2].startswith('["')
    page.locator("#rl-status").get_by_text("helpful").wait_for()

    page.locator("#rl-comment textarea").fill("Right fix, thanks")
    page.locator("#rl-comment-save").click()
    page.locator("#rl-status").get_by_text("Comment saved").wait_for()
    with sqlite3.connect(feedback_db) as conn:
        assert conn.execute("SELECT comment FROM feedback WHERE query = ?", (QUESTION,)).fetchone() == (
            "Right fix, thanks",)
    assert page.dialogs == []


def test_chat_messages_are_labelled_with_their_text_not_their_html(page, seeds_url):
    page.goto(seeds_url)
    ask(page, QUESTION)
    answer = page.locator("#rl-chat [data-testid='bot']").last
    page.wait_for_function("el => el.getAttribute('aria-label').startsWith('Answer: ')", arg=answer.element_handle())
    label = answer.get_attribute("aria-label")
    assert "<" not in label.split("Answer: ", 1)[1][:200] and "class=" not in label
    assert " ".join(answer.inner_text().split())[:100] in label  # the text a sighted reader sees
    asked = page.locator("#rl-chat [data-testid='user']").last.get_attribute("aria-label")
    assert asked.startswith("Your message: ") and QUESTION.split()[0] in asked and "<p>" not in asked


def test_a_question_link_opens_a_new_tab_that_asks_it_with_its_filter(page, seeds_url):
    page.goto(seeds_url)
    page.locator("#rl-header h1").wait_for()
    assert page.locator("#rl-chat [data-testid='user']").count() == 0  # no ?q=: nothing asked
    page.locator("#rl-framework input").click()
    page.get_by_role("option", name="SkyRL").click()
    ask(page, "wake_up timed out after 60s")
    with page.context.expect_page() as opened:
        page.locator(".rl-link a").last.click()
    shared = opened.value
    assert "q=wake_up+timed+out+after+60s" in shared.url and "framework=skyrl" in shared.url
    shared.locator(".rl-answer .rl-sources, .rl-answer .rl-abstain, .rl-error").last.wait_for()
    assert "Error: RuntimeError: wake_up timed out after Xs" in shared.locator(".rl-answer").last.inner_text()
    assert shared.locator("#rl-framework input").input_value() == "SkyRL"  # the filter came with it
    assert page.locator("#rl-chat [data-testid='user']").count() == 1  # the first tab's chat is kept


def test_example_prompt_in_chinese(page, seeds_url):
    page.goto(seeds_url)
    page.locator("button.example", has_text="显存不足").click()
    page.locator(".rl-answer .rl-sources, .rl-answer .rl-abstain").last.wait_for()
    assert "显存不足" in page.locator("#rl-chat").inner_text()


def test_a_weak_match_is_quoted_with_its_notice(page, seeds_index, tmp_path):
    helper = Helper.load(index=seeds_index)
    retriever = helper.retriever  # a weak band that reaches the top: every answer is a weak match
    retriever.confidence_model = dataclasses.replace(retriever.confidence_model, weak_ceilings={"hybrid": 1.0})
    app, url = web_server.start(helper, port=loadtest.free_port(), feedback_db=tmp_path / "f.sqlite3")
    try:
        page.goto(url)
        ask(page, "RuntimeError: wake_up timed out after 60s")
        answer = page.locator(".rl-answer").last
        assert "Weak match:" in answer.locator(".rl-notices").inner_text()
        assert "wake_up timed out after Xs" in answer.locator(".rl-sources").first.inner_text()
    finally:
        app.close()


def test_quoted_config_and_pasted_traceback_keep_their_indentation(page, seeds_url):
    # Gradio's Chatbot strips indentation shared by a message's lines 2+ unless render.py guards it.
    page.goto(seeds_url)
    ask(page, "RuntimeError: wake_up timed out after 60s")
    yaml = page.locator(".rl-answer").last.locator("code.language-yaml").first.text_content()
    assert yaml.startswith("generator:\n  engine_init_kwargs:\n    wake_timeout: 120")
    ask(page, 'Traceback (most recent call last):\n  File "/x/verl/trainer/main_ppo.py", line 9, in run\n'
              "    main()\nRuntimeError: wake_up timed out after 60s")
    pasted = page.locator("#rl-chat .rl-query").last.text_content()
    assert '\n  File "/x/verl/trainer/main_ppo.py"' in pasted and "\n    main()\n" in pasted


def test_what_is_typed_while_an_answer_streams_in_is_kept(page, seeds_url):
    page.goto(seeds_url)
    box = page.locator("#rl-input textarea")
    box.fill("RuntimeError: wake_up timed out after 60s")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('#rl-input textarea').value === ''")
    box.type("and if raising the timeout does not help", delay=10)  # while the answer comes in
    page.locator(".rl-answer .rl-sources").last.wait_for()
    page.wait_for_timeout(300)  # any late update of the box would land by now
    assert box.input_value() == "and if raising the timeout does not help"


def test_a_phone_wide_page_does_not_scroll_sideways(browser, seeds_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(seeds_url)
        ask(page, "RuntimeError: wake_up timed out after 60s")  # its YAML has lines wider than the screen
        ask(page, 'Traceback (most recent call last):\n  File "/x/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", '
                  "line 288, in generate_sequences\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.31 GiB")
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"the page is {widths[0]} px wide on a {widths[1]} px screen"
    finally:
        context.close()


def test_hostile_document_is_shown_as_text_and_never_runs(page, hostile_url):
    page.goto(hostile_url)
    ask(page, "XyzzyRewardError: reward server refused")
    for summary in page.locator(".rl-details summary").all():
        summary.click()
    page.locator(".rl-details .rl-entry").first.wait_for(state="visible")
    page.mouse.move(300, 300)
    page.wait_for_timeout(500)  # give any injected handler the chance to fire

    assert page.dialogs == []
    text = page.locator("#rl-chat").inner_text()
    assert "<script>alert('xss-script')</script>" in text
    assert "<img src=x onerror=alert(1)>" in text
    assert "[click](javascript:alert(1))" in text
    injected = page.evaluate(
        """() => document.querySelectorAll(
            '#rl-chat script, #rl-chat iframe, #rl-chat img, #rl-chat object, #rl-chat embed,'
            + ' #rl-chat [onerror], #rl-chat [onload], #rl-chat [onmouseover], #rl-chat a[href^="javascript"],'
            + ' #rl-chat a[href^="data"]').length"""
    )
    assert injected == 0


# -- the LLM choice belongs to the operator (issue 17) ------------------------------------------------


def test_the_page_offers_no_llm_unless_the_operator_configured_one(page, seeds_url):
    page.goto(seeds_url)
    page.locator("#rl-input textarea").wait_for()
    assert page.locator("#rl-llm").count() == 0 or not page.locator("#rl-llm").is_visible()
    assert page.get_by_text("Write the answer with").count() == 0
    assert page.locator("input[placeholder*='http']").count() == 0  # no URL box, anywhere


def test_a_visitor_picks_the_configured_llm_by_name_and_never_types_a_url(page, seeds_index, tmp_path,
                                                                          monkeypatch):
    pytest.importorskip("langchain_openai", reason="the llm extra is not installed")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from openai_stub import OpenAIStub, Reply

    from rlhelper.answer.llm import LLMSettings

    monkeypatch.setenv("RLHELPER_TEST_BROWSER_KEY", "sk-browser-secret")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with OpenAIStub(Reply("Raise `weight_sync_timeout` in the generator config [1].")) as stub:
        app, url = web_server.start(Helper.load(index=seeds_index), port=loadtest.free_port(),
                             feedback_db=tmp_path / "f.sqlite3",
                             llm=[LLMSettings(base_url=stub.url, model="stub-model",
                                              api_key_env="RLHELPER_TEST_BROWSER_KEY")])
        try:
            page.goto(url)
            page.locator("#rl-llm").get_by_text("Write the answer with an LLM").click()
            assert page.locator("input[placeholder*='http']").count() == 0
            assert stub.url not in page.content()  # the endpoint is not shown to visitors
            page.locator("#rl-use-llm").get_by_text("stub-model").click()
            ask(page, QUESTION)
            page.locator(".rl-answer").get_by_text("Written by the LLM").first.wait_for()
        finally:
            app.close()
    assert len(stub.requests) == 1 and stub.headers[0]["authorization"] == "Bearer sk-browser-secret"
    assert page.dialogs == []


def test_a_comment_box_stops_at_the_limit(page, seeds_url):
    page.goto(seeds_url)
    ask(page, QUESTION)
    page.locator("#rl-chat button[aria-label='Like']").last.click()
    box = page.locator("#rl-comment textarea")
    box.fill("x" * 3_000)
    assert len(box.input_value()) == 2_000


# -- what a user meets (issue 20) -----------------------------------------------------------------

SHOTS = os.environ.get("RLHELPER_SCREENSHOT_DIR")  # screenshots at both sizes, kept here when set
LONG_PASTE = "Traceback (most recent call last):\n" + "".join(
    f'  File "/workspace/envs/site-packages/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd_{i}.py", line {i}, '
    "in generate_sequences\n    outputs = self.inference_engine.generate(prompts=vllm_inputs, "
    "sampling_params=self.sampling_params, use_tqdm=False)\n" for i in range(5)
) + ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. PYTORCH_CUDA_ALLOC_CONF="
     "expandable_segments:True_" + "x" * 120)


def ask_and_wait(page, question: str) -> None:
    """Ask, and wait for this question's own final answer (not an earlier one's sources)."""
    answered = "() => [...document.querySelectorAll('#rl-chat [data-testid=bot]')].filter(b => b.querySelector(" \
               "'.rl-sources, .rl-abstain, .rl-error, .rl-smalltalk')).length"
    before = page.evaluate(answered)
    box = page.locator("#rl-input textarea")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function(f"n => ({answered})() > n", arg=before)
    page.wait_for_timeout(300)


def shot(page, name: str, tmp_path: Path) -> None:
    where = Path(SHOTS) if SHOTS else tmp_path
    where.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(where / name))


def sized_page(browser, width: int, height: int, locale: str | None = None):
    """A page of a new context at that size, in the browser language `locale` ("zh-CN") when given."""
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1,
                                  **({"locale": locale} if locale else {}))
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture
def phone(browser):
    yield from sized_page(browser, 390, 844)


@pytest.fixture
def desktop(browser):
    yield from sized_page(browser, 1280, 900)


def test_a_new_answer_opens_at_its_start(desktop, seeds_url, tmp_path):
    desktop.goto(seeds_url)
    ask_and_wait(desktop, "RuntimeError: wake_up timed out after 60s")
    ask_and_wait(desktop, QUESTION)  # an answer taller than the chat pane
    where = desktop.evaluate("""() => {
        const users = document.querySelectorAll('#rl-chat [data-testid=user]'), last = users[users.length - 1];
        const pane = last.closest('.bubble-wrap').getBoundingClientRect(), q = last.getBoundingClientRect();
        const bots = document.querySelectorAll('#rl-chat [data-testid=bot]'), a = bots[bots.length - 1].getBoundingClientRect();
        return {paneTop: pane.top, paneBottom: pane.bottom, question: q.top, answer: a.top, answerHeight: a.height}; }""")
    assert where["answerHeight"] > where["paneBottom"] - where["paneTop"]  # it could not all be shown
    assert where["paneTop"] - 1 <= where["question"] < where["paneTop"] + 80, where  # the question on top
    assert where["answer"] < where["paneBottom"] - 100, where  # and the answer's start below it
    shot(desktop, "desktop-1280x900.png", tmp_path)


def test_a_phone_opens_at_the_top_and_a_long_paste_does_not_widen_it(phone, seeds_url, tmp_path):
    phone.goto(seeds_url)
    phone.locator("#rl-input textarea").wait_for()
    phone.wait_for_timeout(1500)  # when the box took focus on load, the page had scrolled by now
    assert phone.evaluate("window.scrollY") == 0
    ask_and_wait(phone, LONG_PASTE)
    widths = phone.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide on a {widths[1]} px screen"
    shot(phone, "phone-390x844.png", tmp_path)


def boxes_overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and \
        a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def test_small_things_examples_clear_icon_arrow_and_the_vote_note(desktop, seeds_url):
    page = desktop
    page.goto(seeds_url)
    example = page.locator("#rl-chat button.example").first
    example.wait_for()
    style = example.evaluate("b => { const s = getComputedStyle(b); return [s.borderTopStyle, s.borderTopWidth]; }")
    assert style[0] != "none" and float(style[1].rstrip("px")) >= 1, style  # a button before any hover

    ask_and_wait(page, QUESTION)
    clear = page.locator("#rl-chat button[aria-label='Clear']")
    first = page.locator("#rl-chat [data-testid='user']").first
    page.locator("#rl-chat .bubble-wrap").evaluate("pane => pane.scrollTop = 0")
    assert not boxes_overlap(clear.bounding_box(), first.bounding_box())
    arrows = page.locator("#rl-chat .scroll-down-button-container button")
    assert arrows.count() == 0 or not arrows.first.is_visible()

    page.locator("#rl-chat button[aria-label='Like']").last.click()
    page.locator("#rl-status").get_by_text("helpful").wait_for()
    assert page.locator("#rl-comment").is_visible()
    ask_and_wait(page, "RuntimeError: wake_up timed out after 60s")  # the next question: note and box go
    assert page.locator("#rl-status").inner_text().strip() == ""
    assert not page.locator("#rl-comment").is_visible()
    page.locator("#rl-chat button[aria-label='Like']").last.click()
    page.locator("#rl-comment").wait_for(state="visible")
    clear.click()
    page.locator("#rl-comment").wait_for(state="hidden")
    assert page.locator("#rl-status").inner_text().strip() == ""


def test_nothing_within_the_filters_offers_to_clear_them(desktop, seeds_url):
    page = desktop
    page.goto(seeds_url)
    page.locator("#rl-framework input").click()
    page.get_by_role("option", name="RLinf").click()
    ask_and_wait(page, "RuntimeError: wake_up timed out after 60s")  # a SkyRL entry
    assert "Nothing matches within your filters" in page.locator(".rl-answer").last.inner_text()
    asked = page.locator("#rl-chat [data-testid='user']").count()
    page.locator("#rl-clear-filters").click()
    page.wait_for_function("n => document.querySelectorAll('#rl-chat [data-testid=user]').length > n", arg=asked)
    page.wait_for_function("() => { const b = [...document.querySelectorAll('#rl-chat [data-testid=bot]')].pop();"
                           " return b && b.querySelector('.rl-sources'); }")
    answer = page.locator("#rl-chat [data-testid='bot']").last
    assert "wake_up timed out after Xs" in answer.locator(".rl-sources").first.inner_text()
    assert page.locator("#rl-framework input").input_value() == "All frameworks"
    assert not page.locator("#rl-clear-filters").is_visible()


def test_thanks_gets_a_word_back_and_the_next_follow_up_keeps_the_topic(desktop, seeds_url, tmp_path):
    page = desktop
    page.goto(seeds_url)
    ask_and_wait(page, "weight sync timed out between the trainer and sglang")
    ask_and_wait(page, "thanks!")
    last = page.locator("#rl-chat [data-testid='bot']").last
    assert "Glad it helped" in last.inner_text() and last.locator(".rl-sources, .rl-abstain").count() == 0
    ask_and_wait(page, "what about slime?")
    assert "Read as a follow-up" in page.locator(".rl-answer").last.inner_text()
    ask_and_wait(page, "有没有中文的说明？谢谢")  # a question, not small talk
    shot(page, "desktop-conversation-1280x900.png", tmp_path)


# -- what a user meets, round 3 (issue 29, points 5 to 9) ------------------------------------------

OFFICIAL = REPO / "ingest" / "official"
SLIME_QA_QUESTION = "several processes read local files with AutoModelForCausalLM.from_pretrained and the node crashes"
NO_MATCH = "How do I log rollouts to Weights & Biases tables?"


@pytest.fixture(scope="module")
def slime_qa_url(tmp_path_factory):
    """slime's own Q&A page (ingest/official), whose answers hold long identifiers in inline code."""
    yield from served(tmp_path_factory, [OFFICIAL / "slime" / "qa.md"], "official")


@pytest.fixture
def chinese_desktop(browser):
    yield from sized_page(browser, 1280, 900, "zh-CN")


@pytest.fixture
def chinese_phone(browser):
    yield from sized_page(browser, 390, 844, "zh-CN")


IN_VIEW = """sel => { const e = document.querySelector(sel); if (!e) return false;
    const r = e.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth; }"""
FITS = "() => document.documentElement.scrollHeight <= innerHeight && scrollY === 0"


def in_view(page, selector: str) -> bool:
    """Wait until the element is wholly inside the window (not below the fold, not scrolled off the top):
    the page fits its chat to the window a frame after a change. False when it never is."""
    try:
        page.wait_for_function(IN_VIEW, arg=selector, timeout=5_000)
    except Exception:  # playwright's TimeoutError: the state never came
        return False
    return True


def fits(page) -> bool:
    """Wait until the page fits the window, with nothing to scroll; False when it never does."""
    try:
        page.wait_for_function(FITS, timeout=5_000)
    except Exception:
        return False
    return True


def last_bot_has_thumbs(page) -> bool:
    return page.evaluate("""() => { const rows = document.querySelectorAll('#rl-chat .message-row.bot-row');
        const row = rows[rows.length - 1]; let next = row && row.nextElementSibling;
        const buttons = next && next.classList.contains('message-buttons') ? next : null;
        return !!buttons && [...buttons.querySelectorAll('button')].some(b => b.offsetParent !== null); }""")


def test_a_vote_is_explained_confirmed_in_view_and_still_shown_after_the_next_question(desktop, seeds_url):
    """Issue 29, point 5."""
    page = desktop
    page.goto(seeds_url)
    ask_and_wait(page, QUESTION)
    hint = page.locator("#rl-vote-hint")
    assert hint.is_visible() and in_view(page, "#rl-vote-hint")  # said before anyone votes
    said = hint.inner_text()
    assert "this browser" in said and "operator" in said, said
    page.locator("#rl-chat button[aria-label='Like']").last.click()
    page.locator("#rl-status").get_by_text("helpful").wait_for()
    page.locator("#rl-comment").wait_for(state="visible")
    assert in_view(page, "#rl-status") and in_view(page, "#rl-comment"), "the vote's note is below the fold"
    ask_and_wait(page, "thanks!")  # small talk: a word back, nothing to vote on
    assert not last_bot_has_thumbs(page)
    assert page.locator("#rl-chat button[aria-label='Liked']").count() == 1  # the earlier 👍 is still shown
    ask_and_wait(page, "RuntimeError: wake_up timed out after 60s")
    assert last_bot_has_thumbs(page)
    assert page.locator("#rl-chat button[aria-label='Liked']").count() == 1
    ask_and_wait(page, "\x00\x01\x02\x03 \x04\x05")  # binary, not text: an error bubble
    page.locator("#rl-chat .rl-error").wait_for()
    assert not last_bot_has_thumbs(page)


def test_a_chinese_browser_gets_a_chinese_page_and_a_chinese_question_chinese_words(chinese_desktop, seeds_url,
                                                                                    tmp_path):
    """Issue 29, point 6: the page follows the browser's language, an answer the asker's."""
    from rlhelper.index.lexical import has_han

    page = chinese_desktop
    page.goto(seeds_url)
    page.locator("#rl-input textarea").wait_for()
    chrome = " ".join([page.locator("#rl-header").inner_text(), page.locator("#rl-filters").inner_text(),
                       page.locator("#rl-framework input").input_value(),
                       page.locator("#rl-collection input").input_value(),
                       page.locator("#rl-chat").inner_text(),
                       page.locator("#rl-input textarea").get_attribute("placeholder"),
                       page.locator("#rl-input button").last.inner_text()])
    for english in ("Troubleshooting for RL", "entries from", "All frameworks", "All collections", "Filters apply",
                    "Ask about an RL", "Paste an error", "Ask"):
        assert english not in chrome, english
    assert has_han(page.locator("#rl-input button").last.inner_text())
    ask_and_wait(page, "weight sync 超时怎么办？")
    ask_and_wait(page, "slime 呢？")
    answer = page.locator("#rl-chat [data-testid='bot']").last
    words = answer.inner_text() + " " + page.locator("#rl-chat [data-testid='user']").last.inner_text()
    for english in ("Read as a follow-up", "Sources", "Show the whole entry", "matched:", "Also at", "Also in",
                    "Link to this question", "Related entries"):
        assert english not in words, english
    copy = answer.locator(".rl-copy").first
    if copy.count():
        assert copy.inner_text() == "复制"
        copy.click()
        page.wait_for_function("b => b.textContent === '已复制'", arg=copy.element_handle())
    hint = page.locator("#rl-vote-hint").inner_text()
    assert has_han(hint) and "thumbs" not in hint
    page.locator("#rl-chat .message-buttons button").last.click()  # 👍 (its label is Gradio's own, in Chinese)
    page.locator("#rl-comment").wait_for(state="visible")
    said = page.locator("#rl-status").inner_text()
    assert "谢谢" in said and "Thanks" not in said and "will lead" not in said, said
    shot(page, "desktop-zh-1280x900.png", tmp_path)


def test_a_chinese_phone_shows_the_page_in_chinese_and_does_not_scroll_sideways(chinese_phone, seeds_url, tmp_path):
    """Issue 29, points 6 and 7, together: a Chinese phone asks the page's own Chinese example."""
    from rlhelper.index.lexical import has_han

    page = chinese_phone
    page.goto(seeds_url)
    page.locator("#rl-input textarea").wait_for()
    assert has_han(page.locator("#rl-header").inner_text()) and "Troubleshooting for RL" not in page.locator(
        "#rl-header").inner_text()
    page.locator("button.example", has_text="显存不足").click()
    page.locator(".rl-answer .rl-sources, .rl-answer .rl-abstain").last.wait_for()
    widths = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide on a {widths[1]} px screen"
    assert "Sources" not in page.locator(".rl-answer").last.inner_text()
    shot(page, "phone-zh-390x844.png", tmp_path)


def test_a_long_identifier_does_not_widen_a_phone(phone, slime_qa_url, tmp_path):
    """Issue 29, point 7: `AutoModelForCausalLM.from_pretrained` in an answer on a 390 px screen."""
    phone.goto(slime_qa_url)
    ask_and_wait(phone, SLIME_QA_QUESTION)
    assert "AutoModelForCausalLM.from_pretrained" in phone.locator(".rl-answer").last.inner_text()
    widths = phone.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide on a {widths[1]} px screen"
    for part in ("#rl-input textarea", "#rl-input button", "#rl-chat button[aria-label='Clear']"):
        right = phone.locator(part).last.bounding_box()
        assert right["x"] + right["width"] <= widths[1], part
    outside = phone.evaluate("""() => [...document.querySelectorAll('#rl-chat .rl-answer code')].filter(c => {
        const bubble = c.closest('.message').getBoundingClientRect(), r = c.getBoundingClientRect();
        return r.right > bubble.right + 0.5 || r.left < bubble.left - 0.5; }).map(c => c.textContent.slice(0, 40))""")
    assert outside == [], f"inline code sticks out of its bubble: {outside}"
    shot(phone, "phone-identifier-390x844.png", tmp_path)


HEARTBEATS = ("[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1402, "
              "OpType=ALLREDUCE) ran for 600015 milliseconds before timing out.\n(WorkerDict pid=48211) "
              "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3.\n"
              + "(raylet) [2025-01-01 12:00:00] worker heartbeat ok\n" * 30)
# A pasted log's echo: how many rows it shows, whether it scrolls, and the row each line of the paste ends on.
PASTE_SHOWN = """() => { const pre = [...document.querySelectorAll('#rl-chat pre.rl-query')].pop();
        const s = getComputedStyle(pre), top = pre.getBoundingClientRect().top + parseFloat(s.paddingTop);
        const inner = pre.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
        const node = pre.firstChild, range = document.createRange(), ends = [];
        let at = 0;
        for (const line of node.data.split('\\n')) {  // where each line of the paste ends, wrapped or not
            if (line) { range.setStart(node, at); range.setEnd(node, at + line.length);
                        ends.push(Math.round((range.getBoundingClientRect().bottom - top) / parseFloat(s.lineHeight))); }
            at += line.length + 1;
        }
        return {lines: inner / parseFloat(s.lineHeight), scrolls: pre.scrollHeight > pre.clientHeight, ends}; }"""


def test_a_phone_shows_a_pasted_log_by_whole_lines_and_an_even_filter_row(phone, seeds_url):
    """Issue 29, point 7."""
    phone.goto(seeds_url)
    phone.locator("#rl-input textarea").wait_for()
    filters = phone.evaluate("""() => ['#rl-framework', '#rl-collection', '.rl-filter-note'].map(s => {
        const r = document.querySelector(s).getBoundingClientRect(), e = document.querySelector(s);
        return {top: r.top, width: r.width, height: r.height,
                line: parseFloat(getComputedStyle(e).lineHeight) || 16}; })""")
    framework, collection, note = filters
    assert abs(framework["width"] - collection["width"]) <= 2 and abs(framework["top"] - collection["top"]) <= 2, \
        filters
    assert note["height"] <= 1.6 * note["line"], f"the filter note takes {note['height']} px: {filters}"
    carets = phone.evaluate("""() => ['#rl-framework', '#rl-collection'].map(s => {
        const input = document.querySelector(s + ' input'), icon = document.querySelector(s + ' .icon-wrap svg');
        const ruler = document.createElement('canvas').getContext('2d'); ruler.font = getComputedStyle(input).font;
        const box = input.getBoundingClientRect(), drawn = icon.getBoundingClientRect();
        return {gap: drawn.left - (box.left + parseFloat(getComputedStyle(input).paddingLeft)
                                   + ruler.measureText(input.value).width),
                fromRight: document.querySelector(s).getBoundingClientRect().right - drawn.right}; })""")
    assert all(c["gap"] >= 6 for c in carets), f"a filter's text runs into its arrow: {carets}"
    assert abs(carets[0]["fromRight"] - carets[1]["fromRight"]) <= 1, carets
    ask_and_wait(phone, HEARTBEATS)  # its lines wrap on a phone: ten rows ended inside one ("(raylet) [...] worker")
    try:  # the page's script ends the echo at a whole line a frame after it is shown: wait for that state
        phone.wait_for_function(f"() => {{ const r = ({PASTE_SHOWN})(); return r.ends.includes(Math.round(r.lines)); }}",
                                timeout=5_000)
    except Exception:  # playwright's TimeoutError: the assertions below say what is shown instead
        pass
    shown = phone.evaluate(PASTE_SHOWN)
    assert shown["scrolls"] and abs(shown["lines"] - round(shown["lines"])) < 0.05, \
        f"the pasted log's preview ends {shown['lines']:.2f} lines down: a line is cut through"
    assert round(shown["lines"]) in shown["ends"], \
        f"the preview ends on row {shown['lines']:.0f}, inside a line of the paste (lines end on rows {shown['ends']})"


def test_ok_thanks_is_small_talk_and_an_empty_enter_does_nothing(desktop, seeds_url):
    """Issue 29, point 8."""
    page = desktop
    page.goto(seeds_url)
    box = page.locator("#rl-input textarea")
    box.fill("   ")
    box.press("Enter")
    box.fill("")
    box.press("Enter")
    # An example asked after them (the box's own Enter is ignored while its last event is pending) is the
    # chat's first message: the blank Enters left nothing, so the examples stayed until it.
    page.locator("#rl-chat button.example").first.click()
    page.locator(FINAL).first.wait_for()
    assert page.locator("#rl-chat [data-testid='user']").count() == 1
    assert page.locator("#rl-chat [data-testid='bot']").count() == 1
    assert page.locator("#rl-chat .rl-error").count() == 0
    ask_and_wait(page, "ok thanks, that fixed it")
    last = page.locator("#rl-chat [data-testid='bot']").last
    assert last.locator(".rl-smalltalk").count() == 1 and last.locator(".rl-sources, .rl-abstain").count() == 0


def test_the_page_stays_put_the_input_is_focused_and_what_matters_is_in_view(desktop, seeds_url):
    """Issue 29, point 9, at 1280x900."""
    page = desktop
    page.goto(seeds_url)
    page.wait_for_function("() => document.activeElement && document.activeElement.closest('#rl-input')")
    for question in (QUESTION, "thanks!", LONG_PASTE):
        ask_and_wait(page, question)
        assert fits(page), "the page can creep: " + str(page.evaluate(
            "() => [document.documentElement.scrollHeight, innerHeight, scrollY]"))
        assert in_view(page, "#rl-header h1")
    where = page.evaluate("""() => {
        const users = document.querySelectorAll('#rl-chat [data-testid=user]'), last = users[users.length - 1];
        const pane = last.closest('.bubble-wrap').getBoundingClientRect();
        const bots = document.querySelectorAll('#rl-chat [data-testid=bot]'), a = bots[bots.length - 1].getBoundingClientRect();
        return {paneTop: pane.top, paneHeight: pane.height, answer: a.top}; }""")
    assert where["answer"] <= where["paneTop"] + 0.6 * where["paneHeight"], f"the pasted log fills the pane: {where}"
    page.locator("#rl-chat button[aria-label='Like']").last.click()
    page.locator("#rl-comment").wait_for(state="visible")
    assert fits(page), "the comment box made the page scroll"
    page.locator("#rl-framework input").click()
    page.get_by_role("option", name="RLinf").click()
    ask_and_wait(page, "RuntimeError: wake_up timed out after 60s")
    page.locator("#rl-clear-filters").wait_for(state="visible")
    assert in_view(page, "#rl-clear-filters")


def test_a_follow_up_after_no_match_is_read_with_it_on_the_page(desktop, seeds_url):
    """Issue 29, point 8: "what about slime?" after a no-match answer."""
    page = desktop
    page.goto(seeds_url)
    ask_and_wait(page, NO_MATCH)
    assert page.locator(".rl-answer").last.locator(".rl-abstain").count() == 1
    ask_and_wait(page, "what about slime?")
    answer = page.locator(".rl-answer").last.inner_text()
    assert "Read as a follow-up" in answer and "slime's docs have no entry" in answer, answer[:300]
