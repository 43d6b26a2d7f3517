"""Due-date reminders: on the morning a note is due (its owner's time zone), its owner gets a
DM with Done and Snooze-a-day buttons.

The scheduler polls. For each person with notes, in the morning window of their own day
(BRAIN_REMINDER_TIME until WINDOW later), it finds their open notes due that day and claims
each (note, day) in the database; the claim and the delivery job are written in one
transaction, so a reminder is claimed once across restarts and replicas and, once claimed,
delivered by the journal's worker (retried, posted once). A morning the bot was down for
entirely is skipped, like a digest missed by hours.
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
RECHECK = timedelta(minutes=10)  # a person's vault is looked at again after this (per process)
TZ_MEMORY = timedelta(days=1)  # a user's Slack time zone is asked again after this
# Slack's users.info allows ~100 calls a minute (tier 4): a tick asks at most this many, so a
# first start among thousands of people spreads its questions over the ticks.
ASKS_PER_TICK = 50
# Reading a person's due notes costs ~5 ms (their vault brought up to date, four reads): a
# tick reads at most this many, so 10,000 people whose morning starts together are all read
# within the window's first hour, at ~2 % of a core, with turns going on between the ticks.
CHECKS_PER_TICK = 200
CATEGORIES = ("projects", "admin", "people", "ideas")

TzLookup = Callable[[str], Awaitable[str | None]]


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

    async def due_on(self, user_id: str, day: date) -> list[q.NoteRow]:
        """The user's open notes due on `day`."""
        store = self.core.store_for(user_id)
        await store.refresh()
        vault = store.index.key  # the database store shares one key across machines
        out = []
        async with self.core.db.session() as s:
            for category in CATEGORIES:
                for row in await q.notes(s, vault, category=category,
                                         due_on_or_before=day.isoformat()):
                    if (row.due_date or "")[:10] == day.isoformat() and row.status != "done":
                        out.append(row)
        return out

    async def claim(self, user_id: str, row: q.NoteRow, day: date) -> bool:
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
        self._checked: dict[str, datetime] = {}  # person -> when their notes were last read

    def _in_window(self, local: datetime) -> bool:
        hour, minute = self.core.settings.reminder_at
        start = datetime.combine(local.date(), time(hour, minute), tzinfo=local.tzinfo)
        return start <= local < start + WINDOW

    def _looked_into(self, zones: dict[str, str], now: datetime) -> list[tuple[str, datetime]]:
        """Whose notes this tick looks into, with their local time: people in their morning
        whose notes were not read lately (a few minutes ago: new notes due today are rare),
        those not read for longest first, at most CHECKS_PER_TICK (a morning of thousands is
        spread over the ticks, never one long burst)."""
        self._checked = {u: t for u, t in self._checked.items() if now - t < TZ_MEMORY}
        never = datetime.min.replace(tzinfo=UTC)
        ready = []
        for user, tz in zones.items():
            local = now.astimezone(ZoneInfo(tz))
            last = self._checked.get(user)
            if self._in_window(local) and (last is None or last.date() != now.date()
                                           or now - last >= RECHECK):
                ready.append((last or never, user, local))
        ready.sort(key=lambda r: (r[0], r[1]))
        return [(user, local) for _, user, local in ready[:CHECKS_PER_TICK]]

    async def tick(self) -> list[tuple[str, str, str]]:
        """Claim every reminder due now; returns (user, ref, day) of each claimed. One read
        for everyone's time zone and pause; Slack is asked at most ASKS_PER_TICK times, and
        at most CHECKS_PER_TICK people's notes are read."""
        now = self.now()
        claimed: list[tuple[str, str, str]] = []
        async with self.core.db.session() as s:
            people = await slack_state.slack_users_with_receipts(s)
            stopped = bool(await slack_state.uninstalled_teams(s))
        if stopped:
            return claimed
        awake = {user: row for user, row in people.items()  # (BRAIN_OWNER: the owner's)
                 if (row is None or row.paused_at is None) and self.core.has_vault(user)}
        zones = await self.reminders.zones(awake, self.tz_lookup, now, ASKS_PER_TICK)
        for user, local in self._looked_into(zones, now):
            self._checked[user] = now
            try:
                for row in await self.reminders.due_on(user, local.date()):
                    if await self.reminders.claim(user, row, local.date()):
                        claimed.append((user, row.id or row.path, local.date().isoformat()))
            except Exception:  # one person's trouble must not stop the others' reminders
                log.exception("reminders for %s failed this round", user)
        if claimed:
            log.info("%d reminder(s) claimed", len(claimed))
            self.wake()
        return claimed
