"""Due-date reminders: on the morning a note is due (its owner's time zone), its owner gets a
DM with Done and Snooze-a-day buttons.

The scheduler polls. Each tick reads, in one statement over the index of every vault, the
open notes due on the days whose reminder morning is under way in some time zone (one day,
two in the evening hours UTC: `morning_days`) and not claimed yet; for those whose owner is in the morning window of their own day
(BRAIN_REMINDER_TIME until WINDOW later) and whose due date is that day, it claims the (note,
day) in the database; the claim and the delivery job are written in one transaction, so a
reminder is claimed once across restarts and replicas and, once claimed, delivered by the
journal's worker (retried, posted once). A tick's work grows with the notes due, not with the
people the bot knows. A morning the bot was down for entirely is skipped, like a digest
missed by hours.

What the index says is due: a note written through the bot is in it at once (either store);
in the file store a note edited by hand in its file is seen once the background indexer has
looked at that vault (the people this process served lately, every few seconds) or the
person's next turn has, and the single owner's vault (BRAIN_OWNER) is looked at by each tick.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.core import Core
from bot.jobs.queue import JobKind
from bot.schedule.ticker import Ticker
from bot.turn.tool_calls import ToolCalls
from storage.repositories import digest_data as q
from storage.repositories import journal, slack_state
from storage.types import STATUS_VALUES, Entry
from tools.registry import Execution

log = logging.getLogger(__name__)

WINDOW = timedelta(hours=4)  # "the morning": from the reminder time on
EARLIEST_ZONE = timedelta(hours=14)  # UTC+14 (Kiribati) lives a day first
LATEST_ZONE = timedelta(hours=12)  # UTC-12 last
TZ_MEMORY = timedelta(days=1)  # a user's Slack time zone is asked again after this
# Slack's users.info allows ~100 calls a minute (tier 4): a tick asks at most this many, so a
# first start among thousands of people spreads its questions over the ticks.
ASKS_PER_TICK = 50
CATEGORIES = ("projects", "admin", "people", "ideas")

TzLookup = Callable[[str], Awaitable[str | None]]


def morning_days(now: datetime, reminder_at: tuple[int, int]) -> list[str]:
    """The days (YYYY-MM-DD) whose reminder morning is under way in some time zone at
    `now`: one, or two in the hours when the earliest zones' next morning has begun while
    the latest zones' is not over (zones run from UTC-12 to UTC+14)."""
    hour, minute = reminder_at
    start = timedelta(hours=hour, minutes=minute)
    now = now.astimezone(UTC)
    days = []
    for n in (-1, 0, 1):
        day = now.date() + timedelta(days=n)
        midnight = datetime.combine(day, time(0), tzinfo=UTC)
        if midnight + start - EARLIEST_ZONE <= now < midnight + start + WINDOW + LATEST_ZONE:
            days.append(day.isoformat())
    return days


def reminder_key(user_id: str, ref: str, day: str) -> str:
    digest = hashlib.sha256(ref.encode()).hexdigest()[:16]
    return f"reminder:{user_id}:{day}:{digest}"


class Reminders:
    """The operations behind reminders, for the scheduler and the buttons."""

    def __init__(self, core: Core, tools: ToolCalls) -> None:
        self.core = core
        self.tools = tools

    def scheduler(self, *, tz_lookup: TzLookup | None, wake: Callable[[], None],
                  clock: Callable[[], datetime], poll_seconds: float = 60) -> ReminderScheduler:
        """The scheduler that claims each morning's reminders for the journal's worker."""
        return ReminderScheduler(self, tz_lookup=tz_lookup, wake=wake, clock=clock,
                                 poll_seconds=poll_seconds)

    async def tz_for(self, user_id: str, lookup: TzLookup | None = None,
                     now: datetime | None = None) -> str:
        """The user's time zone: Slack's (users.info, remembered a day), else BRAIN_TZ."""
        now = now or datetime.now(UTC)
        async with self.core.db.session() as s:
            row = await slack_state.get_user(s, user_id)
        zones = await self.zones({user_id: row}, lookup, now)
        return zones.get(user_id, self.zone(None))

    def zone(self, tz: str | None) -> str:
        """`tz` when it names a time zone, else BRAIN_TZ."""
        try:
            ZoneInfo(tz or "")
            return str(tz)
        except (ZoneInfoNotFoundError, ValueError):
            return str(self.core.settings.tz)

    async def zones(self, people: dict[str, slack_state.SlackUserRow | None],
                    lookup: TzLookup | None, now: datetime,
                    asks: int | None = None) -> dict[str, str]:
        """Each person's time zone: what Slack said within a day; else asked again (at most
        `asks` of them, the rest keep what Slack said before, and those it never said
        anything of wait for a later call); without `lookup`, BRAIN_TZ."""
        zones: dict[str, str] = {}
        said: dict[str, str | None] = {}
        for user, row in people.items():
            fresh = row is not None and row.tz_checked_at is not None \
                and now - row.tz_checked_at < TZ_MEMORY
            if fresh or lookup is None:
                zones[user] = self.zone(row.tz if row is not None else None)
            elif asks is None or len(said) < asks:
                said[user] = await lookup(user)
                zones[user] = self.zone(said[user])
            elif row is not None and row.tz_checked_at is not None:
                zones[user] = self.zone(row.tz)
        if said:
            async with self.core.db.session() as s:
                for user, tz in said.items():
                    await slack_state.set_tz(s, user, tz, now)
                await s.commit()
        return zones

    async def due_around(self, now: datetime) -> dict[str, list[q.DueNote]]:
        """Each person's open notes due on a day whose reminder morning is under way
        somewhere at `now`, not yet claimed for that day; by person."""
        days = morning_days(now, self.core.settings.reminder_at)
        await self._look_at_the_owners_vault()
        async with self.core.db.session() as s:
            found = await q.due_in_any_vault(s, days, CATEGORIES)
            claimed = await slack_state.claimed_reminders(s, days)
        out: dict[str, list[q.DueNote]] = {}
        for note in found:
            person = self.core.person_of(note.vault)
            if person is not None and (person, note.id or note.path, note.due_date) not in claimed:
                out.setdefault(person, []).append(note)
        return out

    async def _look_at_the_owners_vault(self) -> None:
        """The single owner's vault is brought up to date (its hand edits seen; a look at its
        files, no database work while they are unchanged); many people's are left to the
        indexer and their turns."""
        owner = self.core.settings.owner
        if owner and self.core.settings.store != "database":
            await self.core.store_for(owner).look()

    async def claim(self, user_id: str, row: q.DueNote, day: date) -> bool:
        """Claim the reminder and record its delivery job, in one transaction."""
        ref = row.id or row.path
        async with self.core.db.session() as s:
            if not await slack_state.claim_reminder(s, user_id, ref, day.isoformat()):
                return False
            await journal.record(s, key=reminder_key(user_id, ref, day.isoformat()),
                                 kind=JobKind.REMINDER, user_id=user_id, lane=f"reminder:{user_id}",
                                 payload={"user": user_id, "ref": ref, "day": day.isoformat(),
                                          "name": row.name})
            await s.commit()
        return True

    async def still_due(self, user_id: str, ref: str, day: str) -> Entry | None:
        """The note, if it is still open and due on `day` (else None: nothing to remind)."""
        try:
            entry = await self.core.store_for(user_id).get(ref)
        except Exception:  # gone, moved out of reach, unreadable: no reminder
            return None
        due = str(entry.fields.get("due_date") or "")[:10]
        return entry if due == day and entry.status != "done" else None

    async def done(self, user_id: str, ref: str) -> Execution:
        """Done: status done where the category has one, else the due date is cleared."""
        entry = await self.core.store_for(user_id).get(ref)
        allowed = STATUS_VALUES.get(entry.category or "", ())
        updates: dict[str, Any] = {"status": "done"} if "done" in allowed else {"due_date": None}
        return await self._update(user_id, entry.id or entry.path, updates)

    async def snooze(self, user_id: str, ref: str, day: str) -> Execution:
        """Snooze a day: due the day after the reminder's day (the same however often)."""
        later = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
        return await self._update(user_id, ref, {"due_date": later})

    async def _update(self, user_id: str, ref: str, updates: dict[str, Any]) -> Execution:
        return await self.tools.call(user_id=user_id, name="update_entry", source="slack",
                                     arguments={"path": ref, "updates": updates})


class ReminderScheduler(Ticker):
    """Polls and claims due reminders; `wake()` tells the worker new jobs are there."""

    what = "reminder"

    def __init__(self, reminders: Reminders, *, tz_lookup: TzLookup | None,
                 wake: Callable[[], None], clock: Callable[[], datetime],
                 poll_seconds: float = 60) -> None:
        super().__init__(clock, poll_seconds)
        self.reminders = reminders
        self.core = reminders.core
        self.tz_lookup = tz_lookup
        self.wake = wake

    def _in_window(self, local: datetime) -> bool:
        hour, minute = self.core.settings.reminder_at
        start = datetime.combine(local.date(), time(hour, minute), tzinfo=local.tzinfo)
        return start <= local < start + WINDOW

    def _in_their_morning(self, row: q.DueNote, zone: str, now: datetime) -> date | None:
        """The day to remind `row` on, when it is that day's morning where its owner is."""
        local = now.astimezone(ZoneInfo(zone))
        return local.date() if self._in_window(local) and \
            row.due_date == local.date().isoformat() else None

    async def tick(self) -> list[tuple[str, str, str]]:
        """Claim every reminder due now; returns (user, ref, day) of each claimed. Reads the
        notes due around today in one statement, and only their owners' time zones and
        pauses; Slack is asked at most ASKS_PER_TICK times."""
        now = self.now()
        claimed: list[tuple[str, str, str]] = []
        due = await self.reminders.due_around(now)
        if not due:
            return claimed
        async with self.core.db.session() as s:
            people = await slack_state.slack_users(s, due)
            stopped = bool(await slack_state.uninstalled_teams(s))
        if stopped:
            return claimed
        awake = {user: row for user, row in people.items() if row is None or row.paused_at is None}
        zones = await self.reminders.zones(awake, self.tz_lookup, now, ASKS_PER_TICK)
        for user, zone in zones.items():
            try:
                for row in due[user]:
                    day = self._in_their_morning(row, zone, now)
                    if day is not None and await self.reminders.claim(user, row, day):
                        claimed.append((user, row.id or row.path, day.isoformat()))
            except Exception:  # one person's trouble must not stop the others' reminders
                log.exception("reminders for %s failed this round", user)
        if claimed:
            log.info("%d reminder(s) claimed", len(claimed))
            self.wake()
        return claimed
