"""Helpers of the many-workspaces tests: a bot with the OAuth settings on the fake Slack
(whose OAuth half is tests/e2e/fake_oauth.py), installing a workspace over HTTP as a browser
does, and a workspace's DM event."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from bot.slack.installs import INSTALL_PATH, REDIRECT_PATH
from tests.e2e.bot_harness import Harness, running_bot
from tests.e2e.fake_oauth import CLIENT_ID, CLIENT_SECRET, Workspace
from tests.e2e.fake_slack import TEAM_ID
from tests.e2e.slack_harness import USER, message_event

HOME = TEAM_ID  # the workspace of SLACK_BOT_TOKEN (xoxb-test) in the fake
OTHER = Workspace("T0SBWORK2", "Second Co", USER, "U0SBBOT02")  # the same user id as HOME's
OAUTH = {"SLACK_CLIENT_ID": CLIENT_ID, "SLACK_CLIENT_SECRET": CLIENT_SECRET,
         "SLACK_STATE_SECRET": "state-secret-for-tests-0123456789"}


@contextlib.asynccontextmanager
async def many_workspaces(data_dir: Path, **extra: Any) -> AsyncIterator[Harness]:
    """A served bot with the three OAuth settings (and SLACK_BOT_TOKEN: the home workspace);
    the fake Slack's registered redirect URL is the bot's /slack/oauth_redirect."""
    async with running_bot(data_dir, **{**OAUTH, **extra}) as harness:
        harness.fake.oauth.redirect_url = harness.send.base_url + REDIRECT_PATH
        yield harness


async def install(harness: Harness, workspace: Workspace = OTHER) -> str:
    """Install the app in `workspace` the way a browser does (the install page, its Add to
    Slack link, Slack's authorize step, the redirect back, with the state cookie); returns the
    page it ends on."""
    harness.fake.oauth.next_workspace = workspace
    base = harness.send.base_url
    jar = aiohttp.CookieJar(unsafe=True, treat_as_secure_origin=[base])
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(base + INSTALL_PATH) as page:
            assert page.status == 200, await page.text()
            html = await page.text()
        found = re.search(r'id="add-to-slack" href="([^"]+)"', html)
        assert found, html
        link = found.group(1).replace("&amp;", "&")
        async with browser.get(link) as landed:  # redirects back to /slack/oauth_redirect
            text = await landed.text()
            assert landed.status == 200, text
            return text


def dm_from(team: str, text: str, *, ts: str, event_id: str, user: str = USER,
            channel: str = "D0SBDM001") -> dict[str, Any]:
    """A DM event of `user` in workspace `team`."""
    body = message_event(text, ts=ts, event_id=event_id, user=user, channel=channel)
    body["team_id"] = body["context_team_id"] = team
    body["event"]["team"] = team
    for auth in body.get("authorizations") or []:
        auth["team_id"] = team
    return body
