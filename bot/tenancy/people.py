"""Who a Slack person is to the brain: their person key, the `user_id` everything they own is
stored by (vault folder, conversations, jobs, digest subscriptions, reminders, receipts).

Computed here and nowhere else:

- one workspace (no OAuth settings): the plain Slack user id, exactly as before;
- many workspaces (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_STATE_SECRET): the plain id for
  people of the *home* workspace (the one SLACK_BOT_TOKEN belongs to, else the first workspace
  seen), so data kept before OAuth was turned on stays where it is; `T123-U456` (workspace id,
  a dash, user id: a safe folder name) for people of every other workspace. The same user id
  in two workspaces is two people with two vaults.

Slack ids are upper-case letters and digits, so a key with a dash is always workspace-qualified
and splits back unambiguously (`slack_user`, `team_of`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from storage.repositories import slack_state

if TYPE_CHECKING:
    from bot.core import Core

QUALIFIED = re.compile(r"^([TE][A-Z0-9]{2,31})-([UW][A-Z0-9]{2,63})$")


def person_key(team: str | None, user: str, home: str | None) -> str:
    """The key of `user` of workspace `team` when `home` is the home workspace."""
    if not team or team == home or home is None:
        return user
    return f"{team}-{user}"


def slack_user(person: str) -> str:
    """The Slack user id behind a person key (what Slack's API calls take)."""
    found = QUALIFIED.match(person)
    return found.group(2) if found else person


def team_of(person: str) -> str | None:
    """The workspace named in a person key; None for a plain id (the home workspace)."""
    found = QUALIFIED.match(person)
    return found.group(1) if found else None


class People:
    """`brain.people`: person keys for Slack requests, and the home workspace they rest on."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._home: str | None = None  # once claimed it never changes: kept per process

    @property
    def many(self) -> bool:
        """Many workspaces (the OAuth settings are set)."""
        return self.core.settings.oauth

    async def home(self) -> str | None:
        """The home workspace, None until one is claimed."""
        if self._home is None:
            async with self.core.db.session() as s:
                self._home = await slack_state.home_team(s)
        return self._home

    async def claim_home(self, team: str) -> str:
        """`team` becomes the home workspace unless there is one; returns the home."""
        if self._home is None:
            async with self.core.db.session() as s:
                self._home = await slack_state.claim_home_team(s, team)
                await s.commit()
        return self._home

    async def key(self, team: str | None, user: str) -> str:
        """The person key of Slack user `user` of workspace `team`."""
        if not self.many or not team:
            return user
        home = await self.home() or await self.claim_home(team)
        return person_key(team, user, home)

    async def team(self, person: str) -> str | None:
        """The workspace a person belongs to (None: one workspace, or no home yet)."""
        return team_of(person) or await self.home()
