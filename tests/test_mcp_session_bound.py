"""An MCP session's writes are bounded and undone as one batch (issue 31, item 5): `brain mcp`
as a real process driven by the official SDK's client, over stdio and over streamable HTTP
with two sessions at once, on the suite's database (SQLite or PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from tests.databases import database_env
from tests.test_cli_mcp import _env, _free_port, _text, stdio, wait_healthy


def notes(vault: Path) -> list[str]:
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))


def files(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes()
            for p in sorted(vault.rglob("*")) if p.is_file()}


def capture(n: int) -> dict[str, Any]:
    return {"text": f"Idea {n}: a reading corner by the window",
            "hints": {"category": "ideas", "confidence": 0.9, "name": f"Reading corner {n}"}}


async def test_a_session_past_its_bound_is_refused_and_undoes_its_batch(tmp_path: Path) -> None:
    vault = tmp_path / "data" / "vaults" / "bob"
    async with stdio(tmp_path, "--user", "bob", "--create", BRAIN_MCP_MAX_WRITES="5",
                     **database_env(tmp_path)) as client:
        results = [await client.call_tool("classify_and_capture", capture(n)) for n in range(8)]
        made = notes(vault)
        refused = [r for r in results if r.is_error]
        update = await client.call_tool("update_entry", {"path": made[0], "append": "more"})
        found = await client.call_tool("search_entries", {"query": "reading corner"})
        undone = await client.call_tool("undo_session", {})
        after = files(vault)
        again = await client.call_tool("undo_session", {})
        still = await client.call_tool("classify_and_capture", capture(9))
        history = await client.call_tool("history", {"limit": 20})

    assert len(made) == 5 and len(refused) == 3  # of 8 asked for
    for result in [*refused, update]:
        error = json.loads(_text(result))["error"]
        assert error["code"] == "too_many_changes" and "undo_session" in error["message"]
    assert not found.is_error and found.structured_content["total"] >= 5  # reading still works
    assert not undone.is_error, _text(undone)
    assert len(undone.structured_content["undone"]) == 5
    assert undone.structured_content["left"] == 0 and undone.structured_content["refused"] is None
    assert after == {}  # the vault as it was before the session
    assert again.structured_content == {"undone": [], "left": 0, "refused": None}
    assert still.is_error  # undoing does not give the bound back: the window does
    actions = [c["action"] for c in history.structured_content["changes"]]
    assert actions[:5] == ["undo"] * 5 and actions[5:10] == ["create"] * 5


@contextmanager
def http_mcp(tmp_path: Path, port: int, **env: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "mcp", "--http", "--port",
                             str(port)], env=_env(tmp_path, **env), cwd=tmp_path, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health", seconds=60)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_each_http_session_has_its_own_bound_batch_and_window(tmp_path: Path) -> None:
    port = _free_port()
    vault = tmp_path / "data" / "vaults" / "local"
    url = f"http://127.0.0.1:{port}/mcp"
    with http_mcp(tmp_path, port, BRAIN_MCP_MAX_WRITES="3", BRAIN_MCP_WRITE_WINDOW="3",
                  **database_env(tmp_path)):
        async with Client(url, read_timeout_seconds=30, mode="legacy") as a, \
                Client(url, read_timeout_seconds=30, mode="legacy") as b:
            for n in range(3):
                assert not (await a.call_tool("classify_and_capture", capture(n))).is_error
            full = await a.call_tool("classify_and_capture", capture(3))
            other = await b.call_tool("classify_and_capture", capture(4))
            assert full.is_error and not other.is_error  # b's bound is its own
            kept = other.structured_content["path"]
            undone = await a.call_tool("undo_session", {})
            assert len(undone.structured_content["undone"]) == 3
            assert notes(vault) == [kept]  # a's batch only: b's note stays

            deadline = time.monotonic() + 30  # the window (3 s) lets a write again
            while (await a.call_tool("classify_and_capture", capture(5))).is_error:
                assert time.monotonic() < deadline, "the window never let a write through"
                await asyncio.sleep(0.2)
            assert len(notes(vault)) == 2
