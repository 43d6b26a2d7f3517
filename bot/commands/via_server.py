"""The CLI's read-only verbs answered by a running `brain serve` / `brain mcp`
(bot/local_socket.py): the server's half (`answering_cli`) and the CLI's (`ask_server`).

Both halves name the data the same way (`identity`), so a CLI asks only a server of its own
data directory, vault root, database and vault; a verb run with a server that serves other
data runs in the CLI's own process.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot import local_socket

if TYPE_CHECKING:
    from bot.brain import Brain
    from bot.config import Settings

# Set (to anything) to make a verb run in its own process even with a server running.
NO_SERVER = "BRAIN_CLI_LOCAL"


def identity(settings: Settings, vault: Path | str | None) -> list[str]:
    return [str(Path(settings.data_dir).resolve()), str(Path(settings.vault_root).resolve()),
            settings.db_url(), str(Path(vault).resolve()) if vault else ""]


def ask_server(cli_args: argparse.Namespace, verb: str, args: dict[str, Any]) -> Any | None:
    """The served result of `verb` for the CLI's --user/--vault, or None: run it here (also
    when the arguments are wrong: the local run says how, as it always has)."""
    if os.environ.get(NO_SERVER):
        return None
    from bot.commands.common import check_vault, user_id
    from bot.config import Settings

    try:
        settings = Settings()
        check_vault(settings, cli_args)
        vault = getattr(cli_args, "vault", None)
        key = identity(settings, vault)
    except Exception:
        return None
    return local_socket.ask_running(key, verb, {**args, "user": user_id(settings, cli_args)})


@contextlib.asynccontextmanager
async def answering_cli(brain: Brain, vault: Path | str | None) -> AsyncIterator[Path | None]:
    """While the block runs, this process answers the CLI's `search` and `ask`."""
    from bot.commands.common import SEARCH_EMBED_SECONDS

    async def ready(user: str) -> None:
        """As the CLI's own run: notes without vectors get them first. When meaning is off or
        some are still waiting, the CLI runs the verb itself (it says so). No rescan: the
        indexer's, at most a few seconds old, is trusted (the README says so)."""
        store = brain.store_for(user)
        stats = await brain.stores.catch_up(store, budget=SEARCH_EMBED_SECONDS, rescan=False)
        if stats is None or stats.pending:
            raise RuntimeError("search by meaning is not ready here")

    async def search(args: dict[str, Any]) -> Any:
        await ready(str(args["user"]))
        store = brain.store_for(str(args["user"]))
        found = await store.search(str(args["query"]), category=args.get("category"),
                                   limit=int(args["limit"]))
        return found.to_dict()

    async def ask(args: dict[str, Any]) -> Any:
        await ready(str(args["user"]))
        return await brain.answers.ask(user_id=str(args["user"]), question=str(args["question"]))

    async with local_socket.serving(identity(brain.settings, vault),
                                    {"search": search, "ask": ask}) as path:
        yield path
