"""`Digests`: the daily and weekly digest of a person's vault, and their `/digest` settings,
as the Brain's services and adapters ask for them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from bot.core import Core
from bot.digest.command import DigestRequest, apply
from bot.digest.model import Digest
from bot.digest.schedule import DigestScheduler
from bot.jobs.queue import JobKind
from storage.repositories import SubscriptionRow, journal
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

    def scheduler(self, *, wake: Callable[[], None], clock: Callable[[], datetime],
                  poll_seconds: float = 60) -> DigestScheduler:
        """The scheduler that claims each due slot with its delivery job in the journal."""
        return DigestScheduler(self.core.db, record_delivery, clock=clock,
                               poll_seconds=poll_seconds, wake=wake)

    def maker(self, store: Store, user_id: str) -> DigestMaker:
        """The digest as the `generate_digest` tool makes it, for one person's turn."""
        async def make(kind: str) -> dict[str, Any]:
            digest = await self.make(user_id=user_id, kind=kind, store=store)
            result: dict[str, Any] = digest.to_dict()
            return result
        return make


def scheduled_key(sub: SubscriptionRow, slot: datetime) -> str:
    return f"digest:{sub.user_id}:{sub.kind}:{slot.isoformat()}"


async def record_delivery(s: Any, sub: SubscriptionRow, slot: datetime) -> None:
    """The scheduled digest's delivery as a job (in the slot's claim transaction `s`): made
    and posted by the journal's workers, retried, posted once."""
    await journal.record(s, key=scheduled_key(sub, slot), kind=JobKind.SCHEDULED_DIGEST,
                         user_id=sub.user_id, lane=f"digest:{sub.user_id}",
                         payload={"user": sub.user_id, "kind": sub.kind, "tz": sub.tz,
                                  "channel": sub.channel, "day": slot.date().isoformat()})
