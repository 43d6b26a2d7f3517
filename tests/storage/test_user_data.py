"""storage.repositories.user_data (export rows, forget, retention) and storage.repositories.slack_state (the reminder
claim, paused users, uninstalled workspaces) on the test's database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import repositories
from storage.db import Database
from storage.errors import InvalidValue
from storage.models import Conversation, Turn
from storage.repositories import journal, slack_state, user_data
from storage.sync import tokens
from tests.databases import fresh_url

NOW = datetime.now(UTC)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


async def conversation(db: Database, user: str, key: str, texts: list[str],
                       at: datetime | None = None) -> int:
    """A conversation with one turn per text (user + assistant messages, a tool run)."""
    async with db.session() as s:
        conv = await repositories.get_or_create_conversation(s, key, user)
        for text in texts:
            turn = await repositories.start_turn(s, conv.id, text)
            await repositories.save_messages(s, conv.id, turn, [
                {"role": "user", "content": text}, {"role": "assistant", "content": "ok"}])
            await repositories.add_tool_run(s, turn, "c1", "search_entries", {"query": text},
                                            "ok", {"total": 0}, None, NOW, 1.0)
            await repositories.finish_turn(s, turn, "ok", "ok", 1, 1, 1)
            if at is not None:
                row = await s.get(Turn, turn)
                assert row is not None
                row.created_at = at
        await repositories.add_receipt(s, user_id=user, original_text=texts[0],
                                       entry_id=f"e_{key}", path="ideas/x.md",
                                       category="ideas", confidence=0.9, status="filed",
                                       conversation_id=conv.id)
        await s.commit()
        return conv.id


async def test_forget_erases_one_person_and_no_one_else(db: Database) -> None:
    await conversation(db, "U1", "slack:D1:1:U1", ["first", "second"])
    await conversation(db, "U2", "slack:D2:1:U2", ["theirs"])
    async with db.session() as s:
        await journal.record(s, key="event:1", kind="turn", user_id="U1", lane="x", payload={})
        await repositories.upsert_subscription(s, "U1", "daily", 8, 0, None, "UTC", None)
        await slack_state.claim_reminder(s, "U1", "e_1", "2027-06-01")
        await slack_state.home_opened(s, "U1")
        await tokens.issue(s, "U1", NOW)
        theirs_token = await tokens.issue(s, "U2", NOW)
        await s.commit()
        counts = await user_data.forget(s, "U1")
        await s.commit()
    assert counts == {"tool_runs": 2, "messages": 4, "turns": 2, "receipts": 1,
                      "conversations": 1, "jobs": 1, "digest_subscriptions": 1,
                      "reminders": 1, "slack_users": 1, "sync_tokens": 1}
    async with db.session() as s:  # their git remote still opens with their token
        assert await tokens.owner(s, theirs_token, NOW, timedelta(days=90)) == "U2"
    async with db.session() as s:
        assert await user_data.conversations_of(s, "U1") == []
        assert await user_data.receipts_of(s, "U1") == []
        (theirs,) = await user_data.conversations_of(s, "U2")
        assert theirs["turns"][0]["user_text"] == "theirs"
        assert theirs["turns"][0]["tool_runs"][0]["tool"] == "search_entries"
        assert len(await user_data.receipts_of(s, "U2")) == 1


async def test_retention_prunes_old_turns_and_keeps_receipts_and_recent_talk(
        db: Database) -> None:
    old = NOW - timedelta(days=200)
    kept = await conversation(db, "U1", "slack:D1:1:U1", ["recent"])
    gone = await conversation(db, "U1", "slack:D1:2:U1", ["long ago"], at=old)
    async with db.session() as s:
        row = await s.get(Conversation, gone)
        assert row is not None
        row.updated_at = old
        await s.commit()
    async with db.session() as s:
        counts = await user_data.prune(s, NOW - timedelta(days=90))
        await s.commit()
    assert (counts["turns"], counts["messages"], counts["tool_runs"],
            counts["conversations"]) == (1, 2, 1, 1)
    async with db.session() as s:
        (left,) = await user_data.conversations_of(s, "U1")
        assert left["turns"][0]["user_text"] == "recent"
        receipts = await user_data.receipts_of(s, "U1")
    assert len(receipts) == 2  # the notes' receipts stay
    assert {r["entry_id"] for r in receipts} == {"e_slack:D1:1:U1", "e_slack:D1:2:U1"}
    assert kept != gone


async def test_a_reminder_is_claimed_once_even_by_racing_claimers(db: Database) -> None:
    async def claim() -> bool:
        async with db.session() as s:
            won = await slack_state.claim_reminder(s, "U1", "e_note", "2027-01-05")
            await s.commit()
            return won
    results = await asyncio.gather(*(claim() for _ in range(8)))
    assert results.count(True) == 1
    async with db.session() as s:  # another day, another note: claims of their own
        assert await slack_state.claim_reminder(s, "U1", "e_note", "2027-01-06")
        assert await slack_state.claim_reminder(s, "U1", "e_other", "2027-01-05")
        with pytest.raises(InvalidValue):
            await slack_state.claim_reminder(s, "U1", "e_note", "tomorrow")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["U1", "U2", "U3"]), max_size=6),
       st.lists(st.sampled_from(["U1", "U2", "U3"]), max_size=6))
def test_paused_is_whoever_was_paused_and_not_resumed(
        tmp_path_factory: pytest.TempPathFactory, paused: list[str], resumed: list[str]) -> None:
    async def run() -> set[str]:
        database = await Database.open(fresh_url(tmp_path_factory.mktemp("p")))
        try:
            async with database.session() as s:
                for user in paused:
                    await slack_state.set_paused(s, user, True)
                for user in resumed:
                    await slack_state.set_paused(s, user, False)
                await s.commit()
                return await slack_state.paused_users(s)
        finally:
            await database.close()
    assert asyncio.run(run()) == set(paused) - set(resumed)


async def test_uninstall_cancels_pending_jobs_and_reinstall_clears_it(db: Database) -> None:
    async with db.session() as s:
        await journal.record(s, key="event:a", kind="turn", user_id="U1", lane="a", payload={})
        await journal.record(s, key="event:b", kind="turn", user_id="U2", lane="b", payload={})
        assert await journal.cancel_pending(s, "revoked", ["U1"]) == 1
        assert await slack_state.set_uninstalled(s, "T1", True)
        assert not await slack_state.set_uninstalled(s, "T1", True)  # already
        assert await journal.cancel_pending(s, "uninstalled") == 1
        await s.commit()
        assert await slack_state.uninstalled_teams(s) == {"T1"}
        assert await slack_state.clear_uninstalled(s) == 1
        assert await slack_state.uninstalled_teams(s) == set()
        a = await journal.by_key(s, "event:a")
        assert a is not None and (a.state, a.error) == ("failed", "revoked")
