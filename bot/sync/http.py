"""`/git/<person>.git`: git's smart HTTP protocol on `brain serve`'s port, so a person's own
git client (obsidian-git runs git underneath) clones, pulls and pushes their vault.

Three requests make up git's protocol over HTTP: `GET info/refs?service=...` (the branch and
what the server can do), `POST git-upload-pack` (a fetch's pack), `POST git-receive-pack` (a
push). dulwich's handlers speak the protocol (bot/sync/wire.py); the repository they are
given is the person's remote (bot/remotes.py, storage/sync). Who may ask: the token, sent as
the HTTP password (Basic, any user name). No token or a wrong one: 401 with a Basic
challenge (git then asks for credentials); a token for someone else, or a person with no
vault here: the same 404. A request's own bad input gets a 4xx and one log line.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import IO

from aiohttp import web

from bot.brain import Brain
from bot.remotes import Access
from bot.sync.wire import NO_CACHE, SERVICES, Unreadable, advertise, answer
from storage.errors import StorageError

log = logging.getLogger(__name__)

PREFIX = "/git/"
REALM = 'Basic realm="Second Brain (your vault: any user name, the token as password)"'
SPOOL = 4 * 1024 * 1024  # a request body past this goes to a temp file
UPLOAD_REQUEST_MAX = 64 * 1024 * 1024  # a fetch's wants and haves (a long negotiation)
COMMANDS_MAX = 256 * 1024  # a push's ref updates, besides its pack
THREADS = 8  # git requests served at once by one process; more wait their turn


def _password(request: web.Request) -> str | None:
    """The Basic password (the token); the user name is anything."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _user, sep, password = decoded.partition(":")
    return password if sep and password else None


def _text(status: int, text: str, **headers: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers={**NO_CACHE, **headers})


class TooLarge(Exception):
    pass


class GitRoutes:
    """The git routes of one process (its own threads for dulwich's blocking handlers, so
    they never wait on the threads the work they ask for needs)."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="git")

    def routes(self) -> list[web.RouteDef]:
        return [web.get(PREFIX + "{person}.git/info/refs", self.info_refs),
                web.post(PREFIX + "{person}.git/{service}", self.service),
                web.route("*", PREFIX + "{tail:.*}", self.elsewhere)]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def elsewhere(self, request: web.Request) -> web.Response:
        return _text(404, "not a git request this server answers: the address is "
                     f"{PREFIX}<you>.git (`brain sync url` gives it)")

    async def _opened(self, request: web.Request) -> web.Response | Access:
        person = request.match_info["person"]
        access = await self.brain.remotes.open(person, _password(request))
        if access.status == "unauthorized":
            log.info("git: refused a request to %s without a good token", PREFIX)
            return _text(401, "a token is needed: the password is the token `brain sync url` "
                         "or App Home's Sync with Obsidian gave you",
                         **{"WWW-Authenticate": REALM})
        if access.remote is None:
            return _text(404, "repository not found")
        return access

    async def info_refs(self, request: web.Request) -> web.StreamResponse:
        service = request.query.get("service", "")
        if service not in SERVICES:
            return _text(403, "only git's smart HTTP protocol is served (git 1.6.6 or later)")
        opened = await self._opened(request)
        if isinstance(opened, web.Response):
            return opened
        remote = opened.remote
        assert remote is not None
        try:
            repo = await remote.fetch_repo(advertise=True)
        except StorageError as exc:
            return _text(503, f"your vault cannot be served now: {exc.message}")
        try:
            body = await asyncio.get_running_loop().run_in_executor(
                self.pool, advertise, service, repo)
        finally:
            repo.close()
        return web.Response(body=body, headers={
            "Content-Type": f"application/x-{service}-advertisement", **NO_CACHE})

    async def _body(self, request: web.Request, most: int) -> IO[bytes]:
        """The request's body (unzipped by aiohttp when git gzipped it), at most `most`
        bytes, in memory or, past SPOOL, a temp file."""
        body = tempfile.SpooledTemporaryFile(max_size=SPOOL)  # noqa: SIM115 (returned)
        size = 0
        while chunk := await request.content.read(64 * 1024):
            size += len(chunk)
            if size > most:
                body.close()
                raise TooLarge
            body.write(chunk)
        body.seek(0)
        return body

    async def service(self, request: web.Request) -> web.StreamResponse:
        service = request.match_info["service"]
        if service not in SERVICES:
            return _text(404, "not a git service")
        opened = await self._opened(request)
        if isinstance(opened, web.Response):
            return opened
        remote = opened.remote
        assert remote is not None
        receive = service == "git-receive-pack"
        most = self.brain.remotes.limits.max_push_bytes + COMMANDS_MAX if receive \
            else UPLOAD_REQUEST_MAX
        try:
            body = await self._body(request, most)
        except TooLarge:
            return _text(413, "the push is larger than BRAIN_SYNC_MAX_PUSH_MB allows: push "
                         "fewer or smaller files at a time")
        try:
            if receive:
                async with remote.receive_repo() as repo:
                    return await answer(request, self.pool, service, repo, body)
            repo = await remote.fetch_repo(advertise=False)
            try:
                return await answer(request, self.pool, service, repo, body)
            finally:
                repo.close()
        except Unreadable as exc:
            log.info("git: a %s request could not be read: %s", service, exc)
            return _text(400, f"not a {service} request that can be read: {exc}")
        except StorageError as exc:
            return _text(503, f"your vault cannot be served now: {exc.message}")
        finally:
            body.close()
