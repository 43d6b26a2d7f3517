"""`brain ask` (and MCP's `ask`) when the configured model gives no answer: a closed port, a
key the server refuses (401), a model that keeps searching and never answers. Each time the
answer is the extractive one from the notes, a notice says why the model did not answer, the
exit status is 0, and `--json` prints JSON. The CLI runs as a process, MCP through the real
client; the model is the fake server at the network edge.
"""

from __future__ import annotations

import itertools
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bot.fake_llm_server import FakeLLMServer, Reply, error, openai_tool_calls
from tests.brain_cli import Result, run_process
from tests.test_cli_mcp import stdio

THOUGHT = "Renew the passport before the June trip to Lisbon"
QUESTION = "when do I renew the passport?"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_LLM": "openai",
            "OPENAI_API_KEY": "sk-invalid", "OPENAI_BASE_URL": base_url,
            "BRAIN_LLM_MAX_RETRIES": "0", "BRAIN_LLM_TIMEOUT": "10"}


def _seed(tmp_path: Path) -> None:
    """One note, filed without a model."""
    added = run_process(tmp_path, "add", THOUGHT, "--category", "admin", "--json",
                        env={"BRAIN_DATA_DIR": str(tmp_path / "data")})
    assert added.code == 0, added.err


def _asks(tmp_path: Path, base_url: str) -> tuple[Result, Result]:
    env = _env(tmp_path, base_url)
    return (run_process(tmp_path, "ask", QUESTION, env=env),
            run_process(tmp_path, "ask", QUESTION, "--json", env=env))


def _check(plain: Result, as_json: Result, why: str) -> None:
    for result in (plain, as_json):
        assert result.code == 0, result.err
        assert "Traceback" not in result.err + result.out
    assert "passport" in plain.out.lower()  # the extractive answer, quoted from the note
    assert "Sources:" in plain.out
    assert why in plain.err and "without the model" in plain.err
    answer = json.loads(as_json.out)
    assert answer["found"] is True and answer["sources"], answer
    assert why in answer["notice"], answer
    assert "passport" in answer["sources"][0]["quote"].lower()


def test_a_closed_port_gets_the_quoted_answer_and_says_the_model_is_unreachable(
        tmp_path: Path) -> None:
    _seed(tmp_path)
    plain, as_json = _asks(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1")
    _check(plain, as_json, "can't reach the language model")


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def test_a_refused_key_gets_the_quoted_answer_and_says_the_key_was_refused(
        tmp_path: Path, fake: FakeLLMServer) -> None:
    _seed(tmp_path)
    fake.gate = lambda path, body: error(401)
    plain, as_json = _asks(tmp_path, fake.openai_base_url)
    _check(plain, as_json, "did not accept the API key")
    assert len(fake.requests) == 2  # one call per ask: a refused key is not asked again


def _searching_forever() -> Any:
    n = itertools.count(1)

    def answer(path: str, body: dict[str, Any]) -> Reply:
        k = next(n)  # a new query each time: never the same call twice
        return Reply(body=openai_tool_calls([(f"call_{k}", "search_entries",
                                              {"query": f"passport {k}"})]))
    return answer


def test_a_model_that_keeps_searching_gets_the_quoted_answer_within_a_bounded_number_of_calls(
        tmp_path: Path, fake: FakeLLMServer) -> None:
    _seed(tmp_path)
    fake.gate = _searching_forever()
    plain, as_json = _asks(tmp_path, fake.openai_base_url)
    _check(plain, as_json, "kept searching without giving an answer")
    assert len(fake.requests) <= 2 * 8  # each ask: its budget, the last call, the citation


async def test_mcp_ask_answers_from_the_notes_when_the_key_is_refused(
        tmp_path: Path, fake: FakeLLMServer) -> None:
    fake.gate = lambda path, body: error(401)
    env = {k: v for k, v in _env(tmp_path, fake.openai_base_url).items()
           if k != "BRAIN_DATA_DIR"}  # stdio() puts the data under tmp_path/data
    async with stdio(tmp_path, **env) as client:
        await client.call_tool("classify_and_capture", {"text": THOUGHT, "hints": {
            "category": "admin", "confidence": 0.9, "name": "Renew passport"}})
        asked = await client.call_tool("ask", {"question": QUESTION})
    assert not asked.is_error
    answer = asked.structured_content
    assert answer["found"] is True and "passport" in answer["answer"].lower(), answer
    assert "did not accept the API key" in answer["notice"]
    assert json.loads(asked.content[0].text) == answer
