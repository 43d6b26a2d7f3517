"""What the bot keeps of Slack besides notes and conversations (migration 0005): each user's
time zone, whether they opened the App Home, whether they are paused (their token was
revoked); whether the workspace uninstalled the app; and the claim of each due-date reminder.

Every function takes an explicit `AsyncSession`; the caller commits. Portable SQL only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import DateTime, column, delete, select, table
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue
from storage.models import Reminder, SlackHome, SlackTeam, SlackUser, utcnow
from storage.repositories.common import aware, not_empty, rowcount

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Slack people: a Slack user id (U..., W... on Enterprise Grid), or the person key of someone
# of another workspace (`T123-U456`, bot/tenancy/people.py); CLI users such as "local" are not Slack's.
SLACK_USER = re.compile(r"^(?:[TE][A-Z0-9]{2,31}-)?[UW][A-Z0-9]{2,63}$")


@dataclass(frozen=True)
class SlackUserRow:
    user_id: str
    tz: str | None
    tz_checked_at: datetime | None
    home_opened_at: datetime | None
    paused_at: datetime | None
    model: str | None = None  # the LLM config id they chose; None: the app's default


def _row(u: SlackUser) -> SlackUserRow:
    return SlackUserRow(u.user_id, u.tz, u.tz_checked_at, u.home_opened_at, u.paused_at,
                        u.model)


async def _user(s: AsyncSession, user_id: str) -> SlackUser:
    """The user's row, made when missing (a concurrent maker wins; its row is read)."""
    not_empty(user_id, "user_id")
    found = await s.get(SlackUser, user_id, populate_existing=True)
    if found is not None:
        return found
    try:
        async with s.begin_nested():
            row = SlackUser(user_id=user_id, updated_at=utcnow())
            s.add(row)
        return row
    except IntegrityError:
        again = await s.get(SlackUser, user_id, populate_existing=True)
        if again is None:
            raise
        return again


async def get_user(s: AsyncSession, user_id: str) -> SlackUserRow | None:
    found = await s.get(SlackUser, user_id, populate_existing=True)
    return _row(found) if found is not None else None


async def returned(s: AsyncSession, user_id: str) -> tuple[SlackUserRow | None, bool]:
    """The person wrote to the bot: their row as it was read, and True when a pause of
    theirs ended (in the caller's transaction, which commits)."""
    row = await get_user(s, user_id)
    if row is None or row.paused_at is None:
        return row, False
    await set_paused(s, user_id, False)
    return row, True


async def set_tz(s: AsyncSession, user_id: str, tz: str | None, checked_at: datetime) -> None:
    """The user's time zone as Slack said it at `checked_at` (None: Slack did not say)."""
    aware(checked_at, "checked_at")
    row = await _user(s, user_id)
    row.tz, row.tz_checked_at, row.updated_at = tz, checked_at, utcnow()
    await s.flush()


async def set_model(s: AsyncSession, user_id: str, model: str | None) -> None:
    """The LLM config id the person chose (None: back to the app's default)."""
    row = await _user(s, user_id)
    row.model, row.updated_at = model, utcnow()
    await s.flush()


async def home_opened(s: AsyncSession, user_id: str) -> None:
    row = await _user(s, user_id)
    row.home_opened_at = row.updated_at = utcnow()
    await s.flush()


async def home_watched(s: AsyncSession, user_id: str) -> bool:
    """Has the person opened their App Home (so it is worth refreshing after a change)?"""
    found = await s.scalar(select(SlackUser.home_opened_at).where(SlackUser.user_id == user_id))
    return found is not None


async def set_paused(s: AsyncSession, user_id: str, paused: bool) -> bool:
    """Pause (their token was revoked) or resume a user; True when that changed anything."""
    row = await _user(s, user_id)
    if (row.paused_at is not None) == paused:
        return False
    row.paused_at = utcnow() if paused else None
    row.updated_at = utcnow()
    await s.flush()
    return True


async def paused_users(s: AsyncSession) -> set[str]:
    rows = await s.scalars(select(SlackUser.user_id).where(SlackUser.paused_at.is_not(None)))
    return set(rows)


async def set_uninstalled(s: AsyncSession, team_id: str, uninstalled: bool) -> bool:
    """Record that the workspace uninstalled the app (or installed it again); True when that
    changed anything."""
    not_empty(team_id, "team_id")
    row = await s.get(SlackTeam, team_id, populate_existing=True)
    if row is None:
        if not uninstalled:
            return False
        s.add(SlackTeam(team_id=team_id, uninstalled_at=utcnow(), updated_at=utcnow()))
        await s.flush()
        return True
    if (row.uninstalled_at is not None) == uninstalled:
        return False
    row.uninstalled_at = utcnow() if uninstalled else None
    row.updated_at = utcnow()
    await s.flush()
    return True


async def uninstalled_teams(s: AsyncSession) -> set[str]:
    rows = await s.scalars(select(SlackTeam.team_id)
                           .where(SlackTeam.uninstalled_at.is_not(None)))
    return set(rows)


async def clear_uninstalled(s: AsyncSession) -> int:
    """The app works again (its token passed auth.test): no workspace is marked uninstalled."""
    teams = await uninstalled_teams(s)
    for team in teams:
        await set_uninstalled(s, team, False)
    return len(teams)


async def home_team(s: AsyncSession) -> str | None:
    """The home workspace (migration 0010), None until one is claimed."""
    row = await s.get(SlackHome, 1, populate_existing=True)
    return row.team_id if row is not None else None


async def claim_home_team(s: AsyncSession, team_id: str) -> str:
    """Make `team_id` the home workspace unless one is already: returns the home workspace
    (the first claim wins, across processes). The caller commits."""
    not_empty(team_id, "team_id")
    found = await home_team(s)
    if found is not None:
        return found
    try:
        async with s.begin_nested():
            s.add(SlackHome(id=1, team_id=team_id, created_at=utcnow()))
    except IntegrityError:  # another process claimed it between the read and the insert
        again = await home_team(s)
        if again is None:
            raise
        return again
    return team_id


# slack_sdk's OAuth state store keeps this table (migration 0010) and deletes a state only
# when it is used; an abandoned install leaves its row behind.
_OAUTH_STATES = table("slack_oauth_states", column("expire_at", DateTime))


async def prune_oauth_states(s: AsyncSession, now: datetime) -> int:
    """Delete the OAuth states that expired before `now` (the store keeps naive UTC)."""
    aware(now, "now")
    cutoff = now.astimezone(UTC).replace(tzinfo=None)
    result = await s.execute(delete(_OAUTH_STATES).where(_OAUTH_STATES.c.expire_at < cutoff))
    return rowcount(result)


async def slack_users(s: AsyncSession, user_ids: Iterable[str]) -> dict[str, SlackUserRow | None]:
    """Each of `user_ids` that is a Slack person, with their row (None: nothing known of them
    yet); one statement, whoever else the bot knows."""
    users = sorted({u for u in user_ids if SLACK_USER.match(u)})
    found = await s.execute(select(SlackUser.user_id, SlackUser.tz, SlackUser.tz_checked_at,
                                   SlackUser.home_opened_at, SlackUser.paused_at,
                                   SlackUser.model).where(SlackUser.user_id.in_(users)))
    rows = {r[0]: SlackUserRow(*r) for r in found.all()}
    return {u: rows.get(u) for u in users}


async def claimed_reminders(s: AsyncSession, days: Iterable[str]) -> set[tuple[str, str, str]]:
    """(user, ref, day) of the reminders claimed for `days`."""
    found = await s.execute(select(Reminder.user_id, Reminder.ref, Reminder.day)
                            .where(Reminder.day.in_(list(days))))
    return {(u, r, d) for u, r, d in found.all()}


async def claim_reminder(s: AsyncSession, user_id: str, ref: str, day: str) -> bool:
    """Claim the reminder of note `ref` for `day`: True for exactly one caller, across
    processes sharing the database (the unique row is the claim). The caller commits."""
    not_empty(user_id, "user_id")
    not_empty(ref, "ref")
    if not DAY.match(day):
        raise InvalidValue(f"day must be YYYY-MM-DD, not {day!r}")
    if await s.scalar(select(Reminder.id).where(Reminder.user_id == user_id,
                                                Reminder.ref == ref, Reminder.day == day)):
        return False
    try:
        async with s.begin_nested():
            s.add(Reminder(user_id=user_id, ref=ref, day=day, created_at=utcnow()))
    except IntegrityError:  # another replica claimed it between the read and the insert
        return False
    return True
