"""`brain chat` in a terminal is a REPL people know: the real console command in a
pseudo-terminal (pexpect), keys as a person types them. Arrow keys edit the line, Up recalls a
line of an earlier session, Ctrl-C clears the line and keeps the session, Ctrl-C twice at
"Resume which?" exits 130 without a traceback, Ctrl-D leaves; `undo`, `help` and the chat's
/commands are carried out, and lone words such as "clear" are asked about, never filed.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pexpect
import pytest

from tests.brain_cli import REPO, run_process
from tests.databases import database_env

LEFT, UP, CTRL_C, CTRL_D = "\x1b[D", "\x1b[A", "\x03", "\x04"
TIMEOUT = 90  # seconds for any one expected output: a deadline, not a guess of the work
REPLY = "Filed to|Saved to inbox|Added to|Already in your notes"  # (a repeat within 10 minutes)


def _env(tmp_path: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_"))
            and k != "DATABASE_URL"}
    return {**keep, **database_env(tmp_path), "BRAIN_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": str(REPO), "TERM": "xterm"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return _env(tmp_path)


def chat(tmp_path: Path, env: dict[str, str], *args: str) -> pexpect.spawn:
    brain = Path(sys.executable).with_name("brain")
    child = pexpect.spawn(str(brain), ["chat", *args], env=env, cwd=str(tmp_path),
                          encoding="utf-8", timeout=TIMEOUT, dimensions=(24, 200))
    return child


def leave(child: pexpect.spawn) -> int:
    child.expect_exact("> ")
    child.send(CTRL_D)
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus is None
    return int(child.exitstatus)


def said(tmp_path: Path, env: dict[str, str]) -> list[str]:
    """What the person sent, oldest first, as the turns recorded it."""
    logged = run_process(tmp_path, "log", "--limit", "50", "--json", env=env)
    return [t["user_text"] for t in reversed(json.loads(logged.out))]


def notes(tmp_path: Path) -> list[str]:
    vault = tmp_path / "data" / "vaults" / "local"
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))


def test_arrow_keys_edit_the_line(tmp_path: Path, env: dict[str, str]) -> None:
    child = chat(tmp_path, env, "--new")
    child.expect_exact("> ")
    child.send("Renew abc" + LEFT + LEFT + "X\r")  # the keys: now an edit
    child.expect(REPLY)
    assert leave(child) == 0
    assert said(tmp_path, env) == ["Renew aXbc"]


def test_up_arrow_recalls_a_line_of_an_earlier_session(
        tmp_path: Path, env: dict[str, str]) -> None:
    first = chat(tmp_path, env, "--new")
    first.expect_exact("> ")
    first.send("Call Sara about the Q3 budget\r")
    first.expect(REPLY)
    assert leave(first) == 0

    again = chat(tmp_path, env, "--new")
    again.expect_exact("> ")
    again.send(UP + "\r")
    again.expect(REPLY)
    assert leave(again) == 0
    assert said(tmp_path, env) == ["Call Sara about the Q3 budget"] * 2
    kept = tmp_path / "data" / "chat-history" / "local.txt"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # what was typed stays private


def test_ctrl_c_clears_the_line_and_keeps_the_session(
        tmp_path: Path, env: dict[str, str]) -> None:
    child = chat(tmp_path, env, "--new")
    child.expect_exact("> ")
    child.send("Half a thought I drop")
    child.send(CTRL_C)
    child.expect_exact("> ")  # at once, not after Enter
    child.send("Buy milk tomorrow\r")
    child.expect(REPLY)
    assert leave(child) == 0
    assert said(tmp_path, env) == ["Buy milk tomorrow"]


def test_ctrl_c_twice_at_resume_which_exits_130_without_a_traceback(
        tmp_path: Path, env: dict[str, str]) -> None:
    piped = run_process(tmp_path, "chat", "--new", stdin="Call Sara about the budget\n",
                        env=env)
    assert piped.code == 0, piped.err
    child = chat(tmp_path, env)
    child.expect_exact("Resume which?")
    child.send(CTRL_C + CTRL_C)
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus is None and child.exitstatus == 130
    assert "Traceback" not in (child.before or "")


def test_ctrl_d_at_resume_which_and_at_the_prompt_leaves(
        tmp_path: Path, env: dict[str, str]) -> None:
    run_process(tmp_path, "chat", "--new", stdin="Call Sara about the budget\n", env=env)
    child = chat(tmp_path, env)
    child.expect_exact("Resume which?")
    child.send(CTRL_D)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert leave(chat(tmp_path, env, "--new")) == 0


def test_undo_help_and_lone_words_are_carried_out_never_filed(
        tmp_path: Path, env: dict[str, str]) -> None:
    child = chat(tmp_path, env, "--new")
    child.expect_exact("> ")
    child.send("Renew the passport before June\r")
    child.expect(REPLY)
    (filed,) = notes(tmp_path)
    child.expect_exact("> ")
    child.send("undo\r")
    child.expect_exact("Undone: create: ")
    child.expect_exact(filed)
    child.expect_exact("> ")
    child.send("help\r")
    child.expect_exact("/undo")
    child.expect_exact("Ctrl-C clears the line")
    for word in ("clear", "delete"):
        child.expect_exact("> ")
        child.send(word + "\r")
        child.expect_exact("Did you mean a command?")
    child.expect_exact("> ")
    child.send("/quit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert notes(tmp_path) == []
    assert said(tmp_path, env) == ["Renew the passport before June"]


def test_piped_commands_are_carried_out_and_plain_lines_filed_as_before(
        tmp_path: Path, env: dict[str, str]) -> None:
    piped = run_process(tmp_path, "chat", "--new", env=env,
                        stdin="Call Sara about the budget\nundo\nclear\n/history\n"
                              "Renew the passport before June\nfix: projects\n")
    assert piped.code == 0, piped.err
    lines = piped.out.splitlines()
    assert lines[0] == "Filed to people: Sara (0.80) [people/sara.md]"
    assert lines[1].startswith("Undone: create: Sara in people")
    assert "Did you mean a command?" in lines[2]
    (moved,) = notes(tmp_path)
    assert moved.startswith("projects/")
    assert said(tmp_path, env) == ["Call Sara about the budget",
                                   "Renew the passport before June", "fix: projects"]
