"""`brain doctor` probes the configured connection (issue 24): one tool call, one structured
answer, and says what works, through both SDKs against the fake server refusing what
llama-cpp-python's server refused."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.bot import local_fakes as lf
from tests.bot.fake_llm_server import (
    FakeLLMServer,
    Reply,
    anthropic_tool_uses,
    openai_text,
    openai_tool_calls,
)
from tests.brain_cli import BrainCLI


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def configs(tmp_path: Path, kind: str, base_url: str, dialect: str) -> Path:
    path = tmp_path / "configs.yaml"
    path.write_text(yaml.safe_dump({"configs": [{
        "id": "local", "provider": kind, "model": "smollm2", "base_url": base_url,
        "dialect": dialect, "timeout": 5, "max_retries": 0}]}), encoding="utf-8")
    return path


async def doctor(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path) -> str:
    cli = BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "d"),
                                      "BRAIN_LLM": "local", "BRAIN_LLM_CONFIGS": str(path)})
    done = await asyncio.to_thread(cli, "doctor")  # no Slack token: that check fails
    return next(line for line in done.out.splitlines() if "LLM probe" in line)


async def test_doctor_on_a_llama_cpp_server(srv: FakeLLMServer, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    srv.gate = lf.llama_cpp_gate
    srv.script([openai_tool_calls([("call_1", "ping", {"ok": True})]),
                openai_text('{"ok": true}')])
    line = await doctor(tmp_path, capsys,
                        configs(tmp_path, "openai", srv.openai_base_url, "openai-compatible"))
    assert line.startswith("ok")
    assert "tool calls: native" in line
    assert "structured output: json_object (json_schema refused)" in line
    # No key was configured: a local server needs none, so the request went out without one.
    assert srv.requests[0].headers.get("authorization") == "Bearer no-key"


async def test_doctor_on_a_server_that_writes_calls_as_text(
        srv: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    srv.script([openai_text(lf.hermes("ping", {"ok": True})), openai_text('{"ok": true}')])
    line = await doctor(tmp_path, capsys,
                        configs(tmp_path, "openai", srv.openai_base_url, "llama-cpp"))
    assert "tool calls: written in the text (read back into a call)" in line
    assert "structured output: json_object;" in line or line.endswith("json_object")


async def test_doctor_on_an_anthropic_compatible_server(
        srv: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    srv.gate = lf.anthropic_no_output_config
    srv.script([anthropic_tool_uses([("t1", "ping", {"ok": True})]),
                anthropic_tool_uses([("t2", "check", {"ok": True})])])
    line = await doctor(tmp_path, capsys,
                        configs(tmp_path, "anthropic", srv.anthropic_base_url,
                                "anthropic-compatible"))
    assert line.startswith("ok") and "tool calls: native" in line
    assert "structured output: tool (json_schema refused)" in line


async def test_doctor_on_a_server_that_is_down(
        srv: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    srv.script([Reply(502, {})] * 4)
    line = await doctor(tmp_path, capsys,
                        configs(tmp_path, "openai", srv.openai_base_url, "ollama"))
    assert line.startswith("FAIL") and "unavailable" in line
