"""The `brain` command. Each group of verbs lives in its own module under bot/commands/."""

from __future__ import annotations

import argparse
import gc
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from bot.commands import (
    add,
    ask,
    chat,
    digest,
    history_cmds,
    mcp_server,
    privacy,
    serve,
    storage_cmds,
    sync_cmds,
)
from bot.commands.common import (
    EXIT_USAGE,
    BrainParser,
    UsageExit,
    VerbParser,
    configuration_problem,
    crashed,
    fail,
    json_errors,
    version,
)

COMMAND_MODULES = (add, storage_cmds, history_cmds, ask, chat, digest, serve, mcp_server, privacy,
                   sync_cmds)


def build_parser() -> argparse.ArgumentParser:
    parser = BrainParser(
        prog="brain",
        description="Second Brain for Slack: file thoughts as markdown notes, ask them back.",
        epilog="Data (database, vaults, history) lives in the platform's data folder "
               "(~/.local/share/second-brain on Linux; `brain doctor` prints it) unless "
               "BRAIN_DATA_DIR says otherwise; a ./brain-data in the working directory, from "
               "an older version, is still used. A message (chat, add) is at most 40,000 "
               "characters of text. Exit codes: 0 done; 1 the command could not be done (not "
               "found, ambiguous, refused); 2 the command line or the settings are wrong "
               "(nothing was opened or changed); 130 interrupted. With --json, errors are JSON "
               "on stdout too.",
    )
    parser.add_argument("--version", action="version", version=f"brain {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=VerbParser)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    with json_errors("--json" in args_list):
        parser = build_parser()
        try:
            args = parser.parse_args(args_list)
        except UsageExit as exc:
            return exc.code
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            return 0
        try:
            code: int = handler(args)
        except Exception as exc:
            problem = configuration_problem(exc)
            if problem is not None:
                return fail(f"the configuration cannot be used: {problem}", EXIT_USAGE,
                            "config")
            return crashed(exc)  # a bug: one line for the user, the traceback in a file
        return code


def run() -> NoReturn:
    """The console command: `main`, then exit without Python's last garbage collections over
    every object the imports made (~70 ms for SQLAlchemy and pydantic); the process ends."""
    try:
        code = main()
    except KeyboardInterrupt:  # before a verb took over (imports, parsing)
        code = 130
    # Done: a Ctrl-C pressed once more (twice at a prompt) must not turn the exit status
    # into a death by SIGINT or print a traceback from the interpreter's shutdown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
