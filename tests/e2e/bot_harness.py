"""The Slack app served over real HTTP on 127.0.0.1 (in-process aiohttp server), with the real
Brain (offline LLM, the test's database, real vault files) and a recording fake Slack Web API:
what the end-to-end tests drive with signed requests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer

from bot.brain import Brain
from bot.config import Settings
from bot.slack.app import SlackBot
from bot.slack.cards import validate_message
from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, SlackSender, message_event

DM_TS = "1767261600.000100"


@dataclass
class Harness:
    fake: FakeSlack
    bot: Any
    send: SlackSender
    data_dir: Path

    @property
    def brain(self) -> Brain:
        brain: Brain = self.bot.brain
        return brain

    @property
    def vault(self) -> Path:
        return self.data_dir / "vaults" / USER

    async def settle(self) -> None:
        """Wait until every recorded job has run (the ack comes before the work)."""
        assert await self.bot.settle(timeout=30)

    def check_cards(self) -> None:
        for call in self.fake.calls:
            if call.method in ("chat.postMessage", "chat.update", "chat.postEphemeral") or \
                    call.method.startswith("hook:"):
                blocks = call.body.get("blocks") or []
                assert validate_message(blocks, call.body["text"]) == blocks
            elif call.method == "chat.stopStream" and call.body.get("blocks"):
                blocks = call.body["blocks"]  # the end of a streamed answer
                assert validate_message(blocks, "streamed") == blocks

    async def file_dm(self, text: str = "Call the dentist about the crown next Tuesday",
                      ts: str = DM_TS, event_id: str = "Ev0SB0000001") -> dict[str, Any]:
        before = len(self.fake.calls_to("chat.postMessage"))
        status, _ = await self.send.event(message_event(text, ts=ts, event_id=event_id))
        assert status == 200
        posts = await self.fake.wait_for("chat.postMessage", before + 1)
        await self.settle()
        return posts[-1].body


def posted_ts(fake: FakeSlack, n: int = 0) -> str:
    response = fake.calls_to("chat.postMessage")[n].response
    assert response is not None
    return str(response["ts"])


def make_settings(data_dir: Path, fake: FakeSlack, **extra: Any) -> Settings:
    values: dict[str, Any] = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
                              "SLACK_API_URL": fake.api_url, "BRAIN_DATA_DIR": str(data_dir),
                              "BRAIN_LLM": "offline", **database_env(data_dir)}
    values.update(extra)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@contextlib.asynccontextmanager
async def running_bot(data_dir: Path, *, worker: bool = True,
                      **extra: Any) -> AsyncIterator[Harness]:
    """A bot (schedulers off: tests tick them with their own clock; `worker=False`: jobs
    wait until the test calls `bot.start(scheduler=False)`)."""
    fake = await FakeSlack().start()
    settings = make_settings(data_dir, fake, **extra)
    brain = await Brain.start(settings)
    bot = SlackBot(brain, settings, poll=0.05)
    if worker:
        bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    send = SlackSender(str(server.make_url("/")))
    try:
        yield Harness(fake, bot, send, data_dir)
    finally:
        await send.close()
        await server.close()
        await bot.close(drain_timeout=10)
        await brain.close()
        await fake.stop()
