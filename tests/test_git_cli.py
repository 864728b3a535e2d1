"""`rlhelper ingest --git`, `rlhelper sync` and `rlhelper ask` as a user runs them (subprocesses, the real
embedder), against upstreams made by the tests: an upstream commit that adds a section is answered right
after the sync, cited at the new commit; a sync killed midway leaves the previous index serving."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from clirun import cli_env, one_line_error, rlhelper
from git_upstream import GIT_ISOLATION, SmartHTTP, Upstream

from rlhelper.index.folders import live_folder
from rlhelper.measure.faults import rlhelper_command

GITHUB = "https://github.com/acme/widgetrl"
FAQ = """# Widgetrl FAQ

## Rollout hangs at startup

The rollout workers wait for the zorble service. Start it with `zorble serve` first.

## Loss is NaN after a few steps

Lower the learning rate to 1e-6 and enable gradient clipping (`--clip-grad 1.0`).
"""
GIZMO = """
## GizmoFluxError: flux capacitor desynchronised

The gizmo flux capacitor desynchronises when `gizmo.sync_every` is above 64. Set
`gizmo.sync_every=32` and restart the rollout workers.
"""


def _env(tmp_path, cache_dir, upstream=None):
    env = cli_env(tmp_path / "home", cache_dir, **GIT_ISOLATION)
    if upstream is not None:  # GITHUB is fetched from the local upstream (a mirror): web links, no network
        env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"url.{upstream.url}.insteadOf", GIT_CONFIG_VALUE_0=GITHUB)
    return env


def _ok(proc):
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


@pytest.mark.slow
def test_a_new_upstream_section_is_answered_right_after_sync_cited_at_the_new_commit(tmp_path, usem3_cache_dir):
    up = Upstream(tmp_path / "up", "widgetrl")
    first = up.commit("docs", {"docs/faq.md": FAQ, "src/widget.py": "x = 1\n"})
    env, index = _env(tmp_path, usem3_cache_dir, up), str(tmp_path / "index")
    ingested = _ok(rlhelper(["ingest", "--git", GITHUB, "--path", "docs", "--collection", "widgetrl", "--index", index],
                            env))
    assert f"git: {GITHUB} @ default branch (docs): commit {first[:12]}" in ingested.stderr
    assert "1 document indexed" in ingested.stdout

    second = up.commit("faq: gizmo flux", {"docs/faq.md": FAQ + GIZMO})
    synced = _ok(rlhelper(["sync", "--index", index], env))
    assert f"widgetrl: {GITHUB} @ default branch (docs): {first[:12]} -> {second[:12]}" in synced.stdout
    assert "widgetrl: 1 section added (“GizmoFluxError: flux capacitor desynchronised”)" in synced.stdout
    assert "1 section(s) embedded" in synced.stderr

    asked = _ok(rlhelper(["ask", "--json", "--index", index, "GizmoFluxError: flux capacitor desynchronised"], env))
    answer = json.loads(asked.stdout)
    cited = answer["citations"][0]
    assert cited["heading"] == "GizmoFluxError: flux capacitor desynchronised"
    assert cited["url"] == f"{GITHUB}/blob/{second}/docs/faq.md#gizmofluxerror-flux-capacitor-desynchronised"
    assert "gizmo.sync_every=32" in answer["answer"]

    again = _ok(rlhelper(["sync", "--json", "--index", index], env))
    result = json.loads(again.stdout)
    assert result["ok"] and not result["written"] and result["sources"][0]["status"] == "up to date"

    info = _ok(rlhelper(["info", "--index", index], env)).stdout
    assert f"from git {GITHUB} @ default branch (docs)" in info and f"commit {second[:12]}" in info


@pytest.mark.slow
def test_a_failed_sync_exits_1_with_what_to_run_and_json_says_so(tmp_path, usem3_cache_dir):
    up = Upstream(tmp_path / "up", "widgetrl")
    up.commit("docs", {"docs/faq.md": FAQ})
    env, index = _env(tmp_path, usem3_cache_dir), str(tmp_path / "index")
    _ok(rlhelper(["ingest", "--git", up.url, "--path", "docs", "--index", index], env))
    up.rename("docs", "handbook", "docs moved")
    failed = rlhelper(["sync", "--index", index], env)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "widgetrl: failed: docs no longer exists at" in failed.stdout
    assert f"rlhelper ingest --git {up.url} --path NEW/PATH --collection NAME" in failed.stdout
    as_json = rlhelper(["sync", "--json", "--index", index], env)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["ok"] is False


@pytest.mark.slow
def test_a_sync_killed_midway_leaves_the_previous_index_serving(tmp_path, usem3_cache_dir):
    up = Upstream(tmp_path / "up", "widgetrl")
    up.commit("docs", {"docs/faq.md": FAQ})
    env, index = _env(tmp_path, usem3_cache_dir), tmp_path / "index"
    with SmartHTTP(up.root) as http:
        _ok(rlhelper(["ingest", "--git", http.url(up), "--path", "docs", "--index", str(index)], env))
        before = live_folder(index)
        up.commit("faq: gizmo flux", {"docs/faq.md": FAQ + GIZMO})
        http.requests.clear()
        http.stall, http.stall_from = 60.0, 2  # ls-remote answers; the fetch hangs
        sync = subprocess.Popen(rlhelper_command("sync", "--index", str(index)), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(http.requests) < 3 and time.monotonic() < deadline and sync.poll() is None:
            time.sleep(0.05)
        assert len(http.requests) >= 3, (http.requests, sync.poll())
        sync.kill()  # mid-fetch, holding the index lock and the checkout's
        sync.wait(timeout=30)
        assert live_folder(index) == before
        asked = _ok(rlhelper(["ask", "--index", str(index), "rollout hangs at startup"], env))
        assert "zorble serve" in asked.stdout
        http.stall = 0.0
        synced = _ok(rlhelper(["sync", "--index", str(index)], env))
    assert "1 section added (“GizmoFluxError: flux capacitor desynchronised”)" in synced.stdout


@pytest.mark.parametrize(("args", "says"), [
    (["--ref", "main"], "--ref only applies with --git URL"),
    (["--path", "docs"], "--path only applies with --git URL"),
    (["--git", "file:///srv/x.git", "somefolder"], "--git reads a repository"),
])
def test_git_options_out_of_place_are_usage_errors(tmp_path, usem3_cache_dir, args, says):
    (tmp_path / "somefolder").mkdir()
    proc = rlhelper(["ingest", *args], _env(tmp_path, usem3_cache_dir), cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--git", "--upload-pack=touch /tmp/x"], "is not a repository URL"),
    (["--git", "file:///srv/x.git", "--ref", "--upload-pack=x"], "starts with '-'"),
    (["--git", "file:///srv/x.git", "--path", "-x"], "starts with '-'"),
    (["--git", "file:///srv/x.git", "--path", "../../etc"], "leaves the repository"),
    (["--git", "https://me:token@github.com/a/b"], "holds a password or token"),
])
def test_bad_git_values_are_one_line_errors_before_git_runs(tmp_path, usem3_cache_dir, args, says):
    env = _env(tmp_path, usem3_cache_dir)
    assert says in one_line_error(rlhelper(["ingest", *args, "--index", str(tmp_path / "index")], env))
    assert not (tmp_path / "home" / ".local" / "rlhelper" / "git").exists()


def test_sync_without_an_index_says_how_to_build_one(tmp_path, usem3_cache_dir):
    message = one_line_error(rlhelper(["sync", "--index", str(tmp_path / "none")], _env(tmp_path, usem3_cache_dir)))
    assert "No index at" in message and "rlhelper ingest --git URL --collection NAME" in message
