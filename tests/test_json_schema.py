"""docs/answer.schema.json: real `--json` output validates against it, and it is strict enough
that a field added to or removed from the output, at any level, fails until the schema says so."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from rlhelper.answer.extractive import citation_for
from rlhelper.api import Helper
from rlhelper.schema import Hit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from schema_doc import documented_schema  # noqa: E402

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "docs" / "answer.schema.json").read_text(encoding="utf-8"))
RLHELPER = str(Path(sys.executable).with_name("rlhelper"))
WAKE_UP = "RuntimeError: wake_up timed out after 60s"
OFF_TOPIC = "how do I bake sourdough bread"
RAYLET = "Failed to register worker to Raylet: Unable to register worker with raylet"


def validator(definition: str | None = None) -> Draft202012Validator:
    """The whole schema, or one of its $defs as the root (its references still resolve)."""
    schema = SCHEMA if definition is None else {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{definition}"}
    return Draft202012Validator(schema)


def problems(instance, definition: str | None = None) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(definition).iter_errors(instance)]


def run_json(*args: str, usem3_cache_dir: Path) -> str:
    env = {**os.environ, "RLHELPER_CACHE_DIR": str(usem3_cache_dir), "PYTHONPATH": ""}
    done = subprocess.run([RLHELPER, *args, "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_schema_is_a_valid_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("query", [WAKE_UP, OFF_TOPIC, "Traceback (most recent call last):\n" + "  x\n" * 50 + WAKE_UP])
@pytest.mark.parametrize("command", ["ask", "search"])
def test_ask_and_search_json_validate(seeds_index, usem3_cache_dir, command, query):
    out = json.loads(run_json(command, "--index", str(seeds_index), "-k", "3", query, usem3_cache_dir=usem3_cache_dir))
    assert problems(out) == []
    assert out["hits"] and (out["abstained"] or out["citations"])


def test_every_batch_line_validates_answers_and_errors_alike(seeds_index, usem3_cache_dir, tmp_path):
    batch = tmp_path / "queries.jsonl"
    batch.write_text(json.dumps({"id": "a", "query": WAKE_UP}) + "\n" + json.dumps({"nope": 1}) + "\n"
                     + json.dumps({"query": 7}) + "\n", encoding="utf-8")
    lines = [json.loads(x) for x in run_json("search", "--index", str(seeds_index), "--batch", str(batch),
                                             usem3_cache_dir=usem3_cache_dir).splitlines()]
    assert [("error" in x) for x in lines] == [False, True, True]
    for line in lines:
        assert problems(line, "batch_line") == [], line
    assert problems({**lines[0], "error": "both"}, "batch_line")  # an answer and an error at once
    assert problems({k: v for k, v in lines[1].items() if k != "line"}, "batch_line")


def test_every_entry_of_the_index_as_a_hit_and_a_citation_validates(full_index):
    helper = Helper.load(full_index, user_bank=False)
    assert any(e.also_at for e in helper.entries) and any(e.twins for e in helper.entries)
    for entry in helper.entries:
        hit = Hit(1, 0.5, entry, matched_question="how do I fix it?")
        assert problems(hit.to_dict(), "hit") == [], entry.id
        assert problems(citation_for(hit, 1).to_dict(), "citation") == [], entry.id


def _objects(answer: dict):
    """(label, object) for one object of each kind in an answer: the answer, a part, a citation,
    a hit, an also_at place and a twin."""
    yield "answer", answer
    yield "part", answer["parts"][0]
    yield "citation", answer["citations"][0]
    yield "hit", answer["hits"][0]
    yield "place", answer["citations"][0]["also_at"][0]
    yield "twin", answer["hits"][0]["twins"][0]


def test_a_field_added_or_removed_at_any_level_fails_validation(full_index):
    helper = Helper.load(full_index, user_bank=False)
    answer = helper.ask(RAYLET, collection="seeds").to_dict()
    twin_of = next(e for e in helper.entries if e.twins)
    answer["hits"][0]["twins"] = Hit(1, 0.5, twin_of).to_dict()["twins"]
    assert answer["parts"] and answer["citations"][0]["also_at"] and problems(answer) == []
    for label, _ in _objects(answer):
        grown = copy.deepcopy(answer)
        dict(_objects(grown))[label]["new_field"] = 1
        assert any("new_field" in p for p in problems(grown)), label
        for key in dict(_objects(answer))[label]:
            if (label, key) == ("place", "doc_title"):
                continue  # optional: an index built before it was added lacks it
            shrunk = copy.deepcopy(answer)
            del dict(_objects(shrunk))[label][key]
            assert any(f"'{key}' is a required property" in p for p in problems(shrunk)), (label, key)


def test_json_schema_md_lists_the_fields_the_schema_names():
    documented, defs = documented_schema(), SCHEMA["$defs"]
    assert documented["top"] == set(defs["answer_fields"]["properties"])
    assert documented["batch"] == set(defs["batch_line"]["properties"]) | {"error"}
    for field, definition in (("parts", "part"), ("citations", "citation"), ("hits", "hit"), ("also_at", "place"),
                              ("twins", "twin")):
        optional = documented.get(f"{field}_optional", set())  # documented as optional, and not required
        assert documented[field] | optional == set(defs[definition]["properties"]), field
        assert documented[field] == set(defs[definition]["required"]), field
    assert documented["also_at_optional"] == {"doc_title"}
    assert "answer.schema.json" in (Path(__file__).resolve().parent.parent / "docs" / "json-schema.md").read_text()
