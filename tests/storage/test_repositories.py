"""Repositories over a real SQLite file: conversations, turns, messages, tool runs, captures,
processed events, digest subscriptions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from storage import repositories as repo
from storage.db import Database
from storage.errors import InvalidValue, NotFound
from storage.models import DigestSubscription, Message, Receipt
from tests.databases import fresh_url


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


async def new_conversation(db: Database, key: str = "cli:u1:abc", user: str = "u1") -> int:
    async with db.session() as s:
        row = await repo.get_or_create_conversation(s, key, user)
        await s.commit()
    return row.id


async def store_turn(db: Database, conversation_id: int, user_text: str,
                     extra: list[dict[str, Any]] | None = None) -> int:
    """A whole turn as the loop stores it: start, messages, finish, one commit."""
    async with db.session() as s:
        turn_id = await repo.start_turn(s, conversation_id, user_text)
        messages: list[dict[str, Any]] = [{"role": "user", "content": user_text}, *(extra or []),
                    {"role": "assistant", "content": f"re: {user_text}"}]
        await repo.save_messages(s, conversation_id, turn_id, messages)
        await repo.finish_turn(s, turn_id, f"re: {user_text}", "ok", 10, 5, 1)
        await s.commit()
    return turn_id


# --- conversations ---------------------------------------------------------------------------


async def test_get_or_create_conversation_is_idempotent(db: Database) -> None:
    async with db.session() as s:
        first = await repo.get_or_create_conversation(s, "slack:C1:1.0", "U1", "C1", "1.0")
        again = await repo.get_or_create_conversation(s, "slack:C1:1.0", "U1", "C1", "1.0")
        await s.commit()
    assert first == again
    assert (first.channel, first.thread_ts, first.user_id) == ("C1", "1.0", "U1")
    assert first.created_at.tzinfo is not None
    async with db.session() as s:
        assert await repo.get_conversation(s, "slack:C1:1.0") == first
        assert await repo.get_conversation_by_id(s, first.id) == first
        assert await repo.get_conversation(s, "slack:C1:2.0") is None


async def test_concurrent_get_or_create_makes_one_conversation(db: Database) -> None:
    async def one() -> int:
        async with db.session() as s:
            row = await repo.get_or_create_conversation(s, "slack:C1:9.9", "U1")
            await s.commit()
        return row.id

    ids = await asyncio.gather(*(one() for _ in range(10)))
    assert len(set(ids)) == 1


async def test_recent_conversations_newest_activity_first_titled_by_last_user_text(
        db: Database) -> None:
    older = await new_conversation(db, "cli:u1:a")
    newer = await new_conversation(db, "cli:u1:b")
    await new_conversation(db, "cli:someone-else:c", user="u2")
    await store_turn(db, newer, "first thing")
    await store_turn(db, older, "old one gets a new message\nwith two lines " + "x" * 100)
    async with db.session() as s:
        rows = await repo.recent_conversations(s, "u1")
    assert [r.id for r in rows] == [older, newer]
    assert rows[0].title is not None and rows[0].title.startswith(
        "old one gets a new message with two lines")
    assert len(rows[0].title) <= repo.TITLE_CHARS
    assert rows[1].title == "first thing"
    async with db.session() as s:
        assert len(await repo.recent_conversations(s, "u1", limit=1)) == 1


async def test_touch_conversation_moves_it_to_the_top(db: Database) -> None:
    a = await new_conversation(db, "cli:u1:a")
    await new_conversation(db, "cli:u1:b")
    async with db.session() as s:
        await repo.touch_conversation(s, a)
        await s.commit()
    async with db.session() as s:
        assert (await repo.recent_conversations(s, "u1"))[0].id == a


async def test_empty_key_is_refused(db: Database) -> None:
    async with db.session() as s:
        with pytest.raises(InvalidValue):
            await repo.get_or_create_conversation(s, " ", "u1")


# --- turns and messages ----------------------------------------------------------------------


async def test_recent_turn_messages_returns_whole_turns_in_order(db: Database) -> None:
    conversation = await new_conversation(db)
    tool_round: list[dict[str, Any]] = [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "name": "list_entries", "arguments": {}}]},
        {"role": "tool", "tool_results": [{"call_id": "c1", "content": "{}"}]},
    ]
    for i in range(5):
        await store_turn(db, conversation, f"turn {i}", tool_round if i % 2 else None)
    async with db.session() as s:
        turns = await repo.recent_turn_messages(s, conversation, 3)
    assert [t[0].content for t in turns] == ["turn 2", "turn 3", "turn 4"]
    for t in turns:
        assert t[0].role == "user" and t[-1].role == "assistant"
        assert len({m.turn_id for m in t}) == 1
        assert [m.seq for m in t] == sorted(m.seq for m in t)
    assert [m.role for m in turns[1]] == ["user", "assistant", "tool", "assistant"]
    assert turns[1][1].tool_calls == tool_round[0]["tool_calls"]
    assert turns[1][2].tool_results == tool_round[1]["tool_results"]
    async with db.session() as s:
        assert len(await repo.recent_turn_messages(s, conversation, 50)) == 5
        assert await repo.recent_turn_messages(s, conversation, 0) == []


async def test_a_turn_rolled_back_leaves_no_messages(db: Database) -> None:
    conversation = await new_conversation(db)
    await store_turn(db, conversation, "kept")
    async with db.session() as s:
        turn_id = await repo.start_turn(s, conversation, "lost")
        await repo.save_messages(s, conversation, turn_id, [{"role": "user", "content": "lost"}])
        await s.rollback()
    async with db.session() as s:
        turns = await repo.recent_turn_messages(s, conversation, 10)
    assert [[m.content for m in t] for t in turns] == [["kept", "re: kept"]]


async def test_bad_message_role_writes_nothing(db: Database) -> None:
    conversation = await new_conversation(db)
    async with db.session() as s:
        turn_id = await repo.start_turn(s, conversation, "hi")
        with pytest.raises(InvalidValue, match="role"):
            await repo.save_messages(s, conversation, turn_id, [
                {"role": "user", "content": "ok"}, {"role": "robot", "content": "no"}])
        count = await s.scalar(select(func.count()).select_from(Message))
    assert count == 0


async def test_turns_need_an_existing_conversation_and_turn(db: Database) -> None:
    conversation = await new_conversation(db)
    async with db.session() as s:
        with pytest.raises(NotFound):
            await repo.start_turn(s, 12345, "hi")
        with pytest.raises(NotFound):
            await repo.finish_turn(s, 999, "x", "ok", 0, 0, 0)
        with pytest.raises(NotFound):
            await repo.save_messages(s, conversation, 999, [{"role": "user", "content": "x"}])
        turn_id = await repo.start_turn(s, conversation, "hi")
        with pytest.raises(InvalidValue):
            await repo.finish_turn(s, turn_id, "x", "ok", -1, 0, 0)


async def test_turns_for_log_with_tool_runs(db: Database) -> None:
    a = await new_conversation(db, "cli:u1:a")
    b = await new_conversation(db, "cli:u1:b")
    first = await store_turn(db, a, "capture this")
    second = await store_turn(db, b, "list things")
    t0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone(timedelta(hours=2)))
    async with db.session() as s:
        await repo.add_tool_run(s, first, "c2", "get_entry", {"path": "x"}, "error", None,
                                {"code": "not_found", "message": "no x"},
                                t0 + timedelta(seconds=1), 3.5)
        await repo.add_tool_run(s, first, "c1", "classify_and_capture", {"text": "t"}, "ok",
                                {"path": "ideas/t.md"}, None, t0, 12.25)
        await s.commit()
    async with db.session() as s:
        log = await repo.turns_for_log(s)
        only_a = await repo.turns_for_log(s, conversation_id=a)
    assert [t.id for t in log] == [second, first]
    assert [t.id for t in only_a] == [first]
    turn = only_a[0]
    assert (turn.reply_text, turn.status, turn.input_tokens, turn.output_tokens,
            turn.llm_calls) == ("re: capture this", "ok", 10, 5, 1)
    assert turn.finished_at is not None and turn.finished_at >= turn.created_at
    assert [r.call_id for r in turn.tool_runs] == ["c1", "c2"]
    ok, err = turn.tool_runs
    assert ok.started_at == t0 and ok.started_at.tzinfo == UTC
    assert ok.result == {"path": "ideas/t.md"} and ok.duration_ms == 12.25
    assert err.error == {"code": "not_found", "message": "no x"} and err.result is None
    assert log[0].tool_runs == ()


async def test_add_tool_run_refuses_bad_input(db: Database) -> None:
    conversation = await new_conversation(db)
    turn_id = await store_turn(db, conversation, "x")
    now = datetime.now(UTC)
    async with db.session() as s:
        with pytest.raises(InvalidValue):
            await repo.add_tool_run(s, turn_id, "c", "t", {}, "maybe", None, None, now, 1)
        with pytest.raises(InvalidValue, match="timezone"):
            await repo.add_tool_run(s, turn_id, "c", "t", {}, "ok", None, None,
                                    datetime(2025, 1, 1), 1)
        with pytest.raises(NotFound):
            await repo.add_tool_run(s, 999, "c", "t", {}, "ok", None, None, now, 1)


@settings(max_examples=15, deadline=None)
@given(batches=st.lists(st.tuples(st.sampled_from([0, 1]), st.integers(1, 4)),
                        min_size=1, max_size=8))
def test_seq_is_contiguous_per_conversation_and_turns_come_back_in_order(
        tmp_path_factory: pytest.TempPathFactory, batches: list[tuple[int, int]]) -> None:
    """Whatever the interleaving of turns across two conversations, each conversation's
    messages are numbered 0..n-1 in the order saved, and come back grouped by whole turn."""

    async def scenario() -> None:
        path = tmp_path_factory.mktemp("prop")
        database = await Database.open(fresh_url(path))
        try:
            convs = [await new_conversation(database, f"cli:u:{i}") for i in range(2)]
            expected: dict[int, list[list[str]]] = {c: [] for c in convs}
            for n, (which, size) in enumerate(batches):
                conv = convs[which]
                contents = [f"{n}.{i}" for i in range(size)]
                async with database.session() as s:
                    turn_id = await repo.start_turn(s, conv, contents[0])
                    await repo.save_messages(s, conv, turn_id,
                                             [{"role": "user", "content": c} for c in contents])
                    await s.commit()
                expected[conv].append(contents)
            async with database.session() as s:
                for conv in convs:
                    seqs = (await s.scalars(select(Message.seq)
                                            .where(Message.conversation_id == conv)
                                            .order_by(Message.id))).all()
                    assert list(seqs) == list(range(len(seqs)))
                    turns = await repo.recent_turn_messages(s, conv, len(batches))
                    assert [[m.content for m in t] for t in turns] == expected[conv]
        finally:
            await database.close()

    asyncio.run(scenario())


# --- receipts --------------------------------------------------------------------------------


async def add(db: Database, entry_id: str, **kw: object) -> int:
    values: dict[str, object] = {
        "user_id": "u1", "original_text": "call Sam", "entry_id": entry_id,
        "path": "people/sam.md", "category": "people", "confidence": 0.9, "status": "filed"}
    values.update(kw)
    async with db.session() as s:
        capture_id = await repo.add_receipt(s, **values)  # type: ignore[arg-type]
        await s.commit()
    return capture_id


async def test_capture_receipt_round_trip_and_fix(db: Database) -> None:
    conversation = await new_conversation(db, "slack:C1:1.0")
    first = await add(db, "e_1", conversation_id=conversation, channel="C1", thread_ts="1.0")
    await add(db, "e_2", conversation_id=conversation, path="inbox/x.md", category="inbox",
              confidence=0.3, status="needs_review")
    await add(db, "e_3")  # another conversation (CLI, none)
    async with db.session() as s:
        await repo.set_receipt_message(s, first, "1.5")
        await s.commit()
    async with db.session() as s:
        in_thread = await repo.receipts_for_conversation(s, conversation)
        assert [c.entry_id for c in in_thread] == ["e_1", "e_2"]
        assert (in_thread[0].channel, in_thread[0].thread_ts, in_thread[0].message_ts) == (
            "C1", "1.0", "1.5")
        fixed = await repo.mark_receipt(s, "e_2", "fixed", path="projects/x.md",
                                        category="projects")
        await s.commit()
    assert fixed is not None
    assert (fixed.status, fixed.path, fixed.category) == ("fixed", "projects/x.md", "projects")
    async with db.session() as s:
        again = await repo.receipt_for_entry(s, "e_2")
        untouched = await repo.receipt_for_entry(s, "e_1")
        assert await repo.receipt_for_entry(s, "e_missing") is None
        assert await repo.mark_receipt(s, "e_missing", "fixed") is None
    assert again == fixed
    assert again.updated_at >= again.created_at
    assert untouched is not None and untouched.status == "filed"


async def test_capture_for_entry_is_the_latest(db: Database) -> None:
    await add(db, "e_1", original_text="first")
    await add(db, "e_1", original_text="second")
    async with db.session() as s:
        row = await repo.receipt_for_entry(s, "e_1")
    assert row is not None and row.original_text == "second"


async def test_bad_capture_is_refused_and_writes_nothing(db: Database) -> None:
    async with db.session() as s:
        with pytest.raises(InvalidValue, match="status"):
            await repo.add_receipt(s, user_id="u1", original_text="x", entry_id="e", path="p",
                                   category="ideas", confidence=0.5, status="lost")
        with pytest.raises(InvalidValue, match="confidence"):
            await repo.add_receipt(s, user_id="u1", original_text="x", entry_id="e", path="p",
                                   category="ideas", confidence=1.5, status="filed")
        await s.commit()
    await add(db, "e_ok")
    async with db.session() as s:
        with pytest.raises(InvalidValue):
            await repo.mark_receipt(s, "e_ok", "gone")
        with pytest.raises(NotFound):
            await repo.set_receipt_message(s, 999, "1.0")
        assert await s.scalar(select(func.count()).select_from(Receipt)) == 1
        row = await repo.receipt_for_entry(s, "e_ok")
    assert row is not None and row.status == "filed"


async def test_captures_since_newest_first_for_that_user(db: Database) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    await add(db, "e_1")
    await add(db, "e_2")
    await add(db, "e_other", user_id="u2")
    async with db.session() as s:
        rows = await repo.receipts_since(s, "u1", before)
        assert [r.entry_id for r in rows] == ["e_2", "e_1"]
        assert [r.entry_id for r in await repo.receipts_since(s, "u1", before, limit=1)] == [
            "e_2"]
        # Another zone for the same instant compares the same.
        later = datetime.now(timezone(timedelta(hours=-7))) + timedelta(seconds=1)
        assert await repo.receipts_since(s, "u1", later) == []
        with pytest.raises(InvalidValue):
            await repo.receipts_since(s, "u1", datetime(2025, 1, 1))


# --- digest subscriptions --------------------------------------------------------------------


async def test_subscription_upsert_is_unique_per_user_and_kind(db: Database) -> None:
    sent = datetime(2025, 3, 3, 8, 0, tzinfo=UTC)
    async with db.session() as s:
        daily = await repo.upsert_subscription(s, "u1", "daily", 8, 0, None, "Europe/Berlin", "D1")
        await repo.mark_sent(s, daily.id, sent)
        changed = await repo.upsert_subscription(s, "u1", "daily", 7, 30, 4, "UTC", None)
        weekly = await repo.upsert_subscription(s, "u1", "weekly", 9, 15, 0, "UTC", "D1")
        other = await repo.upsert_subscription(s, "u2", "daily", 8, 0, None, "UTC", None)
        await s.commit()
    assert changed.id == daily.id
    assert (changed.hour, changed.minute, changed.tz, changed.channel) == (7, 30, "UTC", None)
    assert changed.weekday is None  # daily ignores the weekday
    assert changed.last_sent_at == sent  # a change does not resend today's digest
    assert weekly.id != daily.id and weekly.weekday == 0
    async with db.session() as s:
        subs = await repo.list_subscriptions(s)
        assert [(x.user_id, x.kind) for x in subs] == [("u1", "daily"), ("u1", "weekly"),
                                                        ("u2", "daily")]
        assert await s.scalar(select(func.count()).select_from(DigestSubscription)) == 3
        assert await repo.delete_subscriptions(s, "u1", "weekly") == 1
        assert await repo.delete_subscriptions(s, "u1") == 1
        assert await repo.delete_subscriptions(s, "u1") == 0
        await s.commit()
    async with db.session() as s:
        assert [x.id for x in await repo.list_subscriptions(s)] == [other.id]


@pytest.mark.parametrize(("kind", "hour", "minute", "weekday", "tz", "match"), [
    ("hourly", 8, 0, None, "UTC", "kind"),
    ("daily", 24, 0, None, "UTC", "hour"),
    ("daily", 8, 60, None, "UTC", "minute"),
    ("weekly", 8, 0, None, "UTC", "weekday"),
    ("weekly", 8, 0, 7, "UTC", "weekday"),
    ("daily", 8, 0, None, "Mars/Olympus", "time zone"),
])
async def test_bad_subscription_is_refused_and_writes_nothing(
        db: Database, kind: str, hour: int, minute: int, weekday: int | None, tz: str,
        match: str) -> None:
    async with db.session() as s:
        with pytest.raises(InvalidValue, match=match):
            await repo.upsert_subscription(s, "u1", kind, hour, minute, weekday, tz, None)
        assert await repo.list_subscriptions(s) == []


async def test_mark_sent_needs_an_aware_time_and_a_subscription(db: Database) -> None:
    async with db.session() as s:
        with pytest.raises(NotFound):
            await repo.mark_sent(s, 42, datetime.now(UTC))
        sub = await repo.upsert_subscription(s, "u1", "daily", 8, 0, None, "UTC", None)
        with pytest.raises(InvalidValue):
            await repo.mark_sent(s, sub.id, datetime(2025, 1, 1))
