"""Many workspaces (issue 21 §2): the app installed in a second workspace through Slack's OAuth
(the fake Slack speaks it: tests/e2e/fake_oauth.py) serves both, each person in their own
vault, each answer with its own workspace's token; uninstalling one stops only that one; a
rotating token is refreshed before it is used. Nothing of ours is patched."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import USER, home_opened, payload, vault_files
from tests.e2e.workspaces import HOME, OAUTH, OTHER, dm_from, install, many_workspaces

DM2 = "D0SBDM002"  # the person's DM with the bot in the second workspace


def replies_in(fake: FakeSlack, channel: str) -> list[tuple[str | None, str]]:
    """(token, text) of every reply posted or streamed in `channel`."""
    out = [(c.token, str(c.body.get("text") or "")) for c in fake.calls
           if c.method in ("chat.postMessage", "chat.startStream")
           and c.body.get("channel") == channel]
    return out


async def test_the_same_user_in_two_workspaces_has_two_vaults(tmp_path: Path) -> None:
    async with many_workspaces(tmp_path) as slack:
        page = await install(slack)
        assert "installed in Second Co" in page
        other_token = next(t for t, team in slack.fake.oauth.team_of.items()
                           if team == OTHER.team_id)

        status, _ = await slack.send.event(dm_from(
            HOME, "Call the dentist about the crown next Tuesday", ts="1767261600.000100",
            event_id="Ev0SBW00001"))
        assert status == 200
        status, _ = await slack.send.event(dm_from(
            OTHER.team_id, "Idea: a podcast about lighthouses", ts="1767261700.000100",
            event_id="Ev0SBW00002", channel=DM2))
        assert status == 200
        await slack.fake.wait_for("chat.postMessage", 2)
        await slack.settle()

        home_vault = tmp_path / "vaults" / USER  # exactly where it was before OAuth
        other_vault = tmp_path / "vaults" / f"{OTHER.team_id}-{USER}"
        home_notes, other_notes = vault_files(home_vault), vault_files(other_vault)
        assert any("dentist" in n for n in home_notes), home_notes
        assert any("lighthouse" in n for n in other_notes), other_notes
        assert not any("lighthouse" in n for n in home_notes)
        assert not any("dentist" in n for n in other_notes)
        # each answer went out with its own workspace's bot token
        assert {t for t, _ in replies_in(slack.fake, "D0SBDM001")} == {"xoxb-test"}
        assert {t for t, _ in replies_in(slack.fake, DM2)} == {other_token}
        # the person keys are the owners of the work, too
        assert await slack.brain.accounts.holds(f"{OTHER.team_id}-{USER}")
        slack.check_cards()


async def test_uninstalling_one_workspace_leaves_the_other_working(tmp_path: Path) -> None:
    async with many_workspaces(tmp_path) as slack:
        await install(slack)
        store = slack.bot.installs.store
        await slack.send.event(dm_from(OTHER.team_id, "Idea: a podcast about lighthouses",
                                       ts="1767261700.000100", event_id="Ev0SBW00011",
                                       channel=DM2))
        await slack.fake.wait_for("chat.postMessage", 1)
        await slack.settle()

        gone = payload("event_callback_app_uninstalled.json")
        gone["team_id"] = OTHER.team_id
        status, _ = await slack.send.event(gone)
        assert status == 200
        assert await store.async_find_installation(enterprise_id=None,
                                                   team_id=OTHER.team_id) is None
        assert await store.async_find_bot(enterprise_id=None, team_id=OTHER.team_id) is None

        before = len(slack.fake.calls_to("chat.postMessage"))
        await slack.send.event(dm_from(OTHER.team_id, "Call the plumber tomorrow",
                                       ts="1767261800.000100", event_id="Ev0SBW00012",
                                       channel=DM2))
        await slack.send.event(dm_from(HOME, "Call the dentist about the crown",
                                       ts="1767261900.000100", event_id="Ev0SBW00013"))
        await slack.fake.wait_for("chat.postMessage", before + 1)
        await slack.settle()
        assert len(replies_in(slack.fake, DM2)) == 1  # only the answer from before
        assert [t for t, _ in replies_in(slack.fake, "D0SBDM001")] == ["xoxb-test"]
        # the uninstalled workspace's person keeps their notes (until `brain forget`)
        other_vault = tmp_path / "vaults" / f"{OTHER.team_id}-{USER}"
        assert any("lighthouse" in n for n in vault_files(other_vault))
        assert not any("plumber" in n for n in vault_files(other_vault))
        # the home workspace is not stopped
        assert not await slack.brain.accounts.stopped_for(USER)
        assert await slack.brain.accounts.stopped_for(f"{OTHER.team_id}-{USER}")


async def test_a_revoked_bot_token_stops_that_workspace_only(tmp_path: Path) -> None:
    async with many_workspaces(tmp_path) as slack:
        await install(slack)
        revoked = payload("event_callback_tokens_revoked.json")
        revoked["team_id"] = OTHER.team_id
        revoked["event"]["tokens"] = {"bot": [OTHER.bot_user_id]}
        status, _ = await slack.send.event(revoked)
        assert status == 200
        assert await slack.bot.installs.store.async_find_bot(
            enterprise_id=None, team_id=OTHER.team_id) is None
        assert not await slack.brain.accounts.stopped_for(USER)


async def test_an_expired_rotating_token_is_refreshed_once_before_use(tmp_path: Path) -> None:
    async with many_workspaces(tmp_path) as slack:
        oauth = slack.fake.oauth
        oauth.rotation, oauth.expires_in = True, 1  # installed with a token about to expire
        await install(slack)
        old = next(t for t, team in oauth.team_of.items() if team == OTHER.team_id)
        await asyncio.sleep(1.2)
        oauth.expired.add(old)  # Slack refuses it from now on
        oauth.expires_in = 43200  # the refreshed one lasts

        await slack.send.event(dm_from(OTHER.team_id, "Idea: a podcast about lighthouses",
                                       ts="1767261700.000100", event_id="Ev0SBW00021",
                                       channel=DM2))
        await slack.fake.wait_for("chat.postMessage", 1)
        await slack.settle()
        refreshes = [c for c in slack.fake.calls_to("oauth.v2.access")
                     if c.body.get("grant_type") == "refresh_token"]
        assert len(refreshes) == 1
        new = refreshes[0].response["access_token"]  # type: ignore[index]
        assert new != old
        assert [t for t, _ in replies_in(slack.fake, DM2)] == [new]
        assert not [c for c in slack.fake.calls if c.token == old and c.method != "auth.test"]
        stored = await slack.bot.installs.store.async_find_installation(
            enterprise_id=None, team_id=OTHER.team_id)
        assert stored is not None and stored.bot_token == new


async def test_work_outside_a_request_refreshes_the_token_too(tmp_path: Path) -> None:
    """A digest or reminder runs with no request before it: the worker refreshes the token."""
    async with many_workspaces(tmp_path) as slack:
        oauth = slack.fake.oauth
        oauth.rotation, oauth.expires_in = True, 1
        await install(slack)
        await asyncio.sleep(1.2)
        oauth.expires_in = 43200
        token = await slack.bot.installs.token_for(OTHER.team_id)
        assert token is not None and oauth.team_of[token] == OTHER.team_id
        assert await slack.bot.installs.token_for(OTHER.team_id) == token  # no second refresh
        assert len(slack.fake.calls_to("oauth.v2.access")) == 2  # the install, one refresh
        assert await slack.bot.installs.token_for(HOME) is None  # SLACK_BOT_TOKEN's own


def test_serve_with_many_workspaces_needs_http_not_a_bot_token(tmp_path: Path) -> None:
    from bot.config import Settings
    from bot.slack.doctor import token_checks
    from bot.slack.serve import ServeError, check_serve_settings

    settings = Settings(_env_file=None, BRAIN_DATA_DIR=str(tmp_path),  # type: ignore[call-arg]
                        SLACK_SIGNING_SECRET="secret", **OAUTH)
    assert settings.oauth and not settings.slack_bot_token
    check_serve_settings(settings, http=True)  # each workspace's token is in the database
    with pytest.raises(ServeError, match="brain serve --http"):
        check_serve_settings(settings, http=False)
    assert all(c.ok for c in token_checks(settings))  # `brain doctor` does not ask for one
    one = Settings(_env_file=None, BRAIN_DATA_DIR=str(tmp_path),  # type: ignore[call-arg]
                   SLACK_SIGNING_SECRET="secret", SLACK_CLIENT_ID="1.2")
    assert not one.oauth  # all three, or one workspace as before
    with pytest.raises(ServeError, match="SLACK_BOT_TOKEN"):
        check_serve_settings(one, http=True)


async def test_the_home_tab_of_a_second_workspace_shows_that_persons_notes(
        tmp_path: Path) -> None:
    """Back to Slack a person key becomes the plain user id again, in its own workspace."""
    async with many_workspaces(tmp_path) as slack:
        await install(slack)
        other_token = next(t for t, team in slack.fake.oauth.team_of.items()
                           if team == OTHER.team_id)
        await slack.send.event(dm_from(HOME, "Call the dentist about the crown",
                                       ts="1767261600.000100", event_id="Ev0SBW00031"))
        await slack.send.event(dm_from(OTHER.team_id, "Idea: a podcast about lighthouses",
                                       ts="1767261700.000100", event_id="Ev0SBW00032",
                                       channel=DM2))
        await slack.fake.wait_for("chat.postMessage", 2)
        await slack.settle()
        opened = home_opened(event_id="Ev0SBW00033")
        opened["team_id"] = OTHER.team_id
        await slack.send.event(opened)
        published = await slack.fake.wait_for("views.publish", 1)
        await slack.settle()
        call = published[-1]
        assert call.body["user_id"] == USER and call.token == other_token
        shown = json.dumps(call.body["view"])
        assert "lighthouses" in shown and "dentist" not in shown


async def test_a_workspaces_requests_are_acked_without_asking_slack_who_the_bot_is(
        tmp_path: Path) -> None:
    """Bolt's authorize remembers each token's identity: the second workspace's requests ask
    auth.test once, not once per request (the ack waited for it)."""
    async with many_workspaces(tmp_path) as slack:
        await install(slack)
        other_token = next(t for t, team in slack.fake.oauth.team_of.items()
                           if team == OTHER.team_id)

        def asked() -> int:
            return sum(c.token == other_token for c in slack.fake.calls_to("auth.test"))

        before = asked()  # the installation's own
        for n in range(5):
            status, _ = await slack.send.event(dm_from(
                OTHER.team_id, f"Idea {n}: a lighthouse tour", ts=f"17672617{n:02d}.000100",
                event_id=f"Ev0SBWAUTH{n}", channel=DM2))
            assert status == 200
        await slack.fake.wait_for("chat.postMessage", 5)
        assert asked() - before <= 1, asked() - before  # 5 before Bolt's cache was on
