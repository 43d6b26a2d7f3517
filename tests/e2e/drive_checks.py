"""What tests/e2e/drive.py shares: printing checks, waiting, running `brain serve --http` as a
subprocess (its log kept in a file), and the checks of the entry points added with issue 12:
the Save-to-brain shortcut, the capture reaction, the App Home, an assistant thread, a due-date
reminder across restarts, uninstall and revocation, and `brain export` / `brain forget`."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bot.slack.assistant import SUGGESTED_PROMPTS
from bot.slack.cards import validate_message
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import (
    AUTHOR,
    CHANNEL,
    SAVED_TEXT,
    SAVED_TS,
    SECRET,
    USER,
    SlackSender,
    home_opened,
    home_press,
    message_event,
    payload,
    reaction_added,
    save_shortcut,
    vault_files,
)

results: list[tuple[bool, str]] = []


def check(ok: bool, what: str) -> None:
    results.append((ok, what))
    print(f"{'PASS' if ok else 'FAIL'}  {what}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_until(cond: Callable[[], bool], timeout: float = 60) -> bool:
    """Poll `cond` until it holds or the deadline passes (a deadline, not a guess: on a busy
    machine the work takes longer, and a check that passes returns at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.05)
    return cond()


async def quiet(seconds: float = 1.0) -> None:
    await asyncio.sleep(seconds)  # time for work that should NOT happen to show up


class Server:
    """`brain serve --http` in a subprocess, against the fake Slack, on one data directory."""

    def __init__(self, fake: FakeSlack, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.log = data / "serve.log"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("OPENAI_", "ANTHROPIC_", "BRAIN_", "SLACK_"))}
        # TZ=UTC: the offline classifier's "today" and the fake users.info zone agree.
        self.env.update(SLACK_BOT_TOKEN="xoxb-drive", SLACK_SIGNING_SECRET=SECRET,
                        SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(data),
                        BRAIN_LLM="offline", TZ="UTC", BRAIN_PROCESSES="1")
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, **env: str) -> SlackSender:
        with self.log.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.cli", "serve", "--http", "--port", str(self.port),
                env={**self.env, **env}, stdout=asyncio.subprocess.DEVNULL, stderr=log)
        send = SlackSender(f"http://127.0.0.1:{self.port}")
        deadline = time.monotonic() + 120  # a cold start on a loaded 2-core machine
        while time.monotonic() < deadline and self.proc.returncode is None:
            try:
                await send.health()
                break
            except aiohttp.ClientError:
                await asyncio.sleep(0.1)
        return send

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()

    def logged(self, words: str) -> bool:
        return words in self.log.read_text(errors="replace")

    async def brain(self, *args: str) -> tuple[int, str, str]:
        """A `brain` verb against the same data, as an operator runs it."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", *args, env=self.env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return proc.returncode or 0, out.decode(), err.decode()


def _view(call: Any) -> dict[str, Any]:
    view = call.body.get("view")
    data: dict[str, Any] = json.loads(view) if isinstance(view, str) else view
    return data


async def check_capture(fake: FakeSlack, send: SlackSender, vault: Path) -> None:
    before = len(vault_files(vault))
    fake.names[AUTHOR] = "Dana"
    status, _ = await send.action(save_shortcut(trigger="DRV1", response_url=fake.hook_url("sv1")))
    await wait_until(lambda: bool(fake.calls_to("hook:sv1")))
    hooks = fake.calls_to("hook:sv1")
    files = vault_files(vault)
    saved = [f for f in files if SAVED_TEXT[:30] in (vault / f).read_text()]
    check(status == 200 and len(files) == before + 1 and len(saved) == 1
          and bool(hooks) and "Saved to your brain" in hooks[0].body.get("text", "")
          and "author: Dana" in (vault / saved[0]).read_text(),
          "Save to brain (message shortcut) files someone's message once, privately confirmed")
    await send.action(save_shortcut(trigger="DRV2", response_url=fake.hook_url("sv2")))
    await wait_until(lambda: bool(fake.calls_to("hook:sv2")))
    again = fake.calls_to("hook:sv2")
    check(bool(again) and "already in your brain" in again[0].body.get("text", "")
          and len(vault_files(vault)) == before + 1,
          "saving the same message again files nothing")

    fake.seed_message(CHANNEL, "Order new badges for the interns by Thursday", user=AUTHOR,
                      ts="1767261950.000500")
    ephemerals = len(fake.calls_to("chat.postEphemeral"))
    status, _ = await send.event(reaction_added(event_id="EvDRVR1", ts="1767261950.000500"))
    await wait_until(lambda: len(fake.calls_to("chat.postEphemeral")) > ephemerals)
    told = fake.calls_to("chat.postEphemeral")[ephemerals:]
    check(status == 200 and len(told) == 1 and told[0].body.get("user") == USER
          and len(vault_files(vault)) == before + 2,
          "the :brain: reaction reads the message and files it; only the reactor is told")
    await send.event(reaction_added(event_id="EvDRVR2", ts="1767261950.000500"))
    await send.event(reaction_added(event_id="EvDRVR3", ts=SAVED_TS, reaction="thumbsup"))
    await quiet()
    check(len(fake.calls_to("chat.postEphemeral")) == ephemerals + 1
          and len(vault_files(vault)) == before + 2,
          "the reaction again, and another reaction, file nothing")


async def check_home(fake: FakeSlack, send: SlackSender) -> None:
    status, _ = await send.event(home_opened(event_id="EvDRVH1"))
    await wait_until(lambda: bool(fake.calls_to("views.publish")))
    calls = fake.calls_to("views.publish")
    blocks = _view(calls[0])["blocks"] if calls else []
    try:
        valid = validate_message(blocks, "home", max_blocks=100) == blocks
    except Exception as exc:
        print(f"      invalid Home: {exc}")
        valid = False
    check(status == 200 and valid and 0 < len(blocks) <= 100
          and "Inbox to review" in json.dumps(blocks),
          f"App Home: views.publish with valid blocks ({len(blocks)} of at most 100)")
    status, _ = await send.action(home_press("home_digest_daily", "subscribe daily 07:00",
                                             trigger="DRVH2", select=True))
    await wait_until(lambda: len(fake.calls_to("views.publish")) >= 2)
    calls = fake.calls_to("views.publish")
    check(status == 200 and len(calls) >= 2
          and "daily at 07:00" in json.dumps(_view(calls[-1])["blocks"]),
          "App Home: the digest select subscribes (as /digest would) and the Home updates")


async def check_assistant(fake: FakeSlack, send: SlackSender) -> None:
    status, _ = await send.event(payload("event_callback_assistant_thread_started.json"))
    await wait_until(lambda: bool(fake.calls_to("assistant.threads.setSuggestedPrompts")))
    prompts = fake.calls_to("assistant.threads.setSuggestedPrompts")
    check(status == 200 and bool(prompts) and prompts[0].body.get("prompts") == SUGGESTED_PROMPTS,
          "assistant thread: a new thread gets the suggested prompts")
    message = payload("event_callback_message_im_assistant_thread.json")
    thread = message["event"]["thread_ts"]
    # The answer to a question is streamed (chat.startStream ... stopStream), a card is
    # posted: either way one finished reply in the thread.
    in_thread = lambda: [m for m in fake.replies()  # noqa: E731
                         if m.get("thread_ts") == thread]
    titles = lambda: [c for c in fake.calls_to("assistant.threads.setTitle")  # noqa: E731
                      if c.body.get("thread_ts") == thread]
    status, _ = await send.event(message)
    await wait_until(lambda: bool(in_thread()) and bool(titles()))
    statuses = [c for c in fake.calls_to("assistant.threads.setStatus")
                if c.body.get("thread_ts") == thread]
    check(status == 200 and len(in_thread()) == 1 and bool(statuses)
          and [c.body.get("title") for c in titles()] == [message["event"]["text"]],
          "assistant thread: the message shows a status, gets its answer in the thread and "
          "titles it")


async def check_reminder_and_restarts(fake: FakeSlack, server: Server) -> SlackSender:
    """A note due today, then a restart with the reminder time just past: one DM; another
    restart: still one."""
    send = await server.start(BRAIN_REMINDER_TIME=_hours_from_now(6))
    await send.event(message_event("Renew the parking permit, due today",
                                   ts="1767263000.000100", event_id="EvDRVD1"))
    dm = lambda: [c for c in fake.calls_to("chat.postMessage")  # noqa: E731
                  if str(c.body.get("channel", "")).startswith("D" + USER[1:])]
    await wait_until(lambda: any("parking" in json.dumps(c.body) for c in
                                 fake.calls_to("chat.postMessage")))
    await send.close()
    await server.stop()
    now_time = _hours_from_now(0, back_minutes=1)
    send = await server.start(BRAIN_REMINDER_TIME=now_time)
    await wait_until(lambda: bool(dm()))
    first = dm()
    await send.close()
    await server.stop()
    send = await server.start(BRAIN_REMINDER_TIME=now_time)
    await quiet(3)
    buttons = json.dumps(first[0].body.get("blocks")) if first else ""
    check(len(first) == 1 and len(dm()) == 1 and "reminder_snooze" in buttons
          and "Due today" in first[0].body.get("text", ""),
          "a note due today gets one reminder DM (Done / Snooze) across two restarts")
    return send


def _hours_from_now(hours: int, back_minutes: int = 0) -> str:
    at = datetime.now(UTC) + timedelta(hours=hours) - timedelta(minutes=back_minutes)
    if at.date() != datetime.now(UTC).date() and hours == 0:
        return "00:00"
    return f"{at.hour:02d}:{at.minute:02d}"


async def check_lifecycle(send: SlackSender, server: Server) -> None:
    status, _ = await send.event(payload("event_callback_tokens_revoked.json"))
    status2, _ = await send.event(payload("event_callback_app_uninstalled.json"))
    await wait_until(lambda: server.logged("the app was uninstalled"))
    health = await send.health()
    check(status == status2 == 200 and server.logged("tokens revoked for 1 user")
          and server.logged("the app was uninstalled") and health.get("ok") is True,
          "tokens_revoked and app_uninstalled are logged and stop scheduled work; the bot "
          "stays up")


async def check_export_forget(server: Server, vault: Path) -> None:
    out = server.data / "export.zip"
    code, stdout, _ = await server.brain("export", "--user", USER, "--out", str(out))
    names = zipfile.ZipFile(out).namelist() if out.exists() else []
    notes = [n for n in names if n.startswith("vault/")]
    check(code == 0 and len(notes) == len(vault_files(vault)) > 0
          and "conversations.json" in names,
          f"brain export --user: the vault ({len(notes)} files) and conversations as a zip")
    code, stdout, err = await server.brain("forget", "--user", USER)
    refused = code != 0 and vault.exists()
    code, stdout, err = await server.brain("forget", "--user", USER, "--yes")
    check(refused and code == 0 and not vault.exists() and "erased" in stdout,
          "brain forget --user: refuses without confirmation; with --yes erases it all")
