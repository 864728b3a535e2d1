"""eval/typos.jsonl: seeds.jsonl's English questions with typos, as eval/make_typos.py writes them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlhelper.search.spelling import _one_edit

EVAL = Path(__file__).resolve().parent.parent / "eval"


@pytest.fixture(scope="module")
def make_typos(eval_script):
    return eval_script("make_typos")


def test_the_committed_set_is_what_the_script_writes(make_typos):
    rows = make_typos.typo_items((EVAL / "seeds.jsonl").read_text(encoding="utf-8").splitlines())
    committed = [json.loads(line) for line in (EVAL / "typos.jsonl").read_text(encoding="utf-8").splitlines()]
    assert committed == rows and len(rows) > 200


def test_each_item_is_its_source_with_one_or_two_single_edit_typos():
    sources = {json.loads(line)["id"]: json.loads(line) for line in (EVAL / "seeds.jsonl").open(encoding="utf-8")}
    for line in (EVAL / "typos.jsonl").open(encoding="utf-8"):
        item = json.loads(line)
        source = sources[item["id"].removesuffix("-typo")]
        assert {k: v for k, v in item.items() if k not in ("id", "query")} == \
            {k: v for k, v in source.items() if k not in ("id", "query")}
        typed, clean = re.split(r"(\W+)", item["query"]), re.split(r"(\W+)", source["query"])
        assert len(typed) == len(clean), item["id"]
        changed = [(a, b) for a, b in zip(clean, typed, strict=True) if a != b]
        assert 1 <= len(changed) <= 2, item["id"]
        for word, typo in changed:
            assert typo[0] == word[0] and _one_edit(word.lower(), typo.lower()), (item["id"], word, typo)


def test_misspell_makes_exactly_one_edit_after_the_first_letter(make_typos):
    for seed in range(0, 200 * 7919, 7919):
        for word in ("rollout", "memory", "SGLang", "timeout", "weights", "oom"):
            typo = make_typos.misspell(word, seed)
            assert typo != word and typo[0] == word[0] and _one_edit(word.lower(), typo.lower()), (word, seed)
