"""What every verb shares: --vault/--user/--json, opening storage, printing, errors.

Building the parser must stay cheap (`brain --help` in well under 0.3 s): settings (pydantic),
storage (SQLAlchemy) and asyncio are imported by the functions that use them, not here.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.brain import Brain, Store
    from bot.config import Settings


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vault", metavar="DIR", type=Path,
                        help="use DIR as the vault, as it is")
    parser.add_argument("--user", metavar="ID",
                        help="act for this user (default: BRAIN_OWNER, else 'local')")
    parser.add_argument("--json", action="store_true", help="print JSON")


def port_number(text: str) -> int:
    """A TCP port for --port (argparse type): 1-65535, else a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a whole number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {value}")
    return value


def vault_path(settings: Settings, args: argparse.Namespace) -> Path:
    if getattr(args, "vault", None) is not None:
        return Path(args.vault)
    return settings.vault_for(user_id(settings, args))


def user_id(settings: Settings, args: argparse.Namespace) -> str:
    return getattr(args, "user", None) or settings.default_user


@dataclass(frozen=True)
class Opened:
    """What a verb works with: the settings, the Brain (the one door to storage), the user it
    acts for, and that user's store (the --vault DIR as it is, or their vault)."""

    settings: Settings
    brain: Brain
    user: str
    store: Store


@asynccontextmanager
async def open_brain(args: argparse.Namespace, *, meaning: bool = False,
                     threads: int = 1) -> AsyncIterator[Opened]:
    """The Brain without a language model (storage verbs need none), for --user and --vault.

    With `meaning` (search, reindex) the embedding model starts loading in a worker thread
    before the database opens, so the two overlap; without it, it is never loaded."""
    import asyncio

    from bot.config import Settings

    settings = Settings()
    from bot.index_keeper import cli_model

    model = cli_model(settings, wanted=meaning, threads=threads)
    loading = None
    if meaning:
        loading = asyncio.ensure_future(model.ready())
        await asyncio.sleep(0)  # the model's thread starts before SQLAlchemy is imported
    from bot.brain import Brain

    try:
        brain = await Brain.start(settings, vault_override=getattr(args, "vault", None),
                                  with_llm=False, meaning=model)
        try:
            user = user_id(settings, args)
            yield Opened(settings, brain, user, brain.store_for(user))
        finally:
            await brain.close()
    finally:
        if loading is not None:
            await loading  # never leave the load running: kitoken must not outlive its thread


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def fail(message: str, code: int = 2) -> int:
    print(f"brain: {message}", file=sys.stderr)
    return code


# A verb allocates mostly long-lived objects (its imports, the index rows it reads): with
# Python's default of 700 the cyclic collector's passes took ~65 ms of a `brain search` on 20k
# notes, with 7000 ~40 ms.
SHORT_RUN_GC_THRESHOLD = 7000


def run(coro_fn: Callable[[], Awaitable[int]]) -> int:
    """Run an async verb; expected storage errors become a message and exit code 2."""
    import asyncio

    from storage.errors import Ambiguous, StorageError

    before = gc.get_threshold()
    gc.set_threshold(SHORT_RUN_GC_THRESHOLD, *before[1:])
    try:
        return asyncio.run(coro_fn())  # type: ignore[arg-type]
    except Ambiguous as exc:
        lines = [exc.message] + [f"  {c.path}  ({c.name})" for c in exc.candidates]
        return fail("\n".join(lines))
    except StorageError as exc:
        return fail(exc.message)
    except KeyboardInterrupt:
        return 130
    finally:
        gc.set_threshold(*before)  # as it was: tests run many verbs in one process
