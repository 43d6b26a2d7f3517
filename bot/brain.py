"""The Brain: the one door from the adapters (Slack, the CLI, MCP) to everything else, and the
place the brain's services are put together.

It builds one `Core` (bot/core.py: settings, database, Stores, the language model, receipts,
the clock) and gives it to each service, built on first use: a storage verb of the CLI pays
for storage only, a turn loads the LLM layer and the tools when the first one runs. Adapters
call `brain.<service>.<operation>(...)`; services never see the Brain.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.config import ConfigError, Settings
from bot.core import Core
from storage.db import Database
from storage.history import Origin, changing
from storage.urls import async_url
from storage.vault.files import Vault
from storage.vault.store import Store

if TYPE_CHECKING:
    from bot.answers.service import Answers
    from bot.capture.messages import MessageCaptures
    from bot.digest.service import Digests
    from bot.health import StorageHealth
    from bot.home import Home
    from bot.jobs.queue import JobQueue
    from bot.llm.types import Provider
    from bot.note_actions import NoteActions
    from bot.remotes import Remotes
    from bot.schedule.reminders import Reminders
    from bot.stores import Stores
    from bot.tenancy.accounts import Accounts
    from bot.tenancy.people import People
    from bot.turn.conversations import Conversations
    from bot.turn.reply import Replies
    from bot.turn.runner import TurnRunner
    from bot.turn.tool_calls import ToolCalls
    from storage.history.health import HistoryState
    from storage.meaning.shared_model import Meaning
    from storage.repositories.receipts import Receipts

__all__ = ["Brain", "Store", "broken_notes", "clean_vault_temp", "history_states"]


class Brain:
    def __init__(self, core: Core) -> None:
        self.core = core

    @classmethod
    async def start(cls, settings: Settings, *, vault_override: Path | None = None,
                    provider: Provider | None = None, with_llm: bool = True,
                    meaning: Meaning | None = None) -> Brain:
        """Open the database; with `with_llm` (turns, digests) also the configured provider,
        so a bad configuration is found at start, not at the first message."""
        url = async_url(settings.db_url())
        if settings.store == "database" and not url.startswith("postgresql"):
            raise ConfigError("BRAIN_STORE=database keeps the notes in PostgreSQL: set "
                              "DATABASE_URL to a PostgreSQL database (postgresql://...)")
        if provider is None and with_llm:
            from bot.core import make_provider

            provider = make_provider(settings)
        db = await Database.open(url, log_content=settings.log_content)
        return cls(Core(settings, db, provider, vault_override=vault_override,
                        meaning=meaning))

    async def close(self) -> None:
        await self.core.close()

    def store_for(self, user_id: str) -> Store:
        """The person's vault (the CLI's storage verbs work on it directly)."""
        return self.core.store_for(user_id)

    @staticmethod
    def acting_as(who: str, source: str) -> AbstractContextManager[Origin]:
        """Changes made inside the block are recorded in the vault's history as `who`'s, from
        `source` ("cli", "mcp <client>", "slack <message link>")."""
        return changing(who, source)

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @property
    def receipts(self) -> Receipts:
        """Capture receipts: what was filed from which message (storage/repositories/receipts.py)."""
        return self.core.receipts

    @property
    def provider(self) -> Provider:
        """The configured model, made on first use (ValueError: a configuration that cannot
        be used, said in words)."""
        return self.core.provider

    @property
    def database_engine(self) -> Any:
        """The database's async engine, for slack_sdk's SQLAlchemy installation and OAuth
        state stores (bot/slack/installs.py); nothing else uses SQL outside storage."""
        return self.core.db.engine

    @property
    def offline(self) -> bool:
        """The configured model is the offline rules (no API key)."""
        return self.core.offline

    @property
    def stores(self) -> Stores:
        """Search by meaning and the background indexer (bot/stores.py)."""
        return self.core.stores

    # The services, each built on first use with a plain import.

    @cached_property
    def jobs(self) -> JobQueue:
        """The durable intake (bot/jobs/queue.py), sharing the work among people by
        BRAIN_USER_RUNNING and BRAIN_USER_RATE."""
        from bot.jobs.queue import METERED, JobQueue, Shares

        rate, period = self.settings.user_rate_limit
        return JobQueue(self.core.db, Shares(running=self.settings.user_running, rate=rate,
                                             window=period, metered=tuple(METERED)))

    @cached_property
    def storage_health(self) -> StorageHealth:
        """Whether the vault and the database take writes now (bot/health.py)."""
        from bot.health import StorageHealth

        return StorageHealth(self.core)

    @cached_property
    def conversations(self) -> Conversations:
        """Conversation rows, the turn log, the record of a turn (bot/turn/conversations.py)."""
        from bot.turn.conversations import Conversations

        return Conversations(self.core)

    @cached_property
    def digests(self) -> Digests:
        """Daily and weekly digests and their settings (bot/digest/service.py)."""
        from bot.digest.service import Digests

        return Digests(self.core)

    @cached_property
    def tools(self) -> ToolCalls:
        """One tool called for a person outside a turn (MCP, buttons) (bot/turn/tool_calls.py)."""
        from bot.turn.tool_calls import ToolCalls

        return ToolCalls(self.core, self.digests)

    @cached_property
    def answers(self) -> Answers:
        """A question answered from the notes, with checked sources (bot/answers/)."""
        from bot.answers.service import Answers

        return Answers(self.core, self.tools)

    @cached_property
    def turns(self) -> TurnRunner:
        """One turn of a conversation (bot/turn/runner.py; loads the LLM layer and tools)."""
        from bot.turn.runner import TurnRunner

        return TurnRunner(self.core, self.conversations, self.tools)

    @cached_property
    def replies(self) -> Replies:
        """A person's message answered, for any surface (bot/turn/reply.py): the use case
        Slack and `brain chat` both call, and the reply model both render."""
        from bot.turn.reply import Replies

        return Replies(self.turns)

    @cached_property
    def note_actions(self) -> NoteActions:
        """A move or an Undo from a button, `fix:` or `brain move` (bot/note_actions.py)."""
        from bot.note_actions import NoteActions

        return NoteActions(self.core, self.conversations)

    @cached_property
    def captures(self) -> MessageCaptures:
        """A message saved by the shortcut or the capture reaction (bot/capture/messages.py)."""
        from bot.capture.messages import MessageCaptures

        return MessageCaptures(self.core, self.tools)

    @cached_property
    def home(self) -> Home:
        """What the App Home shows (bot/home.py)."""
        from bot.home import Home

        return Home(self.core)

    @cached_property
    def reminders(self) -> Reminders:
        """Due-date reminders and their buttons (bot/schedule/reminders.py)."""
        from bot.schedule.reminders import Reminders

        return Reminders(self.core, self.tools)

    @cached_property
    def accounts(self) -> Accounts:
        """Export, forget, retention, uninstall and revocation (bot/tenancy/accounts.py)."""
        from bot.tenancy.accounts import Accounts

        return Accounts(self.core, self.people)

    @cached_property
    def remotes(self) -> Remotes:
        """Each person's vault as a git remote: tokens, address, requests (bot/remotes.py)."""
        from bot.remotes import Remotes

        return Remotes(self.core)

    @cached_property
    def people(self) -> People:
        """Person keys of Slack people, the home workspace (bot/tenancy/people.py)."""
        from bot.tenancy.people import People

        return People(self.core)


def clean_vault_temp(root: Path) -> list[str]:
    """Remove the temp files an interrupted write left anywhere under `root` (`brain doctor`);
    they are ours, never notes. Returns what was removed."""
    return Vault(root).clean_temp()


def broken_notes(root: Path) -> list[tuple[str, str]]:
    """(path, why) of the notes under `root` whose frontmatter is not read (`brain doctor`)."""
    return Vault(root).broken_notes()


def history_states(data_dir: Path) -> list[HistoryState]:
    """Each vault history under the data directory, looked at closely (`brain doctor`)."""
    from storage.history.health import inspect_all

    return inspect_all(data_dir / "history")
