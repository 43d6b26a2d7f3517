"""The brain: settings + database + LLM provider, and one turn of a conversation.

CLI and Slack both come through here, so a thought is filed the same way wherever it came from.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bot import corrections
from bot.config import Settings
from bot.history import build_history, message_to_dict
from bot.llm.configs import make_provider, select_config
from bot.llm.offline import OfflineProvider
from bot.llm.types import LLMError, Message, Provider, ToolCall, ToolResult, ToolSpec, Usage
from bot.loop import LoopOutcome, run_turn
from bot.prompts import FiledNote, system_prompt
from storage import repositories
from storage.db import Database
from storage.errors import InvalidValue
from storage.store import Store
from storage.types import MoveResult
from storage.vault import Vault
from tools import classify_rules
from tools.base import ToolContext
from tools.classify_and_capture import write_receipt
from tools.registry import Execution, execute, tool_specs

log = logging.getLogger(__name__)

HISTORY_TURNS = 6  # recent whole turns sent with each request
MAX_VIEW = 2000  # a longer message reaches the model shortened; a capture keeps all of it
USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True)
class TurnResult:
    text: str
    executions: list[Execution] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    turn_id: int | None = None
    outage: str | None = None  # LLMError.kind when the LLM could not be reached


class Brain:
    def __init__(self, settings: Settings, db: Database, provider: Provider,
                 *, vault_override: Path | None = None) -> None:
        self.settings = settings
        self.db = db
        self.provider = provider
        self.vault_override = vault_override
        self._stores: dict[str, Store] = {}
        self._specs = [ToolSpec(s["name"], s["description"], s["parameters"])
                       for s in tool_specs()]

    @classmethod
    async def start(cls, settings: Settings, *, vault_override: Path | None = None,
                    provider: Provider | None = None) -> Brain:
        if provider is None:
            provider = make_provider(select_config(settings), settings)
        db = await Database.open(settings.db_url())
        return cls(settings, db, provider, vault_override=vault_override)

    async def close(self) -> None:
        await self.db.close()

    @property
    def offline(self) -> bool:
        return isinstance(self.provider, OfflineProvider)

    def store_for(self, user_id: str) -> Store:
        if not USER_ID.match(user_id) or user_id in {".", ".."}:
            raise InvalidValue(f"not a valid user id: {user_id!r}")
        if user_id not in self._stores:
            root = self.vault_override or self.settings.vault_for(user_id)
            self._stores[user_id] = Store(Vault(root), self.db)
        return self._stores[user_id]

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
                     thread_ts: str | None = None) -> TurnResult:
        store = self.store_for(user_id)
        # One transaction opens the turn: conversation, its filed notes, recent history.
        async with self.db.session() as s:
            conv = await repositories.get_or_create_conversation(
                s, conversation_key, user_id, channel=channel, thread_ts=thread_ts)
            captures = await repositories.captures_for_conversation(s, conv.id)
            turn_id = await repositories.start_turn(s, conv.id, text)
            stored_turns = await repositories.recent_turn_messages(s, conv.id, HISTORY_TURNS)
            await s.commit()
        filed = _filed(captures)
        view = message_view(text)
        ctx = ToolContext(store=store, db=self.db, user_id=user_id, conversation_id=conv.id,
                          turn_id=turn_id, source=source, channel=channel, thread_ts=thread_ts,
                          confidence_threshold=self.settings.confidence_threshold,
                          make_digest=self._digest_maker(store, user_id),
                          message=text, message_view=view)

        async def run_call(call: ToolCall) -> Execution:
            return await execute(ctx, call.id, call.name, call.arguments, call.parse_error)

        direct = corrections.parse_fix(text)
        try:
            if direct is not None and filed:
                # "fix: projects" needs no LLM call: move the latest note of this thread.
                outcome = await _direct_move(run_call, text, filed[-1], direct)
            else:
                summary = await store.summary()
                system = system_prompt(now=self.now(), summary=summary, filed=filed,
                                       threshold=self.settings.confidence_threshold)
                history = build_history([[_stored(m) for m in t] for t in stored_turns])
                outcome = await run_turn(self.provider, system=system, history=history,
                                         user_text=view, tools=self._specs, execute=run_call,
                                         max_iterations=self.settings.max_iterations)
        except LLMError as exc:
            log.warning("LLM unreachable (%s): %s", exc.kind, exc.message)
            outcome = await self._outage(ctx, text, exc)
            await self._finish(conv.id, turn_id, outcome, status="outage")
            return TurnResult(outcome.text, outcome.executions, outcome.usage,
                              outcome.llm_calls, turn_id, outage=exc.kind)
        await self._finish(conv.id, turn_id, outcome, status="ok")
        return TurnResult(outcome.text, outcome.executions, outcome.usage, outcome.llm_calls,
                          turn_id)

    async def _finish(self, conversation_id: int, turn_id: int, outcome: LoopOutcome,
                      *, status: str) -> None:
        """Store the whole turn at once: messages, tool runs, usage."""
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
            await s.commit()

    async def _outage(self, ctx: ToolContext, text: str, exc: LLMError) -> LoopOutcome:
        """The LLM is unreachable: a thought still goes to the inbox; nothing is lost."""
        outcome = LoopOutcome(text="", messages=[Message(role="user", content=text)])
        if not await _looks_like_thought(text):
            outcome.text = (f"I can't reach the language model right now ({exc.kind}). "
                            "That looked like a question or command, so nothing was saved; "
                            "please try again in a moment.")
        else:
            guess = classify_rules.classify(text)
            fields = {"source": ctx.source, "original_text": text,
                      "suggested_category": guess.category,
                      "reason": f"LLM unreachable ({exc.kind}): saved without classification"}
            entry = await ctx.store.create("inbox", guess.name, fields, text.strip() + "\n")
            await write_receipt(ctx, text, entry.id or "", entry.path, "inbox", None,
                                "needs_review")
            outcome.text = (f"I can't reach the language model right now ({exc.kind}), so I "
                            f"saved your note to the inbox: {entry.path}. Nothing is lost; "
                            "you can file it later.")
        outcome.messages.append(Message(role="assistant", content=outcome.text))
        return outcome

    # -- corrections and buttons -------------------------------------------------------------

    async def move_entry(self, *, user_id: str, ref: str, category: str,
                         conversation_key: str | None = None) -> MoveResult:
        """A move from a button: move, mark the receipt fixed, and tell the conversation."""
        store = self.store_for(user_id)
        result = await store.move(ref, category)
        async with self.db.session() as s:
            if result.entry.id:
                await repositories.mark_capture(s, result.entry.id, "fixed",
                                                path=result.new_path, category=category)
            await s.commit()
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

    async def digest_command(self, *, user_id: str, text: str, channel: str | None = None,
                             tz: str | None = None) -> str:
        from bot.digest import digest_command

        reply: str = await digest_command(self.db, user_id, text, channel=channel,
                                          tz=tz or self.settings.tz)
        return reply

    # -- one tool, called directly (MCP) -------------------------------------------------------

    async def call_tool(self, *, user_id: str, name: str, arguments: dict[str, Any] | None,
                        source: str = "mcp") -> Execution:
        """Run one tool for `user_id` outside a conversation, as an MCP client asks.

        The same registry the model's calls go through, so validation and error results are
        exactly the ones the model gets; a capture writes its receipt like any other."""
        import uuid

        store = self.store_for(user_id)
        ctx = ToolContext(store=store, db=self.db, user_id=user_id, source=source,
                          confidence_threshold=self.settings.confidence_threshold,
                          make_digest=self._digest_maker(store, user_id))
        return await execute(ctx, f"{source}_{uuid.uuid4().hex[:12]}", name, arguments)


def message_view(text: str) -> str:
    """What the model sees of a message: all of it, or the start of a long paste."""
    if len(text) <= MAX_VIEW:
        return text
    head = text[:MAX_VIEW].rsplit(" ", 1)[0]
    return (f"{head} […] ({len(text) - len(head)} more characters not shown; capturing this "
            "message with this text files all of it)")


def _filed(captures: list[repositories.CaptureRow]) -> list[FiledNote]:
    return [FiledNote(c.path, c.entry_id, _name_of(c)) for c in captures if c.entry_id]


def _stored(row: repositories.MessageRow) -> dict[str, Any]:
    return {"role": row.role, "content": row.content, "tool_calls": row.tool_calls,
            "tool_results": row.tool_results}


def _name_of(capture: repositories.CaptureRow) -> str:
    text = capture.original_text.strip().splitlines()[0] if capture.original_text.strip() else ""
    return text[:60] or capture.path


async def _looks_like_thought(text: str) -> bool:
    """Would a model file this? The offline router answers the same question offline."""
    spec = [ToolSpec(s["name"], s["description"], s["parameters"]) for s in tool_specs()]
    completion = await OfflineProvider().complete("", [Message(role="user", content=text)], spec)
    return any(c.name == "classify_and_capture" for c in completion.tool_calls)


async def _direct_move(run_call: Any, text: str, note: FiledNote, category: str) -> LoopOutcome:
    call = ToolCall(id="direct_fix_1", name="move_entry",
                    arguments={"path": note.id or note.path, "targetCategory": category})
    execution: Execution = await run_call(call)
    outcome = LoopOutcome(text="", messages=[Message(role="user", content=text)])
    outcome.messages.append(Message(role="assistant", tool_calls=(call,)))
    outcome.messages.append(Message(role="tool", tool_results=(
        ToolResult(call.id, call.name, execution.content, is_error=execution.status != "ok"),)))
    outcome.executions.append(execution)
    if execution.output is not None:
        outcome.text = execution.output.text
    else:
        message = (execution.error or {}).get("message", "unknown error")
        outcome.text = f"I couldn't move that note: {message}"
    outcome.messages.append(Message(role="assistant", content=outcome.text))
    return outcome
