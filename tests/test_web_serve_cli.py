"""`rlhelper serve` as a real subprocess: what it says when it binds beyond this machine, and an
unresolvable --host (issue 17, point 2)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from clirun import cli_env, one_line_error, rlhelper

from rlhelper.answer.llm import LLMSettings
from rlhelper.measure import faults
from rlhelper.web import app as web_app
from rlhelper.web import loadtest
from rlhelper.web import server as web_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_stub import OpenAIStub, Reply  # noqa: E402

KEY_ENV, KEY = "RLHELPER_TEST_SERVE_KEY", "sk-serve-secret-77"


def test_an_unresolvable_host_says_so_in_one_line(tmp_path, usem3_cache_dir):
    proc = rlhelper(["serve", "--host", "no-such-host.invalid", "--port", str(loadtest.free_port())],
                    cli_env(tmp_path, usem3_cache_dir), timeout=120)
    message = one_line_error(proc)
    assert "--host 'no-such-host.invalid' cannot be resolved" in message and "127.0.0.1" in message
    assert "empty port" not in proc.stderr


def test_loopback_is_told_apart_from_every_interface():
    assert web_server.is_loopback("127.0.0.1") and web_server.is_loopback("localhost")
    assert not web_server.is_loopback("0.0.0.0")


def test_the_warning_names_the_llm_the_key_variable_and_the_feedback_file(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, KEY)
    text = web_server.exposure_warning("0.0.0.0", 7860, [LLMSettings(base_url="http://10.0.0.5:30000/v1", model="qwen",
                                                              api_key_env=KEY_ENV)], tmp_path / "f.sqlite3", 20)
    assert "no authentication" in text and "http://10.0.0.5:30000/v1" in text and f"${KEY_ENV}" in text
    assert str(tmp_path / "f.sqlite3") in text and "reverse proxy" in text and KEY not in text
    assert "LLM: off" in web_server.exposure_warning("0.0.0.0", 7860, None, tmp_path / "f.sqlite3", 20)


def test_serving_on_every_interface_warns_on_stderr_and_still_serves(tmp_path, usem3_cache_dir, seeds_index):
    port = loadtest.free_port()
    env = cli_env(tmp_path, usem3_cache_dir, **{KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost"})
    with OpenAIStub(Reply("ok [1]")) as stub:
        proc = subprocess.Popen(
            faults.rlhelper_command("serve", "--host", "0.0.0.0", "--port", str(port), "--index", str(seeds_index),
                                    "--llm", "--llm-base-url", stub.url, "--llm-model", "stub-model",
                                    "--llm-api-key-env", KEY_ENV),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out: list[str] = []
        err: list[str] = []
        readers = [threading.Thread(target=lambda s=s, into=into: into.extend(s), daemon=True)
                   for s, into in ((proc.stdout, out), (proc.stderr, err))]
        for r in readers:
            r.start()
        try:
            deadline = time.monotonic() + 120
            while not any("rlhelper web chat on" in line for line in out):
                assert proc.poll() is None and time.monotonic() < deadline, "".join(err)[-2000:]
                time.sleep(0.3)
            config = httpx.get(f"http://127.0.0.1:{port}/config", timeout=10, trust_env=False).json()
            assert config["title"] == web_app.TITLE
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            for r in readers:
                r.join(timeout=5)
    warning = "".join(err)
    assert "Warning: serving on 0.0.0.0" in warning and "no authentication" in warning
    assert f"'stub-model' at {stub.url}" in warning and f"the key in ${KEY_ENV} goes there only" in warning
    assert str(tmp_path / ".local" / "rlhelper" / "feedback.sqlite3") in warning
    assert "reverse proxy" in warning and KEY not in warning + "".join(out)
    assert "LLM answers by 'stub-model'" in "".join(out)


def test_the_operator_can_serve_the_judge_mode(tmp_path, usem3_cache_dir, seeds_index):
    pytest.importorskip("onnxruntime")
    port = loadtest.free_port()
    proc = subprocess.Popen(
        faults.rlhelper_command("serve", "--port", str(port), "--index", str(seeds_index), "--mode", "judge"),
        env=cli_env(tmp_path, usem3_cache_dir, NO_PROXY="127.0.0.1,localhost"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any("rlhelper web chat on" in line for line in out):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-2000:]
            time.sleep(0.3)
        assert "judge search" in "".join(out)
        with httpx.Client(timeout=60, trust_env=False) as client:
            assert 0 < loadtest.ask_once(client, f"http://127.0.0.1:{port}", "vLLM OOM while generating rollouts") < 60
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        reader.join(timeout=5)
