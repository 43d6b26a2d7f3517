"""`brain serve`: the bot over HTTP or Socket Mode until SIGINT/SIGTERM.

Start-up says in one line what is wrong (a missing or refused token) and exits non-zero; a
signal at any moment, connecting included, stops the bot cleanly: no new work is taken, running
work gets time to finish, and whatever is left stays in the journal for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, TypeVar

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError, SlackClientError

from bot import metrics
from bot.config import Settings
from bot.slack.app import EVENTS_PATH, HEALTH_PATH, METRICS_PATH, SlackBot
from bot.slack.web import error_code, make_client

log = logging.getLogger(__name__)

T = TypeVar("T")
REFUSED = {"invalid_auth", "not_authed", "token_revoked", "account_inactive",
           "not_allowed_token_type", "missing_scope", "invalid_token"}


class ServeError(Exception):
    """`brain serve` cannot start; the message says what is missing and how to fix it."""


class Stopped(Exception):
    """A signal arrived before start-up finished."""


def check_serve_settings(settings: Settings, *, http: bool) -> None:
    missing = []
    if settings.oauth and not http:
        raise ServeError("cannot start: many workspaces (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, "
                         "SLACK_STATE_SECRET) need HTTP mode for the install pages: "
                         "`brain serve --http`.")
    if not settings.slack_bot_token and not settings.oauth:
        missing.append("SLACK_BOT_TOKEN (the Bot User OAuth Token, xoxb-...)")
    if http and not settings.slack_signing_secret:
        missing.append("SLACK_SIGNING_SECRET for HTTP mode (Basic Information > App "
                       "Credentials), or SLACK_APP_TOKEN (xapp-...) for Socket Mode")
    if missing:
        raise ServeError("cannot start: missing " + "; ".join(missing)
                         + ". Run `brain doctor` for a full check.")


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    return stop


async def _unless_stopped(stop: asyncio.Event, work: Awaitable[T]) -> T:
    """`work`, or Stopped when a signal comes first (the work is cancelled)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    raise Stopped


async def _check_tokens(settings: Settings, app_token: str | None) -> bool:
    """auth.test for the bot token; apps.connections.open for the app token (Socket Mode).
    A refused token is a ServeError naming it; a network failure only a warning. True when
    Slack accepted the bot token (so the app is installed)."""
    client = make_client(settings)
    checks: list[tuple[str, Any]] = [("SLACK_BOT_TOKEN", client.auth_test())]
    if app_token:
        app_client = make_client(settings, token=app_token)
        checks.append(("SLACK_APP_TOKEN", app_client.apps_connections_open(app_token=app_token)))
    accepted = True
    for name, call in checks:
        try:
            await call
        except SlackApiError as exc:
            accepted = False
            if error_code(exc) in REFUSED:
                raise ServeError(f"cannot start: Slack refused {name} ({error_code(exc)}). "
                                 "Copy it again from the app's settings; `brain doctor` "
                                 "checks it.") from None
            log.warning("checking %s: %s", name, error_code(exc))
        except SlackClientError as exc:
            accepted = False
            log.warning("could not check %s (Slack unreachable?): %s", name, exc)
    return accepted


async def _start_site(webapp: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(webapp, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


def listen(host: str, port: int) -> socket.socket:
    """The HTTP front's listening socket, bound before anything else starts (a port in use
    fails at once); `--workers` helpers accept on the same socket."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                flags=socket.AI_PASSIVE)[0][0]
    return socket.create_server((host, port), family=family, backlog=1024)


async def serve_http(bot: SlackBot, listener: socket.socket, stop: asyncio.Event) -> None:
    host, port = listener.getsockname()[:2]
    runner = await bot.serve_on(listener)
    log.info("serving Slack events on http://%s:%d%s", host, port, EVENTS_PATH)
    print(f"brain: listening on http://{host}:{port}{EVENTS_PATH}", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()  # stop taking requests first, then finish accepted work


async def serve_socket(bot: SlackBot, app_token: str, host: str, health_port: int | None,
                       stop: asyncio.Event) -> None:
    """Socket Mode (no public URL needed); /health and /metrics are still served."""
    handler = AsyncSocketModeHandler(bot.app, app_token)
    runner = None
    try:
        if health_port is not None:
            health = web.Application()
            health.add_routes([web.get(HEALTH_PATH, bot.health),
                               web.get(METRICS_PATH, bot.metrics), *bot.git.routes()])
            runner = await _start_site(health, host, health_port)
        await _unless_stopped(stop, handler.connect_async())
        print("brain: connected to Slack (Socket Mode)", flush=True)
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await handler.close_async()
        if runner is not None:
            await runner.cleanup()


async def serve(settings: Settings, *, http: bool, host: str, port: int,
                workers: int | None = None, work_only: bool = False,
                listen_fd: int | None = None, log_level: str = "INFO") -> None:
    """Start the brain and serve Slack until SIGINT/SIGTERM, with `workers` processes
    running the work (this one and helpers, bot/slack/worker_pool.py)."""
    from bot.slack.worker_pool import work_only as helper

    stop = _stop_event()
    if work_only:  # a helper: its parent checked the settings and holds the front
        await helper(settings, stop, listen_fd, (host, port))
        return
    with metrics.shared_folder():  # before anything is recorded; the helpers inherit it
        await _front(settings, stop, http=http, host=host, port=port, workers=workers,
                     log_level=log_level)


async def _front(settings: Settings, stop: asyncio.Event, *, http: bool, host: str, port: int,
                 workers: int | None, log_level: str) -> None:
    """The serving process: the HTTP front or the Socket Mode connection, the schedulers,
    the CLI's socket, and its share of the work beside the helpers."""
    from bot.brain import Brain
    from bot.commands.via_server import answering_cli
    from bot.slack.worker_pool import WorkerPool

    http = http or not settings.slack_app_token  # Socket Mode needs the app token
    check_serve_settings(settings, http=http)
    listener = listen(host, port) if http else None
    try:
        # many workspaces without a home token: each workspace's token is in the database
        accepted = await _unless_stopped(stop, _check_tokens(
            settings, None if http else settings.slack_app_token)) \
            if settings.slack_bot_token else False
        brain = await _unless_stopped(stop, Brain.start(settings))
    except Stopped:
        if listener is not None:
            listener.close()
        return
    brain.stores.keep_fresh()  # the index rescanned and embedded in the background
    brain.remotes.serving_at(host, port)  # the default address of the git remotes
    if accepted and not settings.oauth:  # the token works: an earlier uninstall is over
        await brain.accounts.installed()
    pool = WorkerPool((workers or settings.processes) - 1, log_level,
                      listener=listener, address=(host, port))
    bot = SlackBot(brain, settings, concurrency=settings.workers,
                   lease=timedelta(seconds=settings.job_lease_seconds),
                   helpers=pool if pool.helpers else None)  # one process: nothing to wake
    try:
        await pool.start()
        bot.start()
        async with answering_cli(brain, None):  # `brain search`/`ask` ask this process
            if listener is not None:
                await serve_http(bot, listener, stop)
            else:
                assert settings.slack_app_token
                await serve_socket(bot, settings.slack_app_token, host, port, stop)
    except Stopped:
        pass
    finally:
        await asyncio.gather(bot.close(), pool.stop())  # both drain at once
        await brain.close()
