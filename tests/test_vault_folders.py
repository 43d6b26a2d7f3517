"""A person's vault folder that is a symlink (to another person's vault, outside the vault root,
or nowhere) is refused by every command with a clear message; nothing is read, listed,
exported, served or deleted through it. On both databases (the suite's).

Before: with `vaults/UEVE` a link to `vaults/UBOB`, UEVE's search returned UBOB's notes, export
zipped them, and `brain forget --user UEVE --yes` deleted UBOB's whole vault.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.brain_cli import REPO, BrainCLI
from tests.e2e.bot_harness import running_bot
from tests.e2e.slack_harness import USER, message_event
from tests.test_cli_storage import tree_hashes

BOB, EVE = "UBOB00001", "UEVE00001"

# every command that acts for a person (argv without --user)
COMMANDS: list[list[str]] = [
    ["list"], ["search", "budget"], ["show", "Budget"], ["backlinks", "Budget"],
    ["add", "x", "--category", "ideas"], ["update", "Budget", "status=done"],
    ["move", "Budget", "ideas"], ["reindex"], ["digest", "daily"], ["chat", "--new"],
    ["export"], ["forget", "--yes"],
]


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> BrainCLI:
    return BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data"),
                                       "BRAIN_LLM": "offline"})


def _bob(cli: BrainCLI, tmp_path: Path) -> Path:
    made = cli("add", "Budget review with finance", "--name", "Budget", "--category",
               "projects", "--user", BOB, "--create")
    assert made.code == 0, made.err
    return tmp_path / "data" / "vaults" / BOB


@pytest.mark.parametrize("target", ["bob", "outside", "dangling"])
def test_every_command_refuses_a_symlinked_vault_folder(cli: BrainCLI, tmp_path: Path,
                                                        target: str) -> None:
    bob = _bob(cli, tmp_path)
    outside = tmp_path / "elsewhere"
    (outside / "projects").mkdir(parents=True)
    (outside / "projects" / "budget.md").write_text("---\nname: Budget\n---\nsecret budget\n")
    eve = tmp_path / "data" / "vaults" / EVE
    eve.symlink_to({"bob": bob, "outside": outside, "dangling": tmp_path / "gone"}[target])
    before = {p: tree_hashes(p) for p in (bob, outside)}
    for argv in COMMANDS:
        done = cli(*argv, "--user", EVE, stdin="what is my budget?\n")
        assert done.code == 1, (argv, done.code, done.out, done.err)
        assert "is a symlink" in done.err and "Traceback" not in done.err, (argv, done.err)
        assert "Budget review" not in done.out + done.err and "secret" not in done.out
    assert {p: tree_hashes(p) for p in (bob, outside)} == before  # nothing read into, nothing
    assert eve.is_symlink()  # deleted: the link itself stays for the operator to look at
    assert not list(tmp_path.glob("brain-export-*.zip"))
    as_json = cli("list", "--user", EVE, "--json")
    assert as_json.code == 1 and '"unsafe_path"' in as_json.out
    assert cli("search", "budget", "--user", BOB).code == 0  # Bob's own vault still works


def test_forget_never_deletes_through_a_link(cli: BrainCLI, tmp_path: Path) -> None:
    bob = _bob(cli, tmp_path)
    (tmp_path / "data" / "vaults" / EVE).symlink_to(bob)
    done = cli("forget", "--user", EVE, "--yes")
    assert done.code == 1 and "symlink" in done.err
    assert list(bob.rglob("*.md"))  # every one of Bob's notes is still there
    assert cli("forget", "--user", BOB, "--yes").code == 0  # Bob's own forget still works
    assert not bob.exists()


def test_mcp_refuses_to_serve_a_symlinked_vault_folder(cli: BrainCLI, tmp_path: Path) -> None:
    bob = _bob(cli, tmp_path)
    (tmp_path / "data" / "vaults" / EVE).symlink_to(bob)
    from tests.databases import database_env

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    env.update(database_env(tmp_path), BRAIN_DATA_DIR=str(tmp_path / "data"),
               BRAIN_LLM="offline", PYTHONPATH=str(REPO))
    from tests.test_mcp_http_security import _free_port

    for extra in ([], ["--http", "--port", str(_free_port())]):
        proc = subprocess.run([sys.executable, "-m", "bot.cli", "mcp", "--user", EVE, *extra],
                              env=env, cwd=tmp_path, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert "is a symlink" in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stdout == ""


async def test_slack_answers_plainly_and_touches_nothing(tmp_path: Path) -> None:
    """`brain serve`: a DM from a person whose vault folder is a link gets one clear reply;
    nothing is filed there, and the job is not retried."""
    other = tmp_path / "vaults" / BOB
    (other / "projects").mkdir(parents=True)
    (other / "projects" / "budget.md").write_text("---\nname: Budget\n---\nBob's budget\n")
    (tmp_path / "vaults" / USER).symlink_to(other)
    before = tree_hashes(other)
    async with running_bot(tmp_path) as h:
        status, _ = await h.send.event(message_event("Idea: a shared calendar for the team",
                                                     ts="1767261600.000100", event_id="Ev1"))
        assert status == 200
        posts = await h.fake.wait_for("chat.postMessage")
        await h.settle()
        h.check_cards()
    assert len(posts) == 1
    assert "vault folder" in posts[0].body["text"] and "Nothing was read or changed" in \
        posts[0].body["text"]
    assert "Bob" not in posts[0].body["text"]
    assert tree_hashes(other) == before
