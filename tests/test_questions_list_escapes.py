"""`rlhelper questions list` on a real pty (issue 31, point 7): imported records are anyone's words,
so they reach the terminal as `ask` prints documents: no title change (OSC 0), no clear screen
(CSI 2J), no hyperlink (OSC 8), no clipboard write (OSC 52), no bidi override."""

from __future__ import annotations

import json

from clirun import cli_env

from rlhelper.measure.clikit import TERMINAL_CONTROLS, acted_on, run_in_pty

ESCAPES = "\x1b]0;owned title\x07\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\x1b]52;c;ZXZpbA==\x07\u202e\x9b2J"


def test_questions_list_sends_no_terminal_control(tmp_path):
    env = cli_env(tmp_path / "home", tmp_path / "cache", RLHELPER_DATA_DIR=str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "questions.jsonl").write_text(json.dumps({
        "text": f"why rewards {ESCAPES}", "entry_id": f"x{ESCAPES}", "collection": f"c{ESCAPES}",
        "doc": f"d{ESCAPES}.md", "heading": f"h{ESCAPES}", "vote": 1, "time": "2026\x1b]0;x\x07\x9b2J",
        "source": "import"}) + "\n", encoding="utf-8")
    code, screen = run_in_pty(["questions", "list"], env)
    assert code == 0 and "owned title" in screen and "rewards" in screen
    assert acted_on(screen) == [], screen

    code, screen = run_in_pty(["questions", "list", "--json"], env)
    assert code == 0 and acted_on(screen) == [], screen
    [line] = [line for line in screen.splitlines() if line.startswith("{")]
    assert json.loads(line)["text"] == f"why rewards {ESCAPES}"  # escaped, not lost
    assert not TERMINAL_CONTROLS.search(line)
