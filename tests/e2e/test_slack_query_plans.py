"""What a DM costs must not grow with the workspace: every statement a thought, a correction
in its thread, a button on its card and a question run reads its rows through an index, never
a whole table that holds everyone's rows (receipts, jobs, conversations, turns, messages, the
index of notes). Without its index a turn's read of the thread's receipts walked every
person's receipts: a capture by one of 3,000 people read 3,000 rows (docs/performance.md,
"Many people on one replica"). The plans are checked, not the time: SQLite's planner picks
the same plan for a table of ten rows as for a million (no statistics are gathered).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.engine import Engine

from tests.databases import on_postgres
from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import (
    DM,
    USER,
    button_press,
    home_opened,
    message_event,
    payload,
    posted_entry_id,
)

# "Is there another vault?" (storage/index/fuzzy_names.py) walks the vaults' key index and
# stops at the first that is not this one: two rows at most, whatever the number of vaults.
BOUNDED = re.compile(r"WHERE vault <> (\?|\$\d+)\s+LIMIT 1")


@contextmanager
def statements() -> Iterator[dict[str, Any]]:
    """Every statement any engine of this process runs in the block, with its parameters."""
    seen: dict[str, Any] = {}

    def record(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        seen.setdefault(statement, params)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


async def whole_tables(slack: Harness, seen: dict[str, Any]) -> dict[str, list[str]]:
    """statement -> the steps of its plan that read one of our tables whole."""
    walks: dict[str, list[str]] = {}
    async with slack.brain.core.db.engine.connect() as conn:
        tables = {t.lower() for t in await conn.run_sync(lambda c: inspect(c).get_table_names())}
        if on_postgres():
            await conn.exec_driver_sql("SET enable_seqscan = off")
        read = _postgres_walks if on_postgres() else _sqlite_walks
        for statement, params in seen.items():
            if not statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE",
                                                          "INSERT", "WITH")):
                continue
            steps = [(table, step) for table, step in await read(conn, statement, params)
                     if table in tables
                     and not (BOUNDED.search(statement) and table == "index_vaults")]
            if steps:
                walks[" ".join(statement.split())[:300]] = [step for _, step in steps]
        await conn.rollback()
    return walks


async def _sqlite_walks(conn: Any, statement: str, params: Any) -> list[tuple[str, str]]:
    """(table, step) of SQLite's plan that scan a table (FTS5's own index aside)."""
    plan = (await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params)).all()
    return [(step[3].split()[1].lower(), step[3]) for step in plan
            if step[3].startswith("SCAN ") and "VIRTUAL TABLE" not in step[3]]


async def _postgres_walks(conn: Any, statement: str, params: Any) -> list[tuple[str, str]]:
    """(table, step) that PostgreSQL would still read whole with sequential scans discouraged
    (its planner prefers them for small tables: told not to, it takes an index wherever one
    can serve): a sequential scan, or an index walked end to end."""
    (plan,) = (await conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, params)).one()
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return [(str(node["Relation Name"]).lower(), f"{node['Node Type']} on {node['Relation Name']}")
            for node in _nodes(plan[0]["Plan"]) if "Relation Name" in node
            and node["Node Type"] in ("Seq Scan", "Index Scan", "Index Only Scan")
            and "Index Cond" not in node]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


async def test_a_dm_and_its_thread_read_no_table_whole(slack: Harness) -> None:
    with statements() as seen:
        await slack.send.event(message_event("Idea: a podcast about urban gardening",
                                             ts="1767263000.000100", event_id="EvP1"))
        (card,) = await slack.fake.wait_for("chat.postMessage")
        await slack.send.event(message_event("fix: projects", ts="1767263001.000100",
                                             event_id="EvP2", thread_ts="1767263000.000100"))
        await slack.fake.wait_for("chat.postMessage", count=2)
        await slack.send.action(button_press(
            posted_entry_id(card.body["blocks"]), "ideas", user=USER, channel=DM,
            message_ts=str((card.response or {})["ts"]), thread_ts="1767263000.000100",
            response_url=slack.fake.hook_url("p1")))
        await slack.send.event(message_event("what do I have about gardening?",
                                             ts="1767263002.000100", event_id="EvP3"))
        await slack.fake.wait_for_reply(3)
        await slack.settle()
    assert len(seen) > 20  # the turns' statements were seen
    assert await whole_tables(slack, seen) == {}


async def test_app_home_and_digests_read_no_table_whole(slack: Harness) -> None:
    await slack.file_dm()
    with statements() as seen:
        assert (await slack.send.event(home_opened(event_id="EvPH1")))[0] == 200
        await slack.fake.wait_for("views.publish")
        for n, words in enumerate(("subscribe daily 07:30", "status", "")):  # "": one now
            fields = payload("slash_command_digest_weekly.json")
            fields.update(text=words, response_url=slack.fake.hook_url(f"d{n}"),
                          trigger_id=f"trig-d{n}")
            assert (await slack.send.command(fields))[0] == 200
            await slack.fake.wait_for(f"hook:d{n}")
            await slack.settle()
    assert len(seen) > 10
    assert await whole_tables(slack, seen) == {}


async def test_the_schedulers_ticks_read_no_table_whole(slack: Harness) -> None:
    """The digest tick (the subscriptions due) and the reminder tick (the notes due on the
    days whose morning is under way, their owners, the claims) with a reminder and a digest
    sent: one person's rows, or the ones due, never everyone's."""
    from datetime import date

    from bot.schedule.reminders import ReminderScheduler
    from tests.e2e.test_slack_reminders import at, due_note

    await due_note(slack)
    fields = payload("slash_command_digest_weekly.json")
    fields.update(text="subscribe daily 07:30", response_url=slack.fake.hook_url("sub"))
    assert (await slack.send.command(fields))[0] == 200
    await slack.fake.wait_for("hook:sub")
    await slack.settle()
    morning = at(date(2027, 1, 5), 8, 30)  # the due day's morning in Tokyo
    with statements() as seen:
        reminders = ReminderScheduler(slack.brain.reminders, tz_lookup=slack.bot.work.user_tz,
                                      wake=slack.bot.worker.wake, clock=lambda: morning)
        assert len(await reminders.tick()) == 1
        digests = slack.brain.digests.scheduler(
            wake=slack.bot.wake, clock=lambda: morning.replace(hour=7, minute=31))
        assert len(await digests.tick()) == 1  # the 07:30 digest, a minute late
        await slack.settle()
    assert len(seen) > 5
    assert await whole_tables(slack, seen) == {}
