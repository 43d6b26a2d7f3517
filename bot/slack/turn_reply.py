"""The reply to one turn: the model's text, a card per tool result (bot/slack/cards.py), the
Undo of what the turn changed, the tool runs; within Slack's 50 blocks, cut in the middle when
it must be, never at an Undo."""

from __future__ import annotations

import json
from collections.abc import Iterable

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
from bot.slack.feedback import feedback_block
from bot.turn.reply import Reply, Run


def turn_message(reply: Reply) -> SlackMessage:
    """The reply to one turn: text, a card per result, the tool runs. Always valid; when it
    would pass Slack's 50 blocks the middle is cut to a line, never an Undo: a turn that
    changed something keeps a button that puts it all back."""
    head: list[Block] = [prose(escape(reply.text))] if reply.says_more else []
    shown = [blocks for c in reply.cards if (blocks := output_blocks(c.kind, c.data))]
    runs = runs_context(reply.runs)
    rated = reply.answered and bool(head or reply.cards)
    room = MAX_BLOCKS - (1 if runs else 0) - (1 if rated else 0)
    undo = changes_undo(reply)
    if undo is None and len(head) + sum(map(len, shown)) > room:
        undo = changes_undo(reply, cut=True)  # cards with their own Undo will be left out
    blocks = fitted(head, shown, room - (1 if undo is not None else 0), undo=undo is not None)
    if undo is not None:
        blocks.append(undo)
    if rated and reply.turn_id is not None:
        blocks.append(feedback_block(reply.turn_id))
    if runs:
        blocks.append(runs)
    if not blocks:
        blocks.append(section("Done."))
    # The fallback text is mrkdwn too (notifications render it): escaped like the blocks, so
    # model text cannot ping @channel or forge a link there either.
    fallback = escape(reply.text or "\n".join(reply.summaries)) or "Done."
    return message(blocks, clip(fallback, MAX_MESSAGE_TEXT))


def changes_undo(reply: Reply, *, cut: bool = False) -> ActionsBlock | None:
    """Undo for what a turn changed beyond its capture cards (updates, moves, links), or for
    all of it when some cards did not fit (`cut`): the history's changes, put back newest
    first."""
    changes = list(reply.changes)
    if not changes or not (reply.undo_beyond_cards or cut):
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


def runs_context(runs: Iterable[Run]) -> ContextBlock | None:
    """One context line: tool, short arguments, status, milliseconds."""
    parts = []
    for run in runs:
        args = json.dumps(run.arguments, ensure_ascii=False) if run.arguments else ""
        parts.append(f"`{run.tool}` {escape(clip(args, 60))} {'ok' if run.ok else 'error'} "
                     f"{run.ms:.0f} ms")
    if not parts:
        return None
    return context(clip(" · ".join(parts), MAX_CONTEXT_TEXT))
