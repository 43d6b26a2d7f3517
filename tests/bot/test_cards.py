"""Cards: what a user sees in Slack, and that Slack would accept every one of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import SectionBlock

from bot.slack import cards, turn_reply
from bot.slack.cards import MessageInvalid, validate_message
from bot.turn.reply import reply_of
from storage.types import CATEGORIES, FILED_CATEGORIES
from tests.shared import SLACK_FIXTURES
from tools.base import ToolOutput
from tools.registry import Execution


@dataclass
class Turn:  # the fields of bot.brain.TurnResult that cards read
    text: str
    executions: list[Execution] = field(default_factory=list)
    changes: tuple[str, ...] = ()


def render(turn: Turn) -> cards.SlackMessage:
    """A turn's reply (bot/turn/reply.py) as Slack shows it."""
    return turn_reply.turn_message(reply_of(turn))


def ex(kind: str, data: dict[str, Any], text: str = "", tool: str = "t",
       status: str = "ok") -> Execution:
    out = ToolOutput(kind=kind, data=data, text=text) if status == "ok" else None
    err = None if status == "ok" else {"code": "not_found", "message": "no such note"}
    return Execution(call_id="c1", tool=tool, arguments={"text": "x"}, status=status,
                     output=out, error=err, content="{}", duration_ms=12.3)


CAPTURE = {"path": "projects/call-the-dentist.md", "id": "e_0123456789ab",
           "name": "Call the dentist", "category": "projects", "confidence": 0.62,
           "status": "filed", "fields": {"next_action": "Call at 9", "due_date": "2027-01-05",
                                         "status": "active"}}


def texts(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_filed_note_card_shows_where_and_offers_the_other_categories() -> None:
    msg = render(Turn("Filed to Projects: Call the dentist",
                                  [ex("capture", CAPTURE, "Filed to Projects: Call the dentist",
                                      tool="classify_and_capture")]))
    shown = texts(msg.blocks)
    assert "Filed to *Projects*: Call the dentist" in shown
    assert "Call at 9" in shown and "2027-01-05" in shown
    assert "confidence 0.62" in shown and "projects/call-the-dentist.md" in shown
    ids = [b["action_id"] for b in buttons(msg.blocks)]
    assert ids == ["move_entry:people", "move_entry:ideas", "move_entry:admin", "undo_entry"]
    values = [json.loads(b["value"]) for b in buttons(msg.blocks)]
    assert values[0] == {"entry_id": "e_0123456789ab", "to": "people"}
    assert values[-1] == {"entry_id": "e_0123456789ab"}
    assert msg.text == "Filed to Projects: Call the dentist"
    # the reply text equals the card's summary, so it is not shown twice
    assert shown.count("Call the dentist") == 1
    assert "classify_and_capture" in msg.blocks[-1]["elements"][0]["text"]  # tool runs line


def test_inbox_note_gets_one_button_per_filed_category() -> None:
    data = dict(CAPTURE, category="inbox", path="inbox/x.md", suggested_category="ideas",
                status="needs_review", confidence=0.3)
    msg = render(Turn("", [ex("capture", data, "Saved to inbox")]))
    moves = [b["action_id"] for b in buttons(msg.blocks) if b["action_id"] != "undo_entry"]
    assert moves == [f"move_entry:{c}" for c in FILED_CATEGORIES]
    assert "Best guess: *Ideas*" in texts(msg.blocks)


def test_capture_card_names_related_notes_in_a_context_line() -> None:
    related = [{"name": "Sara <Chen>", "path": "people/sara-chen.md", "id": "e_1"},
               {"name": "Q3 budget " + "x" * 80, "path": "projects/q3.md", "id": "e_2"}]
    msg = render(Turn("", [ex("capture", dict(CAPTURE, related=related), "Filed")]))
    line = next(b for b in msg.blocks if b.get("block_id", "").startswith("related-"))
    shown = line["elements"][0]["text"]
    assert shown.startswith("Related: *Sara &lt;Chen&gt;* · *Q3 budget")
    assert "…*" in shown  # a long name is clipped
    plain = render(Turn("", [ex("capture", CAPTURE, "Filed")]))
    assert not [b for b in plain.blocks if b.get("block_id", "").startswith("related-")]


def test_move_result_card() -> None:
    data = {"old_path": "projects/a.md", "new_path": "admin/a.md", "category": "admin",
            "id": "e_1", "name": "Call the dentist"}
    msg = render(Turn("", [ex("move", data, "Moved to Admin: Call the dentist")]))
    assert "Moved to *Admin*: Call the dentist" in texts(msg.blocks)
    assert "move_entry:admin" not in [b["action_id"] for b in buttons(msg.blocks)]


def test_list_card_has_compact_rows_capped_at_twenty() -> None:
    entries = [{"path": f"projects/p{i}.md", "id": f"e_{i}", "name": f"Project {i}",
                "category": "projects", "status": "active", "snippet": "next: call"}
               for i in range(35)]
    msg = render(Turn("Here you go", [ex("list", {"entries": entries,
                                                               "total": 35})]))
    shown = texts(msg.blocks)
    assert "Project 0" in shown and "Project 19" in shown and "Project 20" not in shown
    assert "showing 20 of 35" in shown and "active" in shown


def test_single_note_card_shows_fields_and_start_of_body() -> None:
    data = {"path": "people/sara.md", "id": "e_9", "name": "Sara", "category": "people",
            "context": "Finance lead", "follow_ups": ["budget", "offsite"],
            "body": "x" * 5000}
    msg = render(Turn("", [ex("entry", data)]))
    shown = texts(msg.blocks)
    assert "*Sara*" in shown and "Finance lead" in shown and "budget, offsite" in shown
    assert "x" * cards.BODY_PREVIEW not in shown and "x" * 100 in shown


def test_failed_tool_runs_show_in_the_runs_line_without_a_card() -> None:
    msg = render(Turn("I could not find it.",
                                  [ex("entry", {}, status="error", tool="get_entry")]))
    assert msg.blocks[-1]["type"] == "context"
    assert "`get_entry`" in msg.blocks[-1]["elements"][0]["text"]
    assert "error" in msg.blocks[-1]["elements"][0]["text"]


def test_error_message_carries_the_reference() -> None:
    msg = cards.error_message("3f9a2c")
    assert "ref 3f9a2c" in msg.text and "ref 3f9a2c" in texts(msg.blocks)


def test_user_text_is_escaped_for_mrkdwn() -> None:
    msg = render(Turn("<!channel> & <@U1>"))
    assert "&lt;!channel&gt; &amp; &lt;@U1&gt;" in texts(msg.blocks)


def test_the_models_prose_is_a_markdown_block_so_bold_and_links_render() -> None:
    msg = render(Turn("**Due this week:** see [the plan](https://example.com/p)"))
    (prose,) = [b for b in msg.blocks if b["type"] == "markdown"]
    assert prose["text"] == "**Due this week:** see [the plan](https://example.com/p)"


def test_a_long_reply_is_one_markdown_block_within_slacks_limit() -> None:
    msg = render(Turn("word " * 3000))  # 15,000 characters
    (prose,) = [b for b in msg.blocks if b["type"] == "markdown"]
    assert len(prose["text"]) == cards.MAX_MARKDOWN and prose["text"].endswith("…")
    assert len(msg.text) >= 14_000  # the fallback text keeps it all (up to 40,000)


# -- validate_message: the limits the SDK does not check ----------------------------------------


def test_more_than_fifty_blocks_is_refused() -> None:
    with pytest.raises(MessageInvalid, match="51 blocks"):
        validate_message([cards.section(f"row {i}") for i in range(51)], "x")


def test_field_over_two_thousand_chars_is_refused() -> None:
    block = {"type": "section", "fields": [{"type": "mrkdwn", "text": "y" * 2001}]}
    with pytest.raises(MessageInvalid, match="2000"):
        validate_message([block], "x")


def test_empty_section_text_and_empty_fallback_are_refused() -> None:
    with pytest.raises(MessageInvalid, match="empty"):
        validate_message([{"type": "section", "text": {"type": "mrkdwn", "text": " "}}], "x")
    with pytest.raises(MessageInvalid, match="fallback"):
        validate_message([cards.section("ok")], "")
    with pytest.raises(MessageInvalid, match="40000"):
        validate_message([cards.section("ok")], "z" * 40_001)


def test_sdk_limits_are_enforced_through_to_dict() -> None:
    with pytest.raises(MessageInvalid, match="3000"):
        validate_message([SectionBlock(text="q" * 3001)], "x")


def test_duplicate_block_ids_and_unknown_keys_are_refused() -> None:
    with pytest.raises(MessageInvalid, match="used twice"):
        validate_message([cards.section("a", block_id="b"), cards.section("c", block_id="b")],
                         "x")
    with pytest.raises(MessageInvalid, match="dropped"):
        validate_message([{"type": "section", "text": {"type": "mrkdwn", "text": "a"},
                           "colour": "red"}], "x")


def test_fixture_card_round_trips(tmp_path: Any) -> None:

    fixture = SLACK_FIXTURES / "payloads" / "block_actions_button.json"
    if not fixture.exists():
        pytest.skip("shared fixtures not present")
    blocks = json.loads(fixture.read_text())["message"]["blocks"]
    assert validate_message(blocks, "Filed") == blocks


# -- property: whatever the tools return, the message is one Slack accepts ---------------------

names = st.text(min_size=0, max_size=400)
field_values = st.one_of(st.none(), names, st.lists(names, max_size=8))


@st.composite
def capture_data(draw: st.DrawFn) -> dict[str, Any]:
    return {"path": draw(names), "id": draw(st.from_regex(r"e_[0-9a-f]{12}", fullmatch=True)),
            "name": draw(names), "category": draw(st.sampled_from(CATEGORIES)),
            "confidence": draw(st.one_of(st.none(), st.floats(0, 1))),
            "suggested_category": draw(st.one_of(st.none(), st.sampled_from(CATEGORIES))),
            "fields": {k: draw(field_values) for k, _ in cards.KEY_FIELDS}}


@settings(max_examples=60, deadline=None)
@given(reply=st.text(max_size=9000), captures=st.lists(capture_data(), max_size=15),
       rows=st.lists(st.fixed_dictionaries({"name": names, "category": st.sampled_from(
           CATEGORIES), "status": st.one_of(st.none(), names), "path": names}), max_size=60))
def test_every_turn_message_is_valid(reply: str, captures: list[dict[str, Any]],
                                     rows: list[dict[str, Any]]) -> None:
    executions = [ex("capture", c, "filed") for c in captures]
    executions.append(ex("search", {"entries": rows, "total": len(rows)}))
    msg = render(Turn(reply, executions))
    assert validate_message(msg.blocks, msg.text) == msg.blocks  # idempotent: still valid
    assert 1 <= len(msg.blocks) <= cards.MAX_BLOCKS


# -- a long reply keeps its Undo (issue 31) -----------------------------------------------------

def undo_reach(blocks: list[dict[str, Any]]) -> tuple[list[str], set[str]]:
    """What the message can undo: the changes of its "Undo changes" button, and the notes
    whose own Undo button it shows."""
    found = buttons(blocks)
    changes = [c for b in found if b["action_id"] == cards.UNDO_CHANGES_ACTION
               for c in json.loads(b["value"])["changes"]]
    notes = {json.loads(b["value"])["entry_id"] for b in found
             if b["action_id"] == cards.UNDO_ACTION}
    return changes, notes


@settings(max_examples=80, deadline=None)
@given(captures=st.lists(capture_data(), max_size=12, unique_by=lambda c: c["id"]),
       updates=st.integers(0, 12), searches=st.integers(0, 30), reply=st.text(max_size=500))
def test_a_turn_that_changed_something_can_be_undone_from_its_reply(
        captures: list[dict[str, Any]], updates: int, searches: int, reply: str) -> None:
    executions = [ex("capture", c, "filed", tool="classify_and_capture") for c in captures]
    executions += [ex("update", {"path": f"people/p{i}.md", "name": f"P {i}",
                                 "category": "people", "body": "x"}, "updated",
                      tool="update_entry") for i in range(updates)]
    executions += [ex("search", {"entries": [], "total": 0}, "found", tool="search_entries")
                   for _ in range(searches)]
    changes = tuple(f"{i:040x}" for i in range(len(captures) + updates))
    msg = render(Turn(reply, executions, changes))
    assert len(msg.blocks) <= cards.MAX_BLOCKS
    undone, notes = undo_reach(msg.blocks)
    if undone:  # one button for everything the turn changed
        assert undone == [c[:12] for c in changes]
    else:  # only captures, each card with its own Undo
        assert updates == 0 and notes == {c["id"] for c in captures}


def test_cards_that_do_not_fit_are_named_and_one_undo_puts_all_back() -> None:
    captures = [dict(CAPTURE, id=f"e_{i:012x}", name=f"Injected item {i}") for i in range(15)]
    executions = [ex("capture", c, "filed", tool="classify_and_capture") for c in captures]
    changes = tuple(f"{i:040x}" for i in range(15))
    msg = render(Turn("Filed them.", executions, changes))
    assert len(msg.blocks) <= cards.MAX_BLOCKS
    line = next(b for b in msg.blocks if "do not fit" in texts([b]))
    assert "Injected item 14" in texts([line])  # the last cards are those left out
    undone, _ = undo_reach(msg.blocks)
    assert undone == [c[:12] for c in changes]
