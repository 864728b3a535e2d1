"""A running web server picks up the index a sync (or an ingest) swaps in, without a restart: a real
server on 127.0.0.1 over an index of a git upstream made by the test (fake embedder, in this process)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from git_upstream import Upstream, isolate

from rlhelper.api import Helper, LiveHelper
from rlhelper.index.folders import live_folder
from rlhelper.ingest.git.remote import GitSpec
from rlhelper.ingest.sync import ingest_git, sync_index
from rlhelper.web import loadtest
from rlhelper.web.server import start
from rlhelper.web.trials import call_api

FAQ = """# Widget FAQ

## Rollout hangs at startup

The rollout workers wait for the zorble service. Start it with `zorble serve` first.
"""
EGL = "\n## EGL rendering picks the wrong GPU\n\nSet `EGL_DEVICE_ID` to the rank's GPU index.\n"
QUESTION = "EGL rendering picks the wrong GPU"


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch):
    isolate(monkeypatch)


def _answer(url: str) -> str:
    event, payload = call_api(url, [QUESTION, [], "", "", ""])
    assert event == "complete", payload
    return payload


def test_the_server_answers_from_the_synced_index_without_a_restart(tmp_path, fake_embedder, caplog):
    up = Upstream(tmp_path / "up", "widget")
    up.commit("faq", {"docs/faq.md": FAQ})
    index = tmp_path / "index"
    ingest_git(GitSpec.checked(up.url, None, ["docs"]), "widget", index=index, embedder="test:fake")
    app, url = start(Helper.load(index, user_bank=False), port=loadtest.free_port(),
                     feedback_db=tmp_path / "feedback.sqlite3")
    try:
        assert "EGL_DEVICE_ID" not in _answer(url)
        up.commit("faq: EGL", {"docs/faq.md": FAQ + EGL})
        assert sync_index(index).written
        deadline = time.monotonic() + 30
        while "EGL_DEVICE_ID" not in (answer := _answer(url)) and time.monotonic() < deadline:
            time.sleep(0.2)  # the new version loads in the background; the old one answers meanwhile
        assert "EGL_DEVICE_ID" in answer

        # A version that cannot be loaded is passed over: the last good one keeps answering.
        live = live_folder(index)
        bad = live.with_name(live.name + "-damaged")
        shutil.copytree(live, bad)
        (bad / "entries.jsonl").write_text("not an index\n", encoding="utf-8")
        link = index.with_name(".index.link-test")
        os.symlink(bad.name, link)
        os.replace(link, index)
        deadline = time.monotonic() + 30  # the damaged version is tried in the background: wait for that state
        while "kept serving the previous index" not in caplog.text and time.monotonic() < deadline:
            assert "EGL_DEVICE_ID" in _answer(url)
            time.sleep(0.2)
        assert "kept serving the previous index" in caplog.text
        assert "EGL_DEVICE_ID" in _answer(url)
    finally:
        app.close()


def test_a_request_keeps_the_version_it_started_with_while_the_new_one_loads(tmp_path, fake_embedder):
    up = Upstream(tmp_path / "up", "widget")
    up.commit("faq", {"docs/faq.md": FAQ})
    index = tmp_path / "index"
    ingest_git(GitSpec.checked(up.url, None, ["docs"]), "widget", index=index, embedder="test:fake")
    live = LiveHelper(Helper.load(index, user_bank=False))
    first = live.current()
    assert live.wait_for_load() is first  # nothing new: the same Helper, no load
    up.commit("faq: EGL", {"docs/faq.md": FAQ + EGL})
    sync_index(index)
    assert live.current() is first  # the load has only started: this request keeps the old version
    newer = live.wait_for_load()
    assert newer is not first and QUESTION in {e.heading for e in newer.entries}
    assert QUESTION not in {e.heading for e in first.entries}
    assert Path(newer.index.folder).resolve() == Path(live_folder(index)).resolve()
