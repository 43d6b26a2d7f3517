"""Long notes from the command line, as real processes (issue 33): `brain reindex` killed
with SIGKILL half-way through a vault's passages resumes where it stopped (nothing embedded
twice, nothing left out), and `brain search --json` then finds a long chat by a message deep
in it, showing that message's passage with the query's words marked and the note's date. On
both databases (BRAIN_TEST_DB=postgres)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from storage.meaning.shared_model import Meaning
from tests.brain_cli import brain_command, process_env, run_process
from tests.databases import database_env
from tests.shared import patience
from tests.tools.conftest import write_note

pytestmark = pytest.mark.skipif(not Meaning.load().available, reason="no embedding model")

CHATS = 12
MESSAGES = 26
TOPICS = ["the allotment", "the roof repair", "the choir concert", "the new bike",
          "the train strike", "the garden fence", "the kitchen tiles", "the school fair"]


def _chat(n: int) -> str:
    lines = []
    for i in range(MESSAGES):
        who = "Ines" if i % 2 else "Maren"
        text = (f"Talking about {TOPICS[(n + i) % len(TOPICS)]} again, message {i} of "
                f"session {n}, with a few more words so it reads like a real message.")
        if n == 7 and i == 19:
            text = "Herman finally agreed: the practice sells for 170,000 euros, signed Friday."
        lines.append(f"[{n + 1:02d}/03/2025, 19:{i:02d}] {who}: {text}")
    return (f"---\nname: Chat with Ines, {n + 1} March 2025\ncategory: people\n"
            f"created: '2025-03-{n + 1:02d}T21:00:00+00:00'\n---\n" + "\n\n".join(lines) + "\n")


def _env(tmp_path: Path) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_OWNER": "me",
            "BRAIN_VAULT_DIR": str(tmp_path / "vault"), "BRAIN_LLM": "offline"}


async def _vector_rows(tmp_path: Path) -> int:
    """Vector rows in the suite's database of this test (0 before `brain` made its tables);
    read without migrating, beside the `brain` process."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from storage.urls import async_url

    url = database_env(tmp_path).get("DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tmp_path / 'data' / 'brain.db'}")
    if url.startswith("sqlite") and not (tmp_path / "data" / "brain.db").exists():
        return 0
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as conn:
            result = await conn.execute(text("SELECT count(*) FROM index_vectors"))
            return int(result.scalar() or 0)
    except Exception:  # its tables are not made yet
        return 0
    finally:
        await engine.dispose()


def test_reindex_killed_half_way_resumes_and_search_shows_the_passage(tmp_path: Path) -> None:
    for n in range(CHATS):
        write_note(tmp_path / "vault", f"people/chat-with-ines-{n + 1:02d}.md", _chat(n))
    env = _env(tmp_path)
    proc = subprocess.Popen([*brain_command(), "reindex", "--threads", "1"], cwd=tmp_path,
                            env=process_env(tmp_path, env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + patience(120)
        while asyncio.run(_vector_rows(tmp_path)) == 0:  # some passages written, not all
            assert proc.poll() is None, "reindex ended before it could be stopped"
            assert time.monotonic() < deadline, "no vector was written"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    written = asyncio.run(_vector_rows(tmp_path))

    again = run_process(tmp_path, "reindex", "--json", env=env, timeout=patience(300))
    stats = again.json()["vectors"]
    assert stats["embedded"] > 0, "the first run had not finished: the test stopped nothing"
    total = asyncio.run(_vector_rows(tmp_path))
    assert stats["embedded"] == total - written  # what was written was not embedded again
    assert run_process(tmp_path, "reindex", "--json", env=env,
                       timeout=patience(120)).json()["vectors"]["embedded"] == 0

    found = run_process(tmp_path, "search", "how", "much", "did", "Herman", "sell", "the",
                        "practice", "for", "--json", env=env, timeout=patience(120)).json()
    top = found["entries"][0]
    assert top["path"] == "people/chat-with-ines-08.md" and top["date"] == "2025-03-08"
    assert "170,000 euros" in top["passage"]["text"] and top["passage"]["n"] > 0
    marked = {top["snippet"][a:b] for a, b in top["marks"]}
    assert {"Herman", "practice"} <= marked
    shown = run_process(tmp_path, "search", "Herman", "practice", env=env,
                        timeout=patience(120))
    assert shown.code == 0 and "**Herman**" in shown.out and "2025-03-08" in shown.out
    json.dumps(found)  # (plain JSON)
