"""Config loading, selection and provider construction (real SDKs against the fake server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.llm.configs import BUILTIN_CONFIGS, load_configs, make_provider, select_config
from bot.llm.offline import OfflineProvider
from bot.llm.types import AuthError, LLMTimeout, Message
from tests.bot.fake_llm_server import FakeLLMServer, anthropic_text, openai_text

ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
            "BRAIN_LLM", "BRAIN_MODEL", "BRAIN_LLM_CONFIGS", "BRAIN_LLM_TIMEOUT",
            "BRAIN_LLM_MAX_RETRIES", "ANTHROPIC_PROFILE", "ANTHROPIC_AUTH_TOKEN")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def settings(**env: Any) -> Settings:
    return Settings(_env_file=None, **env)  # type: ignore[call-arg]


def test_auto_without_keys_is_offline() -> None:
    config = select_config(settings())
    assert config.id == "offline"
    assert isinstance(make_provider(config, settings()), OfflineProvider)


def test_auto_prefers_anthropic_then_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    assert select_config(settings()).id == "openai"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    assert select_config(settings()).id == "anthropic"


def test_auto_sees_keys_given_as_settings() -> None:
    # e.g. from .env, which pydantic-settings reads but os.environ does not show
    assert select_config(settings(OPENAI_API_KEY="sk-o")).id == "openai"


def test_explicit_id_and_model_override(monkeypatch: pytest.MonkeyPatch) -> None:
    config = select_config(settings(BRAIN_LLM="openai", BRAIN_MODEL="gpt-5.5-mini"))
    assert (config.id, config.provider, config.model) == ("openai", "openai", "gpt-5.5-mini")
    assert BUILTIN_CONFIGS["openai"].model == "gpt-5.5"  # built-ins untouched


def test_unknown_id_lists_known_ids() -> None:
    with pytest.raises(ValueError, match="unknown LLM config 'gpt9'.*anthropic, offline, openai"):
        select_config(settings(BRAIN_LLM="gpt9"))


def test_configs_file_adds_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "llm.yaml"
    path.write_text(
        "configs:\n"
        "  - id: local\n"
        "    provider: openai\n"
        "    model: llama-4\n"
        "    api_key_env: LOCAL_KEY\n"
        "    base_url: http://127.0.0.1:9/v1\n"
        "    params: {temperature: 0}\n"
        "  - id: anthropic\n"
        "    model: claude-sonnet-5\n")
    configs = load_configs(path)
    assert configs["local"].base_url == "http://127.0.0.1:9/v1"
    assert configs["local"].params == {"temperature": 0}
    assert configs["anthropic"].model == "claude-sonnet-5"
    assert configs["anthropic"].api_key_env == "ANTHROPIC_API_KEY"  # rest kept
    assert select_config(settings(BRAIN_LLM="local", BRAIN_LLM_CONFIGS=str(path))).id == "local"


def test_configs_file_as_json_list(tmp_path: Path) -> None:
    path = tmp_path / "llm.json"
    path.write_text(json.dumps([{"id": "fast", "provider": "anthropic",
                                 "model": "claude-haiku-5", "timeout": 10}]))
    assert load_configs(path)["fast"].timeout == 10


@pytest.mark.parametrize(("name", "content", "message"), [
    ("a.json", "{not json", "not valid JSON"),
    ("a.yaml", "configs: [", "not valid YAML"),
    ("a.json", '{"configs": {"id": "x"}}', "expected a list"),
    ("a.json", '[{"id": "x", "provider": "openai", "model": "m", "colour": 1}]',
     "unknown field.*colour"),
    ("a.json", '[{"id": "x", "provider": "gemini", "model": "m"}]', "'provider'.*gemini"),
    ("a.json", '[{"id": "x", "provider": "openai"}]', "'model' is required"),
    ("a.json", '[{"provider": "openai", "model": "m"}]', "'id' is required"),
    ("a.json", '[{"id": "openai", "timeout": -1}]', "'timeout'"),
    ("a.json", '[{"id": "openai", "max_retries": "two"}]', "'max_retries'"),
    ("a.json", '[{"id": "openai", "params": [1]}]', "'params'"),
    ("a.json", '["openai"]', "must be a mapping"),
])
def test_bad_configs_file(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        load_configs(path)
    assert str(path) in str(info.value)


def test_missing_configs_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        select_config(settings(BRAIN_LLM_CONFIGS=str(tmp_path / "nope.yaml")))


async def test_missing_key_fails_at_call_time_not_at_start() -> None:
    s = settings(BRAIN_LLM="openai")
    provider = make_provider(select_config(s), s)
    assert provider.name == "openai"
    with pytest.raises(AuthError, match="no API key: set OPENAI_API_KEY"):
        await provider.complete("s", [Message("user", "x")], [])


async def test_openai_base_url_env_reaches_the_fake(monkeypatch: pytest.MonkeyPatch,
                                                   srv: FakeLLMServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
    srv.script([openai_text("from the fake")])
    s = settings(BRAIN_MODEL="gpt-test")
    provider = make_provider(select_config(s), s)
    result = await provider.complete("s", [Message("user", "x")], [])
    assert result.text == "from the fake"
    assert srv.requests[0].headers["authorization"] == "Bearer sk-env"
    assert srv.requests[0].body["model"] == "gpt-test"


async def test_anthropic_base_url_setting_reaches_the_fake(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("hi from the fake")])
    s = settings(ANTHROPIC_API_KEY="sk-a", ANTHROPIC_BASE_URL=srv.anthropic_base_url)
    provider = make_provider(select_config(s), s)
    result = await provider.complete("s", [Message("user", "x")], [])
    assert result.text == "hi from the fake"
    assert srv.requests[0].path == "/v1/messages"


async def test_config_file_endpoint_and_params(tmp_path: Path, srv: FakeLLMServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    path = tmp_path / "llm.json"
    path.write_text(json.dumps({"configs": [{
        "id": "local", "provider": "openai", "model": "llama-4", "api_key_env": "LOCAL_KEY",
        "base_url": srv.openai_base_url, "params": {"temperature": 0.1}}]}))
    srv.script([openai_text("ok")])
    s = settings(BRAIN_LLM="local", BRAIN_LLM_CONFIGS=str(path))
    await make_provider(select_config(s), s).complete("s", [Message("user", "x")], [])
    body = srv.requests[0].body
    assert (body["model"], body["temperature"]) == ("llama-4", 0.1)
    assert srv.requests[0].headers["authorization"] == "Bearer sk-local"


async def test_settings_timeout_applies(srv: FakeLLMServer) -> None:
    srv.delay = 2.0
    s = settings(OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.openai_base_url,
                 BRAIN_LLM_TIMEOUT="0.3", BRAIN_LLM_MAX_RETRIES="0")
    with pytest.raises(LLMTimeout):
        await make_provider(select_config(s), s).complete("s", [Message("user", "x")], [])
    assert len(srv.requests) == 1  # no retries
