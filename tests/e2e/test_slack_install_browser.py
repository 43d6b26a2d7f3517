"""A person installs the app in their workspace from a real browser (headless Chromium, driven
by Playwright): the "Add to Slack" page of the served bot, Slack's authorize step (the fake
Slack's, tests/e2e/fake_oauth.py), the redirect back with `code` and `state` (and the state
cookie the browser kept), the success page; then the installation is in the database.

Debian's chromium is used (`/usr/bin/chromium`, installed by .ci/run): no browser is
downloaded. Without it the test is skipped, except in CI (`CI` set), where it fails."""

from __future__ import annotations

import os
from pathlib import Path

import aiohttp
import pytest

from bot.slack.installs import INSTALL_PATH
from tests.e2e.workspaces import OTHER, many_workspaces

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _browser_or_skip() -> None:
    if CHROMIUM.exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing (CI must install Debian's chromium: .ci/run)")
    pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium to run the browser test")

async def test_add_to_slack_in_a_browser_stores_the_installation(tmp_path: Path) -> None:
    _browser_or_skip()
    async_api = pytest.importorskip("playwright.async_api")
    async with many_workspaces(tmp_path) as slack, async_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = await browser.new_page()
            await page.goto(slack.send.base_url + INSTALL_PATH)
            assert await page.title() == "Add Second Brain to Slack"
            await page.get_by_role("link", name="Add to Slack").click()
            await page.wait_for_url("**/slack/oauth_redirect?**")
            assert await page.locator("h1").inner_text() == "Installed"
            assert "Second Brain is installed in Second Co" in await page.content()
        finally:
            await browser.close()

        # the browser's trip went through Slack's authorize step with our client id and scopes
        asked = slack.fake.oauth.authorize_requests
        assert len(asked) == 1 and "chat:write" in asked[0]["scope"]
        installed = await slack.bot.installs.store.async_find_installation(
            enterprise_id=None, team_id=OTHER.team_id)
        assert installed is not None
        assert installed.team_name == "Second Co" and installed.user_id == OTHER.installer
        assert installed.bot_token and slack.fake.oauth.team_of[installed.bot_token] \
            == OTHER.team_id
        assert installed.bot_user_id == OTHER.bot_user_id

async def test_a_callback_without_our_state_installs_nothing(tmp_path: Path) -> None:
    """A redirect that did not start at our install page is refused, and nothing is stored:
    without the state cookie (another browser), and with a state we never signed."""
    async with many_workspaces(tmp_path) as slack:
        url = f"{slack.send.base_url}/slack/oauth_redirect?code=code-1&state=forged.abc"
        async with aiohttp.ClientSession() as browser:
            async with browser.get(url) as landed:
                assert "invalid_browser" in await landed.text()
            async with browser.get(url, headers={
                    "Cookie": "slack-app-oauth-state=forged.abc"}) as landed:
                text = await landed.text()
        assert "Not installed" in text and "invalid_state" in text
        assert not slack.fake.calls_to("oauth.v2.access")
        assert await slack.bot.installs.store.async_find_installation(
            enterprise_id=None, team_id=OTHER.team_id) is None
