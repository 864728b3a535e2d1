from rlhelper.answer.extractive import (
    WEAK_MATCH_NOTICE,
    build_answer,
    cited_hits,
    framework_notice,
    split_labelled_blocks,
)
from rlhelper.schema import Entry, Hit


def entry(eid, text, heading="Error: `wake_up timed out`", doc="000.txt"):
    return Entry(id=eid, collection="seeds", doc=doc, doc_title="Guide", framework="skyrl", lang="en",
                 breadcrumb=["Guide", "15. Engine Lifecycle Errors", heading.replace("`", "")],
                 heading=heading.replace("`", ""), anchor="x", line_start=10, line_end=20, text=text,
                 url="https://github.com/o/r/blob/main/f.md#x")


BODY = """### Error: `RuntimeError: wake_up timed out after Xs`

**Cause:** Engine took too long to reload weights.

**Solution:**
```yaml
generator:
  engine_init_kwargs:
    wake_up_timeout: 600
```
"""


def test_labelled_blocks_are_cut_verbatim_and_code_is_kept_whole():
    blocks = split_labelled_blocks(BODY)
    kinds = [k for k, _ in blocks]
    assert kinds == ["text", "cause", "fix"]
    assert blocks[1][1] == "Engine took too long to reload weights."
    assert "wake_up_timeout: 600\n```" in blocks[2][1]


def test_chinese_labels():
    blocks = split_labelled_blocks("**现象：** 卡住\n\n**原因：** 端口\n\n**修复：** 换端口")
    assert [k for k, _ in blocks] == ["symptom", "cause", "fix"]


def test_label_inside_code_fence_is_code():
    blocks = split_labelled_blocks("```\n**Cause:** not a label\n```")
    assert [k for k, _ in blocks] == ["text"]


def test_answer_cites_every_part_and_quotes_fix_verbatim():
    hits = [Hit(1, 0.03, entry("a", BODY)), Hit(2, 0.01, entry("b", "other", heading="Other"))]
    answer = build_answer("wake_up timed out", "wake_up timed out", hits, abstained=False)
    assert not answer.abstained
    assert [c.entry_id for c in answer.citations] == ["a"]  # b is far below the best score
    assert all(p.citation == 1 for p in answer.parts)
    assert "wake_up_timeout: 600" in answer.text and "[1]" in answer.text
    assert answer.to_dict()["citations"][0]["url"].endswith("#x")


def test_only_a_tie_is_cited_with_the_best_entry():
    b = entry("b", "**Fix:** do b", heading="B")
    tie = [Hit(1, 0.3000, entry("a", BODY)), Hit(2, 0.2990, b), Hit(3, 0.2985, entry("c", "c", heading="C"))]
    assert [h.entry.id for h in cited_hits(tie)] == ["a", "b"]  # at most two, however many tie
    runner_up = [Hit(1, 0.3000, entry("a", BODY)), Hit(2, 0.2850, b)]  # 5 % behind: related, not quoted
    assert [h.entry.id for h in cited_hits(runner_up)] == ["a"]


def test_abstention_has_no_citations_but_keeps_related_hits():
    hits = [Hit(1, 0.01, entry("a", BODY))]
    answer = build_answer("how to bake bread", "how to bake bread", hits, abstained=True)
    assert answer.abstained and not answer.citations and answer.hits == hits
    assert "No matching entry" in answer.text


def test_a_weak_answer_still_quotes_and_cites_but_says_it_is_weak():
    hits = [Hit(1, 0.03, entry("a", BODY))]
    plain = build_answer("wake_up timed out", "wake_up timed out", hits, abstained=False)
    weak = build_answer("wake_up timed out", "wake_up timed out", hits, abstained=False, weak=True,
                        notices=["Pasted log detected"])
    assert weak.weak_match and not plain.weak_match
    assert weak.text == plain.text and weak.citations == plain.citations
    assert weak.notices == ["Pasted log detected", WEAK_MATCH_NOTICE] and plain.notices == []
    assert weak.to_dict()["weak_match"] is True and plain.to_dict()["weak_match"] is False


def test_an_abstained_answer_is_never_a_weak_match():
    answer = build_answer("bread", "bread", [Hit(1, 0.01, entry("a", BODY))], abstained=True, weak=True)
    assert answer.abstained and not answer.weak_match and WEAK_MATCH_NOTICE not in answer.notices


def test_an_answer_from_another_framework_than_the_named_one_says_so():
    skyrl_entry = entry("a", BODY)  # framework skyrl
    notice = framework_notice({"verl": 0.8, "vllm": 0.8}, skyrl_entry, [], ["skyrl", "verl"])
    assert notice == ("Your query is about verl, but this entry is from SkyRL's docs: its settings and flags "
                      "may not apply to verl.")
    verl_entry = Entry(**{**entry("b", "**Fix:** lower gpu_memory_utilization", heading="OOM during rollout").to_dict(),
                          "framework": "verl"})
    hits = [Hit(1, 0.03, skyrl_entry), Hit(2, 0.02, verl_entry)]
    answer = build_answer("verl rollout oom", "verl rollout oom", hits, abstained=False, weak=True,
                          named_frameworks={"verl": 0.8}, indexed_frameworks=["skyrl", "verl"])
    assert answer.notices == [notice + " verl's closest entry is listed as related: “OOM during rollout”.",
                              WEAK_MATCH_NOTICE]


def test_no_framework_notice_when_it_is_not_a_mismatch():
    skyrl_entry = entry("a", BODY)
    indexed = ["skyrl", "verl"]
    assert framework_notice({}, skyrl_entry, [], indexed) is None  # nothing named
    assert framework_notice({"skyrl": 0.8}, skyrl_entry, [], indexed) is None  # the named one
    assert framework_notice({"sglang": 0.9}, skyrl_entry, [], indexed) is None  # an engine, not a framework
    assert framework_notice({"verl": 0.3}, skyrl_entry, [], indexed) is None  # a faint hint (a config key shape)
    assert framework_notice({"verl": 0.8, "slime": 0.6}, skyrl_entry, [], indexed) is None  # two named: a comparison
    custom = Entry(**{**skyrl_entry.to_dict(), "framework": "mydocs"})
    assert framework_notice({"verl": 0.8}, custom, [], indexed) is None  # a user's own collection: no framework
    abstained = build_answer("q verl", "q verl", [Hit(1, 0.03, skyrl_entry)], abstained=True,
                             named_frameworks={"verl": 0.8}, indexed_frameworks=indexed)
    assert abstained.notices == []  # nothing quoted, nothing to warn about


def test_the_framework_notice_says_when_the_index_has_none_of_its_docs():
    notice = framework_notice({"rlinf": 0.8}, entry("a", BODY), [], ["skyrl"])
    assert "this index holds no RLinf docs" in notice and "may not apply to RLinf" in notice


def test_an_faq_items_indented_answer_is_quoted_without_its_list_indent():
    # slime's qa.md: "3.  **Why OOM?**" with its answer indented under it; Markdown reads a
    # 4-space indent as a code block.
    item = "3.  **Why OOM?**\n\n    Lower `max_tokens_per_gpu`.\n\n    If it persists:\n\n        nested code\n"
    answer = build_answer("oom", "oom", [Hit(1, 0.03, entry("a", item, heading="Why OOM?"))], abstained=False)
    assert answer.parts[0].text == "Lower `max_tokens_per_gpu`.\n\nIf it persists:\n\n    nested code"
