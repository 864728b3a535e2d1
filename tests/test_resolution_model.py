"""The learned resolution model (github/resolution_model.py): the shipped weights, a user's own file, a bad
file refused in one line, and ingest's analysis redone when the model changes."""

from __future__ import annotations

import json

import pytest
from github_fake import REPO

from rlhelper.errors import ConfigError
from rlhelper.ingest.github.entries import thread_sources
from rlhelper.ingest.github.resolution import resolve
from rlhelper.ingest.github.resolution_model import SHIPPED, resolution_model
from rlhelper.ingest.github.signals import FEATURES
from rlhelper.ingest.github.threads import ThreadStore


def thread(number: int = 1) -> dict:
    return {"repo": REPO, "number": number, "title": "Gizmo loader stops", "body": "It stops.", "state": "closed",
            "url": f"https://github.example/{REPO}/issues/{number}", "closed_at": "2025-03-01T00:00:00Z",
            "author": "reporter", "closed_by": None, "labels": [],
            "comments": [{"id": 5, "url": f"https://github.example/{REPO}/issues/{number}#issuecomment-5",
                          "author": "maint", "association": "MEMBER", "created_at": "2025-02-01T00:00:00Z",
                          "body": "Set `gizmo.prefetch=0` in the config."}]}


def model_file(tmp_path, bias: float, threshold: float = 0.5):
    path = tmp_path / f"model-{bias}.json"
    path.write_text(json.dumps({"format": 1, "features": list(FEATURES), "bias": bias,
                                "weights": dict.fromkeys(FEATURES, 0.0), "threshold": threshold}))
    return path


def test_the_shipped_model_weighs_every_signal_and_says_how_it_was_fitted():
    data = json.loads(SHIPPED.read_text())
    assert data["features"] == list(FEATURES) and set(data["weights"]) == set(FEATURES)
    assert data["command"].startswith("python train/resolution/fit.py") and len(data["data"]) == 16
    assert 0 < data["threshold"] < 1 and "out of fold" in data["dev_figures"]


def test_a_users_own_model_decides_and_the_analysis_is_redone_when_it_changes(tmp_path, monkeypatch):
    store = ThreadStore(REPO, tmp_path / "store")
    store.append([thread(1)])
    monkeypatch.setenv("RLHELPER_RESOLUTION_FILE", str(model_file(tmp_path, -10.0)))
    assert not resolve(thread(1)).resolved and thread_sources(store, REPO).docs == []
    monkeypatch.setenv("RLHELPER_RESOLUTION_FILE", str(model_file(tmp_path, 10.0)))
    # The store is unchanged, but its cached analysis was the other model's: it is redone.
    assert resolve(thread(1)).resolved and [d.doc for d in thread_sources(store, REPO).docs] == ["issues/1"]


@pytest.mark.parametrize("content", ["not json", json.dumps({"format": 1, "bias": 0, "threshold": 0.5,
                                                             "weights": {"maintainer": 1.0}}),
                                     json.dumps({"format": 9})])
def test_a_model_file_that_is_not_one_is_refused_in_one_line(tmp_path, monkeypatch, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    monkeypatch.setenv("RLHELPER_RESOLUTION_FILE", str(bad))
    with pytest.raises(ConfigError, match="is not a resolution model.*train/resolution/fit.py"):
        resolution_model()
    monkeypatch.setenv("RLHELPER_RESOLUTION_FILE", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="no resolution model at"):
        resolution_model()


def test_the_shipped_model_was_fitted_on_the_dev_split_as_it_is_now_and_quotes_no_labelled_notice():
    """The weights say what they were fitted on: a change to the corpus or to a dev label without a refit
    (`python train/resolution/fit.py`) fails here. On those dev threads, no comment a reader labelled as a
    cleanup notice is quoted, and every triage comment labelled as carrying advice is."""
    from rlhelper import config
    from rlhelper.ingest.github.entries import thread_entries
    from rlhelper.measure.resolutioneval import data_hash, labelled_threads

    folder = config.REPO_ROOT / "eval" / "threads-real"
    threads = labelled_threads(folder, split="dev")
    assert json.loads(SHIPPED.read_text())["data"] == data_hash(folder, threads)
    notices = advice = 0
    for t in threads:
        found = resolve(t.thread, t.notices)
        quoted = {f.comment.get("url") for f in found.fixes if f.comment}
        notices += len(quoted & set(t.label["boilerplate"]))
        advice += len(set(t.label["triage_advice"]) - quoted)
        if found.resolved:  # the entry builds, and quotes nothing it should not
            [entry], _ = thread_entries(json.dumps({"thread": t.thread, "notices": sorted(t.notices)}),
                                        collection=f"github:{t.repo}", doc=f"issues/{t.number}", meta={"repo": t.repo})
            assert not any(url in entry.text for url in t.label["boilerplate"])
    assert notices == 0 and advice == 0
