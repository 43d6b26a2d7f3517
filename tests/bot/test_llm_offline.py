"""The offline provider: routing table, arguments valid for the real tool schemas, summaries,
tool_choice and per-request schemas; it works from the request (tool specs, messages)."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from bot.llm.offline import OfflineProvider, example_for_schema
from bot.llm.offline_replies import FiledNote, last_filed
from bot.llm.types import (
    Message,
    NamedTool,
    RequestOptions,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from tools.rules.intent import route

try:
    from tools.registry import tool_specs

    SPECS = [ToolSpec(s["name"], s["description"], s["parameters"]) for s in tool_specs()]
except ImportError:  # the tools package is someone else's; keep our tests independent
    SPECS = []

WED = date(2026, 3, 4)
SCHEMAS = {s.name: s.parameters for s in SPECS}
FILED = "projects/q3-budget.md"  # the path of the note this conversation filed last


def tools() -> list[ToolSpec]:
    if not SPECS:
        pytest.skip("tools.registry not available")
    return SPECS


@pytest.mark.parametrize(("text", "tool", "args"), [
    ("list my projects", "list_entries", {"category": "projects"}),
    ("show me my people", "list_entries", {"category": "people"}),
    ("list ideas", "list_entries", {"category": "ideas"}),
    ("show my admin", "list_entries", {"category": "admin"}),
    ("show my inbox", "list_entries", {"category": "inbox"}),
    ("list my notes", "list_entries", {}),
    ("what's active?", "list_entries", {"status": "active"}),
    ("What are my active projects?", "list_entries",
     {"category": "projects", "status": "active"}),
    ("what's in my inbox?", "list_entries", {"category": "inbox"}),
    ("what are my projects?", "list_entries", {"category": "projects"}),
    ("who are my people?", "list_entries", {"category": "people"}),
    ("what ideas do I have?", "list_entries", {"category": "ideas"}),
    ("find the offsite", "search_entries", {"query": "offsite"}),
    ("search for budget", "search_entries", {"query": "budget"}),
    ("where is the hiring plan?", "ask_notes", {"question": "where is the hiring plan?"}),
    ("what did I note about Sara?", "ask_notes", {"question": "what did I note about Sara?"}),
    ("who is Priya?", "ask_notes", {"question": "who is Priya?"}),
    ("show note Q3 budget", "get_entry", {"path": "Q3 budget"}),
    ("open projects/q3-budget.md", "get_entry", {"path": "projects/q3-budget.md"}),
    ("digest", "generate_digest", {"type": "daily"}),
    ("daily digest", "generate_digest", {"type": "daily"}),
    ("weekly review", "generate_digest", {"type": "weekly"}),
    ("fix: person", "move_entry", {"path": "projects/q3-budget.md", "target_category": "people"}),
    ("fix: ideas", "move_entry", {"path": "projects/q3-budget.md", "target_category": "ideas"}),
    ("fix: project", "move_entry",
     {"path": "projects/q3-budget.md", "target_category": "projects"}),
    ("actually that's an idea", "move_entry",
     {"path": "projects/q3-budget.md", "target_category": "ideas"}),
    ("Actually, that's a project", "move_entry",
     {"path": "projects/q3-budget.md", "target_category": "projects"}),
    ("make it admin", "move_entry", {"path": "projects/q3-budget.md", "target_category": "admin"}),
    ("move it to inbox", "move_entry",
     {"path": "projects/q3-budget.md", "target_category": "inbox"}),
    ("backlinks to Sara", "list_backlinks", {"path": "Sara"}),
    ("what links to projects/q3-budget.md?", "list_backlinks",
     {"path": "projects/q3-budget.md"}),
])
def test_routing_table(text: str, tool: str, args: dict[str, Any]) -> None:
    decided = route(text, filed=FILED, today=WED)
    assert (decided.tool, decided.arguments) == (tool, args)
    if SCHEMAS:  # the arguments the real tools accept
        assert not list(Draft202012Validator(SCHEMAS[tool]).iter_errors(args))


@pytest.mark.parametrize("text", ["hi", "Hello!", "thanks", "help", "what can you do?"])
def test_small_talk_is_text(text: str) -> None:
    decided = route(text, filed=FILED, today=WED)
    assert decided.tool is None and decided.text


def test_thoughts_are_captured_with_hints() -> None:
    decided = route("Call the dentist about the crown next Tuesday", today=WED)
    assert decided.tool == "classify_and_capture"
    assert decided.arguments == {
        "text": "Call the dentist about the crown next Tuesday",
        "hints": {"category": "admin", "confidence": 0.9,
                  "name": "Call the dentist about the crown", "status": "todo",
                  "next_action": "Call the dentist about the crown", "due_date": "2026-03-10"}}
    if SCHEMAS:
        assert not list(Draft202012Validator(SCHEMAS["classify_and_capture"])
                        .iter_errors(decided.arguments))


def test_make_it_happen_is_not_a_correction() -> None:
    assert route("make it happen by Friday", filed=FILED, today=WED).tool \
        == "classify_and_capture"


def test_fix_without_a_filed_note_asks_which() -> None:
    decided = route("fix: project", filed=None, today=WED)
    assert decided.tool is None and "Which note" in (decided.text or "")


def test_fix_with_unknown_category_says_so() -> None:
    decided = route("fix: banana", filed=FILED, today=WED)
    assert decided.tool is None and "banana" in (decided.text or "")


def _turn(text: str, call: ToolCall, content: str) -> list[Message]:
    return [Message("user", text), Message("assistant", None, (call,)),
            Message("tool", tool_results=(ToolResult(call.id, call.name, content),)),
            Message("assistant", "done")]


CAPTURE_SARA = _turn("Call Sara", ToolCall("c1", "classify_and_capture", {}),
                     '{"ok": true, "path": "people/sara.md", "id": "e_1", "name": "Sara", '
                     '"category": "people", "confidence": 0.9, "status": "filed"}')
CAPTURE_POD = _turn("Pod (cast)", ToolCall("c2", "classify_and_capture", {}),
                    '{"ok": true, "path": "ideas/pod cast.md", "id": "e_2", "name": "Pod", '
                    '"category": "ideas", "confidence": 0.3, "status": "needs_review"}')


def test_last_filed_comes_from_the_conversation() -> None:
    assert last_filed(CAPTURE_SARA + CAPTURE_POD) == FiledNote("ideas/pod cast.md", "e_2")
    assert last_filed(CAPTURE_POD + CAPTURE_SARA) == FiledNote("people/sara.md", "e_1")
    assert last_filed([Message("user", "hi")]) is None


def test_last_filed_follows_a_move_and_ignores_lists_and_errors() -> None:
    moved = _turn("fix: project", ToolCall("c3", "move_entry", {}),
                  '{"ok": true, "old_path": "ideas/pod cast.md", "new_path": '
                  '"projects/pod cast.md", "id": "e_2", "name": "Pod"}')
    listed = _turn("find pod", ToolCall("c4", "search_entries", {}),
                   '{"ok": true, "entries": [{"path": "admin/x.md", "id": "e_9", '
                   '"confidence": 0.8}], "total": 1}')
    failed = [Message("user", "x"), Message("assistant", None, (ToolCall("c5", "t", {}),)),
              Message("tool", tool_results=(ToolResult(
                  "c5", "t", '{"path": "admin/y.md", "confidence": 1}', is_error=True),))]
    assert last_filed(CAPTURE_POD + moved + listed + failed) == \
        FiledNote("projects/pod cast.md", "e_2")


def test_last_filed_reads_a_shortened_old_result() -> None:
    # bot/turn/messages.py cuts older results mid-JSON; the path and id come first and survive.
    content = ('{"ok": true, "path": "projects/q3 \\"budget\\".md", "id": "e_7", "name": "'
               + "x" * 250 + '… [shortened from 900 chars]')
    old = _turn("Q3 budget", ToolCall("c6", "classify_and_capture", {}), content)
    assert last_filed(old) is None  # no sign it was a capture: not guessed
    content = content.replace('"name"', '"confidence": 0.8, "name"')
    old = _turn("Q3 budget", ToolCall("c6", "classify_and_capture", {}), content)
    assert last_filed(old) == FiledNote('projects/q3 "budget".md', "e_7")


async def test_a_correction_moves_the_note_filed_in_the_conversation() -> None:
    # The prompt says nothing here: the filed note is read from the request's messages.
    history = CAPTURE_SARA + CAPTURE_POD + [Message("user", "actually that's a project")]
    completion = await OfflineProvider(today=WED).complete("", history, tools())
    (call,) = completion.tool_calls
    assert (call.name, call.arguments) == (
        "move_entry", {"path": "ideas/pod cast.md", "target_category": "projects"})


# ---------------------------------------------------------------- the provider


async def test_first_iteration_calls_a_tool_then_summarises() -> None:
    provider = OfflineProvider(today=WED)
    system = "You are Second Brain."
    first = await provider.complete(system, [Message("user", "find budget")], tools())
    assert first.stop_reason == "tool_use" and first.text is None
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("search_entries", {"query": "budget"})
    assert json.loads(call.raw_arguments) == call.arguments
    result = json.dumps({"ok": True, "entries": [
        {"name": "Q3 budget", "path": "projects/q3-budget.md"},
        {"name": "Budget review", "path": "admin/budget-review.md"}], "total": 2})
    history = [Message("user", "find budget"), Message("assistant", None, first.tool_calls),
               Message("tool", tool_results=(ToolResult(call.id, call.name, result),))]
    second = await provider.complete(system, history, tools())
    assert second.tool_calls == () and second.stop_reason == "end_turn"
    assert second.text == "Found 2 notes: Q3 budget, Budget review."
    assert call.id != "" and second.usage.input_tokens > first.usage.input_tokens > 0


@pytest.mark.parametrize(("content", "is_error", "expected"), [
    ('{"ok": true, "path": "projects/x.md", "status": "filed", "category": "projects"}',
     False, "Filed to projects/x.md."),
    ('{"ok": true, "path": "inbox/x.md", "status": "needs_review"}', False,
     "Saved to the inbox for review: inbox/x.md."),
    ('{"ok": true, "old_path": "ideas/x.md", "new_path": "projects/x.md"}', False,
     "Moved to projects/x.md."),
    ('{"ok": true, "entries": [], "total": 0}', False, "No matching notes found."),
    ('{"ok": false, "error": {"code": "not_found", "message": "No note matches \'zz\'"}}',
     True, "Sorry, that didn't work: No note matches 'zz'"),
    ('{"ok": false, "error": {"code": "ambiguous", "message": "2 notes", "candidates": '
     '[{"name": "Sara", "path": "people/sara.md"}, {"name": "Sara K", "path": "p/k.md"}]}}',
     True, "Which one did you mean: Sara, Sara K?"),
    ("plain failure", True, "Sorry, that didn't work: plain failure"),
    ('{"ok": true, "target": "people/sara.md", "total": 0, "backlinks": []}', False,
     "Nothing links to people/sara.md."),
    ('{"ok": true, "type": "daily", "focus": [{"name": "Launch"}], "inbox_count": 2}', False,
     "Daily digest: 1 item(s) in focus: Launch; 2 in the inbox."),
    ('{"ok": true, "path": "people/sara.md", "name": "Sara", "body": "Met at the offsite."}',
     False, "Sara (people/sara.md): Met at the offsite."),
])
async def test_summaries(content: str, is_error: bool, expected: str) -> None:
    call = ToolCall("c1", "some_tool", {}, "{}")
    history = [Message("user", "x"), Message("assistant", None, (call,)),
               Message("tool", tool_results=(ToolResult("c1", "some_tool", content,
                                                        is_error),))]
    completion = await OfflineProvider().complete("", history, tools())
    assert completion.text == expected and not completion.tool_calls


async def test_tool_choice_none_gives_text_only() -> None:
    completion = await OfflineProvider(today=WED).complete(
        "", [Message("user", "Pay rent tomorrow")], tools(), "none")
    assert completion.tool_calls == () and completion.text


async def test_named_tool_choice_is_honoured() -> None:
    completion = await OfflineProvider(today=WED).complete(
        "", [Message("user", "hello")], tools(), NamedTool("classify_and_capture"))
    (call,) = completion.tool_calls
    assert call.name == "classify_and_capture" and call.arguments is not None
    assert call.arguments["text"] == "hello"


async def test_required_never_answers_in_text() -> None:
    completion = await OfflineProvider(today=WED).complete(
        "", [Message("user", "hi")], tools(), "required")
    assert completion.tool_calls and completion.tool_calls[0].name == "classify_and_capture"


async def test_unoffered_tool_is_never_called() -> None:
    only_search = [s for s in tools() if s.name == "search_entries"]
    completion = await OfflineProvider(today=WED).complete(
        "", [Message("user", "Pay rent tomorrow")], only_search)
    assert completion.tool_calls == () and completion.text


CLASSIFY_SCHEMA = {"type": "object", "properties": {
    "category": {"type": "string", "enum": ["people", "projects", "ideas", "admin", "inbox"]},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "name": {"type": "string", "maxLength": 60},
    "reason": {"type": "string", "minLength": 3}},
    "required": ["category", "confidence", "reason"], "additionalProperties": False}


async def test_tool_schema_option_forces_that_tool() -> None:
    completion = await OfflineProvider(today=WED).complete(
        "", [Message("user", "Pay the electricity bill tomorrow")], [],
        options=RequestOptions(tool_schema=CLASSIFY_SCHEMA, tool_name="classify"))
    (call,) = completion.tool_calls
    assert call.name == "classify"
    assert call.arguments is not None and call.arguments["category"] == "admin"
    assert call.arguments["confidence"] == 0.9
    assert not list(Draft202012Validator(CLASSIFY_SCHEMA).iter_errors(call.arguments))
    assert completion.parsed == call.arguments


async def test_tool_schema_uses_the_config_default_name() -> None:
    completion = await OfflineProvider().complete(
        "", [Message("user", "x")], [], options=RequestOptions(tool_schema={"type": "object"}))
    assert completion.tool_calls[0].name == "respond"


async def test_response_schema_option_gives_parsed() -> None:
    schema = {"type": "object", "properties": {
        "summary": {"type": "string", "minLength": 1},
        "items": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "count": {"type": "integer", "minimum": 1}},
        "required": ["summary", "items", "count"]}
    completion = await OfflineProvider().complete(
        "", [Message("user", "weekly digest")], [],
        options=RequestOptions(response_schema=schema))
    assert completion.parsed is not None and completion.tool_calls == ()
    assert not list(Draft202012Validator(schema).iter_errors(completion.parsed))
    assert json.loads(completion.text or "") == completion.parsed


_leaf = st.sampled_from([
    {"type": "string"}, {"type": "string", "minLength": 5, "maxLength": 8},
    {"type": "string", "format": "date"}, {"type": "integer", "minimum": 3},
    {"type": "number", "minimum": 0, "maximum": 1}, {"type": "boolean"},
    {"type": ["string", "null"]}, {"enum": ["a", "b"]}, {"type": "null"},
    {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
])


@st.composite
def _objects(draw: st.DrawFn, inner: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "category", "name", "confidence"]),
                                 inner, max_size=4))
    required = draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else []
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


_schemas = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        _objects(inner),
        st.builds(lambda items, n: {"type": "array", "items": items, "minItems": n},
                  inner, st.integers(0, 2)),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(_schemas, st.text(max_size=80))
def test_example_for_schema_is_valid(schema: dict[str, Any], text: str) -> None:
    hints = {"category": "ideas", "name": "An idea", "confidence": 0.65}
    value = example_for_schema(schema, text, WED, hints)
    assert not list(Draft202012Validator(schema).iter_errors(value))
