"""How the MCP server is reached: stdio for desktop clients, streamable HTTP for the rest."""

from __future__ import annotations

import importlib.metadata
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.brain import Brain
from bot.commands.via_server import answering_cli
from bot.config import Settings
from bot.mcp.security import BearerToken, check_token, parse_hosts, transport_security

# The SDK (~1 s of imports) is imported once the brain has started: a vault it refuses (a
# symlinked folder) is refused without it.
if TYPE_CHECKING:
    from starlette.requests import Request

MCP_PATH = "/mcp"


def _version() -> str:
    try:
        return importlib.metadata.version("second-brain-slack")
    except importlib.metadata.PackageNotFoundError:
        return ""


@asynccontextmanager
async def _brain(settings: Settings, user_id: str, vault: Path | None) -> AsyncIterator[Brain]:
    with redirect_stdout(sys.stderr):  # in stdio mode stdout is the protocol channel
        brain = await Brain.start(settings, vault_override=vault)
    try:
        brain.store_for(user_id)  # a bad user id fails now, before a client connects
        brain.stores.keep_fresh()  # the index rescanned and embedded in the background
        async with answering_cli(brain, vault):  # `brain search`/`ask` ask this process
            yield brain
    finally:
        await brain.close()


async def serve_stdio(settings: Settings, *, user_id: str, vault: Path | None) -> None:
    """Serve one client over stdin/stdout until it closes them. While serving, the transport
    points fd 1 at stderr: stray output cannot corrupt the wire."""
    async with _brain(settings, user_id, vault) as brain:
        from mcp.server.stdio import stdio_server

        from bot.mcp.server import build_server

        async with stdio_server() as (read, write):
            server = build_server(brain, user_id, version=_version())
            await server.run(read, write, server.create_initialization_options())


async def serve_http(settings: Settings, *, user_id: str, vault: Path | None, host: str,
                     port: int) -> None:
    """Streamable HTTP on http://host:port/mcp (and GET /health) until SIGINT/SIGTERM."""
    # Refused before anything starts: off loopback without a token, a bad host list.
    token = check_token(host, settings.mcp_token)
    allowed = parse_hosts(settings.mcp_allowed_hosts)
    # Bound before the brain starts: a port in use is a clear OSError, not a log line.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    try:
        async with _brain(settings, user_id, vault) as brain:
            import uvicorn  # the HTTP server the SDK's own HTTP transport is run with
            from starlette.responses import JSONResponse
            from starlette.routing import Route

            from bot.mcp.server import build_server

            async def health(request: Request) -> JSONResponse:
                return JSONResponse({"ok": True})

            server = build_server(brain, user_id, version=_version())
            # DNS-rebinding protection for every bind address (the SDK's own covers only
            # three loopback names), and the bearer token when one is set.
            security = transport_security(host, allowed)
            app: Any = server.streamable_http_app(
                streamable_http_path=MCP_PATH, host=host, transport_security=security,
                custom_starlette_routes=[Route("/health", health)])
            if token is not None:
                app = BearerToken(app, token)
            config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                                    lifespan="on")
            print(f"brain mcp: serving {user_id!r} on http://{host}:{port}{MCP_PATH} "
                  f"(Host: {', '.join(h for h in security.allowed_hosts if not h.endswith(':*'))}"
                  f"{'; bearer token required' if token else ''})", file=sys.stderr, flush=True)
            # uvicorn shuts down gracefully on SIGTERM, then raises the signal again for the
            # handler it found; a no-op one lets the database close and the process exit 0.
            previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
            try:
                await uvicorn.Server(config).serve(sockets=[sock])
            finally:
                signal.signal(signal.SIGTERM, previous)
    finally:
        sock.close()
