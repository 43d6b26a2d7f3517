"""A real HTTP server on 127.0.0.1 serving the pages the link tests share: an article, a
redirect to a refused address, a page too big, a 404, a PDF. It records every request (path,
headers), so a test sees what was fetched and what was sent."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ARTICLE_SENTENCE = "Tomatoes need six hours of sun a day, so a south-facing balcony suits them"
ARTICLE = f"""<html><head><title>Growing vegetables on a city balcony</title>
<meta name="author" content="Ana Ruiz"><meta property="og:site_name" content="Urban Garden Weekly">
</head><body><nav>Home · About · Subscribe</nav><article>
<h1>Growing vegetables on a city balcony</h1>
<p>{ARTICLE_SENTENCE}.</p>
<p>Herbs such as basil and mint grow well in small pots and forgive a missed watering.</p>
<p>Lettuce bolts in the heat of July; sow it again in late August for an autumn crop.</p>
</article><footer>Copyright 2026</footer></body></html>"""


@dataclass
class Pages:
    runner: web.AppRunner
    port: int
    requests: list[dict[str, Any]] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for r in self.requests if r["path"] == path)

    async def close(self) -> None:
        await self.runner.cleanup()


async def serve_pages(extra: dict[str, bytes] | None = None) -> Pages:
    pages: Pages

    async def handle(request: web.Request) -> web.StreamResponse:
        pages.requests.append({"path": request.path, "headers": dict(request.headers)})
        path = request.path
        if path == "/article":
            return web.Response(text=ARTICLE, content_type="text/html")
        if path == "/to-private":  # an allowed page sending the fetch to a refused address
            raise web.HTTPFound(f"http://127.0.0.2:{pages.port}/article")
        if path == "/to-localhost":  # the same by name: the resolver's check must catch it
            raise web.HTTPFound(f"http://localhost:{pages.port}/article")
        if path == "/to-file":
            raise web.HTTPFound("file:///etc/passwd")
        if path == "/with-cookie":
            response = web.HTTPFound("/article")
            response.set_cookie("session", "secret")
            raise response
        if path == "/huge":
            response = web.StreamResponse(headers={"Content-Type": "text/html"})
            await response.prepare(request)
            for _ in range(6 * 16):  # 6 MB, no Content-Length: the cap must count
                await response.write(b"<p>" + b"x" * 65_530 + b"</p>")
            await response.write_eof()
            return response
        if extra and path in extra:
            kind = "application/pdf" if extra[path].startswith(b"%PDF") else "text/plain"
            return web.Response(body=extra[path], content_type=kind)
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    pages = Pages(runner, port)
    return pages


@contextlib.contextmanager
def pages_in_thread(extra: dict[str, bytes] | None = None) -> Iterator[Pages]:
    """The same server on a loop of its own, for a test that runs the CLI in-process."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    pages = asyncio.run_coroutine_threadsafe(serve_pages(extra), loop).result(10)
    try:
        yield pages
    finally:
        asyncio.run_coroutine_threadsafe(pages.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
