"""The rigs bench_faults drives: `brain serve --http` as a subprocess, signed requests, and a
tool-argument fuzzer over a real store."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import random
import socket
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLACK_", "BRAIN_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    env["BRAIN_PROCESSES"] = "1"  # one process, as its figures were measured (default: cores)
    env.update(extra)
    return env


def sign(raw: bytes, content_type: str, timestamp: str | None = None) -> dict[str, str]:
    ts = timestamp or str(int(time.time()))
    mac = hmac.new(SECRET.encode(), b"v0:" + ts.encode() + b":" + raw, hashlib.sha256)
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": "v0=" + mac.hexdigest()}


async def spawn_serve(args: list[str], env: dict[str, str], cwd: Path,
                      log_file: Path | None = None) -> asyncio.subprocess.Process:
    out: Any = asyncio.subprocess.PIPE if log_file is None else log_file.open("ab")
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "serve", *args, env=env, cwd=str(cwd),
        stdout=asyncio.subprocess.DEVNULL if log_file is None else out,
        stderr=out)


class Served:
    """One `brain serve --http` process and a client that posts signed requests to it."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str) -> None:
        self.proc = proc
        self.url = url
        self.session = aiohttp.ClientSession()

    @classmethod
    async def start(cls, env: dict[str, str], cwd: Path, log_file: Path | None = None) -> Served:
        port = free_port()
        proc = await spawn_serve(["--http", "--port", str(port)], env, cwd, log_file)
        served = cls(proc, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                raise RuntimeError(f"brain serve exited {proc.returncode}")
            try:
                async with served.session.get(f"{served.url}/health") as r:
                    if r.status == 200:
                        return served
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        raise RuntimeError("brain serve did not become healthy")

    async def post(self, raw: bytes, headers: dict[str, str]) -> int:
        async with self.session.post(f"{self.url}/slack/events", data=raw, headers=headers) as r:
            await r.read()
            return r.status

    async def post_event(self, body: dict[str, Any]) -> int:
        raw = json.dumps(body).encode()
        return await self.post(raw, sign(raw, "application/json"))

    async def idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        calm = 0
        while calm < 3:
            if time.monotonic() > deadline:
                raise TimeoutError("jobs still open")
            await asyncio.sleep(0.05)
            async with self.session.get(f"{self.url}/health") as r:
                jobs = (await r.json())["jobs"]
            calm = calm + 1 if jobs["pending"] + jobs["running"] == 0 else 0

    def kill(self) -> None:
        self.proc.kill()
        asyncio.get_running_loop().create_task(self.session.close())

    async def stop(self) -> None:
        await self.session.close()
        if self.proc.returncode is None:
            self.proc.terminate()
        await asyncio.wait_for(self.proc.wait(), timeout=30)


# -- tool-argument fuzzing ----------------------------------------------------------------------

ALPHABET = ["a", "Z", " ", "\n", "\t", "\x00", "\x07", "\x1b", "\u202e", "\ufeff", "\ud800",
            "\udc80", "\U0001f600", "é", "ß", "---", ":", "#", "'", '"', "[[", "]]", "..", "/",
            "\\", "|", ">", "<", "&", "{", "}", "%", "*", "\u2028", "\x85", "\ufffe"]


def _text(rng: random.Random, n: int = 20) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, n)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 2 else 5)
    if kind < 2:
        return _text(rng)
    if kind == 2:
        return rng.choice([None, True, 0, -1, 1.5, 10**12])
    if kind == 3:
        return rng.choice(["people", "projects", "ideas", "admin", "inbox", "../x", "/etc"])
    if kind == 4:
        return "2026-" + _text(rng, 5)
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["name", "tags", "status", "due_date", "context", "x", _text(rng, 5)]):
            _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _args(rng: random.Random, tool: str, refs: list[str]) -> Any:
    ref = rng.choice(refs) if refs and rng.random() < 0.7 else _value(rng)
    if tool == "classify_and_capture":
        return {"text": _text(rng, 60) or "x", "hints": _value(rng, 1)}
    if tool == "update_entry":
        return {"path": ref, "updates": {rng.choice(["context", "tags", "status", "due_date",
                                                     "name", "mood"]): _value(rng, 1)},
                "append": _text(rng)}
    if tool == "move_entry":
        return {"path": ref, "target_category": _value(rng)}
    if tool in ("get_entry", "list_backlinks"):
        return {"path": ref}
    if tool == "search_entries":
        return {"query": _text(rng) or "a", "limit": rng.choice([1, 5, 0, 100])}
    return _value(rng, 1)


async def fuzz_tools(folder: Path, examples: int) -> tuple[int, int, int]:
    """(calls made, notes that do not parse back whole, files written outside the vault)."""
    from storage.db import Database
    from storage.urls import default_url
    from storage.vault.files import Vault
    from storage.vault.note_text import parse_note
    from storage.vault.store import Store
    from tools.base import ToolContext, ToolDeps
    from tools.registry import TOOLS, execute

    folder.mkdir(parents=True, exist_ok=True)
    root = folder / "vault"
    db = await Database.open(default_url(folder / "data"))
    ctx = ToolContext(deps=ToolDeps(store=Store(Vault(root), db), db=db, user_id="fuzz"))
    rng = random.Random(5)
    names = [n for n in TOOLS if n != "generate_digest"]
    refs: list[str] = []
    outside_before = {p for p in folder.rglob("*") if root not in p.parents}
    try:
        for i in range(examples):
            tool = rng.choice(names)
            ex = await execute(ctx, f"c{i}", tool, _args(rng, tool, refs))
            if ex.status == "ok" and ex.output is not None and ex.output.data.get("id"):
                refs.append(str(ex.output.data["id"]))
    finally:
        await db.close()
    unreadable = 0
    for path in root.rglob("*.md"):
        try:
            parsed = parse_note(path.read_bytes().decode("utf-8"))
            unreadable += parsed.frontmatter_error is not None or not parsed.frontmatter.get("id")
        except UnicodeDecodeError:
            unreadable += 1
    outside = {p for p in folder.rglob("*") if root not in p.parents and p != root}
    new_outside = [p for p in outside - outside_before
                   if not str(p).startswith(str(folder / "data"))]
    return examples, unreadable, len(new_outside)
