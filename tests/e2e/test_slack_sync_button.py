"""App Home's "Sync with Obsidian" against the fake Slack (issue 35): the presser, and only
the presser, gets an ephemeral message in their DM with their vault's git address, a new
token that opens that remote (and no one else's), and the three steps in obsidian-git;
nothing with the token is posted where anyone else could read it."""

from __future__ import annotations

import base64
import json
import re

import aiohttp

from bot.slack.home_view import SYNC
from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import OTHER_USER, USER, home_press
from tests.e2e.test_slack_home import blocks_of, open_home

TOKEN = re.compile(r"bsk_[A-Za-z0-9_-]{43}")


async def refs(slack: Harness, person: str, token: str) -> int:
    pair = base64.b64encode(f"obsidian:{token}".encode()).decode()
    url = f"{slack.send.base_url}/git/{person}.git/info/refs?service=git-upload-pack"
    async with aiohttp.ClientSession() as session, session.get(
            url, headers={"Authorization": f"Basic {pair}"}) as r:
        return r.status


async def test_sync_with_obsidian_sends_the_presser_alone_a_token_for_their_vault(
        slack: Harness) -> None:
    await slack.file_dm("Call Sara about the Q3 budget next week")
    blocks = await open_home(slack)
    (section,) = [b for b in blocks if b.get("block_id") == "sync"]
    assert section["accessory"]["action_id"] == SYNC
    assert "Sync with Obsidian" in section["text"]["text"]

    await slack.send.action(home_press(SYNC, "sync", trigger="HS1"))
    (sent,) = await slack.fake.wait_for("chat.postEphemeral")
    published = await slack.fake.wait_for("views.publish", 2)
    await slack.settle()
    assert sent.body["user"] == USER
    assert sent.body["channel"] == (await slack.fake.wait_for("conversations.open"))[-1] \
        .response["channel"]["id"]  # type: ignore[index]
    text = json.dumps(sent.body["blocks"])
    (token,) = set(TOKEN.findall(text))
    assert f"/git/{USER}.git" in text
    for step in ("1. In Obsidian", "2. Clone", "3. In the Git plugin"):
        assert step in text, text
    assert "sent you the address and a new token" in json.dumps(blocks_of(published[-1]))
    # Nowhere else: no message, no Home view carries the token.
    shown = json.dumps([c.body for c in slack.fake.calls if c.method != "chat.postEphemeral"])
    assert token not in shown

    assert await refs(slack, USER, token) == 200
    assert await refs(slack, OTHER_USER, token) == 404  # it opens the presser's remote only

    # Another press: another token, the first still good (one per device).
    await slack.send.action(home_press(SYNC, "sync", trigger="HS2"))
    calls = await slack.fake.wait_for("chat.postEphemeral", 2)
    await slack.settle()
    (second,) = set(TOKEN.findall(json.dumps(calls[-1].body["blocks"])))
    assert second != token and await refs(slack, USER, token) == 200


async def test_someone_elses_press_sends_them_their_own_remote(slack: Harness) -> None:
    await slack.send.action(home_press(SYNC, "sync", trigger="HS3", user=OTHER_USER))
    (sent,) = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert sent.body["user"] == OTHER_USER
    text = json.dumps(sent.body["blocks"])
    assert f"/git/{OTHER_USER}.git" in text and f"/git/{USER}.git" not in text
    (token,) = set(TOKEN.findall(text))
    assert await refs(slack, OTHER_USER, token) == 200
    assert await refs(slack, USER, token) == 404
