"""`Digests`: the daily and weekly digest of a person's vault, and their `/digest` settings,
as the Brain's services and adapters ask for them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from bot.core import Core
from bot.digest.command import DigestRequest, apply
from bot.digest.model import Digest
from bot.digest.schedule import Deliver, DigestScheduler
from storage.vault.store import Store
from tools.base import DigestMaker


class Digests:
    def __init__(self, core: Core) -> None:
        self.core = core

    async def make(self, *, user_id: str, kind: str, store: Store | None = None,
                   today: date | None = None, tz: str | None = None) -> Digest:
        """The daily or weekly digest; a scheduled one passes its own day and the user's zone."""
        from bot.digest import make_digest

        core = self.core
        provider, _notice = await core.provider_for(user_id)  # the person's model, if chosen
        return await make_digest(store or core.store_for(user_id), core.db, provider,
                                 user_id, kind, today=today or core.today(),
                                 tz=tz or core.settings.tz)

    async def settings(self, *, user_id: str, request: DigestRequest,
                       channel: str | None = None, tz: str | None = None) -> str:
        """Carry out a parsed `/digest subscribe | off | status`; the reply says what is true."""
        return await apply(self.core.db, user_id, request, channel=channel,
                           tz=tz or self.core.settings.tz)

    def scheduler(self, deliver: Deliver, *, clock: Callable[[], datetime],
                  poll_seconds: float = 60) -> DigestScheduler:
        """The scheduler that sends subscribed digests (a slot is claimed before delivery)."""
        return DigestScheduler(self.core.db, deliver, clock=clock, poll_seconds=poll_seconds)

    def maker(self, store: Store, user_id: str) -> DigestMaker:
        """The digest as the `generate_digest` tool makes it, for one person's turn."""
        async def make(kind: str) -> dict[str, Any]:
            digest = await self.make(user_id=user_id, kind=kind, store=store)
            result: dict[str, Any] = digest.to_dict()
            return result
        return make
