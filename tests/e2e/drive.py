"""Drive a real `brain serve --http` from outside the test suite, the way Slack would.

    .venv/bin/python -m tests.e2e.drive

Starts the fake Slack Web API (tests/e2e/fake_slack.py) and `brain serve --http` as a
subprocess pointed at it (SLACK_API_URL, offline LLM, a temporary data directory), then sends
signed requests built from the shared Slack fixtures and prints one line per check: DMs,
retries, buttons, `fix:`, `/digest`, signatures, bot messages; then the Save-to-brain shortcut,
the capture reaction, the App Home, an assistant thread, a due-date reminder across restarts,
tokens_revoked / app_uninstalled, and `brain export` / `brain forget` (tests/e2e/drive_checks.py).
Exits 1 if any check fails. Nothing here is pytest: it is what a person would do by hand.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from bot.slack.cards import validate_message
from tests.e2e.drive_checks import (
    Server,
    check,
    check_assistant,
    check_capture,
    check_export_forget,
    check_home,
    check_lifecycle,
    check_reminder_and_restarts,
    quiet,
    results,
    wait_until,
)
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import (
    DM,
    OTHER_USER,
    USER,
    SlackSender,
    button_press,
    message_event,
    payload,
    posted_entry_id,
    vault_files,
)

DM_TS = "1767261600.000100"


async def main() -> int:
    fake = await FakeSlack().start()
    fake.user_tz = "UTC"  # the server runs with TZ=UTC: "today" is the same day for both
    data = Path(tempfile.mkdtemp(prefix="brain-drive-"))
    server = Server(fake, data)
    vault = data / "vaults" / USER
    send: SlackSender | None = None
    try:
        send = await server.start()
        await run_checks(fake, send, vault)
        await check_capture(fake, send, vault)
        await check_home(fake, send)
        await check_assistant(fake, send)
        await send.close()
        await server.stop()
        send = await check_reminder_and_restarts(fake, server)
        await check_lifecycle(send, server)
        await send.close()
        send = None
        await server.stop()
        await check_export_forget(server, vault)
        check_cards(fake)
    finally:
        if send is not None:
            await send.close()
        await server.stop()
        await fake.stop()
    failed = [what for ok, what in results if not ok]
    print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed (log: {server.log})")
    return 1 if failed else 0


async def run_checks(fake: FakeSlack, send: SlackSender, vault: Path) -> None:
    posts = lambda: fake.calls_to("chat.postMessage")  # noqa: E731

    dm = message_event("Call the dentist about the crown next Tuesday", ts=DM_TS,
                       event_id="EvDRIVE1")
    status, _ = await send.event(dm)
    await wait_until(lambda: len(posts()) == 1)
    card = posts()[0].body if posts() else {}
    check(status == 200 and len(vault_files(vault)) == 1 and card.get("thread_ts") == DM_TS,
          "a DM is filed and a card is posted in its thread")
    entry_id = posted_entry_id(card["blocks"]) if card else ""
    card_ts = str(posts()[0].response["ts"]) if posts() and posts()[0].response else ""

    status, _ = await send.event(dm, retry=1)
    await quiet()
    check(status == 200 and len(posts()) == 1 and len(vault_files(vault)) == 1,
          "a retried delivery (same event_id, X-Slack-Retry-Num: 1) changes nothing")

    before = {p: (vault / p).read_bytes() for p in vault_files(vault)}
    status, _ = await send.action(button_press(
        entry_id, "projects", user=OTHER_USER, channel=DM, message_ts=card_ts, thread_ts=DM_TS,
        response_url=fake.hook_url("other")))
    await wait_until(lambda: bool(fake.calls_to("chat.postEphemeral")))
    after = {p: (vault / p).read_bytes() for p in vault_files(vault)}
    check(status == 200 and before == after and not fake.calls_to("chat.update")
          and bool(fake.calls_to("chat.postEphemeral")),
          "another user's button changes nothing (they get a private note)")

    status, _ = await send.action(button_press(
        entry_id, "projects", user=USER, channel=DM, message_ts=card_ts, thread_ts=DM_TS,
        response_url=fake.hook_url("owner")))
    await wait_until(lambda: bool(fake.calls_to("chat.update")))
    files = vault_files(vault)
    check(status == 200 and len(files) == 1 and files[0].startswith("projects/")
          and bool(fake.calls_to("chat.update")),
          "the owner's button moves the note and updates the card (chat.update)")

    fix = message_event("fix: admin", ts="1767261700.000200", event_id="EvDRIVE2",
                        thread_ts=DM_TS)
    updates = len(fake.calls_to("chat.update"))
    status, _ = await send.event(fix)
    await wait_until(lambda: vault_files(vault) and vault_files(vault)[0].startswith("admin/"))
    await wait_until(lambda: len(posts()) >= 2 or len(fake.calls_to("chat.update")) > updates)
    check(status == 200 and vault_files(vault)[0].startswith("admin/"),
          "a thread reply `fix: admin` moves the note")

    fields = payload("slash_command_digest_weekly.json")
    fields["response_url"] = fake.hook_url("digest")
    status, text = await send.command(fields)
    await wait_until(lambda: bool(fake.calls_to("hook:digest")))
    hooks = fake.calls_to("hook:digest")
    check(status == 200 and bool(text) and bool(hooks)
          and hooks[0].body.get("response_type") == "ephemeral",
          "/digest weekly acks at once and answers privately through response_url")

    bad = message_event("hello", ts="1767261800.000300", event_id="EvDRIVE3")
    status_bad, _ = await send.event(bad, secret="wrong-secret")
    status_old, _ = await send.event(bad, timestamp=int(time.time()) - 301)
    check(status_bad == 401 and status_old == 401,
          "a bad signature and a stale timestamp get 401")

    calls = len(fake.calls)
    for name in ("event_callback_message_im_own_bot_reply.json",
                 "event_callback_message_bot_message_subtype.json",
                 "event_callback_message_changed_own_bot.json"):
        await send.event(payload(name))
    await quiet()
    check(len(fake.calls) == calls, "bot messages and edits are ignored (no Web API calls)")


def check_cards(fake: FakeSlack) -> None:
    outgoing = [c for c in fake.calls if c.method in ("chat.postMessage", "chat.update",
                                                      "chat.postEphemeral")
                or c.method.startswith("hook:")]
    valid = True
    for call in outgoing:
        try:
            validate_message(call.body.get("blocks") or [], call.body["text"])
        except Exception as exc:  # report, do not stop the other checks
            print(f"      invalid card in {call.method}: {exc}")
            valid = False
    check(valid and bool(outgoing), f"every card passes Block Kit validation ({len(outgoing)})")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
