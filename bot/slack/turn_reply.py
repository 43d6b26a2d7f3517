"""The reply to one turn: the model's text, a card per tool result (bot/slack/cards.py), the
Undo of what the turn changed, the tool runs; within Slack's 50 blocks, cut in the middle when
it must be, never at an Undo."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, ConfirmObject, ContextBlock

from bot.slack.cards import (
    MAX_BLOCKS,
    MAX_CONTEXT_TEXT,
    MAX_MESSAGE_TEXT,
    UNDO_CHANGES_ACTION,
    SlackMessage,
    clip,
    context,
    escape,
    message,
    output_blocks,
    prose,
    section,
)
from bot.slack.feedback import answered, feedback_block


def turn_message(result: Any) -> SlackMessage:
    """The reply to one turn: text, a card per result, the tool runs. Always valid; when it
    would pass Slack's 50 blocks the middle is cut to a line, never an Undo: a turn that
    changed something keeps a button that puts it all back."""
    cards: dict[str, list[Block]] = {}  # one card per note: a later result replaces an earlier
    summaries: list[str] = []
    for n, ex in enumerate(result.executions):
        if ex.status != "ok" or ex.output is None:
            continue
        out = output_blocks(ex.output.kind, ex.output.data)
        note_id = ex.output.data.get("id") if ex.output.kind in ("capture", "move") else None
        cards[f"note:{note_id}" if note_id else f"run:{n}"] = out
        if ex.output.text:
            summaries.append(ex.output.text)
    reply = (result.text or "").strip()
    # A turn of only captures/moves: the cards say it all; the reply stays the fallback text.
    only_cards = bool(cards) and all(
        ex.status == "ok" and ex.output is not None and ex.output.kind in ("capture", "move")
        for ex in result.executions)
    head: list[Block] = []
    if reply and reply not in summaries and not only_cards:
        head.append(prose(escape(reply)))
    runs = runs_context(result.executions)
    rated = answered(result) and bool(head or cards)
    room = MAX_BLOCKS - (1 if runs else 0) - (1 if rated else 0)
    shown = [c for c in cards.values() if c]
    undo = changes_undo(result)
    if undo is None and len(head) + sum(map(len, shown)) > room:
        undo = changes_undo(result, cut=True)  # cards with their own Undo will be left out
    blocks = fitted(head, shown, room - (1 if undo is not None else 0), undo=undo is not None)
    if undo is not None:
        blocks.append(undo)
    if rated:
        blocks.append(feedback_block(result.turn_id))
    if runs:
        blocks.append(runs)
    if not blocks:
        blocks.append(section("Done."))
    # The fallback text is mrkdwn too (notifications render it): escaped like the blocks, so
    # model text cannot ping @channel or forge a link there either.
    fallback = escape(reply or "\n".join(summaries)) or "Done."
    return message(blocks, clip(fallback, MAX_MESSAGE_TEXT))


def changes_undo(result: Any, *, cut: bool = False) -> ActionsBlock | None:
    """Undo for what a turn changed beyond its capture cards (updates, moves, links), or for
    all of it when some cards did not fit (`cut`): the history's changes, put back newest
    first."""
    changes = list(getattr(result, "changes", ()) or ())
    beyond = any(ex.status == "ok" and ex.tool not in ("classify_and_capture",)
                 and ex.output is not None and ex.output.kind not in ("capture",)
                 for ex in result.executions)
    if not changes or not (beyond or cut):
        return None
    many = len(changes) > 1
    return ActionsBlock(block_id=f"undo-changes-{changes[-1][:12]}", elements=[ButtonElement(
        text="Undo changes", action_id=UNDO_CHANGES_ACTION, style="danger",
        value=json.dumps({"changes": [c[:12] for c in changes]}),
        confirm=ConfirmObject(
            title="Undo these changes?" if many else "Undo this change?",
            text="The notes go back to what they were before this message (refused if "
                 "they changed since).", confirm="Undo", deny="Keep"))])


def fitted(head: list[Block], cards: list[list[Block]], room: int, *,
           undo: bool) -> list[Block]:
    """`head` and as many whole cards as fit in `room` blocks; the cards left out are named
    in one line instead (with `undo`, it says the Undo below covers them). Never half a card:
    its buttons go with it."""
    if len(head) + sum(len(c) for c in cards) <= room:
        return [*head, *(b for c in cards for b in c)]
    blocks = list(head)
    shown = 0
    for card in cards:
        if len(blocks) + len(card) > room - 1:
            break
        blocks.extend(card)
        shown += 1
    names = [n for n in map(_card_name, cards[shown:]) if n]
    line = (f"…and {len(cards) - shown} more result(s) that do not fit in one message"
            + (f": {', '.join(names)}" if names else "") + "."
            + (" *Undo changes* puts back everything this message changed." if undo else ""))
    return [*blocks[:room - 1], context(clip(line, MAX_CONTEXT_TEXT))]


def _card_name(card: list[Block]) -> str:
    first = card[0] if card else None
    text = getattr(getattr(first, "text", None), "text", "") or ""
    return clip(text.split("\n", 1)[0], 80)


def runs_context(executions: Iterable[Any]) -> ContextBlock | None:
    """One context line: tool, short arguments, status, milliseconds."""
    parts = []
    for ex in executions:
        args = json.dumps(ex.arguments, ensure_ascii=False) if ex.arguments else ""
        mark = "ok" if ex.status == "ok" else "error"
        parts.append(f"`{ex.tool}` {escape(clip(args, 60))} {mark} {float(ex.duration_ms):.0f} ms")
    if not parts:
        return None
    return context(clip(" · ".join(parts), MAX_CONTEXT_TEXT))
