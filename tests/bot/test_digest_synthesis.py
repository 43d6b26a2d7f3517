"""Digest synthesis through the real SDKs against the local fake LLM server (mostly Chat
Completions): schema injection, id checks, repair retry, offline fallback, word limits."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.digest.model import SECTIONS, WORD_LIMITS, CaptureRef, DigestData, NoteRef
from bot.digest.render import word_count
from bot.digest.synthesis import offline_digest, output_schema, synthesize
from bot.llm.anthropic_provider import AnthropicProvider
from bot.llm.configs import BUILTIN_CONFIGS
from bot.llm.openai_provider import OpenAIProvider
from tests.bot.fake_llm_server import FakeLLMServer, anthropic_text, error, openai_text

DAY = date(2026, 11, 22)
PROJECT = NoteRef("e_proj", "Q3 Budget", "projects/q3.md", "projects", "active",
                  next_action="Send the draft to finance")
PERSON = NoteRef("e_sara", "Sara", "people/sara.md", "people",
                 follow_ups=("Ask about the offsite venue",))
ADMIN = NoteRef("e_car", "Car insurance", "admin/car.md", "admin", "todo",
                next_action="Renew the car insurance", due_date="2026-11-22")
INBOX = NoteRef("inbox/odd.md", "Odd thought", "inbox/odd.md", "inbox")
DAILY = DigestData(kind="daily", user_id="U1", today=DAY, tz="UTC", projects=(PROJECT,),
                   people=(PERSON,), admin=(ADMIN,), inbox=(INBOX,))
WEEKLY = DigestData(
    kind="weekly", user_id="U1", today=DAY, tz="UTC",
    captures=(CaptureRef("e_proj", "Q3 Budget", "budget stuff", "projects", "filed",
                         "2026-11-20T10:00:00+00:00"),),
    capture_counts={"projects": 1},
    changed_projects=(replace(PROJECT, ref="e_done", name="Website", status="done"),),
    open_loops=(replace(PROJECT, ref="e_blk", name="Hiring", status="blocked"),),
    needs_review=(INBOX,))


def item(text: str, *ids: str) -> dict[str, Any]:
    return {"text": text, "ids": list(ids)}


def daily_answer(**over: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "top_actions": [item("Renew the car insurance today", "e_car"),
                        item("Send the Q3 draft to finance", "e_proj")],
        "people": [item("Ask Sara about the offsite venue", "e_sara")],
        "watch_out": [item("One inbox note waits for review", "inbox/odd.md")],
        "small_win": [item("Renewing the insurance takes ten minutes", "e_car")],
    }
    answer.update(over)
    return answer


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def provider_for(base_url: str) -> OpenAIProvider:
    return OpenAIProvider(BUILTIN_CONFIGS["openai"], api_key="sk-test", base_url=base_url,
                          timeout=5.0, max_retries=0)


async def test_request_carries_the_injected_schema(srv: FakeLLMServer) -> None:
    srv.script([openai_text(json.dumps(daily_answer()))])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    [body] = srv.bodies()
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "daily_digest"
    assert fmt["json_schema"]["schema"] == output_schema("daily")
    assert "tools" not in body
    prompt = body["messages"][-1]["content"]
    assert "e_car" in prompt and "Sara" in prompt  # the data is in the request
    assert digest.source == "llm" and digest.gaps == ()
    assert "Renew the car insurance today" in digest.text
    assert digest.names == {"e_car": "Car insurance", "e_proj": "Q3 Budget",
                            "e_sara": "Sara", "inbox/odd.md": "Odd thought"}


async def test_anthropic_request_carries_the_schema_as_output_config(
        srv: FakeLLMServer) -> None:
    srv.script([anthropic_text(json.dumps(daily_answer(people=[item("Ask Sara", "e_bogus")])))])
    provider = AnthropicProvider(BUILTIN_CONFIGS["anthropic"], api_key="sk-ant-test",
                                 base_url=srv.anthropic_base_url, timeout=5.0, max_retries=0)
    digest = await synthesize(DAILY, provider)
    [body] = srv.bodies("/v1/messages")
    assert body["output_config"]["format"] == {"type": "json_schema",
                                               "schema": output_schema("daily")}
    assert "tools" not in body
    assert digest.source == "llm" and digest.gaps == ("e_bogus",)
    assert "Renew the car insurance today" in digest.text and "Ask Sara" not in digest.text


async def test_weekly_schema_name(srv: FakeLLMServer) -> None:
    answer = {k: [] for k in SECTIONS["weekly"]}
    answer["open_loops"] = [item("Hiring is blocked", "e_blk")]
    srv.script([openai_text(json.dumps(answer))])
    digest = await synthesize(WEEKLY, provider_for(srv.openai_base_url))
    assert srv.bodies()[0]["response_format"]["json_schema"]["name"] == "weekly_digest"
    assert digest.source == "llm"
    assert "Captured 1 this week: projects 1." in digest.text
    assert "Hiring is blocked" in digest.text


async def test_unknown_ids_are_dropped_and_reported(srv: FakeLLMServer) -> None:
    answer = daily_answer(
        top_actions=[item("Call the bank about the loan", "e_bogus"),
                     item("Send the Q3 draft to finance", "e_proj", "e_ghost")],
    )
    srv.script([openai_text(json.dumps(answer))])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    assert len(srv.requests) == 1  # unknown ids are not a reason to ask again
    assert "bank" not in digest.text and "bank" not in json.dumps(digest.blocks)
    assert "e_bogus" not in json.dumps(digest.to_dict()["sections"])
    assert set(digest.gaps) == {"e_bogus", "e_ghost"}
    assert [i.ids for i in digest.sections["top_actions"]] == [("e_proj",)]
    assert "Send the Q3 draft to finance" in digest.text


async def test_not_json_then_valid_is_repaired(srv: FakeLLMServer) -> None:
    srv.script([openai_text("Here is your digest: be productive!"),
                openai_text(json.dumps(daily_answer()))])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    assert len(srv.requests) == 2
    repair = srv.bodies()[1]["messages"]
    assert repair[-2]["content"] == "Here is your digest: be productive!"
    assert "not JSON" in repair[-1]["content"]
    assert digest.source == "llm"


async def test_not_json_then_wrong_shape_falls_back_offline(srv: FakeLLMServer) -> None:
    srv.script([openai_text("not json at all"),
                openai_text(json.dumps({"top_actions": "call everyone", "mood": "great"}))])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    assert len(srv.requests) == 2
    assert "not JSON" in srv.bodies()[1]["messages"][-1]["content"]
    assert digest.source == "offline"
    for name in ("Renew the car insurance", "Q3 Budget", "Sara"):
        assert name in digest.text


async def test_wrong_shape_errors_are_named_in_the_repair_prompt(srv: FakeLLMServer) -> None:
    bad = daily_answer(top_actions=[item("a", "e_car")] * 4)  # more than 3
    del bad["people"]
    srv.script([openai_text(json.dumps(bad)), openai_text(json.dumps(daily_answer()))])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    feedback = srv.bodies()[1]["messages"][-1]["content"]
    assert "'people' is a required property" in feedback
    assert "top_actions" in feedback and "too long" in feedback
    assert digest.source == "llm"


async def test_server_errors_give_the_offline_digest(srv: FakeLLMServer) -> None:
    srv.script([error(500), error(500)])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    assert digest.source == "offline"
    assert "Renew the car insurance" in digest.text


async def test_connection_refused_gives_the_offline_digest() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    digest = await synthesize(DAILY, provider_for(f"http://127.0.0.1:{port}/v1"))
    assert digest.source == "offline"
    assert "Sara" in digest.text


async def test_long_llm_items_are_trimmed_to_the_word_limit(srv: FakeLLMServer) -> None:
    long = "word " * 60
    answer = daily_answer(people=[item(long, "e_sara")] * 3,
                          watch_out=[item(long, "e_car")] * 3,
                          top_actions=[item(long, "e_proj")] * 3)
    srv.script([openai_text(json.dumps(answer))])
    digest = await synthesize(DAILY, provider_for(srv.openai_base_url))
    assert digest.source == "llm"
    assert digest.words == word_count(digest.text) <= WORD_LIMITS["daily"]
    assert digest.sections["top_actions"]  # the highest priority survives


async def test_empty_data_needs_no_llm(srv: FakeLLMServer) -> None:
    empty = DigestData(kind="daily", user_id="U1", today=DAY, tz="UTC")
    digest = await synthesize(empty, provider_for(srv.openai_base_url))
    assert srv.requests == []
    assert "Nothing needs you right now." in digest.text


def test_offline_daily_names_project_person_and_admin() -> None:
    digest = offline_digest(DAILY)
    assert digest.source == "offline"
    assert [i.ids for i in digest.sections["top_actions"]] == [("e_car",), ("e_proj",)]
    assert digest.sections["people"][0].ids == ("e_sara",)
    assert digest.sections["watch_out"][0].ids == ("inbox/odd.md",)


def test_offline_weekly_structure() -> None:
    digest = offline_digest(WEEKLY)
    assert list(digest.sections) == list(SECTIONS["weekly"])
    assert digest.sections["suggested_focus"][0].text == "Unblock Hiring"
    assert digest.sections["moved_forward"][0].text == "Website is now done"
    assert digest.sections["needs_review"][0].ids == ("inbox/odd.md",)
    assert digest.counts == {"projects": 1}


names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                min_size=1, max_size=80)


@settings(max_examples=60, deadline=None)
@given(projects=st.lists(names, max_size=20), people=st.lists(names, max_size=10),
       admin=st.lists(names, max_size=10), kind=st.sampled_from(["daily", "weekly"]))
async def test_offline_digest_fits_its_word_limit(projects: list[str], people: list[str],
                                                  admin: list[str], kind: str) -> None:
    data = DigestData(
        kind=kind, user_id="U", today=DAY, tz="UTC",
        projects=tuple(NoteRef(f"p{i}", n, f"p{i}.md", "projects", "active", next_action=n * 3)
                       for i, n in enumerate(projects)) if kind == "daily" else (),
        people=tuple(NoteRef(f"h{i}", n, f"h{i}.md", "people", follow_ups=(n * 4,))
                     for i, n in enumerate(people)) if kind == "daily" else (),
        admin=tuple(NoteRef(f"a{i}", n, f"a{i}.md", "admin", "todo", next_action=n * 5,
                            due_date="2026-11-01") for i, n in enumerate(admin)),
        open_loops=tuple(NoteRef(f"o{i}", n, f"o{i}.md", "projects", "waiting")
                         for i, n in enumerate(projects)) if kind == "weekly" else (),
        needs_review=tuple(NoteRef(f"r{i}", n, f"r{i}.md", "inbox", detail=n * 5)
                           for i, n in enumerate(people)) if kind == "weekly" else (),
    )
    digest = await synthesize(data, _Offline())
    assert digest.words == word_count(digest.text) <= WORD_LIMITS[kind]
    known = data.names()
    for items in digest.sections.values():
        for it in items:
            assert it.ids and set(it.ids) <= set(known)


class _Offline:
    name = "offline"
    model = "rules"

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the offline path must not call the provider")
