"""Terminal escape injection through `ask` and `chat`, on a real pty (issue 17, point 5).

Document names, headings, collection names and LLM replies come from outside; a terminal acts on
ESC sequences (clear the screen, set the window title), C1 controls (U+009B is CSI) and bidi
overrides (a command shown in another order than the one copied). None may reach it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import cli_env
from openai_stub import OpenAIStub, Reply

from rlhelper.ingest.pipeline import ingest
from rlhelper.measure.clikit import acted_on, run_in_pty

HOSTILE_NAME = "evil\x1b]0;pwned\x07\u202egnp\x9b2J.md"
HOSTILE_DOC = (
    "# Zorblax \x1b[2J guide \u202eevil\u202c\n\n"
    "## Zorblax flux capacitor overheats\n\n"
    "Run `cool --down` to fix the zorblax flux capacitor.\n"
)
LLM_REPLY = "\x1b[2J\x1b]0;owned title\x07Run `cool --down` to cool the zorblax flux capacitor \u202e[1]\u202c."


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("escape-docs")
    (docs / HOSTILE_NAME).write_text(HOSTILE_DOC, encoding="utf-8")
    (docs / "line\nbreak\u2066.md").write_text("# Quibble\n\nThe zorblax quibble daemon restarts.\n")
    index = tmp_path_factory.mktemp("escape-index") / "idx"
    report = ingest([docs], collection="col\x1b[31m\u202eX", index=index)
    assert not report.failed
    return index


@pytest.fixture(scope="module")
def env(tmp_path_factory, usem3_cache_dir) -> dict:
    return cli_env(tmp_path_factory.mktemp("pty-home"), usem3_cache_dir, OPENAI_API_KEY="sk-test")


def test_ask_shows_hostile_names_and_headings_inert(hostile_index, env):
    code, screen = run_in_pty(["ask", "--index", str(hostile_index), "zorblax flux capacitor overheats"], env)
    assert code == 0, screen
    assert "\x1b[" in screen  # colours on: the pty is taken for a terminal
    assert "cool --down" in screen and "gnp" in screen  # the text stays, only the controls go
    assert acted_on(screen) == [], screen
    assert "line\nbreak" not in screen  # a file name cannot start a line of its own


def test_ask_llm_reply_cannot_clear_the_screen_or_set_the_title(hostile_index, env):
    with OpenAIStub(Reply(LLM_REPLY)) as stub:
        code, screen = run_in_pty(["ask", "--index", str(hostile_index), "--llm", "--llm-base-url", stub.url,
                                   "--llm-model", "stub-model", "zorblax flux capacitor overheats"], env)
    assert code == 0, screen
    assert "cool the zorblax flux capacitor" in screen  # the model's answer was shown
    assert acted_on(screen) == [], screen


def test_chat_answers_and_llm_replies_are_inert(hostile_index, env):
    with OpenAIStub(Reply(LLM_REPLY)) as stub:
        code, screen = run_in_pty(["chat", "--index", str(hostile_index), "--llm", "--llm-base-url", stub.url,
                                   "--llm-model", "stub-model"], env,
                                  stdin=b"zorblax flux capacitor overheats\n\nwhat about the quibble daemon?\n")
    assert code == 0, screen
    assert "cool the zorblax flux capacitor" in screen
    assert acted_on(screen) == [], screen
    code, screen = run_in_pty(["chat", "--index", str(hostile_index)], env,
                              stdin=b"zorblax flux capacitor overheats\n\n/accept\n")
    assert code == 0, screen
    assert "accepted" in screen and acted_on(screen) == [], screen
