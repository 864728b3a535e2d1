"""The web app as a real HTTP server on 127.0.0.1: page, privacy settings, file-serving refusal, load."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from rlhelper.api import Helper
from rlhelper.errors import ConfigError
from rlhelper.web import app as web_app
from rlhelper.web import loadtest
from rlhelper.web.server import start

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def helper(seeds_index) -> Helper:
    return Helper.load(index=seeds_index)


@pytest.fixture(scope="module")
def server(helper, tmp_path_factory):
    db = tmp_path_factory.mktemp("fb") / "feedback.sqlite3"
    app, url = start(helper, port=loadtest.free_port(), feedback_db=db)
    yield app, url
    app.close()


def raw_get(url: str, path: str) -> tuple[int, bytes]:
    """GET exactly `path`, unnormalised (no client-side clean-up of ../ or %2e)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# -- the server ---------------------------------------------------------------------------------


def test_page_is_served_on_loopback_only(server):
    app, url = server
    assert urlsplit(url).hostname == "127.0.0.1"
    with urllib.request.urlopen(url + "/", timeout=10) as resp:
        assert resp.status == 200
        page = resp.read().decode()
    assert page.lstrip().lower().startswith("<!doctype html>")
    config = json.loads(urllib.request.urlopen(url + "/config", timeout=10).read())
    assert config["title"] == web_app.TITLE
    assert config.get("analytics_enabled") is False


def test_no_share_link_and_analytics_off(server):
    app, _ = server
    assert app.share is False and app.share_url is None
    assert app.analytics_enabled is False
    assert os.environ["GRADIO_ANALYTICS_ENABLED"] == "False"
    assert app.allowed_paths == [] or app.allowed_paths is None


@pytest.mark.parametrize("path", [
    "/file=/etc/passwd",
    "/gradio_api/file=/etc/passwd",
    "/gradio_api/file=//etc/passwd",
    "/gradio_api/file=../../../../../../etc/passwd",
    "/gradio_api/file=%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/gradio_api/file=..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/gradio_api/file=/proc/self/environ",
    "/gradio_api/file=pyproject.toml",
    f"/gradio_api/file={REPO}/pyproject.toml",
    "/gradio_api/file=src/rlhelper/web.py",
    "/file=pyproject.toml",
    "/static/../../../../etc/passwd",
    "/assets/..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/gradio_api/file=~/.bashrc",
])
def test_files_outside_the_app_are_refused(server, path):
    status, body = raw_get(server[1], path)
    assert status in (400, 403, 404), (path, status)
    assert b"root:" not in body and b"[project]" not in body and b"import gradio" not in body


def test_feedback_database_is_not_served(server, tmp_path):
    app, url = server
    for path in (f"/gradio_api/file={tmp_path}", "/gradio_api/file=" + str(Path.home())):
        assert raw_get(url, path)[0] in (403, 404)


def test_ask_over_http(server):
    _, url = server
    with httpx.Client(timeout=30, trust_env=False) as client:
        seconds = loadtest.ask_once(client, url, "Weight sync timed out between the trainer and SGLang")
    assert 0 < seconds < 30


def test_one_megabyte_query_over_http_is_answered_not_crashed(server):
    _, url = server
    query = "RuntimeError: Weight sync timed out\n" + "y" * 1_000_000
    with httpx.Client(timeout=60, trust_env=False) as client:
        event_id = client.post(f"{url}/gradio_api/call/ask",
                               json={"data": [query, [], "", "", ""]}).json()["event_id"]
        text = client.get(f"{url}/gradio_api/call/ask/{event_id}").text
    assert "event: complete" in text and "event: error" not in text
    assert "more characters not shown" in text


def test_small_load_has_no_errors(server):
    result = loadtest.run_load(server[1], clients=4, questions=3, timeout=30, max_seconds=120)
    assert result["errors"] == 0, result["error_samples"]
    assert result["ok"] == 12 and result["p95_s"] is not None and result["requests_per_s"] > 0
    assert "target" in loadtest.format_result(result)


def test_busy_port_is_a_clear_error(helper, server, tmp_path):
    port = urlsplit(server[1]).port
    with pytest.raises(ConfigError, match="another --port"):
        start(helper, port=port, feedback_db=tmp_path / "f.sqlite3")


@pytest.mark.slow
def test_ui_app_script_serves_the_same_app(seeds_index, tmp_path):
    port = loadtest.free_port()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, str(REPO / "ui" / "app.py"), "--port", str(port),
                             "--index", str(seeds_index)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed: list[str] = []
    reader = threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True)
    reader.start()
    announced = f"rlhelper web chat on http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                config = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=2).read())
                if any(announced in line for line in printed):
                    break
            except OSError:
                assert proc.poll() is None, "".join(printed)
            time.sleep(0.5)
        else:
            pytest.fail(f"ui/app.py did not start and say so within 90 s: {''.join(printed)}")
        assert config["title"] == web_app.TITLE
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "share=True" not in "".join(printed)  # no hint at a public link


@pytest.mark.slow
def test_ui_app_script_reports_a_missing_index(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "ui" / "app.py"), "--index", str(tmp_path / "nothing")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.startswith("Error:") and "Traceback" not in proc.stderr
