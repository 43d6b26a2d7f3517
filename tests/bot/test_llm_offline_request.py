"""The offline provider works from what the request gives it: the tool specs (never a tool it
was not offered, arguments valid for the schema it was given), the messages (not the prompt's
text), and the time zone it was configured with."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from bot.config import Settings
from bot.llm.configs import make_provider, select_config
from bot.llm.offline import OfflineProvider
from bot.llm.types import Message, NamedTool, ToolSpec
from tools.registry import tool_specs
from tools.rules.classify import today_in

WED = date(2026, 3, 4)
SPECS = {s["name"]: ToolSpec(s["name"], s["description"], s["parameters"])
         for s in tool_specs()}


def user(text: str) -> list[Message]:
    return [Message("user", text)]


async def test_a_thought_without_the_capture_tool_is_answered_in_text() -> None:
    offered = [SPECS["search_entries"], SPECS["list_entries"]]
    completion = await OfflineProvider(today=WED).complete(
        "", user("Pay the electricity bill tomorrow"), offered)
    assert completion.tool_calls == ()
    assert completion.text == ("I can't file notes right now; this reads like admin: "
                               "Pay the electricity bill.")


async def test_routed_arguments_are_fitted_to_the_schema_given() -> None:
    # A deployment whose list tool has no status filter: the filter is dropped, not sent.
    narrow = ToolSpec("list_entries", "List notes.", {
        "type": "object", "properties": {"category": {"type": "string"}},
        "additionalProperties": False})
    completion = await OfflineProvider(today=WED).complete(
        "", user("what are my active projects?"), [narrow])
    (call,) = completion.tool_calls
    assert call.arguments == {"category": "projects"}


async def test_a_schema_that_cannot_take_the_routed_call_gets_a_text_answer() -> None:
    strict = ToolSpec("search_entries", "Search.", {
        "type": "object", "properties": {"terms": {"type": "array"}}, "required": ["terms"],
        "additionalProperties": False})
    completion = await OfflineProvider(today=WED).complete("", user("find budget"), [strict])
    assert completion.tool_calls == () and completion.text


async def test_required_uses_an_offered_tool_with_valid_arguments() -> None:
    only = SPECS["search_entries"]
    completion = await OfflineProvider(today=WED).complete(
        "", user("Pay the electricity bill tomorrow"), [only], "required")
    (call,) = completion.tool_calls
    assert call.name == "search_entries"
    assert not list(Draft202012Validator(only.parameters).iter_errors(call.arguments))


async def test_forced_tool_that_is_not_offered_is_not_called() -> None:
    completion = await OfflineProvider(today=WED).complete(
        "", user("find budget"), [SPECS["search_entries"]], NamedTool("move_entry"))
    assert completion.tool_calls == () and completion.text


async def test_the_prompt_text_is_not_read_for_the_filed_note() -> None:
    system = ("Notes filed in this conversation:\n- projects/q3.md (id e_1): Q3\n"
              "(most recent last)")
    completion = await OfflineProvider(today=WED).complete(
        system, user("fix: ideas"), list(SPECS.values()))
    assert completion.tool_calls == ()
    assert "Which note" in (completion.text or "")


async def test_capture_hints_match_the_real_schema() -> None:
    completion = await OfflineProvider(today=WED).complete(
        "", user("Could we gamify code reviews?"), list(SPECS.values()))
    (call,) = completion.tool_calls
    assert call.name == "classify_and_capture"
    assert call.arguments is not None and call.arguments["hints"]["category"] == "ideas"
    assert not list(Draft202012Validator(SPECS[call.name].parameters)
                    .iter_errors(call.arguments))


@pytest.mark.parametrize(("tz", "other"), [("Pacific/Kiritimati", "Etc/GMT+12")])
async def test_dates_are_read_in_the_configured_zone(tz: str, other: str) -> None:
    async def due(zone: str) -> str:
        completion = await OfflineProvider(tz=zone).complete(
            "", user("Pay rent tomorrow"), [SPECS["classify_and_capture"]])
        args = completion.tool_calls[0].arguments or {}
        return str(args["hints"]["due_date"])

    assert date.fromisoformat(await due(tz)) == date.fromordinal(
        today_in(tz).toordinal() + 1)
    assert await due(tz) > await due(other)


def test_make_provider_gives_the_offline_provider_the_settings_zone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "BRAIN_LLM", "BRAIN_TZ"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    settings = Settings(_env_file=None, BRAIN_TZ="Asia/Tokyo")  # type: ignore[call-arg]
    provider = make_provider(select_config(settings), settings)
    assert isinstance(provider, OfflineProvider) and provider.tz == "Asia/Tokyo"
