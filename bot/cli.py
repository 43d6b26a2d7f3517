"""The `brain` command. Each group of verbs lives in its own module under bot/commands/."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import NoReturn

from bot.commands import ask, chat, digest, mcp_server, privacy, serve, storage_cmds

COMMAND_MODULES = (storage_cmds, ask, chat, digest, serve, mcp_server, privacy)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="brain",
        description="Second Brain for Slack: file thoughts as markdown notes, ask them back.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    code: int = handler(args)
    return code


def run() -> NoReturn:
    """The console command: `main`, then exit without Python's last garbage collections over
    every object the imports made (~70 ms for SQLAlchemy and pydantic); the process ends."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
