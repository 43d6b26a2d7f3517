"""Due-date reminders end to end, with an injected clock: one DM on the morning of the due
date in the owner's time zone (Slack's users.info), never twice (restarts, replicas), with
Done and Snooze-a-day buttons that change the note through the Brain."""

from __future__ import annotations

import asyncio
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.schedule.reminders import ASKS_PER_TICK, ReminderScheduler
from storage.repositories import receipts
from tests.e2e.bot_harness import Harness, running_bot
from tests.e2e.slack_harness import USER, button_press

TOKYO = ZoneInfo("Asia/Tokyo")  # what the fake users.info says
DUE = date(2027, 1, 5)
DM_CHANNEL = "D" + USER[1:]  # what the fake conversations.open answers


def at(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=TOKYO)


def scheduler(h: Harness, now: datetime) -> ReminderScheduler:
    return ReminderScheduler(h.brain.reminders, tz_lookup=h.bot.work.user_tz, wake=h.bot.worker.wake,
                             clock=lambda: now)


async def due_note(h: Harness, name: str = "Renew passport", category: str = "admin") -> str:
    await h.file_dm()  # the person has used the bot (captures): their vault is looked at
    fields = {"status": "todo"} if category == "admin" else {}
    note = await h.brain.store_for(USER).create(category, name,
                                                {**fields, "due_date": DUE.isoformat()}, "")
    assert note.id is not None
    return note.id


def reminders(h: Harness) -> list[dict[str, object]]:
    return [c.body for c in h.fake.calls_to("chat.postMessage")
            if c.body.get("channel") == DM_CHANNEL]


async def press(h: Harness, action: str, message: dict[str, object], trigger: str) -> None:
    actions = next(b for b in message["blocks"] if b["type"] == "actions")  # type: ignore
    value = next(e["value"] for e in actions["elements"] if e["action_id"] == action)
    ts = next(c.response["ts"] for c in h.fake.calls_to("chat.postMessage")
              if c.body is message and c.response)
    body = button_press("", "", user=USER, channel=DM_CHANNEL, message_ts=str(ts),
                        thread_ts=str(ts), response_url=h.fake.hook_url("r"),
                        action_id=action, value=value, trigger=trigger)
    assert (await h.send.action(body))[0] == 200
    await h.settle()


async def test_a_due_note_gets_one_reminder_on_its_local_morning(slack: Harness) -> None:
    entry_id = await due_note(slack)
    assert await scheduler(slack, at(DUE, 7, 59)).tick() == []  # not yet morning in Tokyo
    assert await scheduler(slack, at(DUE - timedelta(days=1), 8, 30)).tick() == []
    # 08:00 in Tokyo is 23:00 the day before in UTC: the owner's morning is what counts
    morning = at(DUE, 8, 0)
    assert morning.astimezone(ZoneInfo("UTC")).date() == DUE - timedelta(days=1)
    assert await scheduler(slack, morning).tick() == [(USER, entry_id, DUE.isoformat())]
    await slack.settle()
    (dm,) = reminders(slack)
    assert "Due today: Renew passport" in dm["text"]  # type: ignore[operator]
    actions = next(b for b in dm["blocks"] if b["type"] == "actions")  # type: ignore
    assert [e["action_id"] for e in actions["elements"]] == ["reminder_done", "reminder_snooze"]
    # never twice: later the same morning, and after a restart (a new scheduler)
    assert await scheduler(slack, morning + timedelta(hours=1)).tick() == []
    assert await scheduler(slack, morning + timedelta(minutes=5)).tick() == []
    await slack.settle()
    assert len(reminders(slack)) == 1
    slack.check_cards()


async def test_two_replicas_ticking_at_once_send_one_reminder(slack: Harness) -> None:
    await due_note(slack)
    morning = at(DUE, 8, 1)
    first, second = await asyncio.gather(scheduler(slack, morning).tick(),
                                         scheduler(slack, morning).tick())
    assert len(first) + len(second) == 1
    await slack.settle()
    assert len(reminders(slack)) == 1


async def test_snooze_moves_it_a_day_and_done_closes_it(slack: Harness) -> None:
    entry_id = await due_note(slack)
    await scheduler(slack, at(DUE, 8)).tick()
    await slack.settle()
    (dm,) = reminders(slack)
    await press(slack, "reminder_snooze", dm, "S1")
    (update,) = slack.fake.calls_to("chat.update")
    later = (DUE + timedelta(days=1)).isoformat()
    assert f"Snoozed: Renew passport is due {later}" in update.body["text"]
    note = await slack.brain.store_for(USER).get(entry_id)
    assert note.fields["due_date"] == later
    # the next morning it comes again, and Done closes it
    assert len(await scheduler(slack, at(DUE + timedelta(days=1), 9)).tick()) == 1
    await slack.settle()
    second = reminders(slack)[-1]
    await press(slack, "reminder_done", second, "D1")
    assert "Done: Renew passport" in slack.fake.calls_to("chat.update")[-1].body["text"]
    assert (await slack.brain.store_for(USER).get(entry_id)).status == "done"
    assert await scheduler(slack, at(DUE + timedelta(days=1), 10)).tick() == []
    slack.check_cards()


async def test_done_on_a_note_without_a_status_clears_its_due_date(slack: Harness) -> None:
    entry_id = await due_note(slack, "Sara's birthday", category="people")
    await scheduler(slack, at(DUE, 8)).tick()
    await slack.settle()
    await press(slack, "reminder_done", reminders(slack)[0], "D2")
    note = await slack.brain.store_for(USER).get(entry_id)
    assert note.fields.get("due_date") is None


async def test_a_note_closed_before_delivery_is_not_reminded(tmp_path: Path) -> None:
    async with running_bot(tmp_path, worker=False) as h:
        await h.brain.tools.call(user_id=USER, name="classify_and_capture",  # a capture:
                                arguments={"text": "Call the dentist"})  # the vault is known
        note = await h.brain.store_for(USER).create(
            "admin", "Renew passport", {"status": "todo", "due_date": DUE.isoformat()}, "")
        assert len(await scheduler(h, at(DUE, 8)).tick()) == 1  # claimed, not yet delivered
        await h.brain.tools.call(user_id=USER, name="update_entry",
                                arguments={"path": note.id, "updates": {"status": "done"}})
        h.bot.start(scheduler=False)
        await h.settle()
        assert reminders(h) == []


async def test_a_tick_asks_slack_the_time_zone_of_a_few_people_at_a_time(slack: Harness) -> None:
    """Many people with a note due on a first start: a tick asks users.info of at most
    ASKS_PER_TICK of them (Slack allows ~100 calls a minute), the others at the next ticks,
    each once a day; a person's reminder waits until their time zone is known, then comes
    once."""
    entry_id = await due_note(slack)
    others = [f"U{n:08d}" for n in range(2 * ASKS_PER_TICK)]  # before USER in order
    for user in others:
        await slack.brain.store_for(user).create("ideas", "Call the bank",
                                                 {"due_date": DUE.isoformat()}, "")
    asked = []
    sent = []
    for minute in range(4):
        sent += await scheduler(slack, at(DUE, 8, minute)).tick()
        asked.append(len(slack.fake.calls_to("users.info")))
    everyone = len(others) + 1
    assert asked == [ASKS_PER_TICK, 2 * ASKS_PER_TICK, everyone, everyone]
    assert [s for s in sent if s[0] == USER] == [(USER, entry_id, DUE.isoformat())]
    assert len(sent) == everyone  # (the fake users.info says Tokyo for everyone)


async def test_a_morning_of_many_people_costs_what_is_due_not_who_is_known(
        slack: Harness) -> None:
    """Thousands whose morning starts together, one of them with a note due: the first tick
    sends that reminder and asks Slack about no one else (a tick reads the notes due, then
    only their owners)."""
    entry_id = await due_note(slack)
    others = [f"U{n:08d}" for n in range(2000)]  # before USER in order
    async with slack.brain.core.db.session() as s:
        for n, user in enumerate(others):
            await receipts.add_receipt(s, user_id=user, original_text="hi", entry_id=f"e{n}",
                                       path="inbox/hi.md", category="inbox", confidence=None,
                                       status="filed")
        await s.commit()
    assert await scheduler(slack, at(DUE, 8)).tick() == [(USER, entry_id, DUE.isoformat())]
    assert len(slack.fake.calls_to("users.info")) == 1


async def test_a_due_note_in_a_folder_that_is_no_ones_vault_gets_no_reminder(
        slack: Harness, tmp_path: Path) -> None:
    """The index is shared with vaults that are not people's here (a `--vault` folder of
    the CLI, another vault root): their due notes remind no one."""
    await slack.file_dm()
    elsewhere = slack.brain.core.stores.store(tmp_path / "U0ELSEWHERE")
    await elsewhere.create("admin", "Someone else's passport",
                           {"status": "todo", "due_date": DUE.isoformat()}, "")
    assert await scheduler(slack, at(DUE, 8)).tick() == []


@pytest.mark.files_store
async def test_the_single_owners_note_edited_by_hand_is_reminded(tmp_path: Path) -> None:
    """BRAIN_OWNER: the vault is theirs, edited in Obsidian as much as through the bot. A due
    date typed into a note's file is seen by the next tick, after a restart too (no turn
    of theirs has looked at the vault since)."""
    async with running_bot(tmp_path, BRAIN_OWNER=USER) as h:
        vault = h.brain.store_for(USER).vault.root
        (vault / "admin").mkdir(parents=True, exist_ok=True)
        (vault / "admin" / "passport.md").write_text(
            f"---\nname: Renew passport\nstatus: todo\ndue_date: {DUE.isoformat()}\n---\n"
            "Photos first.\n", encoding="utf-8")
        sent = await scheduler(h, at(DUE, 8)).tick()
        assert [(user, day) for user, _, day in sent] == [(USER, DUE.isoformat())]
        await h.settle()
        assert len(reminders(h)) == 1 and "Renew passport" in str(reminders(h)[0]["text"])
