"""Where a thread's fix is (github/resolution.py), which comments are notices (github/boilerplate.py),
and what of a body reaches the Symptom and the signature (github/text.py). Every thread here is
written for these tests: an invented library (widgetrl) and invented accounts."""

from __future__ import annotations

import pytest
from github_fake import REPO

from rlhelper.ingest.github.boilerplate import Notices, is_notice_text
from rlhelper.ingest.github.entries import problem_lines, thread_sources
from rlhelper.ingest.github.resolution import resolve, thread_features
from rlhelper.ingest.github.text import block_kind, holds_instructions, plain, split_body


def comment(n: int, author: str, body: str, association: str = "NONE", day: str = "2025-02-10", up: int = 0) -> dict:
    return {"id": n, "url": f"https://github.example/{REPO}/issues/1#issuecomment-{n}", "author": author,
            "association": association, "created_at": f"{day}T00:00:00Z", "body": body,
            "reactions": {"up": up, "down": 0}}


def thread(number: int, comments=(), body: str = "The gizmo loader stops.", title: str = "Gizmo loader stops",
           **fields) -> dict:
    return {"repo": REPO, "number": number, "title": title, "body": body,
            "url": f"https://github.example/{REPO}/issues/{number}", "state": "closed", "state_reason": "completed",
            "labels": [], "closed_at": "2025-03-01T00:00:00Z", "author": f"reporter{number}",
            "comments": list(comments), "closed_by": None, **fields}


def entries_of(threads: dict, **options) -> dict:
    out = {}
    for doc in thread_sources(threads, REPO, **options).docs:
        [entry], _ = doc.build(doc.read(), collection=doc.collection, doc=doc.doc, meta=doc.meta)
        out[int(doc.doc.split("/")[1])] = entry
    return out


def triage_notice(number: int, since: str, chinese: bool = True) -> str:
    """A triage account's closing notice, written per issue as such accounts do: its dates, its evidence."""
    text = (f"Hello @reporter{number}! Tidying the tracker: the last activity here was on {since}, "
            f"{number % 5 + 2} months ago, and the thread has no linked pull request or follow-up. "
            "In line with our triage policy this one is being closed for now; if it still happens on the "
            "latest release, a new comment with fresh logs is welcome and we will look again.")
    if chinese:
        text += f"\n\n你好！此 issue 自 {since} 起没有新的进展，我们先关闭它；如果问题仍然存在，欢迎附上新的日志后重新打开。"
    return text


# --- notices ------------------------------------------------------------------------------------------


def test_a_triage_accounts_per_issue_notices_are_recognised_across_the_repository():
    """No two notices are byte-identical and the account is an ordinary MEMBER login, not a bot."""
    threads = {n: thread(n, [comment(n, "tidy-up", triage_notice(n, f"2024-0{n}-1{n}"), "MEMBER")]) for n in range(1, 5)}
    found = Notices()
    for t in threads.values():
        found.add_thread(t)
    assert found.flagged() == {(n, 0) for n in range(1, 5)}
    assert entries_of(threads) == {}  # a thread whose only reply is a notice is not resolved
    kept = entries_of(threads, include_unresolved=True)
    assert all("tidy-up" not in e.text and "No fix is recorded" in e.text for e in kept.values())


def test_the_same_fix_pasted_on_many_threads_stays_a_fix():
    fix = "This comes from the old wheel. Run `pip install -U widgetrl==0.9.1` and it goes away."
    threads = {n: thread(n, [comment(n, "maint", fix + f" (seen on {n} nodes)", "MEMBER")]) for n in range(1, 5)}
    found = Notices()
    for t in threads.values():
        found.add_thread(t)
    assert found.flagged() == set()
    assert sorted(entries_of(threads)) == [1, 2, 3, 4]


@pytest.mark.parametrize(("text", "notice"), [
    ("This issue is stale because it has had no activity for 60 days. It will be closed in 7 days.", True),
    ("Closing due to inactivity. Feel free to reopen if you still see it.", True),
    ("该 issue 长时间没有活动，自动关闭。如有需要请重新打开。", True),
    ("The loader keeps a stale cache; clearing it fixed the hang for me.", False),  # one word, a diagnosis
    ("Closing this: the fix is `gizmo.cache=off`, released in 0.9.1.", False),  # one phrase, and an instruction
    ("No activity since 2024-05-01; closing per the stale policy, reopen if needed. Asked for: `pip list`.", True),
])
def test_the_policy_vocabulary_flags_a_notice_without_an_instruction(text, notice):
    assert is_notice_text(text) is notice


# --- where the fix is ---------------------------------------------------------------------------------


def test_another_users_fix_confirmed_by_the_reporter_is_quoted_as_theirs():
    t = thread(1, [comment(1, "passerby", "Had this too: setting `NCCL_P2P_DISABLE=1` made it go away."),
                   comment(2, "reporter1", "Thanks, that works now!")])
    [fix] = resolve(t).fixes
    assert fix.role == "other" and fix.confirmed
    assert "**Fix from another user:** [@passerby, 2025-02-10]" in entries_of({1: t})[1].text
    assert "confirmed by the reporter" in entries_of({1: t})[1].text


def test_the_reporters_own_solution_is_found_and_a_question_back_is_not_a_fix():
    t = thread(1, [comment(1, "maint", "Could you share the full log?", "MEMBER"),
                   comment(2, "reporter1", "Found it: I solved it by lowering `rollout.mem_fraction=0.4`; "
                                           "the default left no room for the optimizer.")])
    [fix] = resolve(t).fixes
    assert fix.role == "reporter" and not fix.confirmed
    text = entries_of({1: t})[1].text
    assert "**Reporter's fix:**" in text and "full log" not in text


@pytest.mark.parametrize("chatter", ["+1", "Same here", "any update?", "同样的问题", "我也遇到了"])
def test_me_too_is_never_a_fix_even_from_a_maintainer(chatter):
    assert resolve(thread(1, [comment(1, "maint", chatter, "MEMBER")])).fixes == []


def test_a_short_reply_is_quoted_with_the_question_it_answers():
    t = thread(1, [comment(1, "reporter1", "Should I pass the dtype on the command line instead of the config?"),
                   comment(2, "maint", "Yes, simply `--dtype fp16` there.", "MEMBER")])
    text = entries_of({1: t})[1].text
    assert "In answer to [@reporter1, 2025-02-10]" in text
    assert "“Should I pass the dtype on the command line instead of the config?”" in text
    assert text.index("In answer to") < text.index("> Yes, simply")


def test_a_workaround_in_the_body_is_quoted_once_as_the_reports_own():
    body = ("The gizmo loader stops at step 3.\n\nUpdate: solved by setting `gizmo.prefetch=0`, the prefetcher "
            "raced with the shard sync.")
    e = entries_of({1: thread(1, body=body)})[1]
    assert "**Workaround in the report:**" in e.text and e.text.count("gizmo.prefetch=0") == 1


def test_a_duplicate_names_its_original_and_joins_its_entry():
    original = thread(1, [comment(1, "maint", "Set `gizmo.prefetch=0`.", "MEMBER")])
    duplicate = thread(2, [comment(2, "maint", "Duplicate of #1", "MEMBER")], title="Loader freezes right after warmup")
    assert resolve(duplicate).duplicate_of == 1
    found = entries_of({1: original, 2: duplicate})
    assert "**Also reported as:** [#2: Loader freezes right after warmup]" in found[1].text


def test_a_closing_pull_request_is_quoted_with_its_description():
    t = thread(1, closed_by={"ref": "#12", "url": f"https://github.example/{REPO}/pull/12",
                             "title": "Retry the shard sync", "body": "<!-- template -->\n## Summary\n"
                             "Retries a failed shard sync three times before giving up."})
    text = entries_of({1: t})[1].text
    assert "**Fixed by pull request:** [#12: Retry the shard sync]" in text
    assert "> Retries a failed shard sync three times before giving up." in text and "Summary" not in text


# --- the problem's text -------------------------------------------------------------------------------

SCRIPT_BODY = """<img width="800" alt="screenshot" src="https://github.example/user-attachments/assets/abc">

# Summary
The run stops during the first rollout.

### Describe the bug
![loss curve](https://github.example/user-images/loss.png)

```bash
#!/bin/bash
set -x
export WIDGET_HOME=/data/widget
python3 -m widgetrl.trainer.main \\
    data.train_files=/data/train.parquet \\
    trainer.n_gpus=8 \\
    actor.lr=1e-6 \\
    rollout.engine=gizmo
```

```
Traceback (most recent call last):
  File "/opt/widgetrl/rollout/engine.py", line 41, in step
    raise GizmoStallError("rollout stalled after 300 s")
widgetrl.rollout.GizmoStallError: rollout stalled after 300 s
```

<details><summary>Environment</summary>

```
Python version: 3.11.7
widgetrl==0.9.0
torch==2.4.0
CUDA version: 12.1
```
</details>
"""


def test_html_images_headings_scripts_and_env_dumps_stay_out_of_the_symptom_and_signature():
    text = "\n".join(problem_lines(thread(1, body=SCRIPT_BODY)))
    assert "The run stops during the first rollout." in text
    assert "GizmoStallError: rollout stalled after 300 s" in text
    for left_out in ("<img", "screenshot", "loss.png", "# Summary", "Describe the bug", "data.train_files",
                     "WIDGET_HOME", "torch==2.4.0", "Python version"):
        assert left_out not in text, left_out


def test_a_long_script_alone_is_not_taken_for_an_error_signature():
    script = "```\n" + "\n".join(f"    trainer.option_{i}=value_{i} \\" for i in range(45)) + "\n```"
    text = "\n".join(problem_lines(thread(1, body="My launch command hangs.\n\n" + script)))
    assert "option_" not in text and "My launch command hangs." in text


@pytest.mark.parametrize(("block", "kind"), [
    ('Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad', "log"),
    ("export A=1\npython3 -m widgetrl.main \\\n  trainer.n=2", "script"),
    ("Python version: 3.11\nwidgetrl==0.9.0\nCUDA version: 12.1", "env"),
    ("def f(x):\n    return x + 1", "code"),
])
def test_pasted_blocks_are_told_apart(block, kind):
    assert block_kind(block) == kind


def test_a_heading_that_names_the_error_keeps_its_words():
    assert plain("## RuntimeError: shard checksum mismatch\ntext") == "RuntimeError: shard checksum mismatch\ntext"
    assert plain("```bash\n# a comment in a script\n```") == "```bash\n# a comment in a script\n```"


@pytest.mark.parametrize(("text", "holds"), [
    ("Set `actor.lr=1e-6` in the config.", True),
    ("Run pip install widgetrl==0.9.1", True),
    ("Pass --no-prefetch to the launcher.", True),
    ("```\nexport GIZMO_SAFE=1\n```", True),
    ("```\nwidgetrl.io.GizmoStallError: rollout stalled\n```", False),  # the error quoted back
    ("Thanks, I will try tomorrow.", False),
])
def test_instructions_are_code_config_or_commands(text, holds):
    assert holds_instructions(text) is holds


def test_the_language_is_the_problems_not_the_threads():
    notice_en_zh = comment(1, "maint", "Fixed by `gizmo.cache=off`.\n\n已通过设置 gizmo.cache=off 解决，谢谢反馈。", "MEMBER")
    english = entries_of({1: thread(1, [notice_en_zh])})[1]
    assert english.lang == "en"
    chinese = entries_of({1: thread(1, [comment(1, "maint", "Use `gizmo.cache=off`.", "MEMBER")],
                                    body="训练在第一次 rollout 时卡住，日志里没有报错。", title="rollout 卡住")})[1]
    assert chinese.lang == "zh"


def test_split_body_keeps_details_blocks_apart_from_the_prose():
    body = split_body("Intro line.\n<details>\n<summary>log</summary>\n\nValueError: bad shard\n</details>\nAfter.")
    assert body.prose.split() == ["Intro", "line.", "After."] and [b.kind for b in body.blocks] == ["log"]


def test_an_echo_that_quotes_a_config_key_in_its_evidence_is_still_a_notice_when_it_closes_a_long_silence():
    """Notices vary (templates, two languages, evidence lists): an account's comments on three other threads
    at a Jaccard of about 0.3 are an echo, and an echo with an instruction is a notice at a cleanup's timing."""
    def notice(n: int, evidence: str) -> str:
        return (f"Hello @reporter{n}, tidying up old reports; this one is being closed now. Last activity: "
                f"2025-0{n}-0{n} ({n * 30} days ago). Checked before closing: {evidence}. Nobody could reproduce "
                "it on the current release. Thanks for the report.")
    evidence = ["no logs were attached", "`gizmo.cache` was never set", "the reporter did not answer",
                "the config used `trainer.n=4`"]
    threads = {}
    for n in range(1, 5):
        question = comment(10 * n, f"reporter{n}", "Any idea?", day="2025-01-01")
        closing = {**comment(10 * n + 1, "tidy-up", notice(n, evidence[n - 1]), "MEMBER"),
                   "created_at": "2025-03-01T00:00:00Z"}
        threads[n] = thread(n, [question, closing])
    found = Notices()
    for t in threads.values():
        found.add_thread(t)
    assert {(n, 1) for n in range(1, 5)} <= found.flagged()
    assert entries_of(threads) == {}


def test_an_app_account_is_no_ones_fix_whatever_it_is_called():
    from rlhelper.ingest.github.shapes import from_api_comment, from_gh_issue

    api = from_api_comment({"id": 1, "body": "Try `gizmo.cache=off`.", "user": {"login": "helper", "type": "Bot"},
                            "author_association": "NONE", "html_url": "", "created_at": ""})
    gh = from_gh_issue(REPO, {"number": 2, "url": "", "comments": [
        {"body": "Try `gizmo.cache=off`.", "author": {"login": "helper", "is_bot": True}}]})["comments"][0]
    assert api["bot"] and gh["bot"]
    assert resolve(thread(1, [api])).fixes == [] and resolve(thread(2, [gh])).fixes == []


# --- what a comment is: the signals the learned model weighs (github/signals.py) -----------------------


def signals(comments, **fields) -> list[dict]:
    return thread_features(thread(1, comments, **fields))[1]


@pytest.mark.parametrize(("reply", "approved", "confirmed"), [
    ("解决了，谢谢！", 1.0, 1.0), ("可以了", 1.0, 1.0), ("Solved, thank you.", 1.0, 1.0), ("Thanks a lot!", 1.0, 0.0),
    ("Still the same error with one worker.", 0.0, 0.0)])
def test_the_reporters_word_on_an_answer_is_read_in_either_language(reply, approved, confirmed):
    rows = signals([comment(1, "passerby", "Try `gizmo.workers=1`."), comment(2, "reporter1", reply)])
    assert (rows[0]["approved"], rows[0]["confirmed"]) == (approved, confirmed)
    assert rows[0]["denied"] == (1.0 if reply.startswith("Still") else 0.0)


def test_the_reporter_repeating_the_suggested_flag_confirms_it_and_adding_their_own_is_their_fix():
    suggestion = comment(1, "maint", "Pin the runtime: pass `--gizmo-version 2.5.1` to the installer.", "MEMBER")
    rows = signals([suggestion, comment(2, "reporter1", "--gizmo-version 2.5.1 did it, thanks.")])
    assert rows[0]["confirmed"] and rows[1]["repeats_earlier"] and not rows[1]["self_solved"]
    diagnosis = comment(1, "maint", "Run `gizmo status` on the head node: does it list 16 workers?", "MEMBER")
    own = comment(2, "reporter1", "`gizmo status` listed 8: the worker joined an old cluster. Setting "
                                  "`gizmo.head_address=10.0.0.2` fixed it, it runs now.")
    rows = signals([diagnosis, own])
    assert rows[1]["self_solved"] and not rows[1]["repeats_earlier"] and rows[1]["reporter"]
    assert [f.role for f in resolve(thread(1, [diagnosis, own])).fixes] == ["reporter"]


def test_links_pointers_reactions_and_place_are_read():
    rows = signals([comment(1, "maint", "See https://widgetrl.readthedocs.io/en/latest/faq.html#loader", "MEMBER", up=3),
                    comment(2, "passerby", "Fixed by #41, closing.", day="2025-04-01")])
    assert rows[0]["doc_link"] and rows[0]["pointer"] and rows[0]["approving"] > 0 and rows[0]["first_reply"]
    assert rows[1]["pr_link"] and rows[1]["issue_link"] and rows[1]["after_close"] and rows[1]["last_comment"]
    assert signals([comment(1, "maint", "Looking into it.", "MEMBER")], state="open")[0]["thread_open"]


@pytest.mark.parametrize("ask", ["请提供 torch 与 gizmo 的版本，以及第一步的 `rollout/probs_diff_mean` 数值。",
                                 "Which version do you run, and is `gizmo.prefetch` enabled?",
                                 "Could you share the full log?"])
def test_a_comment_that_only_asks_is_no_fix_even_when_it_names_code(ask):
    assert signals([comment(1, "maint", ask, "MEMBER")])[0]["only_asks"]
    for state in ("closed", "open"):
        assert resolve(thread(1, [comment(1, "maint", ask, "MEMBER")], state=state)).fixes == []


# --- the learned decision, on what a reader of a tracker would not doubt ---------------------------------


@pytest.mark.parametrize("state", ["closed", "open"])
def test_a_maintainers_command_or_pointer_answers_in_an_open_thread_as_in_a_closed_one(state):
    for body in ("Set `gizmo.prefetch=0` in the config.", "See https://widgetrl.readthedocs.io/en/latest/faq.html#loader"):
        [fix] = resolve(thread(1, [comment(1, "maint", body, "MEMBER")], state=state)).fixes
        assert fix.role == "maintainer" and resolve(thread(1, [comment(1, "maint", body, "MEMBER")], state=state)).resolved


@pytest.mark.parametrize("state", ["closed", "open"])
def test_a_question_back_or_a_me_too_leaves_a_thread_without_an_answer(state):
    for body in ("Any update on this?", "Same here with 4 GPUs."):
        assert not resolve(thread(1, [comment(1, "passerby", body)], state=state)).resolved
