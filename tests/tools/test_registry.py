"""The registry: schemas, validation, error results and the capped content the model reads."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.tools.conftest import snapshot, write_note
from tools.base import ToolContext
from tools.registry import MAX_RESULT_CHARS, TOOLS, cap_content, execute, tool_specs

EXPECTED = ["classify_and_capture", "list_entries", "get_entry", "search_entries",
            "ask_notes", "update_entry", "move_entry", "generate_digest", "list_backlinks",
            "answer"]


def object_schemas(schema: Any) -> list[dict[str, Any]]:
    """Every sub-schema of type object, to check that none accepts unknown keys."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found += object_schemas(value)
    elif isinstance(schema, list):
        for value in schema:
            found += object_schemas(value)
    return found


# ------------------------------------------------------------------ specs

def test_registry_holds_the_tools_in_a_stable_order() -> None:
    assert list(TOOLS) == EXPECTED
    assert [s["name"] for s in tool_specs()] == EXPECTED
    assert {n for n, t in TOOLS.items() if t.terminal} == {
        "classify_and_capture", "move_entry", "ask_notes", "answer"}
    assert {n for n, t in TOOLS.items() if not t.read_only} == {
        "classify_and_capture", "update_entry", "move_entry"}


@pytest.mark.parametrize("name", EXPECTED)
def test_schema_is_valid_strict_and_described(name: str) -> None:
    tool = TOOLS[name]
    Draft202012Validator.check_schema(tool.parameters)
    assert tool.parameters["type"] == "object"
    assert tool.parameters["additionalProperties"] is False
    for sub in object_schemas(tool.parameters):
        assert sub.get("additionalProperties") is False, sub
    assert len(tool.description) >= 20 and len(tool.description.split()) <= 60


def test_tool_list_stays_small_for_the_prompt() -> None:
    # ~4 chars per token: the tool list must leave room for the system prompt in ~2,000 tokens.
    # ~1,500 tokens; the cited `answer` step (~210 of them) spares a question a second call.
    assert len(json.dumps(tool_specs())) < 6000


# ------------------------------------------------------------------ call errors

async def test_unknown_tool_lists_the_valid_ones(ctx: ToolContext) -> None:
    ex = await execute(ctx, "c1", "delete_everything", {})
    assert ex.status == "error" and ex.error is not None
    assert ex.error["code"] == "unknown_tool"
    for name in EXPECTED:
        assert name in ex.error["message"]
    assert json.loads(ex.content)["ok"] is False


async def test_invalid_json_is_reported_with_a_short_preview(
        ctx: ToolContext, vault_root: Path) -> None:
    raw = '{"text": "call Sara' + "x" * 5000
    ex = await execute(ctx, "c1", "classify_and_capture", None, parse_error=raw)
    assert ex.status == "error" and ex.error is not None
    assert ex.error["code"] == "invalid_json"
    assert ex.error["message"].startswith("arguments were not valid JSON: ")
    assert len(ex.error["message"]) <= len("arguments were not valid JSON: ") + 301
    assert snapshot(vault_root) == {}


async def test_schema_violations_name_every_field(ctx: ToolContext, vault_root: Path) -> None:
    # Without a text there is nothing to save, so nothing is repaired: every field is named.
    ex = await execute(ctx, "c1", "classify_and_capture", {
        "text": 7, "hints": {"confidence": 1.5, "category": "stuff", "due_date": "soon"},
        "extra": 1})
    assert ex.status == "error" and ex.error is not None
    assert ex.error["code"] == "invalid_arguments"
    details = ex.error["details"]
    assert "hints.confidence: 1.5 is greater than the maximum of 1" in details
    assert any(d.startswith("hints.category: ") for d in details)
    assert any(d.startswith("hints.due_date: ") for d in details)
    assert any(d.startswith("arguments: ") and "extra" in d for d in details)
    assert any(d.startswith("text: ") for d in details)
    assert "hints.confidence" in json.loads(ex.content)["error"]["message"]
    assert snapshot(vault_root) == {}


async def test_bad_optional_hints_are_dropped_and_named_and_the_capture_stands(
        ctx: ToolContext, vault_root: Path) -> None:
    ex = await execute(ctx, "c1", "classify_and_capture", {
        "text": "Renew the car insurance", "extra": 1,
        "hints": {"category": "admin", "confidence": 0.9, "name": "Car insurance",
                  "due_date": "soonish", "tags": "not-a-list", "colour": "red"}})
    assert ex.status == "ok" and ex.output is not None
    dropped = " ".join(ex.output.data["dropped"])
    for name in ("due_date", "tags", "colour", "extra"):
        assert name in dropped
    assert "left out" in ex.output.text
    note = (vault_root / "admin" / "car-insurance.md").read_text()
    assert "Renew the car insurance" in note and "soonish" not in note


async def test_an_impossible_date_is_dropped_not_stored(ctx: ToolContext, vault_root: Path) -> None:
    ex = await execute(ctx, "c1", "classify_and_capture", {
        "text": "File the tax return", "hints": {"category": "admin", "confidence": 0.9,
                                                 "name": "Tax return", "due_date": "2026-02-30"}})
    assert ex.status == "ok" and ex.output is not None
    assert any("due_date" in d for d in ex.output.data["dropped"])
    assert "2026-02-30" not in (vault_root / "admin" / "tax-return.md").read_text()


async def test_missing_required_and_wrong_types(ctx: ToolContext) -> None:
    ex = await execute(ctx, "c1", "list_entries", {"limit": 0})
    assert ex.error is not None and ex.error["details"] == [
        "limit: 0 is less than the minimum of 1"]
    ex = await execute(ctx, "c1", "move_entry", {"path": 3})
    assert ex.error is not None
    assert "arguments: 'target_category' is a required property" in ex.error["details"]
    assert "path: 3 is not of type 'string'" in ex.error["details"]
    ex = await execute(ctx, "c1", "update_entry", {"path": "x", "updates": {"tags": [1]}})
    assert ex.error is not None and ex.error["details"][0].startswith("updates.tags: ")


async def test_huge_text_is_refused_without_echoing_it(
        ctx: ToolContext, vault_root: Path) -> None:
    ex = await execute(ctx, "c1", "classify_and_capture", {"text": "y" * 50_000})
    assert ex.status == "error" and ex.error is not None
    assert ex.error["details"] == ["text: is 50000 characters, limit maxLength 40000"]
    assert len(ex.content) < 500
    assert snapshot(vault_root) == {}


async def test_not_found(ctx: ToolContext) -> None:
    ex = await execute(ctx, "c1", "get_entry", {"path": "No such note"})
    assert ex.status == "error" and ex.error is not None
    assert ex.error["code"] == "not_found"


async def test_ambiguous_name_returns_candidates_and_changes_nothing(
        ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "projects/budget.md", "---\nname: Budget\n---\nQ3\n")
    write_note(vault_root, "admin/budget.md", "---\nname: Budget\n---\nhousehold\n")
    before = snapshot(vault_root)

    for name, arguments in (("update_entry", {"updates": {"status": "done"}}),
                            ("move_entry", {"target_category": "ideas"})):
        ex = await execute(ctx, "c1", name, {"path": "Budget", **arguments})
        assert ex.status == "error" and ex.error is not None
        assert ex.error["code"] == "ambiguous"
        paths = {c["path"] for c in ex.error["candidates"]}
        assert paths == {"projects/budget.md", "admin/budget.md"}
        assert "projects/budget.md" in ex.error["message"]
    assert snapshot(vault_root) == before


async def test_unsafe_path_reads_nothing(ctx: ToolContext, tmp_path: Path,
                                         vault_root: Path) -> None:
    write_note(tmp_path, "secret.md", "---\nname: Secret\n---\nTOP-SECRET-TOKEN\n")
    write_note(vault_root, "ideas/a.md", "---\nname: A\n---\nx\n")
    before = snapshot(vault_root)
    for ref in ("../secret.md", "../../etc/passwd", str(tmp_path / "secret.md")):
        for name, arguments in (("get_entry", {}), ("list_backlinks", {}),
                                ("update_entry", {"updates": {"status": "x"}}),
                                ("move_entry", {"target_category": "ideas"})):
            ex = await execute(ctx, "c1", name, {"path": ref, **arguments})
            assert ex.status == "error" and ex.error is not None, (name, ref)
            assert ex.error["code"] in ("unsafe_path", "not_found"), ex.error
            assert "TOP-SECRET" not in ex.content
    assert snapshot(vault_root) == before
    assert "TOP-SECRET-TOKEN" in (tmp_path / "secret.md").read_text()


async def test_a_failing_tool_becomes_an_internal_error(ctx: ToolContext) -> None:
    async def broken(kind: str) -> dict[str, Any]:
        raise RuntimeError("digest engine exploded")

    ctx.deps = replace(ctx.deps, make_digest=broken)
    ex = await execute(ctx, "c1", "generate_digest", {"type": "daily"})
    assert ex.status == "error" and ex.error is not None
    assert ex.error == {"code": "internal",
                        "message": "tool failed: RuntimeError: digest engine exploded"}
    assert ex.output is None and ex.duration_ms >= 0


async def test_ok_result_content(ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "ideas/a.md", "---\nname: A\n---\nx\n")
    ex = await execute(ctx, "call-9", "get_entry", {"path": "A"})
    assert (ex.call_id, ex.tool, ex.arguments) == ("call-9", "get_entry", {"path": "A"})
    content = json.loads(ex.content)
    assert content["ok"] is True and content["path"] == "ideas/a.md"


# ------------------------------------------------------------------ capped content

async def test_big_list_result_is_capped_as_valid_json(
        ctx: ToolContext, vault_root: Path) -> None:
    for i in range(50):
        write_note(vault_root, f"ideas/n{i}.md",
                   f"---\nname: Idea {i} {'long ' * 30}\none_liner: {'words ' * 60}\n---\nx\n")
    ex = await execute(ctx, "c1", "list_entries", {"limit": 50})
    assert ex.status == "ok", ex.content
    assert len(ex.content) <= MAX_RESULT_CHARS
    content = json.loads(ex.content)
    assert content["ok"] is True and content["truncated"] is True and content["total"] == 50
    assert ex.output is not None and len(ex.output.data["entries"]) == 50  # cards get it all


def test_small_content_is_unchanged() -> None:
    payload = {"ok": True, "entries": [{"name": "a"}], "total": 1}
    assert json.loads(cap_content(payload)) == payload


# Long strings built by repetition: cheap to generate, and they still hold quotes,
# backslashes, control and non-ASCII characters that grow when JSON-escaped.
def test_many_small_keys_fall_back_to_a_preview() -> None:
    payload = {"ok": False, **{f"k{i}": "\"\\é" for i in range(500)}}
    text = cap_content(payload, 400)
    parsed = json.loads(text)
    assert len(text) <= 400 and parsed["ok"] is False and parsed["truncated"] is True
    assert parsed["preview"].startswith('{"ok": false, "k0"')


_long_text = st.builds(lambda part, times: part * times,
                       st.text(min_size=1, max_size=8), st.integers(0, 600))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20) | _long_text,
    lambda children: st.lists(children, max_size=30)
    | st.dictionaries(st.text(max_size=12), children, max_size=30),
    # 40 leaves per value (up to 40 values) still reach every cap step and the preview
    # fallback at each limit; 120 made generating the data take twice as long as the test.
    max_leaves=40,
)


@settings(max_examples=80, deadline=None)
@given(data=st.dictionaries(st.text(max_size=200).filter(lambda k: k != "ok"), _json,
                            max_size=40),
       limit=st.sampled_from([400, 1000, MAX_RESULT_CHARS]))
def test_capped_content_is_always_valid_json_within_the_cap(
        data: dict[str, Any], limit: int) -> None:
    payload = {"ok": True, **data}
    text = cap_content(payload, limit)
    assert len(text) <= limit
    parsed = json.loads(text)
    assert isinstance(parsed, dict) and parsed["ok"] is True
    if len(json.dumps(payload, ensure_ascii=False)) <= limit:
        assert parsed == payload
    else:
        assert parsed["truncated"] is True


# ------------------------------------------------------------------ one message's writes

async def test_every_write_of_one_message_counts_against_its_cap(
        ctx: ToolContext, vault_root: Path) -> None:
    """Captures, lines added to known people, updates and moves count alike; past the cap a
    tool that writes is refused and changes nothing, reading goes on; kept files count."""
    from storage.history import Tally
    from tools.base import MAX_CHANGES_PER_TURN
    from tools.readers.read import Reading
    from tools.readers.sections import SharedFile

    for name in ("Sara", "Omar", "Lena"):
        write_note(vault_root, f"people/{name.lower()}.md",
                   f"---\nid: e_{name.lower()}\ncategory: people\nname: {name}\n---\n{name}\n")
    ctx.tally = Tally(limit=MAX_CHANGES_PER_TURN)  # one message
    people = {"category": "people", "confidence": 0.9}
    calls = [("classify_and_capture", {"text": f"Idea {n}: a tea corner"}) for n in range(4)]
    calls += [("classify_and_capture", {"text": f"{name} is moving to Berlin",
                                        "hints": {**people, "name": name}})
              for name in ("Sara", "Omar", "Lena")]
    calls += [("update_entry", {"path": "people/sara.md", "append": "likes tea"}),
              ("update_entry", {"path": "people/omar.md", "append": "likes tea"}),
              ("move_entry", {"path": "people/lena.md", "target_category": "projects"})]
    for n, (name, args) in enumerate(calls):
        done = await execute(ctx, f"c{n}", name, args)
        assert done.status == "ok", done.content
    before = snapshot(vault_root)
    refused = [await execute(ctx, "x1", "classify_and_capture", {"text": "Idea: one more"}),
               await execute(ctx, "x2", "update_entry", {"path": "people/omar.md",
                                                         "append": "and coffee"})]
    assert [e.error["code"] for e in refused if e.error] == ["too_many_changes"] * 2
    assert snapshot(vault_root) == before
    assert (await execute(ctx, "r1", "search_entries", {"query": "tea"})).status == "ok"
    assert b"moving to Berlin" in before["people/sara.md"]  # appended, not a second Sara

    ctx.tally = Tally(limit=MAX_CHANGES_PER_TURN)  # the next message, with two files
    ctx.shared = [(SharedFile(f"{n}.txt", b"notes"), Reading(f"{n}.txt", "text", "notes"))
                  for n in ("a", "b")]
    assert (await execute(ctx, "f1", "classify_and_capture", {"text": "Minutes"})).status == "ok"
    assert ctx.tally.count == 3  # the note and the two files it keeps
