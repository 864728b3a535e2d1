"""`rlhelper serve --auth-file FILE` (issue 31, "what to build" 2): who may sign in to a team server.
The file's checks at start, the command that adds a user, and sign-in against a real server on
127.0.0.1 (Gradio's own login route, raw HTTP)."""

from __future__ import annotations

import os
import stat

import httpx
import pytest
from click.testing import CliRunner

from rlhelper.cli.main import main as cli
from rlhelper.errors import ConfigError
from rlhelper.web import auth


def add(path, name: str, password: str):
    return CliRunner().invoke(cli, ["auth", "add", str(path), name, "--password-stdin"], input=password + "\n")


def test_auth_add_writes_a_salted_hash_readable_by_the_owner_alone(tmp_path):
    users = tmp_path / "users"
    said = add(users, "alice", "correct horse")
    assert said.exit_code == 0 and "alice added to" in said.output
    assert add(users, "bob", "battery staple").exit_code == 0
    assert "has a new password" in add(users, "alice", "new horse").output
    assert stat.S_IMODE(users.stat().st_mode) == 0o600
    text = users.read_text()
    assert "horse" not in text and "staple" not in text
    read = auth.read_users(users)
    assert set(read) == {"alice", "bob"}
    assert auth.verify("new horse", read["alice"]) and not auth.verify("correct horse", read["alice"])
    assert read["alice"].split(":")[4] != read["bob"].split(":")[4]  # each its own salt


@pytest.mark.parametrize("content, mode, said", [
    ("alice:not-a-hash\n", 0o600, "users:1 is not a user line"),
    ("al ice:scrypt:16384:8:1:AAAA:AAAA\n", 0o600, "a name is"),
    ("# nobody\n", 0o600, "names no user"),
    ("alice:scrypt:16384:8:1:AAAA:AAAA\n", 0o644, "can be read by others (mode 644)"),
])
def test_a_bad_or_unsafe_auth_file_is_refused_in_one_line(tmp_path, content, mode, said):
    users = tmp_path / "users"
    users.write_text(content)
    os.chmod(users, mode)
    with pytest.raises(ConfigError, match=r"--auth-file") as err:
        auth.read_users(users)
    assert said in str(err.value) and "\n" not in str(err.value)
    run = CliRunner().invoke(cli, ["serve", "--auth-file", str(users), "--port", "1"])
    assert run.exit_code == 1 and said in run.output and "Traceback" not in run.output


def test_a_missing_auth_file_says_how_to_make_one(tmp_path):
    run = CliRunner().invoke(cli, ["serve", "--auth-file", str(tmp_path / "none")])
    assert run.exit_code == 1 and "rlhelper auth add" in run.output


def test_only_signed_in_users_reach_the_chat(seeds_index, tmp_path):
    from rlhelper.api import Helper
    from rlhelper.web import loadtest
    from rlhelper.web.server import start
    from rlhelper.web.trials import QUESTION

    users = tmp_path / "users"
    assert add(users, "alice", "correct horse").exit_code == 0
    helper = Helper.load(seeds_index, user_bank=tmp_path / "questions.jsonl")
    app, url = start(helper, port=loadtest.free_port(), feedback_db=tmp_path / "feedback.sqlite3", auth_file=users)
    try:
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as stranger:
            assert stranger.get("/config").status_code == 401
            assert stranger.post("/gradio_api/call/ask", json={"data": [QUESTION, [], "", "", ""]}).status_code == 401
            for name, password in (("alice", "wrong"), ("mallory", "correct horse")):
                assert stranger.post("/login", data={"username": name, "password": password}).status_code >= 400
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as alice:
            assert alice.post("/login", data={"username": "alice", "password": "correct horse"}).status_code == 200
            event_id = alice.post("/gradio_api/call/ask", json={"data": [QUESTION, [], "", "", ""]}).json()["event_id"]
            assert "rl-answer" in alice.get(f"/gradio_api/call/ask/{event_id}").text
        # Guessing is bounded per address: past the limit, even the right password waits a minute.
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as guesser:
            codes = [guesser.post("/login", data={"username": "alice", "password": f"guess{i}"}).status_code
                     for i in range(12)]
            assert 429 in codes
    finally:
        app.close()
