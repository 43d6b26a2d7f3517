"""Slack's door keeps the one message limit (tools/capture/limits.py): a real `brain serve
--http` with signed requests against the fake Slack. A DM over 40,000 characters and a DM that
is not text are answered with why and file nothing; a message saved with the capture
reaction is held to the same limit; a long DM within it is kept once, in the body."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import (
    AUTHOR,
    CHANNEL,
    SAVED_TS,
    SECRET,
    USER,
    SlackSender,
    message_event,
    reaction_added,
    vault_files,
)
from tests.e2e.test_slack_serve import brain, clean_env, fake, free_port, idle, stop, wait_healthy
from tests.test_cli_message_limits import long_text
from tools.capture.limits import MAX_MESSAGE, MAX_ORIGINAL

__all__ = ["fake"]  # the fixture


async def test_dms_over_the_limit_or_not_text_file_nothing_and_say_why(
        fake: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", **database_env(tmp_path))
    url = f"http://127.0.0.1:{port}"
    vault = tmp_path / "data" / "vaults" / USER
    kept_text = long_text(12_000)
    fake.seed_message(CHANNEL, long_text(MAX_MESSAGE + 500), user=AUTHOR, ts=SAVED_TS)
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    send = SlackSender(url)
    try:
        await wait_healthy(url, proc)
        dms = [message_event(long_text(MAX_MESSAGE + 1_000), ts="1767261600.000100",
                             event_id="EvBig1"),
               message_event("\x01\x02\x03\x04\x05\x06 \x07\x08", ts="1767261601.000100",
                             event_id="EvJunk1"),
               message_event(kept_text, ts="1767261602.000100", event_id="EvLong1")]
        for dm in dms:
            assert (await send.event(dm))[0] == 200
        replies = await fake.wait_for_reply(3, timeout=60)
        assert (await send.event(reaction_added(event_id="EvReact1")))[0] == 200
        (told,) = await fake.wait_for("chat.postEphemeral", timeout=60)
        await idle(send)
    finally:
        await send.close()
        assert await stop(proc) == 0
    by_thread = {r.get("thread_ts"): r.get("text", "") for r in replies}
    assert f"over the limit of {MAX_MESSAGE:,}" in by_thread["1767261600.000100"]
    assert "is not text" in by_thread["1767261601.000100"]
    assert "over the limit" in told.body.get("text", "") + str(told.body.get("blocks", ""))
    (note,) = vault_files(vault)  # only the long DM within the limit
    raw = (vault / note).read_text(encoding="utf-8")
    head, body = raw.split("\n---\n", 1)
    assert body.count(kept_text[:200]) == 1 and len(raw) < 1.3 * len(kept_text)
    fields = yaml.safe_load(head[4:])
    assert fields["id"] and len(str(fields.get("original_text", ""))) <= MAX_ORIGINAL + 2
