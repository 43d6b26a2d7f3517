"""Thirty mixed changes through Slack (the served app), the CLI (`brain` processes) and MCP
(`brain mcp` over stdio, the SDK's client), with edits made outside the app between them, then
every change undone newest first: the vault comes back, byte for byte, to each earlier state
(issue 20). On both databases."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from storage.types import FILED_CATEGORIES
from tests.databases import database_env
from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import USER, message_event, vault_files

REPO = Path(__file__).resolve().parents[2]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
        "DATABASE_URL", "BRAIN_LLM")
THOUGHTS = ("Idea: a lending library for the office", "Call the dentist about the crown",
            "Project Phoenix: launch the beta in May", "Sara Lopez prefers email",
            "Renew the car insurance before the 20th", "A podcast about urban gardening")


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def env_for(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update({"BRAIN_DATA_DIR": str(data_dir), "BRAIN_LLM": "offline", "PYTHONPATH": str(REPO),
                **database_env(data_dir)})
    return env


async def brain(env: dict[str, str], *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, "--user", USER, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, (args, err.decode()[-1500:])
    return out.decode()


class Doors:
    """Each way in of the scenario: a DM, a fix in its thread, the CLI's add, update and move,
    MCP's capture, update and move, and an edit made outside the app."""

    def __init__(self, slack: Harness, env: dict[str, str], mcp: Client, rng: random.Random):
        self.slack, self.env, self.mcp, self.rng = slack, env, mcp, rng
        self.store = slack.brain.store_for(USER)
        self.ts = iter(range(1767261000, 1767269000, 7))
        self.seen = itertools.count(1)

    def all(self) -> list[Callable[[], Any]]:
        return [self.slack_dm, self.slack_fix, self.cli_add, self.cli_update, self.cli_move,
                self.mcp_capture, self.mcp_update, self.mcp_move, self.outside]

    def pick(self) -> str:
        files = [f for f in vault_files(self.slack.vault)
                 if f.split("/")[0] in FILED_CATEGORIES or f.startswith("inbox/")]
        return self.rng.choice(files)

    def thought(self) -> str:  # a new one each time: the same words again are a repeat
        return f"{self.rng.choice(THOUGHTS)} (take {next(self.seen)})"

    def category(self) -> str:
        return self.rng.choice(FILED_CATEGORIES)

    async def mcp_call(self, name: str, arguments: dict[str, Any]) -> None:
        result = await self.mcp.call_tool(name, arguments)
        assert not result.is_error, result.content

    async def slack_dm(self) -> str:
        t = f"{next(self.ts)}.000100"
        await self.slack.file_dm(self.thought(), ts=t, event_id=f"Ev{t}")
        return t

    async def slack_fix(self) -> None:
        t = await self.slack_dm()
        before = len(self.slack.fake.calls_to("chat.postMessage"))
        r = f"{next(self.ts)}.000200"
        await self.slack.send.event(message_event(
            f"fix: {self.category()}", ts=r, event_id=f"Ev{r}", thread_ts=t))
        await self.slack.fake.wait_for("chat.postMessage", before + 1)
        await self.slack.settle()

    async def cli_add(self) -> None:
        await brain(self.env, "add", self.rng.choice(THOUGHTS), "--category", self.category())

    async def cli_update(self) -> None:
        await brain(self.env, "update", self.pick(), f"tags=t{self.rng.randrange(99)}",
                    "--append", "more from the cli")

    async def cli_move(self) -> None:
        await brain(self.env, "move", self.pick(), self.category())

    async def mcp_capture(self) -> None:
        await self.mcp_call("classify_and_capture", {"text": self.thought(), "hints": {
            "category": self.category(), "confidence": 0.9}})

    async def mcp_update(self) -> None:
        await self.mcp_call("update_entry", {"path": self.pick(), "append": "more over MCP"})

    async def mcp_move(self) -> None:
        await self.mcp_call("move_entry", {"path": self.pick(),
                                           "target_category": self.category()})

    async def outside(self) -> None:
        path = self.slack.vault / self.pick()
        path.write_bytes(path.read_bytes() + "\nedited in Obsidian é\r\n".encode())
        await self.store.refresh()  # a rescan records it (a read may trust a recent scan)


@pytest.mark.files_store
@pytest.mark.slow
async def test_thirty_changes_through_three_doors_undone_in_reverse(slack: Harness) -> None:
    rng = random.Random(20)
    env = env_for(slack.data_dir)
    store = slack.brain.store_for(USER)
    states: list[tuple[int, dict[str, bytes]]] = []  # (changes so far, the vault then)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "bot.cli", "mcp", "--user", USER],
                                   env=env, cwd=str(slack.data_dir))
    async with Client(params, read_timeout_seconds=60) as mcp:
        doors = Doors(slack, env, mcp, rng)
        await doors.slack_dm()
        await doors.mcp_capture()
        for _ in range(28):
            states.append((len(await store.changes(limit=1000)), snapshot(slack.vault)))
            await rng.choice(doors.all())()

    changes = await store.changes(limit=1000)  # newest first
    sources = {c.source.split(" ")[0] for c in changes}
    assert {"slack", "cli", "mcp", "files"} <= sources, sources
    assert len(changes) >= 30
    done = len(changes)
    for made, before in reversed(states):
        while done > made:
            await store.undo(changes[len(changes) - done].id)
            done -= 1
        assert snapshot(slack.vault) == before
