"""The `slack` fixture: a served bot with a fake Slack Web API (tests/e2e/bot_harness.py); the
`vault_store` a served scenario runs on; `llm`, a model server speaking OpenAI's and
Anthropic's wire formats (tests/bot/fake_llm_server.py) for `brain serve` processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bot.fake_llm_server import FakeLLMServer
from tests.e2e.bot_harness import Harness, running_bot


@pytest.fixture
async def slack(tmp_path: Path) -> AsyncIterator[Harness]:
    async with running_bot(tmp_path) as harness:
        yield harness


@pytest.fixture(params=["files", pytest.param("database", marks=pytest.mark.postgres_only)])
def vault_store(request: pytest.FixtureRequest) -> dict[str, str]:
    """The store a `brain serve` scenario runs on (its environment): the vault's own folder,
    or PostgreSQL's rows mirrored (BRAIN_STORE=database, in the PostgreSQL pass only)."""
    return {"BRAIN_STORE": str(request.param)}


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    yield server
    server.release()  # a test that held the answers back must not leave them waiting
    server.stop()
