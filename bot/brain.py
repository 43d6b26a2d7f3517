"""The brain: settings + database + LLM provider, and one turn of a conversation.

CLI and Slack both come through here, so a thought is filed the same way wherever it came from.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bot import corrections
from bot.accounts import Accounts
from bot.config import Settings
from bot.history import build_history, message_to_dict, stored_message
from bot.home import Home
from bot.index_keeper import IndexKeeper
from bot.jobs import JobQueue, JobRow
from bot.llm.configs import make_provider, select_config
from bot.llm.offline import OfflineProvider
from bot.llm.types import LLMError, Message, Provider, ToolCall, ToolSpec
from bot.loop import LoopOutcome, run_turn
from bot.prompts import system_prompt
from bot.reminders import Reminders
from bot.saving import Saver
from bot.turns import (
    TurnResult,
    direct_move_outcome,
    filed_notes,
    kept,
    looks_like_thought,
    message_view,
    rescue_text,
    trouble,
    with_filed_summary,
)
from storage import journal, repositories
from storage.db import Database
from storage.errors import InvalidValue
from storage.store import Store
from storage.types import MoveResult
from tools import registry
from tools.base import ToolContext
from tools.classify_and_capture import file_thought
from tools.move_entry import move_note
from tools.registry import Execution, execute, tool_specs

log = logging.getLogger(__name__)

HISTORY_TURNS = 6  # recent whole turns sent with each request
USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
NO_ANSWER = "I have no answer to that (the model returned nothing); please try again."

__all__ = ["Brain", "TurnResult", "message_view"]


class Brain:
    def __init__(self, settings: Settings, db: Database, provider: Provider,
                 *, vault_override: Path | None = None) -> None:
        self.settings = settings
        self.db = db
        self.provider = provider
        self.vault_override = vault_override
        self.jobs = JobQueue(db)  # the durable intake, for adapters that take in work
        self._stores: dict[str, Store] = {}
        self._specs = [ToolSpec(s["name"], s["description"], s["parameters"])
                       for s in tool_specs()]
        self._terminal = registry.terminal_names()
        self._parallel = registry.read_only_names()
        # Operations of the other entry points, each in its own module, through this door.
        self.saves = Saver(self)  # a message saved by the shortcut or the capture reaction
        self.home = Home(self)  # what the App Home shows
        self.reminders = Reminders(self)  # due-date reminders and their buttons
        self.accounts = Accounts(self)  # export, forget, retention, uninstall and revocation
        self.keeper = IndexKeeper(settings, db, provider)  # Stores, search by meaning, indexer

    @classmethod
    async def start(cls, settings: Settings, *, vault_override: Path | None = None,
                    provider: Provider | None = None) -> Brain:
        if provider is None:
            provider = make_provider(select_config(settings), settings)
        db = await Database.open(settings.db_url())
        return cls(settings, db, provider, vault_override=vault_override)

    async def close(self) -> None:
        aclose = getattr(self.provider, "aclose", None)
        if aclose is not None:  # the SDK providers' HTTP clients
            await aclose()
        await self.keeper.close()
        await self.db.close()

    @property
    def offline(self) -> bool:
        return isinstance(self.provider, OfflineProvider)

    def store_for(self, user_id: str) -> Store:
        if not USER_ID.match(user_id) or user_id in {".", ".."}:
            raise InvalidValue(f"not a valid user id: {user_id!r}")
        if user_id not in self._stores:
            root = self.vault_override or self.settings.vault_for(user_id)
            self._stores[user_id] = self.keeper.store(root)
        return self._stores[user_id]

    def forget_store(self, user_id: str) -> None:
        if user_id in self._stores:
            self.keeper.forget(self._stores.pop(user_id))

    def now(self) -> datetime:
        return datetime.now(ZoneInfo(self.settings.tz))

    async def conversation(self, key: str, user_id: str, *, channel: str | None = None,
                           thread_ts: str | None = None) -> repositories.ConversationRow:
        async with self.db.session() as s:
            row = await repositories.get_or_create_conversation(
                s, key, user_id, channel=channel, thread_ts=thread_ts)
            await s.commit()
            return row

    # -- one turn ---------------------------------------------------------------------------

    async def handle(self, *, conversation_key: str, user_id: str, text: str,
                     source: str = "cli", channel: str | None = None,
                     thread_ts: str | None = None, job: JobRow | None = None) -> TurnResult:
        """One turn. With `job` (the intake job it runs for) it is taken once: a job that
        runs again gets the turn already taken, and notes its first try filed are found."""
        if job is not None and isinstance(job.result, dict) and job.result.get("turn"):
            return TurnResult.from_dict(job.result["turn"])
        store = self.store_for(user_id)
        # One transaction opens the turn: conversation, its filed notes, recent history.
        async with self.db.session() as s:
            conv = await repositories.get_or_create_conversation(
                s, conversation_key, user_id, channel=channel, thread_ts=thread_ts)
            captures = await repositories.captures_for_conversation(s, conv.id)
            turn_id = await repositories.start_turn(s, conv.id, text,
                                                    job_id=job.id if job else None)
            stored_turns = await repositories.recent_turn_messages(s, conv.id, HISTORY_TURNS)
            await s.commit()
        filed = filed_notes(captures)
        view = message_view(text)
        ctx = ToolContext(store=store, db=self.db, user_id=user_id, conversation_id=conv.id,
                          turn_id=turn_id, source=source, channel=channel, thread_ts=thread_ts,
                          confidence_threshold=self.settings.confidence_threshold,
                          make_digest=self._digest_maker(store, user_id),
                          message=text, message_view=view,
                          job_id=job.id if job else None, job_key=job.key if job else None,
                          job_attempt=job.attempts if job else 1, tz=self.settings.tz,
                          similar=self.keeper.turn_similar(store))

        async def run_call(call: ToolCall) -> Execution:
            return await execute(ctx, call.id, call.name, call.arguments, call.parse_error)

        outage: str | None = None
        rescued: str | None = None
        direct = corrections.parse_fix(text)
        try:
            if direct is not None and filed:
                # "fix: projects" needs no LLM call: move the latest note of this thread.
                note = filed[-1]
                call = ToolCall(id="direct_fix_1", name="move_entry",
                                arguments={"path": note.id or note.path,
                                           "targetCategory": direct})
                outcome = direct_move_outcome(text, call, await run_call(call))
            else:
                summary = await store.summary()
                system = system_prompt(now=self.now(), summary=summary, filed=filed,
                                       threshold=self.settings.confidence_threshold)
                history = build_history([[stored_message(m) for m in t] for t in stored_turns])
                outcome = await run_turn(self.provider, system=system, history=history,
                                         user_text=view, tools=self._specs, execute=run_call,
                                         max_iterations=self.settings.max_iterations,
                                         terminal=self._terminal, parallel=self._parallel)
            reason = None if kept(outcome) else trouble(outcome)
        except LLMError as exc:
            log.warning("LLM unreachable (%s) in turn %s", exc.kind, turn_id)
            outage = exc.kind
            outcome = LoopOutcome(text="", messages=[Message(role="user", content=text)])
            reason = f"the language model is unreachable ({exc.kind})"
        except Exception:
            # A bug must not cost the user their thought: log it, and rescue below.
            log.exception("turn %s failed", turn_id)
            outcome = LoopOutcome(text="", messages=[Message(role="user", content=text)])
            reason = "an internal error"
        if reason is not None and await looks_like_thought(text):
            rescued = reason
            await self._rescue(ctx, text, reason, outcome, outage=outage)
        elif outage is not None:
            outcome.text = (f"I can't reach the language model right now ({outage}). "
                            "That looked like a question or command, so nothing was saved; "
                            "please try again in a moment.")
            outcome.messages.append(Message(role="assistant", content=outcome.text))
        elif reason == "an internal error":
            outcome.text = "Something went wrong on my side; nothing was saved. Please try again."
            outcome.messages.append(Message(role="assistant", content=outcome.text))
        else:
            outcome.text = with_filed_summary(outcome) or NO_ANSWER
        result = TurnResult(outcome.text, outcome.executions, outcome.usage, outcome.llm_calls,
                            turn_id, outage=outage, rescued=rescued)
        status = "outage" if outage else ("rescued" if rescued else "ok")
        await self._finish(conv.id, turn_id, outcome, status=status,
                           job_id=job.id if job else None, result=result)
        return result

    async def _rescue(self, ctx: ToolContext, text: str, reason: str, outcome: LoopOutcome,
                      *, outage: str | None) -> None:
        """File the message to the inbox with the reason; the reply says so plainly."""
        output = await file_thought(ctx, text, {}, inbox_reason=reason)
        outcome.executions.append(Execution(
            call_id="rescue", tool="classify_and_capture", arguments=None, status="ok",
            output=output, error=None, content=json.dumps({"ok": True, **output.data}),
            duration_ms=0.0))
        path = str(output.data.get("path"))
        if outage is not None:
            outcome.text = (f"I can't reach the language model right now ({outage}), so I "
                            f"saved your note to the inbox: {path}. Nothing is lost; "
                            "you can file it later.")
        else:
            outcome.text = rescue_text(reason, path)
        last = outcome.messages[-1] if outcome.messages else None
        if last is not None and last.role == "assistant" and not last.tool_calls:
            outcome.messages[-1] = Message(role="assistant", content=outcome.text)
        else:
            outcome.messages.append(Message(role="assistant", content=outcome.text))

    async def _finish(self, conversation_id: int, turn_id: int, outcome: LoopOutcome,
                      *, status: str, job_id: int | None = None,
                      result: TurnResult | None = None) -> None:
        """Store the whole turn at once: messages, tool runs, usage, and for a job the turn's
        result (in the same transaction: a job never has a finished turn without it)."""
        async with self.db.session() as s:
            await repositories.save_messages(s, conversation_id, turn_id,
                                             [message_to_dict(m) for m in outcome.messages])
            for e in outcome.executions:
                await repositories.add_tool_run(
                    s, turn_id, e.call_id, e.tool, e.arguments, e.status,
                    e.output.data if e.output else None,
                    e.error.get("message") if e.error else None,
                    datetime.now().astimezone(), e.duration_ms)
            await repositories.finish_turn(s, turn_id, outcome.text, status,
                                           outcome.usage.input_tokens,
                                           outcome.usage.output_tokens, outcome.llm_calls)
            if job_id is not None and result is not None:
                await journal.set_result(s, job_id, {"turn": result.to_dict()})
            await s.commit()

    # -- corrections and buttons -------------------------------------------------------------

    async def move_entry(self, *, user_id: str, ref: str, category: str,
                         conversation_key: str | None = None) -> MoveResult:
        """A move from a button: move, mark the receipt fixed, and tell the conversation."""
        result = await move_note(self.store_for(user_id), self.db, ref, category)
        if conversation_key:
            await self._record(conversation_key, user_id,
                               f"(pressed the button: move '{result.entry.name}' to {category})",
                               f"Moved {result.entry.name} to {category}: {result.new_path}")
        return result

    async def trash_entry(self, *, user_id: str, ref: str,
                          conversation_key: str | None = None) -> str:
        """Undo: the note goes to the vault's restorable trash, never deleted."""
        store = self.store_for(user_id)
        entry = await store.get(ref)
        new_path = await store.trash(ref)
        async with self.db.session() as s:
            if entry.id:
                await repositories.mark_capture(s, entry.id, "fixed", path=new_path,
                                                category="trash")
            await s.commit()
        if conversation_key:
            await self._record(conversation_key, user_id,
                               f"(pressed Undo on '{entry.name}')",
                               f"Moved {entry.name} to the trash: {new_path} (restorable)")
        return new_path

    async def _record(self, key: str, user_id: str, user_text: str, reply: str) -> None:
        conv = await self.conversation(key, user_id)
        outcome = LoopOutcome(text=reply, messages=[Message(role="user", content=user_text),
                                                    Message(role="assistant", content=reply)])
        async with self.db.session() as s:
            turn_id = await repositories.start_turn(s, conv.id, user_text)
            await s.commit()
        await self._finish(conv.id, turn_id, outcome, status="ok")

    # -- conversations, for `brain chat` and `brain log` ---------------------------------------

    async def recent_conversations(self, user_id: str,
                                   limit: int = 5) -> list[repositories.ConversationRow]:
        async with self.db.session() as s:
            return await repositories.recent_conversations(s, user_id, limit=limit)

    async def conversation_key(self, ref: str) -> str | None:
        """The key of the conversation `ref` names (its key or its number), or None."""
        async with self.db.session() as s:
            row = await repositories.get_conversation(s, ref)
            if row is None and ref.isdigit():
                row = await repositories.get_conversation_by_id(s, int(ref))
        return row.key if row is not None else None

    async def turn_log(self, conversation_key: str | None = None,
                       limit: int = 10) -> list[repositories.TurnRow]:
        """The latest turns (of one conversation, or all), newest first, with tool runs."""
        async with self.db.session() as s:
            conv_id = None
            if conversation_key is not None:
                row = await repositories.get_conversation(s, conversation_key)
                if row is None:
                    return []
                conv_id = row.id
            return await repositories.turns_for_log(s, conv_id, limit=limit)

    # -- what adapters ask about threads and receipts ----------------------------------------

    async def thread_known(self, channel: str, thread_ts: str) -> bool:
        """Has anyone talked with the bot in this Slack thread?"""
        async with self.db.session() as s:
            return await repositories.thread_known(s, channel, thread_ts)

    async def note_owner(self, entry_id: str, conversation_key: str | None = None) -> str | None:
        """Whose vault holds the note: its capture's user, else the conversation's user."""
        async with self.db.session() as s:
            capture = await repositories.capture_for_entry(s, entry_id)
            if capture is not None:
                return capture.user_id
            if conversation_key is None:
                return None
            conversation = await repositories.get_conversation(s, conversation_key)
            return conversation.user_id if conversation is not None else None

    async def receipt(self, entry_id: str) -> repositories.CaptureRow | None:
        async with self.db.session() as s:
            return await repositories.capture_for_entry(s, entry_id)

    async def shown_at(self, result: TurnResult, channel: str,
                       message_ts: str) -> list[tuple[str, str, dict[str, Any], str]]:
        """Record which message shows each new receipt of the turn; returns the cards of notes
        the turn moved that were shown elsewhere in this channel (channel, ts, data, text), so
        the adapter can update them in place."""
        stale: list[tuple[str, str, dict[str, Any], str]] = []
        async with self.db.session() as s:
            for ex in result.executions:
                if ex.status != "ok" or ex.output is None or not ex.output.data.get("id"):
                    continue
                row = await repositories.capture_for_entry(s, str(ex.output.data["id"]))
                if row is None:
                    continue
                if ex.output.kind == "capture":
                    await repositories.set_capture_message(s, row.id, message_ts)
                elif ex.output.kind == "move" and row.message_ts and row.channel == channel \
                        and row.message_ts != message_ts:
                    stale.append((channel, row.message_ts, ex.output.data, ex.output.text))
            await s.commit()
        return stale

    # -- digests ---------------------------------------------------------------------------

    def today(self) -> date:
        return self.now().date()

    def _digest_maker(self, store: Store, user_id: str) -> Any:
        async def make(kind: str) -> dict[str, Any]:
            digest = await self.digest(user_id=user_id, kind=kind, store=store)
            result: dict[str, Any] = digest.to_dict()
            return result
        return make

    async def digest(self, *, user_id: str, kind: str, store: Store | None = None,
                     today: date | None = None, tz: str | None = None) -> Any:
        """The daily or weekly digest; a scheduled one passes its own day and the user's zone."""
        from bot.digest import make_digest

        return await make_digest(store or self.store_for(user_id), self.db, self.provider,
                                 user_id, kind, today=today or self.today(),
                                 tz=tz or self.settings.tz)

    async def digest_settings(self, *, user_id: str, request: Any, channel: str | None = None,
                              tz: str | None = None) -> str:
        """Carry out a parsed `/digest subscribe | off | status` (bot.digest.command)."""
        from bot.digest.command import apply

        return await apply(self.db, user_id, request, channel=channel, tz=tz or self.settings.tz)

    # -- one tool, called directly (MCP) -------------------------------------------------------

    async def call_tool(self, *, user_id: str, name: str, arguments: dict[str, Any] | None,
                        source: str = "mcp") -> Execution:
        """Run one tool for `user_id` outside a conversation, as an MCP client asks.

        The same registry the model's calls go through, so validation and error results are
        exactly the ones the model gets; a capture writes its receipt like any other."""
        store = self.store_for(user_id)
        ctx = ToolContext(store=store, db=self.db, user_id=user_id, source=source,
                          confidence_threshold=self.settings.confidence_threshold,
                          make_digest=self._digest_maker(store, user_id), tz=self.settings.tz,
                          similar=self.keeper.turn_similar(store))
        return await execute(ctx, f"{source}_{uuid.uuid4().hex[:12]}", name, arguments)

