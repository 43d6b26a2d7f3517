"""One turn of a conversation, run for the Brain: the prompt, the tool loop, the rescue of a
thought the model did not file, and the whole turn stored at once.

Imported by the Brain on its first turn (it pulls in the LLM layer, the tools and their JSON
schemas), so the storage verbs of the CLI, which only need the door, stay fast.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime
from datetime import datetime as Datetime
from typing import Any, Protocol

from bot import corrections
from bot.config import Settings
from bot.history import build_history, message_to_dict, stored_message
from bot.index_keeper import IndexKeeper
from bot.jobs import JobRow, LeaseLost
from bot.llm.types import LLMError, Message, Provider, ToolCall, ToolSpec
from bot.loop import LoopOutcome, run_turn
from bot.prompts import system_prompt
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
from storage.store import Store
from tools import registry
from tools.base import DigestMaker, ToolContext
from tools.classify_and_capture import file_thought
from tools.registry import Execution, execute, tool_specs

log = logging.getLogger(__name__)

HISTORY_TURNS = 6  # recent whole turns sent with each request
NO_ANSWER = "I have no answer to that (the model returned nothing); please try again."


class BrainParts(Protocol):
    """What a turn needs of the Brain (typed without importing it: no import circle)."""

    settings: Settings
    db: Database

    @property
    def provider(self) -> Provider: ...

    @property
    def keeper(self) -> IndexKeeper: ...

    def store_for(self, user_id: str) -> Store: ...

    def now(self) -> Datetime: ...

    def digest_maker(self, store: Store, user_id: str) -> DigestMaker: ...

    async def conversation(self, key: str, user_id: str, *, channel: str | None = None,
                           thread_ts: str | None = None) -> repositories.ConversationRow: ...


class TurnRunner:
    def __init__(self, brain: BrainParts) -> None:
        self.brain = brain
        self.settings = brain.settings
        self.db = brain.db
        self._specs = [ToolSpec(s["name"], s["description"], s["parameters"])
                       for s in tool_specs()]
        self._terminal = registry.terminal_names()
        self._parallel = registry.read_only_names()
        IndexKeeper.hook(brain.provider)

    def context(self, user_id: str, **fields: Any) -> ToolContext:
        """The tool context of one call or turn for `user_id` (one place builds it)."""
        store = self.brain.store_for(user_id)
        return ToolContext(store=store, db=self.db, user_id=user_id,
                           confidence_threshold=self.settings.confidence_threshold,
                           make_digest=self.brain.digest_maker(store, user_id),
                           tz=self.settings.tz,
                           similar=self.brain.keeper.turn_similar(store), **fields)

    async def handle(self, *, conversation_key: str, user_id: str, text: str,
                     source: str = "cli", channel: str | None = None,
                     thread_ts: str | None = None, job: JobRow | None = None) -> TurnResult:
        """One turn. With `job` (the intake job it runs for) it is taken once: a job that
        runs again gets the turn already taken, and notes its first try filed are found."""
        if job is not None and isinstance(job.result, dict) and job.result.get("turn"):
            return TurnResult.from_dict(job.result["turn"])
        store = self.brain.store_for(user_id)
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
        ctx = self.context(user_id, conversation_id=conv.id, turn_id=turn_id, source=source,
                           channel=channel, thread_ts=thread_ts, message=text,
                           message_view=view, job_id=job.id if job else None,
                           job_key=job.key if job else None,
                           job_attempt=job.attempts if job else 1)

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
                system = system_prompt(now=self.brain.now(), summary=summary, filed=filed,
                                       threshold=self.settings.confidence_threshold)
                history = build_history([[stored_message(m) for m in t] for t in stored_turns])
                outcome = await run_turn(self.brain.provider, system=system, history=history,
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
        await self.finish(conv.id, turn_id, outcome, status=status,
                           job_id=job.id if job else None, result=result,
                           job_owner=job.lease_owner if job else None)
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

    async def finish(self, conversation_id: int, turn_id: int, outcome: LoopOutcome,
                      *, status: str, job_id: int | None = None,
                      result: TurnResult | None = None, job_owner: str | None = None) -> None:
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
            # Fenced: a worker whose lease was taken over stores nothing of its turn (the new
            # holder runs it, and finds the notes this one filed by their ids).
            if job_id is not None and result is not None and not await journal.set_result(
                    s, job_id, {"turn": result.to_dict()}, owner=job_owner):
                await s.rollback()
                raise LeaseLost(f"job {job_id} was taken over before its turn was stored")
            await s.commit()

    async def record(self, key: str, user_id: str, user_text: str, reply: str) -> None:
        """An exchange that needed no model (a button press) joins the conversation's history."""
        conv = await self.brain.conversation(key, user_id)
        outcome = LoopOutcome(text=reply, messages=[Message(role="user", content=user_text),
                                                    Message(role="assistant", content=reply)])
        async with self.db.session() as s:
            turn_id = await repositories.start_turn(s, conv.id, user_text)
            await s.commit()
        await self.finish(conv.id, turn_id, outcome, status="ok")

    async def call_tool(self, *, user_id: str, name: str, arguments: dict[str, Any] | None,
                        source: str = "mcp") -> Execution:
        """Run one tool for `user_id` outside a conversation, as an MCP client asks.

        The same registry the model's calls go through, so validation and error results are
        exactly the ones the model gets; a capture writes its receipt like any other."""
        ctx = self.context(user_id, source=source)
        return await execute(ctx, f"{source}_{uuid.uuid4().hex[:12]}", name, arguments)
