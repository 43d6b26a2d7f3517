"""LLM connection configs: which provider, model, key and endpoint. Nothing about use cases.

Built-ins cover the two SDKs and the offline provider; a JSON or YAML file (BRAIN_LLM_CONFIGS)
adds configs or overrides built-ins. `select_config` picks one from the settings and
`make_provider` connects it through a table of factories. Provider modules never import this
module (their config type lives in `bot.llm.types`), and this module imports a provider only
when it is connected, so there is no import circle and no SDK is loaded that is not used.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bot.llm.dialects import DIALECTS
from bot.llm.types import (
    OFFLINE_CONFIG,
    AuthError,
    Completion,
    LLMConfig,
    Message,
    Provider,
    RequestOptions,
    ToolChoice,
    ToolSpec,
)

if TYPE_CHECKING:
    from bot.config import Settings

__all__ = ["BUILTIN_CONFIGS", "PROVIDERS", "LLMConfig", "MissingKeyProvider", "load_configs",
           "make_provider", "select_config"]

PROVIDERS = ("openai", "anthropic", "offline")


BUILTIN_CONFIGS: dict[str, LLMConfig] = {
    "openai": LLMConfig(id="openai", provider="openai", model="gpt-5.5",
                        api_key_env="OPENAI_API_KEY"),
    "anthropic": LLMConfig(id="anthropic", provider="anthropic", model="claude-opus-5-5",
                           api_key_env="ANTHROPIC_API_KEY", params={"max_tokens": 2048}),
    "offline": OFFLINE_CONFIG,
}

# The SDKs' own environment variables, and the Settings fields that also read them from .env.
_KEY_FIELDS = {"OPENAI_API_KEY": "openai_api_key", "ANTHROPIC_API_KEY": "anthropic_api_key"}
_BASE_URL_ENV = {"openai": ("OPENAI_BASE_URL", "openai_base_url"),
                 "anthropic": ("ANTHROPIC_BASE_URL", "anthropic_base_url")}


def _config_from_dict(raw: Any, where: str, base: dict[str, LLMConfig]) -> LLMConfig:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: each config must be a mapping, got {type(raw).__name__}")
    known = {f.name for f in fields(LLMConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    cid = raw.get("id")
    if not isinstance(cid, str) or not cid.strip():
        raise ValueError(f"{where}: field 'id' is required and must be a non-empty string")
    where = f"{where} (id {cid!r})"
    values: dict[str, Any] = dict(raw)
    if cid in base:  # override a built-in or earlier config: only the given fields change
        return _check(replace(base[cid], **values), where)
    for required in ("provider", "model"):
        if required not in raw:
            raise ValueError(f"{where}: field {required!r} is required for a new config")
    return _check(LLMConfig(**values), where)


def _check(config: LLMConfig, where: str) -> LLMConfig:
    _check_connection(config, where)
    _check_calls(config, where)
    return config


def _bad(where: str, name: str, why: str) -> ValueError:
    return ValueError(f"{where}: field {name!r} {why}")


def _check_connection(config: LLMConfig, where: str) -> None:
    """What the config connects to: provider, model, key, endpoint, dialect."""
    if config.provider not in PROVIDERS:
        raise _bad(where, "provider",
                   f"must be one of {', '.join(PROVIDERS)}, got {config.provider!r}")
    if not isinstance(config.model, str) or not config.model:
        raise _bad(where, "model", "must be a non-empty string")
    for name in ("api_key_env", "base_url"):
        value = getattr(config, name)
        if value is not None and not isinstance(value, str):
            raise _bad(where, name, "must be a string or null")
    if config.dialect is not None and config.dialect not in DIALECTS:
        raise _bad(where, "dialect", f"must be one of {', '.join(sorted(DIALECTS))}, "
                                     f"got {config.dialect!r}")


def _check_calls(config: LLMConfig, where: str) -> None:
    """How each call is made: its parameters, default tool, timeout and retries."""
    if not isinstance(config.params, dict):
        raise _bad(where, "params", "must be a mapping")
    if not isinstance(config.default_tool_name, str) or not config.default_tool_name:
        raise _bad(where, "default_tool_name", "must be a non-empty string")
    if isinstance(config.timeout, bool) or not isinstance(config.timeout, int | float) \
            or config.timeout <= 0:
        raise _bad(where, "timeout", "must be a positive number of seconds")
    if isinstance(config.max_retries, bool) or not isinstance(config.max_retries, int) \
            or config.max_retries < 0:
        raise _bad(where, "max_retries", "must be a non-negative integer")


def load_configs(path: Path | str | None = None) -> dict[str, LLMConfig]:
    """Built-in configs plus those of `path` (JSON or YAML: {"configs": [...]} or a list)."""
    configs = dict(BUILTIN_CONFIGS)
    if path is None:
        return configs
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read LLM configs file: {exc.strerror or exc}") from exc
    try:
        data = (json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text))
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                         f"{exc}") from exc
    if isinstance(data, dict) and "configs" in data:
        data = data["configs"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of configs or {{\"configs\": [...]}}")
    for index, raw in enumerate(data):
        config = _config_from_dict(raw, f"{path}: configs[{index}]", configs)
        configs[config.id] = config
    return configs


def _has_key(settings: Settings, env: str) -> bool:
    return bool(_setting(settings, _KEY_FIELDS.get(env)) or os.environ.get(env))


def _setting(settings: Settings, name: str | None) -> str | None:
    value = getattr(settings, name, None) if name else None
    return value if isinstance(value, str) and value else None


def select_config(settings: Settings) -> LLMConfig:
    """The config named by BRAIN_LLM ("auto": anthropic, else openai, else offline by keys)."""
    configs = load_configs(settings.llm_configs)
    choice = (settings.llm or "auto").strip()
    if choice == "auto":
        if _has_key(settings, "ANTHROPIC_API_KEY"):
            choice = "anthropic"
        elif _has_key(settings, "OPENAI_API_KEY"):
            choice = "openai"
        else:
            choice = "offline"
    if choice not in configs:
        raise ValueError(f"unknown LLM config {choice!r} (BRAIN_LLM); known: "
                         f"auto, {', '.join(sorted(configs))}")
    config = configs[choice]
    if settings.model:
        config = replace(config, model=settings.model)
    return config


def available_configs(settings: Settings) -> dict[str, LLMConfig]:
    """The connections a person may choose: every config whose key is set here (the offline
    rules always). Keys are never shown, only that a connection exists."""
    return {cid: c for cid, c in load_configs(settings.llm_configs).items()
            if c.provider == "offline" or (c.api_key_env and _has_key(settings, c.api_key_env))}


class MissingKeyProvider:
    """Stands in for a provider whose API key is not set: every call fails as an auth error,
    so the bot still starts and the outage path keeps what the user sent."""

    def __init__(self, config: LLMConfig) -> None:
        self.name = config.id
        self.model = config.model
        self.env = config.api_key_env or "an API key"

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        raise AuthError(f"no API key: set {self.env}")


# (config, api_key, base_url, timeout, max_retries) -> provider; SDKs load on first use.
SDKFactory = Callable[[LLMConfig, str, "str | None", float, int], Provider]


def _openai(config: LLMConfig, key: str, base_url: str | None, timeout: float,
            retries: int) -> Provider:
    from bot.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(config, api_key=key, base_url=base_url, timeout=timeout,
                          max_retries=retries)


def _anthropic(config: LLMConfig, key: str, base_url: str | None, timeout: float,
               retries: int) -> Provider:
    from bot.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(config, api_key=key, base_url=base_url, timeout=timeout,
                             max_retries=retries)


SDK_FACTORIES: dict[str, SDKFactory] = {"openai": _openai, "anthropic": _anthropic}


def make_provider(config: LLMConfig, settings: Settings) -> Provider:
    """Connect a config. The offline provider works in the settings' time zone (BRAIN_TZ)."""
    if config.provider == "offline":
        from bot.llm.offline import OfflineProvider

        return OfflineProvider(config, tz=getattr(settings, "tz", None))

    key = None
    if config.api_key_env:
        key = _setting(settings, _KEY_FIELDS.get(config.api_key_env)) \
            or os.environ.get(config.api_key_env) or None
    if not key and config.api_key_env is None and config.base_url:
        key = "no-key"  # a local server (llama.cpp, Ollama, vLLM) asks for none
    if not key:
        return MissingKeyProvider(config)
    base_url = config.base_url
    if base_url is None:
        env, field_name = _BASE_URL_ENV[config.provider]
        # Passed explicitly so the endpoint surely applies, also when it came from .env.
        base_url = _setting(settings, field_name) or os.environ.get(env) or None
    # Explicitly set settings win over the config's values; otherwise the config decides.
    timeout = settings.llm_timeout if "llm_timeout" in settings.model_fields_set \
        else config.timeout
    retries = settings.llm_max_retries if "llm_max_retries" in settings.model_fields_set \
        else config.max_retries
    return SDK_FACTORIES[config.provider](config, key, base_url, timeout, retries)
