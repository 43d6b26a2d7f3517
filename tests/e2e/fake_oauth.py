"""Slack's OAuth v2 on the fake Slack (tests/e2e/fake_slack.py), as slack.com speaks it:

- `GET /oauth/v2/authorize?client_id=..&scope=..&state=..[&redirect_uri=..]`: the person
  "approves" at once; a 302 back to the redirect URL (the one given, else the one registered in
  `redirect_url`) with `code` and `state`, as Slack does after *Allow*.
- `POST /api/oauth.v2.access` with the app's credentials (HTTP Basic, or in the form):
  `code` -> the installation of the workspace the code was issued for (a bot token, with a
  refresh token and `expires_in` when `rotation` is on); `grant_type=refresh_token` -> a new
  bot token for that refresh token (the old token stops working, as with Slack's rotation).

Each workspace's tokens are remembered (`team_of`), so `auth.test` answers with the token's own
workspace and a test can tell which workspace a call was made for.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

CLIENT_ID = "1111.2222"
CLIENT_SECRET = "fake-client-secret-0123456789"
APP_ID = "A0SBAPP01"


@dataclass
class Workspace:
    team_id: str
    name: str
    installer: str  # the user who presses Allow
    bot_user_id: str


class FakeOAuth:
    def __init__(self) -> None:
        self.redirect_url: str | None = None  # the app's registered redirect URL
        self.rotation = False  # token rotation on in the app's settings
        self.expires_in = 43200
        self.next_workspace = Workspace("T0SBWORK2", "Second Co", "U0SBUSR01", "U0SBBOT02")
        self.team_of: dict[str, str] = {}  # bot token -> its workspace
        self.expired: set[str] = set()  # tokens Slack answers with token_expired
        self._codes: dict[str, Workspace] = {}
        self._refresh: dict[str, Workspace] = {}  # refresh token -> workspace
        self._n = itertools.count(1)
        self.authorize_requests: list[dict[str, str]] = []

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/oauth/v2/authorize", self.authorize)]

    def new_token(self, workspace: Workspace) -> str:
        token = f"xoxb-{workspace.team_id}-{next(self._n)}"
        self.team_of[token] = workspace.team_id
        return token

    async def authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.authorize_requests.append(query)
        if query.get("client_id") != CLIENT_ID or not query.get("scope"):
            return web.Response(status=400, text="invalid client_id or scope")
        target = query.get("redirect_uri") or self.redirect_url
        if not target:
            return web.Response(status=400, text="no redirect URL registered")
        code = f"code-{next(self._n)}"
        self._codes[code] = self.next_workspace
        back = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        raise web.HTTPFound(f"{target}?{urlencode(back)}")

    def access(self, body: dict[str, Any], headers: Any) -> dict[str, Any]:
        """oauth.v2.access: a code exchanged, or a refresh token used."""
        client_id, secret = body.get("client_id"), body.get("client_secret")
        auth = str(headers.get("Authorization") or "")
        if auth.startswith("Basic "):
            client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        if client_id != CLIENT_ID or secret != CLIENT_SECRET:
            return {"ok": False, "error": "invalid_client_id"}
        if body.get("grant_type") == "refresh_token":
            workspace = self._refresh.pop(str(body.get("refresh_token")), None)
            if workspace is None:
                return {"ok": False, "error": "invalid_refresh_token"}
            return {"ok": True, **self._tokens(workspace), "app_id": APP_ID,
                    "team": {"id": workspace.team_id, "name": workspace.name},
                    "enterprise": None, "is_enterprise_install": False}
        workspace = self._codes.pop(str(body.get("code")), None)
        if workspace is None:
            return {"ok": False, "error": "invalid_code"}
        return {"ok": True, **self._tokens(workspace), "app_id": APP_ID,
                "scope": "chat:write,im:history", "bot_user_id": workspace.bot_user_id,
                "team": {"id": workspace.team_id, "name": workspace.name},
                "enterprise": None, "is_enterprise_install": False,
                "authed_user": {"id": workspace.installer}}

    def _tokens(self, workspace: Workspace) -> dict[str, Any]:
        out: dict[str, Any] = {"access_token": self.new_token(workspace), "token_type": "bot"}
        if self.rotation:
            refresh = f"xoxe-1-{workspace.team_id}-{next(self._n)}"
            self._refresh[refresh] = workspace
            out.update(refresh_token=refresh, expires_in=self.expires_in)
        return out

    def refresh_token_for(self, workspace: Workspace) -> str:
        """A refresh token the fake will honour (an installation made before the test)."""
        refresh = f"xoxe-1-{workspace.team_id}-{next(self._n)}"
        self._refresh[refresh] = workspace
        return refresh
