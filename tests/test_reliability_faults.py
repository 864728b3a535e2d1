"""Faults during ingest: killed processes, two ingests at once, and index paths as users write them."""

from __future__ import annotations

import os
from pathlib import Path

from rlhelper.ingest import ingest
from rlhelper.store import Index


def write(folder: Path, name: str, heading: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"# {folder.name}\n\n## {heading}\n\nWhat to do about {heading}.\n", encoding="utf-8")
    return folder


def versions(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f".{path.name}.v-*"))


# --- index paths (a bug the corruption trials found: every ingest deleted the live version) ----


def test_an_index_named_by_a_relative_path_keeps_its_collections(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "a", "a.md", "Alpha stall")
    write(tmp_path / "b", "b.md", "Beta stall")
    path = Path("work/idx")
    ingest([Path("a")], index=path)
    live = os.readlink(path)
    again = ingest([Path("a")], index=path)
    assert again.skipped == 1 and not again.written and os.readlink(path) == live  # reused, not rebuilt
    ingest([Path("b")], index=path)
    assert Index.load(path).collections == ["a", "b"]  # the first collection survives the second
    assert versions(path) == [os.readlink(path)]


def test_an_index_reached_through_a_symlinked_folder_keeps_its_collections(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    path = tmp_path / "alias" / "idx"
    ingest([write(tmp_path / "a", "a.md", "Alpha stall")], index=path)
    ingest([write(tmp_path / "b", "b.md", "Beta stall")], index=path)
    assert Index.load(path).collections == ["a", "b"]
    assert versions(path) == [os.readlink(path)]
