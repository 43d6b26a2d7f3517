"""The Slack side of the brain: a Bolt AsyncApp whose listeners record jobs, the worker that
runs them, the digest scheduler, and the HTTP endpoint with its checks.

`SlackBot` owns all per-process state; nothing lives at module level, so tests and benchmarks
can run several bots in one process, and several processes can share one database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import statistics
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.brain import Brain
from bot.config import Settings
from bot.digest import DigestScheduler
from bot.jobs.queue import LEASE
from bot.jobs.worker import RETRY_DELAYS, Worker
from bot.schedule.reminders import ReminderScheduler
from bot.slack import cards, listeners
from bot.slack.edge import EdgeError, check_request
from bot.slack.handlers.jobs import SlackWork
from bot.slack.installs import INSTALL_PATH, REDIRECT_PATH, Installs
from bot.slack.intake import Intake, IntakeFailed
from bot.slack.web import make_client
from bot.sync.http import GitRoutes

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"


class _NoTokenSkippedWarning(logging.Filter):
    """Bolt warns that SLACK_BOT_TOKEN is unused when a client is given; we give the client
    (for SLACK_API_URL and the retry handler) built from that very token. With many
    workspaces it warns the token is ignored: the home workspace's authorize uses it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "will be unused" not in message and "will be ignored" not in message


class _OneLineConnectFailures(logging.Filter):
    """Socket Mode logs a full traceback at ERROR for every failed connection attempt; one
    warning line says the same (the client retries on its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Failed to connect"):
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


bolt_log = logging.getLogger("bot.slack.bolt")
bolt_log.addFilter(_NoTokenSkippedWarning())
bolt_log.addFilter(_OneLineConnectFailures())


HELPERS_AFTER = 2  # jobs running here before `--workers` helpers are woken for more


class Helpers(Protocol):
    """`brain serve --workers N`'s helper processes (bot/slack/worker_pool.py)."""

    def wake(self) -> None: ...

    def status(self) -> dict[str, int]: ...


class SlackBot:
    """A Bolt app wired to a Brain through the durable intake."""

    def __init__(self, brain: Brain, settings: Settings, client: AsyncWebClient | None = None,
                 *, concurrency: int = 200, poll: float = 1.0, lease: timedelta = LEASE,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS,
                 helpers: Helpers | None = None) -> None:
        self.brain = brain
        self.helpers = helpers  # `--workers N`: the helper processes
        self.settings = settings
        # One HTTP session for every Web API call of this bot (connections are reused).
        self._session = aiohttp.ClientSession() if client is None else None
        self.client = client or make_client(settings, session=self._session)
        self.ack_ms: deque[float] = deque(maxlen=1000)  # recent request->response times
        # Many workspaces (OAuth settings): the install pages, and each workspace's token.
        self.installs = Installs(brain, settings, self.client) if settings.oauth else None
        oauth: dict[str, Any] = {} if self.installs is None else {
            "oauth_flow": self.installs.flow, "authorize": self.installs.authorize}
        self.app = AsyncApp(
            client=self.client,
            logger=bolt_log,
            signing_secret=settings.slack_signing_secret or "",
            # The listener records the job and returns; only then does Slack get its ack.
            process_before_response=True,
            # Unknown requests are acked (200) by our no-op listener, not 404'd.
            raise_error_for_unhandled_request=False,
            **oauth,
        )
        self.work = SlackWork(brain, self.client, settings,
                              token_for=self.installs.token_for if self.installs else None)
        self.worker = Worker(brain.jobs, self.work.handlers(), give_up=self.work.give_up,
                             concurrency=concurrency, poll=poll, lease=lease,
                             retry_delays=retry_delays,
                             more=helpers.wake if helpers is not None else None,
                             ready=self.work.ready, waiting=self.work.waiting)
        self.intake = Intake(brain.jobs, self.wake,
                             person=brain.people.key if self.installs else None)
        listeners.register(self.app, self.intake, brain.conversations.thread_known,
                           reaction=settings.capture_reaction, accounts=brain.accounts,
                           forget_workspace=self.installs.forget if self.installs else None)
        self.app.error(self._bolt_error)
        self.git = GitRoutes(brain)  # /git/<person>.git: each vault as a git remote
        self.scheduler: DigestScheduler | None = None
        self.reminder_scheduler: ReminderScheduler | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    async def _bolt_error(self, error: Exception) -> BoltResponse:
        """A request Bolt or a listener could not handle. Failing to record it is ours: 500,
        so Slack delivers it again. Anything else is a signed request of a shape Slack does
        not send (the edge let it through): 400 and one line, no traceback."""
        if isinstance(error, IntakeFailed):
            ref = cards.new_ref()
            log.error("could not record a request (ref %s); Slack will deliver it again: %s",
                      ref, error)
            return BoltResponse(status=500, body=f"internal (ref {ref})")
        where = error.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        at = f" at {where.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{where.tb_lineno}" \
            if where is not None else ""
        log.info("refused a request that could not be read: %s%s", type(error).__name__, at)
        return BoltResponse(status=400, body="")

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, *, scheduler: bool = True, poll_seconds: float = 60) -> None:
        """Run the worker (it takes up work left by a stopped process at once), and the digest
        and reminder schedulers and the hourly housekeeping unless told not to."""
        if self._started:
            return
        self._started = True
        self.worker.start()
        if scheduler:
            self.scheduler = self.brain.digests.scheduler(
                wake=self.wake, clock=lambda: datetime.now(UTC), poll_seconds=poll_seconds)
            self.reminder_scheduler = self.brain.reminders.scheduler(
                tz_lookup=self.work.user_tz, wake=self.wake,
                clock=lambda: datetime.now(UTC), poll_seconds=poll_seconds)
            self._tasks.append(asyncio.create_task(self.scheduler.run()))
            self._tasks.append(asyncio.create_task(self.reminder_scheduler.run()))
            self._tasks.append(asyncio.create_task(self._housekeeping()))

    def wake(self) -> None:
        """Work was recorded: claim it here, and tell the helper processes."""
        self.worker.wake()
        # A lone turn runs best here (no second process contending for the database); the
        # helpers are called in once this process has work in hand: a burst.
        if self.helpers is not None and self.worker.busy >= HELPERS_AFTER:
            self.helpers.wake()

    async def _housekeeping(self) -> None:
        while True:
            try:
                await self.brain.jobs.prune()
                await self.brain.accounts.prune()  # BRAIN_RETENTION_DAYS
            except Exception as exc:  # housekeeping never stops the bot
                log.warning("housekeeping (pruning) failed: %s", exc)
            await asyncio.sleep(3600)

    async def settle(self, timeout: float = 30.0) -> bool:
        """Wait until every recorded job has run (tests, benchmarks, the e2e driver)."""
        return await self.worker.idle(timeout)

    async def close(self, drain_timeout: float = 30.0) -> None:
        """Stop taking work; finish what runs within `drain_timeout`; what is left stays in
        the journal (pending) for the next start or another replica."""
        for scheduler in (self.scheduler, self.reminder_scheduler):
            if scheduler is not None:
                scheduler.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._started:
            await self.worker.stop(drain_timeout)
        if self._session is not None:
            await self._session.close()
        self.git.close()

    # -- HTTP ---------------------------------------------------------------------------------

    def web_app(self) -> web.Application:
        """POST /slack/events (events, interactivity, commands), GET /health and /metrics, and each
        person's git remote under /git/ (bot/sync/); with many workspaces also GET
        /slack/install and /slack/oauth_redirect."""
        webapp = web.Application()
        webapp.add_routes([web.post(EVENTS_PATH, self._handle_slack),
                           web.get(HEALTH_PATH, self.health),
                           web.get(METRICS_PATH, self.metrics), *self.git.routes()])
        if self.installs is not None:
            webapp.add_routes([web.get(INSTALL_PATH, self._install_page),
                               web.get(REDIRECT_PATH, self._oauth_redirect)])
        return webapp

    async def serve_on(self, listener: socket.socket) -> web.AppRunner:
        """Serve web_app() on a bound, listening socket (`brain serve --http`, and its
        `--workers` helpers on the same one); `cleanup()` the runner to stop."""
        runner = web.AppRunner(self.web_app(), access_log=None)
        await runner.setup()
        await web.SockSite(runner, listener).start()
        return runner

    @staticmethod
    def _bolt_get(request: web.Request) -> AsyncBoltRequest:
        return AsyncBoltRequest(body="", query=request.query_string,
                                headers={k: [v] for k, v in request.headers.items()})

    async def _install_page(self, request: web.Request) -> web.StreamResponse:
        assert self.installs is not None
        return await to_aiohttp_response(
            await self.installs.install_page(self._bolt_get(request)))

    async def _oauth_redirect(self, request: web.Request) -> web.StreamResponse:
        assert self.installs is not None
        return await to_aiohttp_response(await self.installs.redirect(self._bolt_get(request)))

    async def _handle_slack(self, request: web.Request) -> web.StreamResponse:
        """Check the signature on the raw bytes, then the shape, before anything parses them;
        a request's own bad input gets 401 or 400 and one log line, never a 5xx."""
        start = time.perf_counter()
        raw = await request.read()
        try:
            text = check_request(raw, request.headers, self.settings.slack_signing_secret or "")
        except EdgeError as exc:
            log.info("refused a request to %s: %s (%d)", EVENTS_PATH, exc.reason, exc.status)
            return web.json_response({"ok": False, "error": exc.reason}, status=exc.status)
        bolt_request = AsyncBoltRequest(body=text, query=request.query_string,
                                        headers={k: [v] for k, v in request.headers.items()})
        try:
            bolt_response = await self.app.async_dispatch(bolt_request)
        except Exception as exc:  # Bolt's own error handling broke on the request's shape
            log.info("refused a request that could not be read: %s", type(exc).__name__)
            return web.json_response({"ok": False, "error": "unreadable request"}, status=400)
        self.ack_ms.append((time.perf_counter() - start) * 1000)
        return await to_aiohttp_response(bolt_response)

    def ack_stats(self) -> dict[str, float]:
        if not self.ack_ms:
            return {}
        ordered = sorted(self.ack_ms)
        return {"ack_ms_p50": round(statistics.median(ordered), 2),
                "ack_ms_p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
                "ack_ms_max": round(ordered[-1], 2), "acks": len(ordered)}

    async def _history_health(self) -> dict[str, Any] | None:
        """The vaults' histories holding changes they could not record (a lock a dead writer
        left, a damaged repository): the notes are kept, but not yet undoable (no names)."""
        behind = await asyncio.to_thread(self.brain.stores.history_behind)
        if not behind:
            return None
        return {"ok": False, "vaults_behind": len(behind), "why": behind[0],
                "fix": "see `brain doctor`"}

    async def health(self, request: web.Request) -> web.Response:
        """Liveness and readiness: the database answers; how much work waits; ack speed;
        503 with the reason when the vault or the database cannot be written."""
        try:
            counts = await self.brain.jobs.counts()
        except Exception as exc:
            log.warning("health: the database does not answer: %s", exc)
            return web.json_response({"ok": False, "error": "database unavailable"}, status=503)
        helpers = {} if self.helpers is None else {"helpers": self.helpers.status()}
        body: dict[str, Any] = {"ok": True, "running_here": self.worker.busy, "jobs": counts,
                                **helpers, **self.ack_stats()}
        history = await self._history_health()
        if history is not None:  # the work goes on (the body says how it stands)
            body.update(ok=False, history=history)
        storage = await self.brain.storage_health.problems()
        if storage:
            body.update(ok=False, storage=storage, error="; ".join(storage.values()))
        return web.json_response(body, status=200 if body["ok"] else 503)

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus figures (bot/metrics.py); 503 when the database does not answer."""
        try:
            jobs = await self.brain.jobs.counts_by_kind()
        except Exception as exc:
            log.warning("metrics: the database does not answer: %s", exc)
            return web.Response(status=503, text="database unavailable\n")
        body = await asyncio.to_thread(metrics.exposition, jobs)  # reads every process's file
        return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})
