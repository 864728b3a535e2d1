"""Noise added by code to the bank's questions (judge/noise.py), and the report-shaped training
questions read from train/judge/reports/ (judge/data.py)."""

from __future__ import annotations

import json
import random
import re

import pytest

from rlhelper.judge import data, noise

QUESTION = "vllm runs out of GPU memory while generating rollouts with a long max_response_length"
CHINESE = "训练时显存不足报错，生成阶段怎么调整显存占用比例"  # no spaces: cut by characters


@pytest.mark.parametrize("kind", [k for k in noise.KINDS if k != "truncate"])
def test_each_kind_keeps_the_question_and_adds_what_it_says(kind):
    rng = random.Random(3)
    for _ in range(20):
        text = noise.apply(kind, QUESTION, rng)
        assert text != QUESTION
        assert QUESTION in text or (kind == "prefix" and all(w in text for w in QUESTION.split()))
        lines = text.split("\n")
        if kind == "prefix":
            assert all(re.match(r"^(\(\w+ pid=\d+(, ip=[\d.]+)?\) |\[rank\d+\]: |\[default\d\]:|ERROR:|WARNING:|E\d{4} )", line)
                       for line in lines)
        if kind == "timestamp":
            assert re.match(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] |\d\d:\d\d:\d\d \| )", text)
        if kind == "env":
            assert re.search(r"torch|vllm|verl|sglang|ray|CUDA", text.replace(QUESTION, ""))
        if kind == "unrelated":
            assert 2 <= len(lines) <= 7
        if kind == "buried":
            assert 21 <= len(lines) <= 81
            at = next(i for i, line in enumerate(lines) if QUESTION in line)
            assert at >= (len(lines) - 1) // 2 - 1  # in the second half, where a log's error sits


def test_truncation_keeps_at_least_half_and_never_all():
    rng = random.Random(5)
    for text, units in ((QUESTION, str.split), (CHINESE, list)):  # words; a Chinese sentence's characters
        for _ in range(30):
            cut = noise.truncated(text, rng).rstrip(".… ")
            assert text.startswith(cut) and len(units(text)) // 2 <= len(units(cut)) < len(units(text))


def test_the_same_seed_makes_the_same_noise():
    first = [noise.noisy(QUESTION, random.Random(11)) for _ in range(3)]
    assert first[0] == first[1] == first[2]
    assert len({noise.noisy(QUESTION, random.Random(s))[0] for s in range(20)}) > 15
    kinds = {noise.noisy(QUESTION, random.Random(s))[1].split("+")[0] for s in range(200)}
    assert kinds == set(noise.KINDS)


def test_noisy_forms_the_normalizer_strips_back_to_the_question_are_kept():
    rng = random.Random(2)
    forms = data.noisy_forms(QUESTION, rng, n=3)
    assert forms and all(data.still_asks(QUESTION, data.judged_text(text)) for text, _ in forms)
    assert not data.still_asks(QUESTION, "NCCL INFO Bootstrap : Using eth0")


def test_reports_are_read_flat_and_a_broken_line_is_named(tmp_path):
    folder = tmp_path / "reports" / "seeds"
    folder.mkdir(parents=True)
    row = {"collection": "seeds", "doc": "a.md", "heading": "OOM", "entry_id": "abc",
           "reports": [{"text": "vllm OOM at step 3, 8x H100", "lang": "en", "shape": "issue"},
                       {"text": "显存不足怎么办", "lang": "zh", "shape": "chat"}]}
    (folder / "a.md.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    reports = data.read_reports(tmp_path / "reports")
    assert [(r["heading"], r["lang"], r["shape"]) for r in reports] == [("OOM", "en", "issue"), ("OOM", "zh", "chat")]
    (folder / "b.md.jsonl").write_text('{"collection": "seeds"}\n', encoding="utf-8")
    with pytest.raises(data.ConfigError, match=r"b\.md\.jsonl:1"):
        data.read_reports(tmp_path / "reports")
