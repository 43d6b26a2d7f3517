"""dulwich's server handlers (upload-pack for a fetch, receive-pack for a push) driven from
aiohttp: each runs in a thread of the git routes' own pool (they block), reading the request
body already received and sending its output as it comes, in 64 KB pieces, so a clone's
pack is never held whole in memory. Bad bytes from a client before any answer was sent are
`Unreadable` (a 400, not a 5xx).
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from concurrent.futures import Executor
from io import BytesIO
from typing import IO

from aiohttp import web
from dulwich.errors import GitProtocolError, ObjectFormatException
from dulwich.protocol import ReceivableProtocol
from dulwich.server import (
    BackendRepo,
    DictBackend,
    PackHandler,
    ReceivePackHandler,
    UploadPackHandler,
)

log = logging.getLogger(__name__)

SERVICES: dict[str, type[UploadPackHandler] | type[ReceivePackHandler]] = {"git-upload-pack": UploadPackHandler,
                                          "git-receive-pack": ReceivePackHandler}
FLUSH = 64 * 1024
# What a client's bytes that are not git's protocol make dulwich raise.
BAD_INPUT = (GitProtocolError, ObjectFormatException, ValueError, KeyError, AssertionError,
             zlib.error, EOFError)
NO_CACHE = {"Expires": "Fri, 01 Jan 1980 00:00:00 GMT", "Pragma": "no-cache",
            "Cache-Control": "no-cache, max-age=0, must-revalidate"}


class Unreadable(Exception):
    """The request's body is not what the service reads (nothing was answered yet)."""


def _handler(service: str, repo: BackendRepo, proto: ReceivableProtocol, *,
             advertise_refs: bool) -> PackHandler:
    cls = SERVICES[service]
    return cls(DictBackend({b".": repo}), ["."], proto, stateless_rpc=True,
               advertise_refs=advertise_refs)


def advertise(service: str, repo: BackendRepo) -> bytes:
    """The answer to `GET info/refs?service=...` (runs in a worker thread)."""
    out = BytesIO()
    proto = ReceivableProtocol(BytesIO().read, out.write)
    proto.write_pkt_line(b"# service=" + service.encode() + b"\n")
    proto.write_pkt_line(None)
    _handler(service, repo, proto, advertise_refs=True).handle()
    return out.getvalue()


class _Out:
    """The handler's output, written from its thread to the response on the event loop."""

    def __init__(self, request: web.Request, loop: asyncio.AbstractEventLoop,
                 service: str) -> None:
        self.request, self.loop = request, loop
        self.response = web.StreamResponse(headers={
            "Content-Type": f"application/x-{service}-result", **NO_CACHE})
        self.buffer = bytearray()
        self.started = False

    def write(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= FLUSH:
            self.flush()

    def flush(self) -> None:
        data = bytes(self.buffer)
        self.buffer.clear()
        asyncio.run_coroutine_threadsafe(self._send(data), self.loop).result()

    async def _send(self, data: bytes) -> None:
        if not self.started:
            await self.response.prepare(self.request)
            self.started = True
        if data:
            await self.response.write(data)


def without_shallow(body: IO[bytes]) -> IO[bytes]:
    """The request without the `shallow <id>` lines a shallow clone sends before its first
    flush (its boundary) when no `deepen` asks to move it: dulwich reads them only with a
    deepen. The history has every ancestor the boundary names, and what a fetch sends is
    found from the client's haves, so the boundary changes nothing here."""
    data = body.read()
    kept, at = [], 0
    while at + 4 <= len(data):
        try:
            size = int(data[at:at + 4], 16)
        except ValueError:
            break
        line = data[at:at + max(size, 4)]
        at += max(size, 4)
        if size == 0 or line[4:].startswith(b"deepen"):
            kept.append(line)
            if size:
                body.seek(0)
                return body  # a deepen: dulwich reads the boundary itself
            break
        if not line[4:].startswith(b"shallow "):
            kept.append(line)
    return BytesIO(b"".join(kept) + data[at:])


async def answer(request: web.Request, pool: Executor, service: str, repo: BackendRepo,
                 body: IO[bytes]) -> web.StreamResponse:
    """Run the service's handler over `body`; its answer streamed as the response."""
    body = without_shallow(body)
    loop = asyncio.get_running_loop()
    out = _Out(request, loop, service)

    def run() -> None:
        proto = ReceivableProtocol(body.read, out.write)
        try:
            _handler(service, repo, proto, advertise_refs=False).handle()
        except BAD_INPUT as exc:
            if not out.started:
                raise Unreadable(str(exc) or type(exc).__name__) from None
            raise
        out.flush()

    try:
        await loop.run_in_executor(pool, run)
    except BAD_INPUT as exc:  # after part of the answer went out: the client sees it end
        log.info("git: a %s answer was cut short by the request's bytes: %s", service, exc)
    await out.response.write_eof()
    return out.response
