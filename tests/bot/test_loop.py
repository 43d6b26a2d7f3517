"""The tool loop with a scripted provider over the real tools, vault and database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from bot.llm.types import NamedTool, ToolCall, ToolSpec
from bot.turn.loop import REPEATED, TRUNCATED, run_turn
from storage.db import Database
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.bot.scripted import ScriptedProvider, call, text, tools
from tests.databases import fresh_url
from tools import registry
from tools.base import Tool, ToolContext, ToolDeps, ToolOutput
from tools.registry import TOOLS, Execution, execute, tool_specs

SPECS = [ToolSpec(s["name"], s["description"], s["parameters"]) for s in tool_specs()]


@pytest.fixture
async def ctx(tmp_path: Path):
    db = await Database.open(fresh_url(tmp_path))
    store = Store(Vault(tmp_path / "vault"), db)
    yield ToolContext(deps=ToolDeps(store=store, db=db, user_id="u1"))
    await db.close()


async def _turn(ctx: ToolContext, provider: ScriptedProvider, user_text: str = "hello",
                **kw):
    async def run_call(c: ToolCall) -> Execution:
        return await execute(ctx, c.id, c.name, c.arguments, c.parse_error)

    kw.setdefault("terminal", registry.terminal_names())
    kw.setdefault("parallel", registry.read_only_names())
    return await run_turn(provider, system="sys", earlier=[], user_text=user_text,
                          tools=SPECS, execute=run_call, **kw)


def _results(provider: ScriptedProvider, request_index: int) -> list[dict]:
    tool_msg = provider.requests[request_index].messages[-1]
    assert tool_msg.role == "tool"
    return [json.loads(r.content) for r in tool_msg.tool_results]


CAPTURE = {"text": "Renew passport before June",
           "hints": {"category": "admin", "confidence": 0.9, "name": "Renew passport"}}


async def test_capture_is_terminal_one_llm_call(ctx: ToolContext) -> None:
    provider = ScriptedProvider([tools(call("classify_and_capture", CAPTURE))])
    outcome = await _turn(ctx, provider)
    assert outcome.llm_calls == 1
    assert "Filed to admin" in outcome.text
    assert (ctx.deps.store.vault.root / "admin" / "renew-passport.md").exists()


async def test_invalid_json_goes_back_to_the_model_which_corrects_itself(ctx) -> None:
    provider = ScriptedProvider([
        tools(call("classify_and_capture", '{"text": "Renew passport', "bad")),
        tools(call("classify_and_capture", CAPTURE, "good")),
    ])
    outcome = await _turn(ctx, provider)
    error = _results(provider, 1)[0]
    assert error["ok"] is False and "JSON" in error["error"]["message"]
    assert [e.status for e in outcome.executions] == ["error", "ok"]
    assert outcome.llm_calls == 2


async def test_unknown_tool_lists_the_valid_names(ctx) -> None:
    provider = ScriptedProvider([tools(call("delete_everything", {})), text("sorry")])
    outcome = await _turn(ctx, provider)
    message = _results(provider, 1)[0]["error"]["message"]
    assert "delete_everything" in message and "search_entries" in message
    assert outcome.text == "sorry"


async def test_schema_violation_names_the_field(ctx) -> None:
    bad = {"query": "passport", "limit": 500}
    provider = ScriptedProvider([tools(call("search_entries", bad)), text("ok")])
    await _turn(ctx, provider)
    error = _results(provider, 1)[0]["error"]
    assert "limit" in json.dumps(error)


async def test_a_capture_with_one_bad_hint_still_files_and_says_what_it_left_out(ctx) -> None:
    bad = {"text": "Renew passport", "hints": {"category": "admin", "confidence": 1.5}}
    provider = ScriptedProvider([tools(call("classify_and_capture", bad))])
    outcome = await _turn(ctx, provider)
    assert outcome.executions[0].status == "ok"
    assert "confidence" in " ".join(outcome.executions[0].output.data["dropped"])
    assert len(list(ctx.deps.store.vault.root.rglob("*.md"))) == 1


async def test_same_call_repeated_is_not_run_twice(ctx) -> None:
    search = {"query": "passport"}
    provider = ScriptedProvider([
        tools(call("search_entries", search, "a")),
        tools(call("search_entries", search, "b")),
        text("nothing found"),
    ])
    outcome = await _turn(ctx, provider)
    assert [e.status for e in outcome.executions] == ["ok", "error"]
    assert outcome.executions[1].error["message"] == REPEATED
    # a round made only of repeats ends with one tools-off call
    assert provider.requests[-1].tool_choice == "none"


async def test_iteration_cap_then_one_call_with_tools_disabled(ctx) -> None:
    provider = ScriptedProvider(
        [tools(call("list_entries", {"limit": i + 1}, f"c{i}")) for i in range(3)]
        + [text("here is what I found")])
    outcome = await _turn(ctx, provider, max_iterations=3)
    assert outcome.capped and outcome.llm_calls == 4
    assert [r.tool_choice for r in provider.requests] == ["auto", "auto", "auto", "none"]
    assert outcome.text == "here is what I found"


async def test_forced_choice_applies_to_the_first_iteration_only(ctx) -> None:
    provider = ScriptedProvider([tools(call("list_entries", {})), text("done")])
    await _turn(ctx, provider, first_tool_choice=NamedTool("list_entries"))
    assert provider.requests[0].tool_choice == NamedTool("list_entries")
    assert provider.requests[1].tool_choice == "auto"


async def test_parallel_calls_each_answered_in_call_order(ctx) -> None:
    await ctx.deps.store.create("projects", "Q3 budget", {}, "numbers")
    provider = ScriptedProvider([
        tools(call("search_entries", {"query": "budget"}, "s1"),
              call("list_entries", {"category": "projects"}, "s2"),
              call("get_entry", {"path": "projects/q3-budget.md"}, "s3")),
        text("3 things"),
    ])
    outcome = await _turn(ctx, provider)
    sent = provider.requests[1].messages[-1].tool_results
    assert [r.call_id for r in sent] == ["s1", "s2", "s3"]
    assert all(e.status == "ok" for e in outcome.executions)


async def test_a_tool_that_raises_becomes_an_error_result(ctx, monkeypatch) -> None:
    async def boom(_ctx: ToolContext, _args: dict) -> ToolOutput:
        raise RuntimeError("disk on fire")

    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    monkeypatch.setitem(TOOLS, "boom", Tool("boom", "A tool that always fails, for tests.",
                                           schema, boom))
    monkeypatch.setitem(registry._VALIDATORS, "boom", Draft202012Validator(schema))
    provider = ScriptedProvider([tools(call("boom", {})), text("that failed, sorry")])
    outcome = await _turn(ctx, provider)
    assert outcome.executions[0].status == "error"
    sent = _results(provider, 1)[0]
    assert sent["ok"] is False and "disk on fire" in sent["error"]["message"]
    assert outcome.text == "that failed, sorry"


async def test_truncated_calls_are_not_executed(ctx) -> None:
    provider = ScriptedProvider([
        tools(call("classify_and_capture", CAPTURE), stop="max_tokens"), text("retrying later")])
    outcome = await _turn(ctx, provider)
    assert outcome.executions[0].error["message"] == TRUNCATED
    assert not any(ctx.deps.store.vault.root.rglob("*.md"))


async def test_usage_is_summed_over_the_turn(ctx) -> None:
    provider = ScriptedProvider([tools(call("list_entries", {})), text("none")])
    outcome = await _turn(ctx, provider)
    assert outcome.usage.input_tokens == 150 and outcome.usage.output_tokens == 15
