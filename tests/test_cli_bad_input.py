"""Bad input and CLI habits a newcomer hits: each ends in a clear message and the documented
exit code (README "Exit codes": 2 the command line is wrong, 1 it cannot be done), JSON under
--json, and changes nothing (no vault, folder or zip appears; no note changes).
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.brain_cli import REPO, BrainCLI, Result

USER = "U0SBUSR01"


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> BrainCLI:
    return BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data"),
                                       "BRAIN_LLM": "offline"})


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if not p.name.startswith("brain.db"))  # the SQLite file opens with any verb


def error_of(result: Result) -> dict[str, object]:
    error: dict[str, object] = json.loads(result.out)["error"]
    return error


# -- vaults and users --------------------------------------------------------------------------


def test_a_missing_vault_is_an_error_and_create_makes_it(cli: BrainCLI, tmp_path: Path) -> None:
    vault = tmp_path / "nowhere" / "vault"
    for argv in (["list"], ["search", "budget"], ["add", "x", "--category", "ideas"],
                 ["digest", "daily"]):
        done = cli(*argv, "--vault", str(vault))
        assert done.code == 1, (argv, done.err)
        assert f"no vault at {vault}" in done.err and "--create" in done.err
        assert not (tmp_path / "nowhere").exists()  # nothing was made
    as_json = cli("list", "--vault", str(vault), "--json")
    assert as_json.code == 1 and error_of(as_json)["kind"] == "not_found"
    made = cli("add", "A first idea", "--category", "ideas", "--vault", str(vault), "--create")
    assert made.code == 0, made.err
    assert len(list((vault / "ideas").glob("*.md"))) == 1


def test_a_vault_that_is_a_file_is_a_usage_error(cli: BrainCLI, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("just a file\n")
    for argv in (["list"], ["show", "x"], ["chat", "--new"]):
        done = cli(*argv, "--vault", str(note))
        assert done.code == 2, (argv, done.err)
        assert "is a file, not a folder" in done.err and "Traceback" not in done.err
    assert note.read_text() == "just a file\n"


def test_a_mistyped_user_is_unknown_not_an_empty_vault(cli: BrainCLI, tmp_path: Path) -> None:
    vaults = tmp_path / "data" / "vaults"
    made = cli("add", "Call Sara", "--category", "people", "--user", USER, "--create")
    assert made.code == 0, made.err
    before = files_under(tmp_path / "data")
    typo = USER.replace("1", "l")
    for argv in (["list"], ["search", "Sara"], ["show", "Sara"], ["export"], ["forget", "--yes"],
                 ["chat", "--new"], ["digest", "status"]):
        done = cli(*argv, "--user", typo)
        assert done.code == 1, (argv, done.out, done.err)
        assert repr(typo) in done.err and USER in done.err  # says which ids exist
        assert "Traceback" not in done.err
    assert files_under(tmp_path / "data") == before
    assert not (vaults / typo).exists()
    assert cli("list", "--user", USER).code == 0  # a known user: their vault exists
    assert cli("list").code == 0  # the default user ('local') always is


def test_a_bad_user_id_is_a_usage_error(cli: BrainCLI, tmp_path: Path) -> None:
    for argv in (["list", "--user", "../bob"], ["export", "--user", "a/b"]):
        done = cli(*argv)
        assert done.code == 2 and "not a valid user id" in done.err, done.err
    assert not (tmp_path / "data" / "vaults").exists() or \
        not any((tmp_path / "data" / "vaults").iterdir())


def test_export_into_a_missing_folder_is_refused(cli: BrainCLI, tmp_path: Path) -> None:
    assert cli("add", "An idea", "--category", "ideas").code == 0
    out = tmp_path / "no" / "such" / "folder" / "x.zip"
    done = cli("export", "--user", "local", "--out", str(out))
    assert done.code == 1 and "does not exist" in done.err and str(out.parent) in done.err
    assert not (tmp_path / "no").exists()
    folder = cli("export", "--user", "local", "--out", str(tmp_path))
    assert folder.code == 2 and "is a folder" in folder.err


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["serve", "--port", "99999"], ["serve", "--port", "http"],
                                  ["mcp", "--http", "--port", "-1"]])
def test_a_bad_port_is_a_usage_error(cli: BrainCLI, argv: list[str]) -> None:
    done = cli(*argv)
    assert done.code == 2 and "port must be" in done.err and "Traceback" not in done.err


@pytest.mark.parametrize("workers", ["0", "many", "65"])
def test_a_bad_process_count_is_a_usage_error(cli: BrainCLI, workers: str) -> None:
    done = cli("serve", "--workers", workers)
    assert done.code == 2 and "from 1 to 64" in done.err and "Traceback" not in done.err


def test_version(cli: BrainCLI) -> None:
    done = cli("--version")
    assert done.code == 0 and done.out.startswith("brain ") and done.out.strip() != "brain"


def test_options_are_accepted_anywhere_in_a_verb(cli: BrainCLI) -> None:
    assert cli("add", "Budget", "--category", "projects", "review", "for", "Q3").code == 0
    first = cli("search", "--json", "budget", "review")
    mixed = cli("search", "budget", "--json", "review", "--limit", "5")
    assert first.code == mixed.code == 0, mixed.err
    assert json.loads(first.out)["entries"][0]["name"] == "Budget review for Q3"
    assert json.loads(mixed.out)["entries"] == json.loads(first.out)["entries"]


def test_usage_errors_are_json_under_json(cli: BrainCLI) -> None:
    done = cli("list", "--limit", "zero", "--json")
    assert done.code == 2 and done.err == ""
    assert error_of(done)["kind"] == "usage" and "limit" in str(error_of(done)["message"])
    unknown = cli("lsit", "--json")
    assert unknown.code == 2 and "invalid choice" in str(error_of(unknown)["message"])
    plain = cli("list", "--limit", "zero")
    assert plain.code == 2 and plain.out == "" and "usage: brain list" in plain.err


def test_exit_codes_tell_usage_from_not_found(cli: BrainCLI) -> None:
    assert cli("show", "no such note").code == 1
    assert cli("show").code == 2  # the note is missing from the command line
    missing = cli("show", "no such note", "--json")
    assert error_of(missing) == {"kind": "not_found", "message": "no note matches 'no such note'",
                                 "exit": 1}
    assert cli("add", "Dana", "--category", "people").code == 0
    assert cli("add", "Dana", "--category", "ideas").code == 0
    ambiguous = cli("show", "Dana", "--json")
    assert ambiguous.code == 1 and error_of(ambiguous)["kind"] == "ambiguous"
    assert len(error_of(ambiguous)["candidates"]) == 2  # type: ignore[arg-type]


# -- dates: every writer reads them as a capture does --------------------------------------------


def test_update_reads_a_natural_date_and_refuses_a_wrong_one(cli: BrainCLI, tmp_path: Path) -> None:
    added = cli("add", "Website relaunch", "--category", "projects", "--json").json()
    path = tmp_path / "data" / "vaults" / "local" / added["path"]
    tomorrow = cli("update", added["id"], "due_date=tomorrow", "--json").json()
    assert len(tomorrow["due_date"]) == 10 and tomorrow["due_date"][4] == "-"
    before = path.read_bytes()
    for bad in ("due_date=2026-13-45", "due_date=someday", "last_touched=soon"):
        done = cli("update", added["id"], bad)
        assert done.code == 2 and bad.split("=")[1] in done.err and "YYYY-MM-DD" in done.err
    assert path.read_bytes() == before
    cleared = cli("update", added["id"], "due_date=null", "--json").json()
    assert cleared.get("due_date") is None


# -- wording -------------------------------------------------------------------------------------


def test_search_help_says_meaning(cli: BrainCLI) -> None:
    assert "meaning" in cli("--help").out.split("search", 1)[1].splitlines()[0]
    assert "meaning" in cli("search", "--help").out


def test_backlinks_count_notes_not_links(cli: BrainCLI) -> None:
    assert cli("add", "Sara", "--category", "people").code == 0
    assert cli("add", "Met [[Sara]] for lunch.\nLater [[Sara]] called back.", "--name", "Lunch",
               "--category", "ideas").code == 0
    done = cli("backlinks", "Sara")
    assert done.code == 0 and done.out.startswith("1 note(s) link to people/sara.md (2 links)")


def test_move_to_the_same_folder_says_nothing_moved(cli: BrainCLI, tmp_path: Path) -> None:
    added = cli("add", "Pay rent", "--category", "admin", "--json").json()
    path = tmp_path / "data" / "vaults" / "local" / added["path"]
    before = path.read_bytes()
    same = cli("move", added["id"], "admin")
    assert same.code == 0 and "already in admin: nothing moved" in same.out
    assert path.read_bytes() == before
    moved = cli("move", added["id"], "projects", "--json").json()
    assert set(moved) >= {"old_path", "new_path", "category", "changed"}  # snake_case
    assert moved["changed"] is True and moved["new_path"].startswith("projects/")


def test_digest_errors_are_worded_for_the_cli(cli: BrainCLI) -> None:
    done = cli("digest", "monthly")
    assert done.code == 2 and "brain digest subscribe daily" in done.err
    assert "/digest" not in done.err
    status = cli("digest", "status")
    assert status.code == 0 and "brain digest subscribe" in status.out and "/digest" not in \
        status.out
    zone = cli("digest", "subscribe", "daily", "--tz", "Mars/Olympus")
    assert zone.code == 2 and "unknown time zone" in zone.err and "Slack" not in zone.err


def test_log_json_times_are_iso_8601(cli: BrainCLI) -> None:
    assert cli("chat", "--new", stdin="Idea: a bike rack\n").code == 0
    (turn,) = cli("log", "--json").json()
    from datetime import datetime

    assert datetime.fromisoformat(turn["created_at"]).utcoffset() is not None
    assert "T" in turn["created_at"]


def test_doctor_passes_without_slack_for_a_local_set_up(cli: BrainCLI) -> None:
    done = cli("doctor")  # no SLACK_* at all: CLI/MCP only
    assert done.code == 0, done.out
    assert "not checked (no SLACK_* setting)" in done.out and "All good" in done.out
    readers = next(x for x in done.out.splitlines() if "Readers" in x)
    assert readers.startswith("ok") and "images: yes; clips: yes" in readers  # the media extra
    odd = cli("doctor", BRAIN_SPEECH_MODEL="/nowhere/whisper")
    assert odd.code == 1 and "BRAIN_SPEECH_MODEL /nowhere/whisper is not a folder" in odd.out
    local = cli("doctor", "--local", SLACK_BOT_TOKEN="xoxp-wrong-kind")
    assert local.code == 0 and "not checked (--local)" in local.out, local.out
    slack = cli("doctor", "--offline", SLACK_BOT_TOKEN="xoxp-wrong-kind")
    assert slack.code == 1 and "does not start with xoxb-" in slack.out


# -- interactive chat -----------------------------------------------------------------------------


def test_a_thought_typed_at_resume_which_is_filed(tmp_path: Path) -> None:
    """`brain chat` in a terminal offers recent conversations; typing a thought there instead
    of a number starts a new conversation with it (it was dropped)."""
    from tests.databases import database_env

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    env.update(database_env(tmp_path), BRAIN_DATA_DIR=str(tmp_path / "data"),
               BRAIN_LLM="offline", PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "bot.cli", "chat"]
    subprocess.run([*command, "--new"], input="Idea: a bike rack\n", env=env, cwd=tmp_path,
                   capture_output=True, text=True, timeout=60, check=True)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(command, stdin=secondary, stdout=secondary, stderr=secondary,
                            env=env, cwd=tmp_path, close_fds=True)
    os.close(secondary)
    seen = b""

    def read_until(marker: bytes, timeout: float = 60) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            try:
                seen += os.read(primary, 4096)
            except OSError:
                break
    try:
        read_until(b"Resume which?")
        os.write(primary, b"Idea: a rooftop garden for the office\n")
        read_until(b"> ")
        read_until(b"rooftop garden", timeout=60)
        os.write(primary, b"\x04")  # Ctrl-D
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    notes = [p.read_text() for p in (tmp_path / "data" / "vaults" / "local").rglob("*.md")]
    assert sum("rooftop garden" in n for n in notes) == 1, seen.decode(errors="replace")
