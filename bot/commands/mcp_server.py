"""`brain mcp`: the brain's tools for MCP clients (Claude Desktop, IDEs, other agents)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from bot.commands.common import CommandError, check_vault, fail, port_number, run, user_id

DEFAULT_PORT = 8765


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp", help="serve the tools to MCP clients (stdio, or HTTP with --http)",
        description="Serve the brain's tools over the Model Context Protocol, acting for one "
                    "user: on stdin/stdout for desktop clients, or streamable HTTP at "
                    "http://HOST:PORT/mcp with --http. Over HTTP, requests must name an "
                    "allowed Host (loopback, the --host address, BRAIN_MCP_ALLOWED_HOSTS) and "
                    "no foreign Origin; off loopback BRAIN_MCP_TOKEN is required and clients "
                    "send `Authorization: Bearer <token>`.")
    p.add_argument("--vault", metavar="DIR", type=Path, help="use DIR as the vault, as it is")
    p.add_argument("--user", metavar="ID",
                   help="act for this user (default: BRAIN_OWNER, else 'local')")
    p.add_argument("--create", action="store_true",
                   help="start an empty vault if the --vault DIR or the --user's vault does not "
                        "exist yet")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1",
                   help="with --http: address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"with --http: port (default {DEFAULT_PORT})")
    p.add_argument("--log-level", default=os.environ.get("BRAIN_LOG_LEVEL", "WARNING"))
    p.set_defaults(handler=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    from bot.mcp.security import Refused, check_token, parse_hosts

    # stdout is the protocol channel in stdio mode: logs go to stderr.
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from bot.config import Settings

    settings = Settings()
    user = user_id(settings, args)
    # Refused before the SDK and the brain are imported (~2 s of CPU): a bad --user or
    # --vault, off loopback without a token, a bad host list.
    try:
        check_vault(settings, args)
        if args.http:
            check_token(args.host, settings.mcp_token)
            parse_hosts(settings.mcp_allowed_hosts)
    except CommandError as exc:
        return fail(exc.message, exc.code, exc.kind)
    except Refused as exc:
        print(f"brain: not serving: {exc}", file=sys.stderr)
        return 2

    async def go() -> int:
        # Imported inside `run`, under its gen-0 threshold (common.py), as other verbs import
        # the brain: 100 collections during a start instead of 340 (~0.05 s of CPU).
        from bot.mcp.transports import serve_http, serve_stdio  # imports the mcp SDK: only here

        if args.http:
            await serve_http(settings, user_id=user, vault=args.vault, host=args.host,
                             port=args.port)
        else:
            await serve_stdio(settings, user_id=user, vault=args.vault)
        return 0

    try:
        return run(go)
    except Refused as exc:  # (checked above; serve_http checks again as it builds the app)
        print(f"brain: not serving: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # port in use, data dir not writable...
        print(f"brain: cannot start: {exc}", file=sys.stderr)
        return 2
