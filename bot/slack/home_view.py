"""The App Home tab as Block Kit, from `bot.home.HomeData`: the inbox to review with the
card's buttons, active projects with their next action, what is due in the next 7 days, the
latest captures, and the digest settings as selects whose values are `/digest` words (so they
go through the same parsed request as the command).

Validated like every message (`cards.validate_message`) and as a view (`View.to_dict()`:
at most 100 blocks). Each list is bounded; what is left out is said, with how to see it.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    Option,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from bot.digest.schedule import WEEKDAYS, describe
from bot.slack import cards

MAX_VIEW_BLOCKS = 100
HOME_PREFIX = "home_"  # action ids of the Home's own controls
DIGEST_DAILY = "home_digest_daily"
DIGEST_WEEKLY = "home_digest_weekly"
UNDO_CHANGE = "home_undo_change"  # its value: a change id of the vault's history
MODEL = "home_model"  # its value: an LLM config id
SYNC = "home_sync"  # "Sync with Obsidian": the presser gets their remote and a new token
DAILY_TIMES = ("07:00", "08:00", "09:00", "12:00", "17:00", "18:00")
WEEKLY_TIMES = (("mon", "09:00"), ("fri", "16:00"), ("sun", "18:00"))


def _more(left: int, what: str, how: str) -> list[Block]:
    if left <= 0:
        return []
    return [cards.context(f"…and {left} more {what} not shown here. {how}")]


def _inbox(data: Any) -> list[Block]:
    blocks: list[Block] = [HeaderBlock(text=f"Inbox to review ({data.totals['inbox']})")]
    if not data.inbox:
        return blocks + [cards.section("Nothing waits for review.")]
    for i, note in enumerate(data.inbox):
        line = f"*{cards.shown(note.name, 150)}*"
        if note.detail:
            line += f"\n_{cards.escape(cards.clip(note.detail, 200))}_"
        blocks.append(cards.section(line, block_id=f"home-inbox-{i}"))
        buttons = cards.move_buttons(note.ref, "inbox")
        buttons.block_id = f"home-inbox-buttons-{i}"
        blocks.append(buttons)
    return blocks + _more(data.left_out("inbox"), "in the inbox",
                          "DM me “list my inbox”, or run `brain list --category inbox`.")


def _lines(title: str, rows: list[str], left: int, what: str, how: str,
           empty: str) -> list[Block]:
    blocks: list[Block] = [HeaderBlock(text=title)]
    if not rows:
        return blocks + [cards.section(empty)]
    blocks.extend(cards.text_sections("\n".join(rows)))
    return blocks + _more(left, what, how)


def _projects(data: Any) -> list[Block]:
    rows = []
    for note in data.projects:
        row = f"• *{cards.shown(note.name, 120)}*"
        if note.next_action:
            row += f" — next: {cards.escape(cards.clip(note.next_action, 150))}"
        if note.due_date:
            row += f" (due {note.due_date})"
        rows.append(row)
    return _lines(f"Active projects ({data.totals['projects']})", rows,
                  data.left_out("projects"), "active projects",
                  "DM me “what projects are active?”, or run `brain list --category projects "
                  "--status active`.", "No active projects.")


def _due(data: Any) -> list[Block]:
    rows = []
    for note in data.due:
        when = note.due_date or ""
        mark = " *overdue*" if when < data.today.isoformat() else (
            " *today*" if when == data.today.isoformat() else "")
        rows.append(f"• {when}{mark} · *{cards.shown(note.name, 120)}* "
                    f"({cards.title(note.category)})")
    return _lines(f"Due in the next 7 days ({data.totals['due']})", rows,
                  data.left_out("due"), "due soon", "DM me “what's due this week?”.",
                  "Nothing due in the next 7 days.")


def _captures(data: Any) -> list[Block]:
    rows = [f"• *{cards.shown(c.name, 120)}* → {cards.title(c.category)}"
            + (" (needs review)" if c.status == "needs_review" else "")
            for c in data.captures]
    return _lines("Latest captures", rows, 0, "", "", "Nothing captured yet: DM me a thought.")


def _changes(data: Any) -> list[Block]:
    """The app's latest changes, each with Undo (the history's; refused if changed since)."""
    if not data.changes:
        return []
    blocks: list[Block] = [HeaderBlock(text="Latest changes")]
    for change in data.changes:
        when = change.at.replace("T", " ")[:16]
        text = f"*{cards.escape(change.action)}*: {cards.escape(cards.clip(change.summary, 200))}"
        blocks.append(SectionBlock(
            text=MarkdownTextObject(text=f"{text}\n_{when} UTC · {change.id[:8]}_"),
            block_id=f"change-{change.id[:12]}",
            accessory=ButtonElement(text="Undo", action_id=UNDO_CHANGE, value=change.id,
                                    confirm=ConfirmObject(
                                        title="Undo this change?",
                                        text="The files go back to what they were before it "
                                             "(refused if they changed since).",
                                        confirm="Undo", deny="Keep"))))
    blocks.append(cards.context("Every change: `brain history`."))
    return blocks


def _option(text: str, value: str) -> Option:
    return Option(text=text, value=value)


def _digests(data: Any) -> list[Block]:
    subs = {s.kind: s for s in data.digests}
    state = [f"*{kind.capitalize()}:* " + (describe(subs[kind]) if kind in subs else "off")
             for kind in ("daily", "weekly")]
    daily = [_option("Off", "off daily")] + [_option(f"Every day at {t}",
                                                     f"subscribe daily {t}")
                                             for t in DAILY_TIMES]
    weekly = [_option("Off", "off weekly")] + [
        _option(f"{WEEKDAYS[[w[:3] for w in WEEKDAYS].index(d)].capitalize()} at {t}",
                f"subscribe weekly {d} {t}") for d, t in WEEKLY_TIMES]
    current_daily = daily[0]
    if "daily" in subs:
        at = f"{subs['daily'].hour:02d}:{subs['daily'].minute:02d}"
        current_daily = next((o for o in daily if o.value == f"subscribe daily {at}"),
                             _option(f"Every day at {at}", f"subscribe daily {at}"))
        if all(o.value != current_daily.value for o in daily):
            daily.append(current_daily)
    current_weekly = weekly[0]
    if "weekly" in subs and subs["weekly"].weekday is not None:
        w = subs["weekly"]
        day, at = WEEKDAYS[w.weekday][:3], f"{w.hour:02d}:{w.minute:02d}"
        value = f"subscribe weekly {day} {at}"
        current_weekly = next((o for o in weekly if o.value == value),
                              _option(f"{WEEKDAYS[w.weekday].capitalize()} at {at}", value))
        if all(o.value != current_weekly.value for o in weekly):
            weekly.append(current_weekly)
    return [HeaderBlock(text="Digests"),
            cards.section("\n".join(state) + f"\n_Times are in your time zone ({data.tz})._"),
            ActionsBlock(block_id="home-digests", elements=[
                StaticSelectElement(action_id=DIGEST_DAILY, placeholder="Daily digest",
                                    options=daily, initial_option=current_daily),
                StaticSelectElement(action_id=DIGEST_WEEKLY, placeholder="Weekly digest",
                                    options=weekly, initial_option=current_weekly)]),
            cards.context("Another time: `/digest subscribe daily 06:45` or "
                          "`/digest subscribe weekly thu 17:30`.")]


def _model(data: Any) -> list[Block]:
    """The person's model: a choice among the connections set up here (never a key)."""
    if len(data.models) < 2:
        return []  # nothing to choose
    options = [_option(f"{cid} ({label})"[:75], cid) for cid, label in data.models]
    current = next((o for o in options if o.value == data.model), options[0])
    return [HeaderBlock(text="Model"),
            ActionsBlock(block_id="home-model", elements=[StaticSelectElement(
                action_id=MODEL, placeholder="Model", options=options,
                initial_option=current)]),
            cards.context("Your messages, answers and digests use it.")]


def _sync() -> list[Block]:
    """Their vault in their own Obsidian: the address and a token go to them alone."""
    return [SectionBlock(
        text=MarkdownTextObject(text="*Sync with Obsidian*\nYour notes as a git repository "
                                "that Obsidian's Git plugin keeps in step both ways."),
        block_id="sync",
        accessory=ButtonElement(text="Sync with Obsidian", action_id=SYNC, value="sync"))]


def home_blocks(data: Any) -> list[dict[str, Any]]:
    """The Home's blocks, validated (cards' checks, then as a view of at most 100 blocks)."""
    blocks: list[Block] = [
        HeaderBlock(text="Your second brain"),
        cards.context(f"{data.today.isoformat()} · DM me a thought to file it; "
                      "ask me anything about your notes."),
    ]
    for part in (_inbox(data), _projects(data), _due(data), _captures(data), _changes(data),
                 _digests(data), _model(data), _sync()):
        if part:
            blocks.append(DividerBlock())
            blocks.extend(part)
    dicts = cards.validate_message(blocks, "home", max_blocks=MAX_VIEW_BLOCKS)
    try:
        View(type="home", blocks=dicts).to_dict()
    except SlackObjectFormationError as exc:
        raise cards.MessageInvalid(f"home view: {exc}") from exc
    return dicts
