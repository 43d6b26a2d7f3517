"""Conversations and the record of their turns: the rows adapters ask about (a thread the
bot knows, a person's recent conversations, the turn log), storing a whole turn at once, an
exchange that needed no model (a button press), and which Slack message shows each receipt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot.core import Core
from bot.jobs.queue import LeaseLost
from storage import repositories
from storage.repositories import ConversationRow, TurnRow, journal, slack_state

if TYPE_CHECKING:
    from bot.turn.loop import LoopOutcome
    from bot.turn.result import TurnResult
    from storage.db import Session

# A stale card: (channel, message ts, the move's data, its text), to update in place.
StaleCard = tuple[str, str, dict[str, Any], str]


@dataclass(frozen=True)
class Shown:
    """What to update once a turn's reply is shown: the stale cards, and the person's Home
    when they have opened it."""

    stale: list[StaleCard]
    home_watched: bool


class Conversations:
    def __init__(self, core: Core) -> None:
        self.core = core
        self.db = core.db

    async def get(self, key: str, user_id: str, *, channel: str | None = None,
                  thread_ts: str | None = None) -> ConversationRow:
        """The conversation `key` of `user_id`, made on first use."""
        async with self.db.session() as s:
            row = await repositories.get_or_create_conversation(
                s, key, user_id, channel=channel, thread_ts=thread_ts)
            await s.commit()
            return row

    async def recent(self, user_id: str, limit: int = 5) -> list[ConversationRow]:
        async with self.db.session() as s:
            return await repositories.recent_conversations(s, user_id, limit=limit)

    async def key_for(self, ref: str) -> str | None:
        """The key of the conversation `ref` names (its key or its number), or None."""
        async with self.db.session() as s:
            row = await repositories.get_conversation(s, ref)
            if row is None and ref.isdigit():
                row = await repositories.get_conversation_by_id(s, int(ref))
        return row.key if row is not None else None

    async def turn_log(self, conversation_key: str | None = None,
                       limit: int = 10) -> list[TurnRow]:
        """The latest turns (of one conversation, or all), newest first, with tool runs."""
        async with self.db.session() as s:
            conv_id = None
            if conversation_key is not None:
                row = await repositories.get_conversation(s, conversation_key)
                if row is None:
                    return []
                conv_id = row.id
            return await repositories.turns_for_log(s, conv_id, limit=limit)

    async def viewing(self, key: str, user_id: str, *, channel: str, thread_ts: str,
                      context: dict[str, Any]) -> None:
        """A Slack assistant thread and its context (the channel the person is viewing, as
        Slack last sent it): kept on its conversation, named in the prompt of its turns."""
        async with self.db.session() as s:
            row = await repositories.get_or_create_conversation(
                s, key, user_id, channel=channel, thread_ts=thread_ts)
            await repositories.set_conversation_context(s, row.id, context)
            await s.commit()

    async def title_once(self, key: str, text: str) -> str | None:
        """The title an assistant thread gets from its first message (None: not an assistant
        thread, or titled already)."""
        async with self.db.session() as s:
            row = await repositories.get_conversation(s, key)
            if row is None or row.context is None or row.title:
                return None
            title = await repositories.title_conversation(s, row.id, text)
            await s.commit()
            return title

    async def thread_known(self, channel: str, thread_ts: str) -> bool:
        """Has anyone talked with the bot in this Slack thread?"""
        async with self.db.session() as s:
            return await repositories.thread_known(s, channel, thread_ts)

    async def rate(self, *, turn_id: int, user_id: str, verdict: str) -> bool:
        """Record `verdict` (good | bad) on `user_id`'s own turn; False when it is not theirs."""
        async with self.db.session() as s:
            done = await repositories.set_feedback(s, turn_id, user_id, verdict)
            await s.commit()
        return done

    async def note_owner(self, entry_id: str, conversation_key: str | None = None) -> str | None:
        """Whose vault holds the note: its capture's user, else the conversation's user."""
        receipt = await self.core.receipts.for_entry(entry_id)
        if receipt is not None:
            return receipt.user_id
        if conversation_key is None:
            return None
        async with self.db.session() as s:
            conversation = await repositories.get_conversation(s, conversation_key)
        return conversation.user_id if conversation is not None else None

    async def shown_at(self, s: Session, result: TurnResult, channel: str,
                       message_ts: str, user_id: str) -> Shown:
        """Record which message shows each new receipt of the turn, in the caller's
        transaction (the job's end: bot/jobs/queue.py `JobContext.at_end`); returns the cards
        of notes the turn moved that were shown elsewhere in this channel, so the adapter can
        update them in place, and whether the person has opened their App Home (read in the
        same transaction, after the turn: a Home opened meanwhile counts)."""
        receipts = self.core.receipts
        stale: list[StaleCard] = []
        for ex in result.executions:
            if ex.status != "ok" or ex.output is None or not ex.output.data.get("id"):
                continue
            row = await receipts.for_entry_in(s, str(ex.output.data["id"]))
            if row is None:
                continue
            if ex.output.kind == "capture":
                await receipts.shown_in(row.id, message_ts, session=s)
            elif ex.output.kind == "move" and row.message_ts and row.channel == channel \
                    and row.message_ts != message_ts:
                stale.append((channel, row.message_ts, ex.output.data, ex.output.text))
        return Shown(stale, await slack_state.home_watched(s, user_id))

    # -- the record of a turn -----------------------------------------------------------------

    async def finish(self, conversation_id: int, turn_id: int, outcome: LoopOutcome,
                     *, status: str, job_id: int | None = None,
                     result: TurnResult | None = None, job_owner: str | None = None) -> None:
        """Store the whole turn at once: messages, tool runs, usage, and for a job the turn's
        result (in the same transaction: a job never has a finished turn without it)."""
        from bot.turn.messages import message_to_dict

        async with self.db.session() as s:
            await repositories.save_messages(s, conversation_id, turn_id,
                                             [message_to_dict(m) for m in outcome.messages])
            for e in outcome.executions:
                await repositories.add_tool_run(
                    s, turn_id, e.call_id, e.tool, e.arguments, e.status,
                    e.output.data if e.output else None,
                    e.error.get("message") if e.error else None,
                    e.started_at or datetime.now().astimezone(), e.duration_ms)
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
        from bot.llm.types import Message
        from bot.turn.loop import LoopOutcome

        conv = await self.get(key, user_id)
        outcome = LoopOutcome(text=reply, messages=[Message(role="user", content=user_text),
                                                    Message(role="assistant", content=reply)])
        async with self.db.session() as s:
            turn_id = await repositories.start_turn(s, conv.id, user_text)
            await s.commit()
        await self.finish(conv.id, turn_id, outcome, status="ok")
