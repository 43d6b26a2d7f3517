"""A message's reply, as every surface shows it: one use case (`brain.replies.reply`) and one
model (`Reply`) that Slack renders as Block Kit (bot/slack/turn_reply.py) and `brain chat` as
lines of text (bot/commands/chat.py). A surface adds only what it alone has: Slack streams,
updates the cards it showed before and refreshes the App Home; the terminal prints.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.jobs.queue import JobRow
    from bot.turn.result import Progress, TurnResult
    from bot.turn.runner import TurnRunner
    from tools.readers.sections import SharedFile

# What a turn's tools did that a note's own card shows (and undoes).
NOTE_KINDS = ("capture", "move")


@dataclass(frozen=True)
class Card:
    """One result worth showing: a note filed or moved (one card per note, the latest result
    of the turn), or another tool's result (a list, a note read, an answer)."""

    kind: str
    data: dict[str, Any]
    summary: str  # one line, as the tool said it


@dataclass(frozen=True)
class Run:
    """One tool call of the turn, as a reply lists it."""

    tool: str
    arguments: Any
    ok: bool
    ms: float
    error: str  # the failure in words ("" when ok)


@dataclass(frozen=True)
class Reply:
    """What the turn says back. `text` is the reply's words (made true to what happened);
    `says_more` whether they add anything to the cards (not one of their summaries, not a
    turn of captures and moves alone). `changes` are the vault history's changes the turn
    made, newest last; `undo_beyond_cards` whether they go beyond what the capture cards undo
    themselves (an update, a move, a link), so the reply needs its own *Undo changes*."""

    text: str
    cards: tuple[Card, ...]
    summaries: tuple[str, ...]  # every tool result's line, in order (a card's, replaced too)
    says_more: bool
    changes: tuple[str, ...]
    undo_beyond_cards: bool
    runs: tuple[Run, ...]
    answered: bool  # a question answered: nothing filed, moved or changed (feedback asked)
    changed: bool  # a note was filed or changed (views of the vault are out of date)
    turn_id: int | None
    result: TurnResult  # the whole turn (tools, tokens), for `--json` and the job's record


def reply_of(result: Any) -> Reply:
    """The reply to a turn (a TurnResult, or anything with its fields)."""
    cards: dict[str, Card] = {}  # one card per note: a later result replaces an earlier
    executions = list(result.executions)
    for n, ex in enumerate(executions):
        if ex.status != "ok" or ex.output is None:
            continue
        kind, data = ex.output.kind, ex.output.data
        note_id = data.get("id") if kind in NOTE_KINDS else None
        cards[f"note:{note_id}" if note_id else f"run:{n}"] = Card(kind, data,
                                                                   ex.output.text or "")
    text = (result.text or "").strip()
    done = [ex for ex in executions if ex.status == "ok" and ex.output is not None]
    only_cards = bool(cards) and len(done) == len(executions) and all(
        ex.output.kind in NOTE_KINDS for ex in done)
    summaries = tuple(ex.output.text for ex in done if ex.output.text)
    beyond = any(ex.tool != "classify_and_capture" and ex.output.kind != "capture"
                 for ex in done)
    touched = any(ex.output.kind in (*NOTE_KINDS, "update") for ex in done)
    changes = tuple(getattr(result, "changes", ()) or ())
    return Reply(
        text=text, cards=tuple(cards.values()), summaries=summaries,
        says_more=bool(text) and text not in summaries and not only_cards,
        changes=changes, undo_beyond_cards=beyond,
        runs=tuple(_run(ex) for ex in executions),
        answered=getattr(result, "turn_id", None) is not None
        and getattr(result, "outage", None) is None and not touched,
        changed=bool(getattr(result, "changed", bool(changes))),
        turn_id=getattr(result, "turn_id", None), result=result)


def _run(ex: Any) -> Run:
    error = "" if ex.status == "ok" else str((ex.error or {}).get("message", ""))
    return Run(ex.tool, ex.arguments, ex.status == "ok", float(ex.duration_ms), error)


class Replies:
    """`brain.replies`: a person's message answered, whatever the surface it came through."""

    def __init__(self, turns: TurnRunner) -> None:
        self.turns = turns

    async def reply(self, *, conversation_key: str, user_id: str, text: str,
                    source: str = "cli", channel: str | None = None,
                    thread_ts: str | None = None, job: JobRow | None = None,
                    files: list[SharedFile] | None = None,
                    unfurls: list[dict[str, str]] | None = None,
                    progress: Progress | None = None,
                    after: Callable[[TurnResult], Awaitable[None]] | None = None) -> Reply:
        """The turn of one message (bot/turn/runner.py), and its reply. Writing to the bot
        ends a pause of the person's schedules. `after` runs once the turn is stored (the
        CLI gives what it filed its vectors there)."""
        result = await self.turns.handle(
            conversation_key=conversation_key, user_id=user_id, text=text, source=source,
            channel=channel, thread_ts=thread_ts, job=job, files=files, unfurls=unfurls,
            progress=progress, resume=True)
        if after is not None:
            await after(result)
        return reply_of(result)
