"""Migration 0010 on SQLite and PostgreSQL: Bolt's installation and OAuth-state tables, and
the home workspace (first claim wins); pending work cancelled for one workspace's people."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import inspect, text

from storage.db import Database
from storage.repositories import journal, slack_state
from tests.databases import fresh_url


async def test_the_workspace_tables_exist_with_their_columns(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        async with db.engine.connect() as conn:
            def columns(c: object) -> dict[str, set[str]]:
                found = inspect(c)
                return {t: {col["name"] for col in found.get_columns(t)}
                        for t in ("slack_installations", "slack_bots", "slack_oauth_states",
                                  "slack_home")}
            cols = await conn.run_sync(columns)
        for rotation in ("bot_refresh_token", "bot_token_expires_at"):
            assert rotation in cols["slack_installations"] and rotation in cols["slack_bots"]
        assert {"user_refresh_token", "user_token_expires_at", "installed_at"} \
            <= cols["slack_installations"]
        assert cols["slack_oauth_states"] == {"id", "state", "expire_at"}
        assert cols["slack_home"] == {"id", "team_id", "created_at"}
    finally:
        await db.close()


async def test_the_first_home_claim_wins_across_processes(tmp_path: Path) -> None:
    url = fresh_url(tmp_path)
    dbs = [await Database.open(url) for _ in range(2)]
    try:
        async def claim(db: Database, team: str) -> str:
            async with db.session() as s:
                home = await slack_state.claim_home_team(s, team)
                await s.commit()
                return home
        homes = await asyncio.gather(claim(dbs[0], "T0AAA"), claim(dbs[1], "T0BBB"))
        assert len(set(homes)) == 1
        async with dbs[0].session() as s:
            assert await slack_state.home_team(s) == homes[0]
            assert await slack_state.claim_home_team(s, "T0CCC") == homes[0]
    finally:
        for db in dbs:
            await db.close()


async def test_pending_work_is_cancelled_for_one_workspace(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        async with db.session() as s:
            for n, user in enumerate(("U0HOME1", "T0OTHER-U0HOME1", "T0THIRD-U0X")):
                await journal.record(s, key=f"job:{n}", kind="turn", user_id=user,
                                     lane=f"lane:{user}", payload={})
            await s.commit()
        async with db.session() as s:
            assert await journal.cancel_pending(s, "gone", prefix="T0OTHER-") == 1
            assert await journal.cancel_pending(s, "gone", plain=True) == 1
            await s.commit()
        async with db.session() as s:
            assert await journal.cancel_pending(s, "gone") == 1  # the third's job was left
    finally:
        await db.close()


async def test_expired_oauth_states_are_pruned(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        now = datetime.now(UTC)
        async with db.engine.begin() as conn:
            for n, minutes in enumerate((-30, 30)):  # naive UTC, as slack_sdk writes them
                await conn.execute(text(
                    "INSERT INTO slack_oauth_states (state, expire_at) VALUES (:s, :e)"),
                    {"s": f"state-{n}", "e": (now + timedelta(minutes=minutes)).replace(
                        tzinfo=None)})
        async with db.session() as s:
            assert await slack_state.prune_oauth_states(s, now) == 1
            await s.commit()
        async with db.engine.connect() as conn:
            left = (await conn.execute(text("SELECT state FROM slack_oauth_states"))).all()
        assert [r[0] for r in left] == ["state-1"]
    finally:
        await db.close()
