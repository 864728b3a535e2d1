"""Shared test set-up: tests never touch the user's real home or the repo's index."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "ingest" / "seeds"
OFFICIAL = REPO / "ingest" / "official"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("RLHELPER_CONFIG", raising=False)
    monkeypatch.delenv("RLHELPER_INDEX_DIR", raising=False)
    return home
