"""The blind sets on the default corpus, eval/official.jsonl (the official pages) and eval/issues.jsonl
(problems reported in the frameworks' GitHub issues): valid, split by their rule, and every expected
section is one the default corpus's index holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlhelper.api import Helper
from rlhelper.measure import harness, sets

EVAL = Path(__file__).resolve().parent.parent / "eval"
SETS = ["official", "issues"]


@pytest.mark.parametrize("name", SETS)
def test_the_set_is_valid_and_split_by_section(capsys, eval_script, name):
    module = eval_script("split_set")
    spec = module.SETS[name]
    assert module.check(module.load(spec.path), spec) == 0, capsys.readouterr().out
    items = sets.load_eval_set(spec.path)
    side_of = {}
    for item in items:
        if item.expected:  # every item of one section on one side: nothing tuned on dev leaks into test
            first = item.expected[0]
            assert side_of.setdefault((first["doc"], first["heading"]), item.split) == item.split, item.id
    assert {i.split for i in items} == {"dev", "test"}


@pytest.mark.parametrize("name", SETS)
def test_every_expected_section_is_in_the_index(full_index, name):
    items = sets.load_eval_set(EVAL / f"{name}.jsonl")
    _, warnings = harness.evaluate_helper(Helper.load(full_index), items, modes=("lexical",))
    assert warnings == []
