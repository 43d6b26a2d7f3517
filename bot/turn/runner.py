"""One turn of a conversation, run for the Brain: the prompt, the tool loop, the rescue of a
thought the model did not file, and the whole turn stored at once.

Imported by the Brain on its first turn (it pulls in the LLM layer, the tools and their JSON
schemas), so the storage verbs of the CLI, which only need the door, stay fast.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.answers.final import cite_prose, needs_citations
from bot.core import Core, ModelChoice
from bot.jobs.queue import JobRow
from bot.llm.offline import OfflineProvider
from bot.llm.types import LLMError, Message, Provider, ToolCall, ToolSpec
from bot.stores import Stores
from bot.turn import wording
from bot.turn.conversations import Conversations
from bot.turn.loop import LoopOutcome, run_turn
from bot.turn.messages import receipt_message, request_messages, stored_message
from bot.turn.prompts import FiledNote, system_prompt
from bot.turn.result import (
    ANSWERED_WITHOUT_FILING,
    Progress,
    TurnResult,
    applied_by_rules,
    changed_note,
    direct_move_outcome,
    filed_notes,
    kept,
    looks_like_thought,
    message_view,
    not_a_new_note,
    over_cap,
    rescue_text,
    told_truth,
    trouble,
    with_filed_summary,
)
from bot.turn.tool_calls import ToolCalls
from storage import repositories
from storage.errors import StorageDown, StorageError, unwritable
from storage.history import collecting
from storage.repositories import ConversationRow, MessageRow, slack_state
from storage.types import VaultSummary

if TYPE_CHECKING:
    from storage.db import Session
from tools import registry
from tools.base import ToolContext
from tools.capture.fence import Fence
from tools.capture.limits import refusal
from tools.capture.thought import capture_thought
from tools.readers.sections import SharedFile, for_the_model, read_all
from tools.registry import Execution, execute, tool_specs
from tools.rules import corrections
from tools.web.links import message_links

log = logging.getLogger(__name__)

HISTORY_TURNS = 6  # recent whole turns sent with each request
NO_ANSWER = "I have no answer to that (the model returned nothing); please try again."
INTERNAL_ERROR = "an internal error"


class TurnRunner:
    def __init__(self, core: Core, conversations: Conversations, tools: ToolCalls) -> None:
        self.core = core
        self.conversations = conversations
        self.tools = tools
        self.settings = core.settings
        self.db = core.db
        self._specs = [ToolSpec(s["name"], s["description"], s["parameters"])
                       for s in tool_specs()]
        self._terminal = registry.terminal_names()
        self._parallel = registry.read_only_names()
        Stores.hook(core.provider)

    async def handle(self, *, conversation_key: str, user_id: str, text: str,
                     source: str = "cli", channel: str | None = None,
                     thread_ts: str | None = None, job: JobRow | None = None,
                     files: list[SharedFile] | None = None,
                     unfurls: list[dict[str, str]] | None = None,
                     progress: Progress | None = None, resume: bool = False) -> TurnResult:
        """One turn. With `job` (the intake job it runs for) it is taken once: a job that
        runs again gets the turn already taken, and notes its first try filed are found.
        `files` shared with the message are read; the note that files it keeps them. A
        message that is (mostly) a link gets its page read (Slack's `unfurls` when given).
        `progress` hears each tool call as it starts and ends (Slack shows them as steps).
        `resume`: the person wrote to the bot, so whatever was paused for them runs again."""
        if job is not None and isinstance(job.result, dict) and job.result.get("turn"):
            await self._came_back(user_id, resume)
            return TurnResult.from_dict(job.result["turn"])
        refused = refusal(text)  # too long, or not text: no turn, nothing filed
        if refused is not None:
            await self._came_back(user_id, resume)
            return TurnResult(text=refused)
        with collecting() as changes:  # what the turn changed, for its Undo
            return await self._handle(conversation_key, user_id, text, source, channel,
                                      thread_ts, job, changes, files or [], unfurls, progress,
                                      resume)

    async def _handle(self, conversation_key: str, user_id: str, text: str, source: str,
                      channel: str | None, thread_ts: str | None, job: JobRow | None,
                      changes: list[str], files: list[SharedFile],
                      unfurls: list[dict[str, str]] | None,
                      progress: Progress | None, resume: bool) -> TurnResult:
        opened = await self._open(conversation_key, user_id, text, channel, thread_ts, job,
                                  resume)
        ctx, view = await self._context(opened, user_id, text, source, channel, thread_ts,
                                        job, files, unfurls)
        # In the thread of a filed note, a reply that reads as a change to it is applied to
        # it (by the model, else by the rules), never filed as a new note.
        note = opened.filed[-1] if opened.filed else None
        change = corrections.read(text, today=self.core.today()) if note else None
        unclear = note is not None and change is None and corrections.sounds_like_change(text)
        thread = InThread(note, change, unclear)
        run_call = _caller(ctx, thread, progress)
        talk = await self._converse(opened, user_id, text, view, ctx, thread, run_call)
        rescued = await self._settle(ctx, text, talk, thread, run_call)
        outcome, failure = talk.outcome, talk.failure
        if capped := over_cap(outcome.executions):  # the reply says what was kept
            outcome.text = f"{outcome.text}\n\n{capped}".strip()
        if talk.notice:
            outcome.text = f"{talk.notice}\n\n{outcome.text}"
        result = TurnResult(outcome.text, outcome.executions, outcome.usage, outcome.llm_calls,
                            opened.turn_id, outage=failure.kind if failure is not None else None,
                            rescued=rescued, changes=tuple(changes))
        status = (("outage" if wording.is_outage(failure) else "refused") if failure
                  else ("rescued" if rescued else "ok"))
        await self.conversations.finish(opened.conv.id, opened.turn_id, outcome, status=status,
                                        job_id=job.id if job else None, result=result,
                                        job_owner=job.lease_owner if job else None)
        return result

    async def _came_back(self, user_id: str, resume: bool) -> None:
        """With `resume`: a pause of the person's schedules ends (their message is here)."""
        if resume:
            async with self.db.session() as s:
                _row, ended = await slack_state.returned(s, user_id)
                if ended:
                    await s.commit()
            _back(user_id, ended)

    async def _open(self, conversation_key: str, user_id: str, text: str, channel: str | None,
                    thread_ts: str | None, job: JobRow | None, resume: bool) -> Opened:
        """One transaction opens the turn: the person's row (their model; with `resume`, a
        pause of theirs ended), the conversation, its filed notes, its recent turns, and the
        vault's summary for the model when its index is fresh."""
        async with self.db.session() as s:
            summary = await self._summary_in(s, user_id)
            if resume:
                person, ended = await slack_state.returned(s, user_id)
            else:
                person, ended = await slack_state.get_user(s, user_id), False
            conv = await repositories.get_or_create_conversation(
                s, conversation_key, user_id, channel=channel, thread_ts=thread_ts)
            receipts = await self.core.receipts.for_conversation(conv.id, session=s)
            turn_id = await repositories.start_turn(s, conv.id, text,
                                                    job_id=job.id if job else None)
            stored_turns = await repositories.recent_turn_messages(s, conv.id, HISTORY_TURNS)
            await s.commit()
        _back(user_id, ended)
        return Opened(conv, turn_id, filed_notes(receipts), stored_turns,
                      ModelChoice(person.model if person is not None else None), summary)

    async def _summary_in(self, s: Session, user_id: str) -> VaultSummary | None:
        try:
            store = self.core.store_for(user_id)
        except StorageError:  # (no vault to read: the model's turn says so, as before)
            return None
        return await store.summary_in(s)

    async def _context(self, opened: Opened, user_id: str, text: str, source: str,
                       channel: str | None, thread_ts: str | None, job: JobRow | None,
                       files: list[SharedFile], unfurls: list[dict[str, str]] | None,
                       ) -> tuple[ToolContext, str]:
        """The tools' context for the turn, and the message as the model sees it: its files
        and pages read, and fenced as data with a code made for this turn."""
        limits = self.settings.reader_limits(user_id)
        shared = await read_all(files, limits)
        shared += await message_links(text, allow_hosts=self.settings.fetch_allow_hosts,
                                      limits=limits, unfurls=unfurls)
        view = message_view(text) + (f"\n\n{for_the_model(shared, Fence())}" if shared else "")
        ctx = self.tools.context(user_id, conversation_id=opened.conv.id,
                                 turn_id=opened.turn_id, source=source, channel=channel,
                                 thread_ts=thread_ts, message=text, message_view=view,
                                 job_id=job.id if job else None,
                                 job_key=job.key if job else None,
                                 job_attempt=job.attempts if job else 1)
        ctx.shared = shared
        return ctx, view

    async def _converse(self, opened: Opened, user_id: str, text: str, view: str,
                        ctx: ToolContext, thread: InThread, run_call: Caller) -> Talk:
        """The model's part of the turn (or the rules' `fix:`), and why it kept nothing, if
        it did not."""
        notice: str | None = None  # the person's chosen model is gone: said once
        try:
            direct = corrections.parse_fix(text)
            if direct is not None and thread.note is not None:
                # "fix: projects" needs no LLM call: move the latest note of this thread.
                call = ToolCall(id="direct_fix_1", name="move_entry",
                                arguments={"path": thread.note.id or thread.note.path,
                                           "target_category": direct})
                outcome = direct_move_outcome(text, call, await run_call(call))
            else:
                provider, notice = await self.core.provider_for(user_id, chosen=opened.chosen)
                outcome = await self._ask_model(opened, user_id, view, ctx, run_call, provider)
            failure = outcome.error
            if failure is not None:
                log.warning("LLM %s in turn %s: %s", failure.kind, opened.turn_id,
                            failure.server_message or failure.message)
                return Talk(outcome, failure, wording.reason(failure), notice)
            return Talk(outcome, None, None if kept(outcome) else trouble(outcome), notice)
        except StorageDown:
            raise  # storage cannot be written: the rescue could not either; the job waits
        except Exception as exc:
            down = unwritable(exc)  # (the database stopped answering mid-turn): so is this
            if down is not None:
                raise StorageDown(down) from exc
            # A bug must not cost the user their thought: log it, and rescue after.
            log.exception("turn %s failed", opened.turn_id)
            outcome = LoopOutcome(text="", messages=[Message(role="user", content=text)])
            return Talk(outcome, None, INTERNAL_ERROR, notice)

    async def _ask_model(self, opened: Opened, user_id: str, view: str, ctx: ToolContext,
                         run_call: Caller, provider: Provider) -> LoopOutcome:
        store = self.core.store_for(user_id)
        system = system_prompt(now=self.core.now(),
                               summary=opened.summary or await store.summary(),
                               filed=opened.filed,
                               threshold=self.settings.confidence_threshold,
                               viewing=(opened.conv.context or {}).get("channel_id"))
        earlier = request_messages([[stored_message(m) for m in t]
                                    for t in opened.stored_turns])
        outcome = await run_turn(provider, system=system, earlier=earlier, user_text=view,
                                 tools=self._specs, execute=run_call,
                                 max_iterations=self.settings.max_iterations,
                                 terminal=self._terminal, parallel=self._parallel)
        if (outcome.error is None and not isinstance(provider, OfflineProvider)
                and needs_citations(outcome, self._parallel)):
            try:
                await cite_prose(provider, system=system, earlier=earlier, outcome=outcome,
                                 execute=run_call, returned=bool(ctx.returned))
            except LLMError as exc:  # the prose stays unchecked: never shown
                outcome.error = exc
        return outcome

    async def _settle(self, ctx: ToolContext, text: str, talk: Talk, thread: InThread,
                      run_call: Caller) -> str | None:
        """The reply made true to what happened: a change to the thread's note applied by the
        rules (or asked about), a thought the turn did not keep rescued, an error said as one.
        Returns why the thought was rescued, if it was."""
        outcome, reason = talk.outcome, talk.reason
        if thread.note is not None and thread.wants_change and not changed_note(outcome):
            if thread.change is not None:
                name, arguments = thread.change.call(thread.note.id or thread.note.path)
                call = ToolCall(id="rule_fix_1", name=name, arguments=arguments)
                applied_by_rules(outcome, call, await run_call(call))
            else:
                outcome.text = corrections.question(thread.note.name)
                outcome.messages.append(receipt_message(outcome.text))
        elif reason is not None and looks_like_thought(text):
            await self._rescue(ctx, text, reason, outcome, failure=talk.failure)
            return reason
        elif talk.failure is not None:
            outcome.text = wording.nothing_saved(talk.failure)
            outcome.messages.append(receipt_message(outcome.text))
        elif reason == INTERNAL_ERROR:
            outcome.text = "Something went wrong on my side; nothing was saved. Please try again."
            outcome.messages.append(receipt_message(outcome.text))
        else:
            told_truth(outcome)
            outcome.text = with_filed_summary(outcome) or NO_ANSWER
        return None

    async def _rescue(self, ctx: ToolContext, text: str, reason: str, outcome: LoopOutcome,
                      *, failure: LLMError | None) -> None:
        """Keep the message: when the model answered without filing it, by the rules'
        category (the inbox when they are unsure); otherwise in the inbox with the reason.
        The reply says so plainly, from what the filing returned."""
        by_rules = reason == ANSWERED_WITHOUT_FILING
        output = await capture_thought(ctx, text, {},
                                    inbox_reason=None if by_rules else reason)
        outcome.executions.append(Execution(
            call_id="rescue", tool="classify_and_capture", arguments=None, status="ok",
            output=output, error=None, content=json.dumps({"ok": True, **output.data}),
            duration_ms=0.0))
        path = str(output.data.get("path"))
        if output.kind != "capture":  # sent again a moment ago: that note holds it
            outcome.text = output.text
        elif failure is not None:
            outcome.text = wording.saved_anyway(failure, path)
        elif by_rules:
            outcome.text = (f"The model answered without filing this, so I filed it by my "
                            f"rules: {output.text} [{path}]")
        else:
            outcome.text = rescue_text(reason, path)
        last = outcome.messages[-1] if outcome.messages else None
        if last is not None and last.role == "assistant" and not last.tool_calls:
            outcome.messages[-1] = receipt_message(outcome.text)
        else:
            outcome.messages.append(receipt_message(outcome.text))


Caller = Callable[[ToolCall], Awaitable[Execution]]


def _back(user_id: str, ended: bool) -> None:
    if ended:
        log.info("user %s is back; their schedules resume", user_id)


@dataclass(frozen=True)
class Opened:
    """A turn as it opens: its conversation, its id, the notes its thread filed, and the
    conversation's recent turns."""

    conv: ConversationRow
    turn_id: int
    filed: list[FiledNote]
    stored_turns: list[list[MessageRow]]
    chosen: ModelChoice  # the model the person chose, read with the rest
    summary: VaultSummary | None  # the vault's, when it could be read with the rest


@dataclass(frozen=True)
class InThread:
    """The thread's latest filed note, and whether the message reads as a change to it
    (`change`: the rules could read which; `unclear`: it sounds like one, but which not)."""

    note: FiledNote | None
    change: corrections.Correction | None
    unclear: bool

    @property
    def wants_change(self) -> bool:
        return self.change is not None or self.unclear


@dataclass
class Talk:
    """What the model's part of the turn came to: its outcome, the model's failure, why
    nothing was kept (None: something was), and a notice about the person's model."""

    outcome: LoopOutcome
    failure: LLMError | None
    reason: str | None
    notice: str | None


def _caller(ctx: ToolContext, thread: InThread, progress: Progress | None) -> Caller:
    """How the turn runs a tool call: a new note refused where the message changes the
    thread's note; each call told to `progress` as it starts and ends."""
    async def run_call(call: ToolCall) -> Execution:
        if thread.note is not None and thread.wants_change \
                and call.name == "classify_and_capture":
            return not_a_new_note(call, thread.note)
        if progress is not None:
            await progress(call, None)
        done = await execute(ctx, call.id, call.name, call.arguments, call.parse_error)
        if progress is not None:
            await progress(call, done)
        return done
    return run_call
