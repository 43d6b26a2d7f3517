"""The README's "Sync with Obsidian", followed word for word as a new user would, with Debian's
git against a real `brain serve --http`: the `brain sync url` it names gives the address and a
token; its `git clone` line clones (the token typed at git's password prompt); an edit and a
new note, then its four commit-and-sync lines, run as written while the bot has filed
something new meanwhile: both end up in the vault, and the push in its history. On both stores
(`vault_store`), as the section says."""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

from tests.brain_cli import run_process
from tests.e2e.git_client import GitClient, files_of, needs_git
from tests.e2e.served import served
from tests.e2e.slack_harness import USER, message_event
from tests.e2e.test_slack_serve import idle
from tests.shared import REPO

pytestmark = needs_git

README = (REPO / "README.md").read_text(encoding="utf-8")
EXAMPLE_BASE, EXAMPLE_USER = "https://brain.example.com", "U0123"


def section() -> str:
    return README.split("\n## Sync with Obsidian\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str) -> list[list[str]]:
    """The fenced blocks' lines, in order."""
    return [[line.strip() for line in found.splitlines() if line.strip()]
            for found in re.findall(r"```\n(.*?)```", text, re.S)]


def test_the_section_says_what_the_test_follows() -> None:
    text = section()
    assert f"`brain sync url --user {EXAMPLE_USER}`" in text
    clone, sync = blocks(text)
    assert clone == [f"git clone {EXAMPLE_BASE}/git/{EXAMPLE_USER}.git my-brain"]
    assert sync[-2:] == ["git pull --no-rebase", "git push"] and sync[0] == "git add -A"
    for setting in ("Auto commit-and-sync interval (minutes)", "Pull on startup",
                    "Merge strategy", "Push on", "Pull on commit-and-sync",
                    "Password/Personal access token"):
        assert setting in " ".join(text.split()), setting


async def test_the_readmes_steps_clone_edit_and_sync_both_ways(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    clone_block, sync_block = blocks(section())
    async with served(tmp_path, **vault_store) as bot:
        await bot.send.event(message_event("Call Sara about the Q3 budget next week",
                                           ts="1767261700.000100", event_id="EvReadme1"))
        await bot.fake.wait_for("chat.postMessage", timeout=60)
        await idle(bot.send)

        words = shlex.split(f"brain sync url --user {EXAMPLE_USER}")[1:]
        said = await asyncio.to_thread(run_process, tmp_path, *words[:-1], USER, env=bot.env)
        assert said.code == 0, said.err
        url = re.search(r"^url: +(\S+)$", said.out, re.M)
        token = re.search(r"^token: +(\S+)$", said.out, re.M)
        assert url and token and url[1] == f"{bot.url}/git/{USER}.git", said.out

        git = GitClient(tmp_path, token[1])  # what a person types at the password prompt
        (clone,) = clone_block
        line = clone.replace(EXAMPLE_BASE, bot.url).replace(EXAMPLE_USER, USER)
        await git.ok(*shlex.split(line)[1:])
        work = tmp_path / "my-brain"
        assert files_of(work) == files_of(bot.vault)

        sara = next(iter(files_of(work)))
        (work / sara).write_text((work / sara).read_text() + "\nShe likes the new plan.\n")
        (work / "Trip ideas.md").write_text("Kayaking in the fjords next summer.\n")
        await bot.send.event(message_event("Renew the car insurance before the 20th",
                                           ts="1767261800.000100", event_id="EvReadme2"))
        await bot.fake.wait_for("chat.postMessage", 2, timeout=60)
        await idle(bot.send)

        for command in sync_block:  # as written: each line in the clone's folder
            await git.ok(*shlex.split(command)[1:], cwd=work)

        vault = files_of(bot.vault)
        assert b"She likes the new plan." in vault[sara]
        assert vault["Trip ideas.md"] == b"Kayaking in the fjords next summer.\n"
        assert any(b"car insurance" in data for data in vault.values())
        history = await asyncio.to_thread(run_process, tmp_path, "history", "--user", USER,
                                          "--json", env=bot.env)
        assert history.json()[0]["action"] == f"git push by {USER}", history.out
        await git.ok("pull", "--no-rebase", cwd=work)
        assert files_of(work) == files_of(bot.vault)
