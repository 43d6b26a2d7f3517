"""Many workspaces (OAuth): installing the app from `/slack/install`, Bolt's installation and
OAuth-state stores on our database, each workspace's bot token (refreshed when it rotates),
and forgetting a workspace that uninstalled the app.

On only with SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_STATE_SECRET (`Settings.oauth`);
without them no `Installs` is made, `Workspaces` passes every job through untouched, and the
bot runs on SLACK_BOT_TOKEN as before.

- The stores are slack_sdk's `AsyncSQLAlchemyInstallationStore` and
  `AsyncSQLAlchemyOAuthStateStore` on the Brain's own engine (their tables come from migration
  0010). The state sent to Slack is signed with SLACK_STATE_SECRET: a state we did not issue is
  refused before the database is asked.
- Bolt's `authorize` finds each request's token (refreshing a rotating one before it expires);
  the home workspace's SLACK_BOT_TOKEN, when set, answers for the home workspace first.
- Jobs run later, in the worker: `token_for` gives a job its workspace's token the same way,
  and `bot.slack.web.acting_for` makes the bot's one Web API client use it for that job.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urljoin

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import (
    AsyncAuthorize,
    AsyncInstallationStoreAuthorize,
)
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_callback_options import (
    AsyncCallbackOptions,
    AsyncFailureArgs,
    AsyncSuccessArgs,
)
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackClientError
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.config import Settings
from bot.jobs.queue import Handler, JobContext
from bot.slack.web import acting_for, api_base_url
from bot.tenancy.people import team_of

log = logging.getLogger(__name__)

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
# The bot scopes of manifest.yml (tests/e2e/test_slack_manifest.py keeps them equal).
BOT_SCOPES = ("app_mentions:read", "assistant:write", "channels:history", "chat:write",
              "commands", "files:read", "groups:history", "im:history", "im:write",
              "reactions:read", "users:read")
ROTATE_MINUTES = 120  # a rotating token is refreshed this long before it expires (Bolt's)

TokenFor = Callable[[str | None], Awaitable[str | None]]


class NotInstalled(Exception):
    """The workspace has no installation (it uninstalled the app): nothing is sent there."""


class Workspaces:
    """Where a job's Slack calls go: with `token_for` (many workspaces: `Installs.token_for`)
    its workspace's token (`web.acting_for`), else the client's own, as before."""

    def __init__(self, token_for: TokenFor | None) -> None:
        self.token_for = token_for

    async def of_person(self, person: str) -> AbstractContextManager[None]:
        """The workspace of `person` (scheduled work: a digest, a time zone lookup)."""
        if self.token_for is None:
            return contextlib.nullcontext()
        return acting_for(await self.token_for(team_of(person)))

    async def of_job(self, job: JobContext) -> AbstractContextManager[None]:
        if self.token_for is None:
            return contextlib.nullcontext()
        p = job.job.payload if isinstance(job.job.payload, dict) else {}
        return acting_for(await self.token_for(p.get("team") or team_of(job.job.user_id)))

    def wrap(self, handler: Handler) -> Handler:
        """`handler` run in its job's workspace; a job of a workspace that uninstalled the
        app ends without a word (nothing can reach it)."""
        if self.token_for is None:
            return handler

        async def run(job: JobContext) -> None:
            try:
                workspace = await self.of_job(job)
            except NotInstalled as exc:
                log.warning("job %s dropped: %s", job.job.id, exc)
                return
            with workspace:
                await handler(job)
        return run


class SignedStates(AsyncOAuthStateStore):
    """OAuth states kept in the database, signed with SLACK_STATE_SECRET on the way out."""

    def __init__(self, inner: AsyncOAuthStateStore, secret: str) -> None:
        self.inner = inner
        self.key = secret.encode()

    @property
    def logger(self) -> logging.Logger:
        return log

    def _sign(self, state: str) -> str:
        return hmac.new(self.key, state.encode(), hashlib.sha256).hexdigest()[:32]

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        state = await self.inner.async_issue(*args, **kwargs)
        return f"{state}.{self._sign(state)}"

    async def async_consume(self, state: str) -> bool:
        raw, _, signature = state.rpartition(".")
        if not raw or not hmac.compare_digest(signature, self._sign(raw)):
            log.info("refused an OAuth state this app did not sign")
            return False
        return await self.inner.async_consume(raw)


def install_page(url: str) -> str:
    """The "Add to Slack" page: one link to Slack's authorize step (nothing fetched)."""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Add Second Brain to Slack</title>
<link rel="icon" href="data:,"></head>
<body style="font-family: sans-serif; text-align: center; padding: 2em">
<h1>Second Brain</h1>
<p>DM it a thought; it files it as a markdown note in your own vault.</p>
<p><a id="add-to-slack" href="{html.escape(url)}"
 style="display: inline-block; padding: .6em 1.2em; border: 1px solid #4a154b;
 border-radius: 6px; color: #4a154b; text-decoration: none">Add to Slack</a></p>
</body></html>
"""


def _page(title: str, text: str) -> str:
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title><link rel=\"icon\" href=\"data:,\"></head><body style=\"font-family: "
            f"sans-serif; text-align: center; padding: 2em\"><h1>{html.escape(title)}</h1>"
            f"<p>{html.escape(text)}</p></body></html>")


class _Flow(AsyncOAuthFlow):
    async def build_install_page_html(self, url: str, request: AsyncBoltRequest) -> str:
        return install_page(url)


class _HomeFirst(AsyncAuthorize):
    """Bolt's authorize, after the home workspace's SLACK_BOT_TOKEN (when set)."""

    def __init__(self, installs: Installs, inner: AsyncAuthorize) -> None:
        self.installs = installs
        self.inner = inner

    async def __call__(self, *, context: AsyncBoltContext, enterprise_id: str | None,
                       team_id: str | None, user_id: str | None,
                       **kwargs: Any) -> AuthorizeResult | None:
        home = await self.installs.home_bot()
        if home is not None and team_id == home.team_id:
            return home
        result: AuthorizeResult | None = await self.inner(
            context=context, enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
            **kwargs)
        return result


class Installs:
    """The OAuth side of one SlackBot (made only when `settings.oauth`)."""

    def __init__(self, brain: Brain, settings: Settings, client: AsyncWebClient) -> None:
        assert settings.slack_client_id and settings.slack_client_secret \
            and settings.slack_state_secret
        self.brain = brain
        self.settings = settings
        self.client = client
        engine = brain.database_engine
        self.store = AsyncSQLAlchemyInstallationStore(settings.slack_client_id, engine,
                                                      logger=log)
        states = SignedStates(AsyncSQLAlchemyOAuthStateStore(600, engine, logger=log),
                              settings.slack_state_secret)
        base = api_base_url(settings)
        # oauth.v2.access (the code exchange, token refreshes) goes where the Web API does
        self.oauth_client = AsyncWebClient(base_url=base) if base else AsyncWebClient()
        self.rotator = AsyncTokenRotator(client_id=settings.slack_client_id,
                                         client_secret=settings.slack_client_secret,
                                         client=self.oauth_client)
        oauth_settings = AsyncOAuthSettings(
            client_id=settings.slack_client_id, client_secret=settings.slack_client_secret,
            scopes=list(BOT_SCOPES), install_path=INSTALL_PATH, redirect_uri_path=REDIRECT_PATH,
            # Slack's authorize page sits beside its Web API (slack.com/api/ ->
            # slack.com/oauth/v2/authorize), so SLACK_API_URL moves both
            authorization_url=urljoin(base, "../oauth/v2/authorize") if base else None,
            installation_store=self.store, state_store=states,
            token_rotation_expiration_minutes=ROTATE_MINUTES,
            callback_options=AsyncCallbackOptions(success=self._installed,
                                                  failure=self._failed),
            logger=log)
        self.flow = _Flow(client=self.oauth_client, settings=oauth_settings, logger=log)
        self.authorize = _HomeFirst(self, AsyncInstallationStoreAuthorize(
            logger=log, client_id=settings.slack_client_id,
            client_secret=settings.slack_client_secret,
            token_rotation_expiration_minutes=ROTATE_MINUTES, installation_store=self.store,
            client=self.oauth_client, cache_enabled=True))  # no auth.test per request
        self._home: AuthorizeResult | None = None

    # -- the install pages --------------------------------------------------------------------

    async def _installed(self, args: AsyncSuccessArgs) -> BoltResponse:
        team = args.installation.team_id or args.installation.enterprise_id or ""
        name = args.installation.team_name or team
        log.info("installed in workspace %s", team)
        if team:
            await self.brain.accounts.installed(team)
            await self.home_bot()  # SLACK_BOT_TOKEN's workspace is home, if there is one
            await self.brain.people.key(team, args.installation.user_id)  # else maybe this
        cookie = self.flow.settings.state_utils.build_set_cookie_for_deletion()
        return BoltResponse(status=200, body=_page(
            "Installed", f"Second Brain is installed in {name}. DM it a thought in Slack."),
            headers={"Content-Type": "text/html; charset=utf-8", "Set-Cookie": [cookie]})

    async def _failed(self, args: AsyncFailureArgs) -> BoltResponse:
        log.warning("an installation failed: %s", args.reason)
        return BoltResponse(status=args.suggested_status_code, body=_page(
            "Not installed", f"Slack did not install the app ({args.reason}). Try again from "
                             f"{INSTALL_PATH}."),
            headers={"Content-Type": "text/html; charset=utf-8"})

    async def install_page(self, request: AsyncBoltRequest) -> BoltResponse:
        return await self.flow.handle_installation(request)

    async def redirect(self, request: AsyncBoltRequest) -> BoltResponse:
        return await self.flow.handle_callback(request)

    # -- tokens -------------------------------------------------------------------------------

    async def home_bot(self) -> AuthorizeResult | None:
        """The home workspace's SLACK_BOT_TOKEN as Bolt's authorize result (auth.test once;
        its workspace becomes the home workspace unless one already is)."""
        token = self.settings.slack_bot_token
        if not token or self._home is not None:
            return self._home
        try:
            auth = await self.client.auth_test(token=token)
        except SlackClientError as exc:
            log.warning("SLACK_BOT_TOKEN could not be checked (auth.test): %s", exc)
            return None
        team = str(auth.get("team_id") or "")
        if not team:
            return None
        if await self.brain.people.claim_home(team) != team:
            log.warning("SLACK_BOT_TOKEN belongs to %s, not to the home workspace; it is "
                        "used for %s only", team, team)
        self._home = AuthorizeResult(
            enterprise_id=auth.get("enterprise_id"), team_id=team, bot_token=token,
            bot_id=auth.get("bot_id"), bot_user_id=auth.get("user_id"))
        return self._home

    async def token_for(self, team: str | None) -> str | None:
        """The bot token of workspace `team` (None: the home workspace), refreshed first when
        it rotates and expires soon. None means the client's own token (SLACK_BOT_TOKEN).
        NotInstalled when the workspace has no installation."""
        home = await self.home_bot()
        if home is not None and team in (None, home.team_id):
            return None
        team = team or await self.brain.people.home()
        if not team:
            raise NotInstalled("no workspace has installed the app yet")
        installation = await self.store.async_find_installation(enterprise_id=None,
                                                                team_id=team)
        if installation is None or not installation.bot_token:
            raise NotInstalled(f"workspace {team} has not installed the app")
        refreshed = await self.rotator.perform_token_rotation(
            installation=installation, minutes_before_expiration=ROTATE_MINUTES)
        if refreshed is not None:
            log.info("the bot token of %s was refreshed", team)
            await self.store.async_save(refreshed)
            installation = refreshed
        return installation.bot_token

    async def forget(self, team: str) -> None:
        """Stop serving workspace `team` (app_uninstalled, its bot token revoked): its
        installation and bot rows are deleted. Its people's notes are kept."""
        await self.store.async_delete_bot(enterprise_id=None, team_id=team)
        await self.store.async_delete_installation(enterprise_id=None, team_id=team)
        log.warning("workspace %s: its installation is deleted; its people's notes are kept",
                    team)
