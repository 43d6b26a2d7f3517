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


@pytest.mark.slow
async def test_thirty_changes_through_three_doors_undone_in_reverse(slack: Harness) -> None:
    rng = random.Random(20)
    env = env_for(slack.data_dir)
    store = slack.brain.store_for(USER)
    states: list[tuple[int, dict[str, bytes]]] = []  # (changes so far, the vault then)
    ts = iter(range(1767261000, 1767269000, 7))

    def pick() -> str:
        files = [f for f in vault_files(slack.vault) if f.split("/")[0] in FILED_CATEGORIES
                 or f.startswith("inbox/")]
        return rng.choice(files)

    seen = itertools.count(1)

    def thought() -> str:  # a new one each time: the same words again are a repeat
        return f"{rng.choice(THOUGHTS)} (take {next(seen)})"

    async def count() -> int:
        return len(await store.changes(limit=1000))

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "bot.cli", "mcp", "--user", USER],
                                   env=env, cwd=str(slack.data_dir))
    async with Client(params, read_timeout_seconds=60) as mcp:
        async def mcp_call(name: str, arguments: dict[str, Any]) -> None:
            result = await mcp.call_tool(name, arguments)
            assert not result.is_error, result.content

        async def slack_dm() -> None:
            t = f"{next(ts)}.000100"
            await slack.file_dm(thought(), ts=t, event_id=f"Ev{t}")

        async def slack_fix() -> None:
            t = f"{next(ts)}.000100"
            await slack.file_dm(thought(), ts=t, event_id=f"Ev{t}")
            before = len(slack.fake.calls_to("chat.postMessage"))
            r = f"{next(ts)}.000200"
            await slack.send.event(message_event(
                f"fix: {rng.choice(FILED_CATEGORIES)}", ts=r, event_id=f"Ev{r}",
                thread_ts=t))
            await slack.fake.wait_for("chat.postMessage", before + 1)
            await slack.settle()

        async def cli_add() -> None:
            await brain(env, "add", rng.choice(THOUGHTS), "--category",
                        rng.choice(FILED_CATEGORIES))

        async def cli_update() -> None:
            await brain(env, "update", pick(), f"tags=t{rng.randrange(99)}",
                        "--append", "more from the cli")

        async def cli_move() -> None:
            await brain(env, "move", pick(), rng.choice(FILED_CATEGORIES))

        async def mcp_capture() -> None:
            await mcp_call("classify_and_capture", {"text": thought(), "hints": {
                "category": rng.choice(FILED_CATEGORIES), "confidence": 0.9}})

        async def mcp_update() -> None:
            await mcp_call("update_entry", {"path": pick(), "append": "more over MCP"})

        async def mcp_move() -> None:
            await mcp_call("move_entry", {"path": pick(),
                                          "target_category": rng.choice(FILED_CATEGORIES)})

        async def outside() -> None:
            path = slack.vault / pick()
            path.write_bytes(path.read_bytes() + "\nedited in Obsidian é\r\n".encode())
            await store.refresh()  # a rescan records it (a read may trust a recent scan)

        doors: list[Callable[[], Any]] = [slack_dm, slack_fix, cli_add, cli_update, cli_move,
                                          mcp_capture, mcp_update, mcp_move, outside]
        await slack_dm()
        await mcp_capture()
        for _ in range(28):
            states.append((await count(), snapshot(slack.vault)))
            await rng.choice(doors)()

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
