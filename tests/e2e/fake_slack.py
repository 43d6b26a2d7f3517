"""A local fake of the Slack Web API (and of response_url hooks) that records every call.

Serves `POST /api/<method>` the way slack.com/api does (JSON or form bodies, Bearer token) and
`POST /hooks/<name>` the way a response_url does. `auth.test` answers with the ids of
../shared/fixtures/slack/payloads/README.md. Failures can be scripted per method
(`fail_next`), e.g. a 429 with Retry-After to exercise the client's retry handler.

It keeps the channels' messages: those seeded with `seed_message` (what users wrote) and those
the bot posts, so `conversations.history` / `conversations.replies` answer from them.
`views.publish` keeps each user's Home (`homes`), refusing a view of more than 100 blocks.
Slack's OAuth (the authorize page, `oauth.v2.access`, token rotation) is in fake_oauth.py.

Run standalone for manual testing or benchmarks: `python -m tests.e2e.fake_slack --port 8901`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from tests.e2e.fake_oauth import FakeOAuth
from tests.shared import patience

TEAM_ID = "T0SB00001"
BOT_USER_ID = "U0SBBOT01"
BOT_ID = "B0SBBOT01"
STREAM_CHUNKS = ("markdown_text", "task_update", "plan_update", "blocks")


@dataclass
class Call:
    method: str  # "chat.postMessage", or "hook:<name>" for response_url posts
    body: dict[str, Any]
    token: str | None
    headers: dict[str, str] = field(default_factory=dict)
    response: dict[str, Any] | None = None  # what the fake answered


@dataclass
class Scripted:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


class FakeSlack:
    def __init__(self) -> None:
        self.user_tz = "Asia/Tokyo"  # what users.info says of every user
        self.calls: list[Call] = []
        self._by_method: dict[str, list[Call]] = {}  # the same calls, by method (a long run's
        # waits then cost nothing as calls pile up: benchmarks of thousands of people)
        self._scripted: dict[str, list[Scripted]] = {}
        self._ts = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._changed = asyncio.Event()
        self.port = 0
        self.delay = 0.0  # seconds added to every Web API answer (benchmarks)
        self._stopping = asyncio.Event()  # cuts a delay short when the fake stops
        self.messages: dict[str, list[dict[str, Any]]] = {}  # channel -> messages
        self.homes: dict[str, dict[str, Any]] = {}  # user -> the Home view last published
        self.names: dict[str, str] = {}  # user -> display name (users.info)
        self.dm_of: dict[str, str] = {}  # user -> DM channel id (conversations.open)
        self.files: dict[str, bytes] = {}  # file id -> bytes, served at url_private_download
        self.refused_files: set[str] = set()  # served 403 (as without the files:read scope)
        self.file_gets: list[Call] = []  # every download asked for, with its headers
        self.streams: dict[str, dict[str, Any]] = {}  # ts -> a streamed reply's state
        self.oauth = FakeOAuth()  # /oauth/v2/authorize and oauth.v2.access (fake_oauth.py)

    # -- lifecycle ----------------------------------------------------------------------------

    def web_app(self) -> web.Application:
        app = web.Application()
        app.add_routes([web.post("/api/{method}", self._api),
                        web.get("/api/{method}", self._api),  # e.g. users.info
                        web.post("/hooks/{name}", self._hook),
                        web.get("/files-pri/{file_id}/{rest:.*}", self._file),
                        *self.oauth.routes()])
        return app

    def share_file(self, file_id: str, name: str, data: bytes) -> dict[str, Any]:
        """A file as a `message` event's `files` carries it; its bytes are served with the bot
        token only (as Slack's `url_private_download`)."""
        self.files[file_id] = data
        return {"id": file_id, "name": name, "title": name, "size": len(data),
                "mimetype": "application/octet-stream", "filetype": name.rsplit(".", 1)[-1],
                "url_private": f"{self.url}/files-pri/{file_id}/{name}",
                "url_private_download": f"{self.url}/files-pri/{file_id}/download/{name}",
                "permalink": f"https://example.slack.com/files/U1/{file_id}/{name}"}

    async def _file(self, request: web.Request) -> web.Response:
        self.file_gets.append(Call("files.download", {"id": request.match_info["file_id"]},
                                   request.headers.get("Authorization"),
                                   dict(request.headers)))
        if request.headers.get("Authorization") != "Bearer xoxb-test":
            # Slack sends a login page to a request without the token
            return web.Response(status=200, content_type="text/html", text="<html>sign in")
        if request.match_info["file_id"] in self.refused_files:  # the app lacks files:read
            return web.Response(status=403, text="missing_scope")
        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return web.Response(status=404, text="file_not_found")
        return web.Response(body=data, content_type="application/octet-stream")

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeSlack:
        self._runner = web.AppRunner(self.web_app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[union-attr]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def hook_url(self, name: str = "response") -> str:
        return f"{self.url}/hooks/{name}"

    # -- assertions helpers -------------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        return list(self._by_method.get(method, ()))

    def _heard(self, call: Call) -> None:
        self.calls.append(call)
        self._by_method.setdefault(call.method, []).append(call)

    def web_api_calls(self) -> list[Call]:
        """Everything except auth.test (which Bolt makes once to learn its own ids)."""
        return [c for c in self.calls if c.method != "auth.test"]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 30.0) -> list[Call]:
        loop = asyncio.get_running_loop()
        timeout = patience(timeout)
        deadline = loop.time() + timeout
        while len(self._by_method.get(method, ())) < count:
            left = deadline - loop.time()
            if left <= 0:
                seen = [c.method for c in self.calls]
                raise AssertionError(f"expected {count} {method} call(s) within {timeout}s; "
                                     f"saw {seen}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=min(left, 0.2))
        return self.calls_to(method)

    def seed_message(self, channel: str, text: str, *, user: str, ts: str,
                     thread_ts: str | None = None) -> dict[str, Any]:
        """A message someone wrote in `channel` (what history/replies will return)."""
        message: dict[str, Any] = {"type": "message", "user": user, "text": text, "ts": ts}
        if thread_ts:
            message["thread_ts"] = thread_ts
        self.messages.setdefault(channel, []).append(message)
        return message

    def fail_next(self, method: str, *, status: int = 200, error: str = "internal_error",
                  headers: dict[str, str] | None = None, times: int = 1) -> None:
        body = {"ok": False, "error": error}
        self._scripted.setdefault(method, []).extend(
            Scripted(status, body, headers or {}) for _ in range(times))

    # -- handlers -----------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> dict[str, Any]:
        """Arguments from the query string (the SDK's `params`) and the JSON or form body."""
        raw = await request.text()
        body: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            data = json.loads(raw or "{}")
            body.update(data if isinstance(data, dict) else {"_": data})
            return body
        body.update(parse_qsl(raw, keep_blank_values=True))
        for key in ("blocks", "attachments"):  # form posts carry these as JSON text
            if isinstance(body.get(key), str):
                body[key] = json.loads(body[key])
        return body

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await self._body(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else body.get("token")
        call = Call(method, body, token, dict(request.headers))
        self._heard(call)
        if self.delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.delay)
        scripted = self._scripted.get(method)
        if scripted:
            s = scripted.pop(0)
            call.response = s.body
            self._changed.set()
            return web.json_response(s.body, status=s.status, headers=s.headers)
        call.response = self.oauth.access(body, request.headers) \
            if method == "oauth.v2.access" else self._answer(method, body, token)
        self._changed.set()
        return web.json_response(call.response)

    def _answer(self, method: str, body: dict[str, Any], token: str | None) -> dict[str, Any]:
        if method == "apps.connections.open":  # the app-level token (Socket Mode)
            if not token or not token.startswith("xapp-") or token == "xapp-invalid":
                return {"ok": False, "error": "invalid_auth"}
            # A WebSocket URL that refuses the upgrade: the client keeps trying to connect.
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/no-socket-here"}
        if not token or not token.startswith("xoxb-") or token == "xoxb-invalid":
            return {"ok": False, "error": "invalid_auth"}
        if token in self.oauth.expired:
            return {"ok": False, "error": "token_expired"}
        if method == "auth.test":  # a token installed through OAuth: its own workspace
            return {"ok": True, "url": "https://example.slack.com/", "team": "Example",
                    "user": "second-brain", "team_id": self.oauth.team_of.get(token, TEAM_ID),
                    "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": False}
        if method in ("conversations.history", "conversations.replies"):
            return self._read(method, body)
        if method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            return self._stream(method, body)
        answer = self._methods().get(method)
        return answer(body) if answer is not None else {"ok": True}

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {"chat.postMessage": self._post, "conversations.open": self._open_dm,
                "views.publish": self._publish, "views.open": self._open_view,
                "chat.update": self._update, "users.info": self._user_info,
                "chat.postEphemeral": lambda body: {
                    "ok": True, "message_ts": f"1767300000.{next(self._ts):06d}"}}

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        ts = f"1767300000.{next(self._ts):06d}"
        message = {"type": "message", "text": body.get("text"), "user": BOT_USER_ID,
                   "bot_id": BOT_ID, "ts": ts, "thread_ts": body.get("thread_ts")}
        metadata = body.get("metadata")
        if isinstance(metadata, str):  # a form post carries it as JSON text
            metadata = json.loads(metadata)
        if metadata:
            message["metadata"] = metadata
        self.messages.setdefault(str(body.get("channel")), []).append(message)
        return {"ok": True, "channel": body.get("channel"), "ts": ts, "message": message}

    def _open_dm(self, body: dict[str, Any]) -> dict[str, Any]:
        user = str(body.get("users") or "")
        channel = self.dm_of.get(user) or "D" + user[1:]
        return {"ok": True, "channel": {"id": channel}}

    def _publish(self, body: dict[str, Any]) -> dict[str, Any]:
        view = body.get("view")
        view = json.loads(view) if isinstance(view, str) else view
        if not isinstance(view, dict) or not 0 < len(view.get("blocks") or []) <= 100:
            return {"ok": False, "error": "invalid_arguments"}
        self.homes[str(body.get("user_id"))] = view
        return {"ok": True, "view": {"id": "V0SBHOME1", **view}}

    def _open_view(self, body: dict[str, Any]) -> dict[str, Any]:
        """A modal: a trigger, a title of 1-24 characters, blocks."""
        view = body.get("view")
        view = json.loads(view) if isinstance(view, str) else view
        title = ((view or {}).get("title") or {}).get("text") or ""
        if not body.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        if not isinstance(view, dict) or view.get("type") != "modal" \
                or not 0 < len(title) <= 24 or not 0 < len(view.get("blocks") or []) <= 100:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": {"id": "V0SBMODAL", **view}}

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        for message in self.messages.get(str(body.get("channel")), []):
            if message["ts"] == body.get("ts"):
                message.update(text=body.get("text"), blocks=body.get("blocks"))
                self.streams.get(message["ts"], {})["state"] = "completed"
        return {"ok": True, "channel": body.get("channel"), "ts": body.get("ts"),
                "text": body.get("text")}

    def _user_info(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self.names.get(str(body.get("user")), "alex")
        return {"ok": True, "user": {"id": body.get("user"), "name": name.lower(),
                                     "tz": self.user_tz, "tz_offset": 32400,
                                     "profile": {"display_name": name, "real_name": name}}}

    def _stream(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        """A streamed reply, as Slack keeps it: started in a thread (a channel's stream names
        its recipient), appended to while in progress, then one finished message whose text is
        the markdown chunks and whose blocks and metadata come with the stop."""
        channel = str(body.get("channel") or "")
        chunks = body.get("chunks") or []
        if isinstance(chunks, str):
            chunks = json.loads(chunks)
        if not isinstance(chunks, list) or not all(
                isinstance(c, dict) and c.get("type") in STREAM_CHUNKS for c in chunks):
            return {"ok": False, "error": "invalid_chunks"}
        if method == "chat.startStream":
            if not body.get("thread_ts"):
                return {"ok": False, "error": "invalid_arguments"}
            if not channel.startswith("D") and not (body.get("recipient_user_id")
                                                    and body.get("recipient_team_id")):
                return {"ok": False, "error": "missing_recipient_team_id"}
            ts = f"1767300000.{next(self._ts):06d}"
            message = {"type": "message", "text": "", "user": BOT_USER_ID, "bot_id": BOT_ID,
                       "ts": ts, "thread_ts": body.get("thread_ts")}
            self.messages.setdefault(channel, []).append(message)
            self.streams[ts] = {"state": "in_progress", "chunks": list(chunks),
                                "message": message}
            return {"ok": True, "channel": channel, "ts": ts}
        stream = self.streams.get(str(body.get("ts")))
        if stream is None:
            return {"ok": False, "error": "message_not_found"}
        if stream["state"] != "in_progress":
            return {"ok": False, "error": "message_not_in_streaming_state"}
        stream["chunks"].extend(chunks)
        if method == "chat.stopStream":
            stream["state"] = "completed"
            message = stream["message"]
            message["text"] = "".join(str(c.get("text") or "") for c in stream["chunks"]
                                      if c["type"] == "markdown_text")
            message["blocks"] = body.get("blocks") or []
            metadata = body.get("metadata")
            if metadata:
                message["metadata"] = json.loads(metadata) if isinstance(metadata, str) \
                    else metadata
        return {"ok": True, "channel": channel, "ts": body.get("ts")}

    def replies(self) -> list[dict[str, Any]]:
        """The bot's finished replies, posted or streamed (a stream is finished by its stop or
        by a chat.update), in the order they were started: each as the message Slack shows
        ({"text", "blocks", "ts", ...})."""
        out = [{**c.body, "ts": c.response["ts"]} for c in self.calls
               if c.method == "chat.postMessage" and c.response and c.response.get("ok")]
        out += [dict(s["message"]) for s in self.streams.values() if s["state"] == "completed"]
        return sorted(out, key=lambda m: str(m["ts"]))

    async def wait_for_reply(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait until the bot has finished `count` replies (posted or streamed)."""
        loop = asyncio.get_running_loop()
        timeout = patience(timeout)
        deadline = loop.time() + timeout
        while len(self.replies()) < count:
            if loop.time() > deadline:
                raise AssertionError(f"expected {count} replies within {timeout}s; saw "
                                     f"{[c.method for c in self.calls]}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=0.2)
        return self.replies()

    def _read(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        """History (newest first, up to `latest`) or one thread (oldest first)."""
        found = self.messages.get(str(body.get("channel")), [])
        latest = str(body.get("latest") or "9999999999.999999")
        oldest = str(body.get("oldest") or "0")
        inclusive = str(body.get("inclusive")).lower() in ("1", "true")
        limit = int(body.get("limit") or 100)
        if method == "conversations.history":
            rows = [m for m in found if not m.get("thread_ts") or m["thread_ts"] == m["ts"]]
        else:
            ts = str(body.get("ts"))
            root = next((m.get("thread_ts") or m["ts"] for m in found if m["ts"] == ts), ts)
            rows = [m for m in found if m["ts"] == root or m.get("thread_ts") == root]
        rows = [m for m in rows if (oldest < m["ts"] < latest)
                or (inclusive and m["ts"] in (latest, oldest))]
        rows.sort(key=lambda m: m["ts"], reverse=method == "conversations.history")
        return {"ok": True, "messages": rows[:limit], "has_more": len(rows) > limit}

    async def _hook(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        self._heard(Call(f"hook:{request.match_info['name']}", body, None,
                         dict(request.headers)))
        self._changed.set()
        return web.Response(text="ok")


async def _main(port: int, delay: float, redirect_url: str | None = None) -> None:
    fake = await FakeSlack().start(port=port)
    fake.delay = delay
    fake.oauth.redirect_url = redirect_url
    print(f"fake Slack Web API at {fake.api_url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--oauth-redirect", help="the app's registered OAuth redirect URL, "
                        "e.g. http://127.0.0.1:3000/slack/oauth_redirect")
    ns = parser.parse_args()
    asyncio.run(_main(ns.port, ns.delay, ns.oauth_redirect))
