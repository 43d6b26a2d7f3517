"""The `slack` fixture: a served bot with a fake Slack Web API (tests/e2e/bot_harness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.bot_harness import Harness, running_bot


@pytest.fixture
async def slack(tmp_path: Path) -> AsyncIterator[Harness]:
    async with running_bot(tmp_path) as harness:
        yield harness
