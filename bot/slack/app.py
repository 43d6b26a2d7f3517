"""The Slack side of the brain: a Bolt AsyncApp, its Web API client, and how it is served.

`SlackBot` owns all per-process state (the tracked work queue, the brain); nothing lives at
module level, so tests and benchmarks can run several bots in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import statistics
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.config import Settings
from bot.slack.ordering import SerialRunner

log = logging.getLogger(__name__)

EVENT_MEMORY = timedelta(days=1)


class _NoTokenSkippedWarning(logging.Filter):
    """Bolt warns that SLACK_BOT_TOKEN is unused when a client is given; we give the client
    (for SLACK_API_URL and the retry handler) built from that very token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "will be unused" not in record.getMessage()


bolt_log = logging.getLogger("bot.slack.bolt")
bolt_log.addFilter(_NoTokenSkippedWarning())

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/health"
RATE_LIMIT_RETRIES = 2


def api_base_url(settings: Settings) -> str | None:
    """SLACK_API_URL with the trailing slash the SDK's urljoin needs."""
    url = settings.slack_api_url
    if not url:
        return None
    return url if url.endswith("/") else url + "/"


def make_client(settings: Settings, token: str | None = None) -> AsyncWebClient:
    """A Web API client for SLACK_API_URL (if set) that honours Retry-After on 429."""
    kwargs: dict[str, Any] = {}
    base = api_base_url(settings)
    if base:
        kwargs["base_url"] = base
    client = AsyncWebClient(token=token or settings.slack_bot_token, **kwargs)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


def make_webhook(url: str) -> AsyncWebhookClient:
    """A response_url client; also waits out rate limits."""
    hook = AsyncWebhookClient(url)
    hook.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return hook


class SlackBot:
    """A Bolt app wired to a Brain. Listeners are registered in bot.slack.listeners."""

    def __init__(self, brain: Any, settings: Settings,
                 client: AsyncWebClient | None = None) -> None:
        from bot.slack import listeners  # listeners import this module's helpers

        self.brain = brain
        self.settings = settings
        self.client = client or make_client(settings)
        self.runner = SerialRunner()
        self.ack_ms: deque[float] = deque(maxlen=1000)  # recent request->response times
        self.app = AsyncApp(
            client=self.client,
            logger=bolt_log,
            signing_secret=settings.slack_signing_secret or "",
            # Ack first; the turn runs after the ack in our own tracked runner.
            process_before_response=False,
            # Unknown requests are still acked (200) by our no-op listener, not 404'd.
            raise_error_for_unhandled_request=False,
        )
        listeners.register(self)
        self.scheduler: Any = None
        self._scheduler_task: asyncio.Task[None] | None = None
        self._prune_task: asyncio.Task[None] | None = None

    # -- scheduled digests -----------------------------------------------------------------

    def start_scheduler(self, poll_seconds: float = 60) -> None:
        """Send subscribed digests as DMs; the first tick at once sends a recently missed one."""
        from bot.digest import DigestScheduler

        self.scheduler = DigestScheduler(self.brain.db, self.deliver_digest,
                                         clock=lambda: datetime.now(UTC),
                                         poll_seconds=poll_seconds)
        self._scheduler_task = asyncio.create_task(self.scheduler.run())
        self._prune_task = asyncio.create_task(self._prune_hourly())

    async def _prune_hourly(self) -> None:
        while True:
            await self.prune_events()
            await asyncio.sleep(3600)

    async def prune_events(self) -> None:
        """Forget delivered event ids after a day: Slack's retries end within minutes."""
        from storage import repositories

        try:
            async with self.brain.db.session() as s:
                await repositories.prune_events(s, datetime.now(UTC) - EVENT_MEMORY)
                await s.commit()
        except Exception as exc:  # housekeeping: never stops the bot
            log.warning("pruning processed events failed: %s", exc)

    async def deliver_digest(self, sub: Any, slot: datetime) -> None:
        from bot.slack import cards

        digest = await self.brain.digest(user_id=sub.user_id, kind=sub.kind,
                                         today=slot.date(), tz=sub.tz)
        msg = cards.digest_message(digest)
        # A user id as the channel posts in the bot's DM with that user (chat:write).
        await self.client.chat_postMessage(channel=sub.channel or sub.user_id, text=msg.text,
                                           blocks=msg.blocks)

    async def user_tz(self, user_id: str) -> str | None:
        """The user's Slack time zone (users.info), for scheduling in their own morning."""
        try:
            info = await self.client.users_info(user=user_id)
            tz = (info.get("user") or {}).get("tz")
            return str(tz) if tz else None
        except Exception as exc:  # a missing scope or a network error: fall back, say so
            log.warning("users.info for %s failed, using BRAIN_TZ: %s", user_id, exc)
            return None

    # -- HTTP ---------------------------------------------------------------------------------

    def web_app(self) -> web.Application:
        """POST /slack/events (events, interactivity, commands) and GET /health."""
        webapp = web.Application()
        webapp.add_routes([web.post(EVENTS_PATH, self._handle_slack),
                           web.get(HEALTH_PATH, self._health)])
        return webapp

    async def _handle_slack(self, request: web.Request) -> web.StreamResponse:
        start = time.perf_counter()
        bolt_request = await to_bolt_request(request)
        bolt_response = await self.app.async_dispatch(bolt_request)
        response = await to_aiohttp_response(bolt_response)
        self.ack_ms.append((time.perf_counter() - start) * 1000)
        return response

    def ack_stats(self) -> dict[str, float]:
        if not self.ack_ms:
            return {}
        ordered = sorted(self.ack_ms)
        return {"ack_ms_p50": round(statistics.median(ordered), 2),
                "ack_ms_p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
                "ack_ms_max": round(ordered[-1], 2), "acks": len(ordered)}

    async def _health(self, request: web.Request) -> web.Response:
        """Liveness for container checks, plus how busy the bot is and how fast it acks."""
        return web.json_response({"ok": True, "pending": self.runner.busy, **self.ack_stats()})

    async def close(self, drain_timeout: float = 30.0) -> None:
        """Finish the work already accepted (acked events must not be lost), then stop."""
        if self._prune_task is not None:
            self._prune_task.cancel()
        if self.scheduler is not None and self._scheduler_task is not None:
            self.scheduler.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._scheduler_task, timeout=drain_timeout)
        if not await self.runner.drain(drain_timeout):
            log.error("gave up waiting for %d turns after %.0f s", self.runner.busy,
                      drain_timeout)
            await self.runner.cancel_all()


async def _wait_for_stop() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _start_site(webapp: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(webapp, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


async def serve_http(bot: SlackBot, host: str, port: int) -> None:
    runner = await _start_site(bot.web_app(), host, port)
    log.info("serving Slack events on http://%s:%d%s", host, port, EVENTS_PATH)
    print(f"brain: listening on http://{host}:{port}{EVENTS_PATH}", flush=True)
    try:
        await _wait_for_stop()
    finally:
        await runner.cleanup()  # stop taking requests first, then finish accepted work
        await bot.close()


async def serve_socket(bot: SlackBot, app_token: str, host: str, health_port: int | None) -> None:
    """Socket Mode (no public URL needed); /health is still served for container checks."""
    # Its web client defaults to the app's, so apps.connections.open honours SLACK_API_URL too.
    handler = AsyncSocketModeHandler(bot.app, app_token)
    runner = None
    if health_port is not None:
        health = web.Application()
        health.add_routes([web.get(HEALTH_PATH, bot._health)])
        runner = await _start_site(health, host, health_port)
    await handler.connect_async()
    print("brain: connected to Slack (Socket Mode)", flush=True)
    try:
        await _wait_for_stop()
    finally:
        await handler.close_async()
        if runner is not None:
            await runner.cleanup()
        await bot.close()


class ServeError(Exception):
    """`brain serve` cannot start; the message says what is missing and how to fix it."""


def check_serve_settings(settings: Settings, *, http: bool) -> None:
    missing = []
    if not settings.slack_bot_token:
        missing.append("SLACK_BOT_TOKEN (the Bot User OAuth Token, xoxb-...)")
    if http and not settings.slack_signing_secret:
        missing.append("SLACK_SIGNING_SECRET for HTTP mode (Basic Information > App "
                       "Credentials), or SLACK_APP_TOKEN (xapp-...) for Socket Mode")
    if missing:
        raise ServeError("cannot start: missing " + "; ".join(missing)
                         + ". Run `brain doctor` for a full check.")


async def serve(settings: Settings, *, http: bool, host: str, port: int) -> None:
    """Start the brain and serve Slack until SIGINT/SIGTERM."""
    from bot.brain import Brain

    http = http or not settings.slack_app_token  # Socket Mode needs the app token
    check_serve_settings(settings, http=http)
    brain = await Brain.start(settings)
    try:
        bot = SlackBot(brain, settings)
        bot.start_scheduler()
        if http:
            await serve_http(bot, host, port)
        else:
            assert settings.slack_app_token
            await serve_socket(bot, settings.slack_app_token, host, port)
    finally:
        await brain.close()
