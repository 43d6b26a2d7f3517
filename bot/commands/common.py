"""What every verb shares: --vault/--user/--json, opening storage, printing, errors.

Building the parser must stay cheap (`brain --help` in well under 0.3 s): settings (pydantic),
storage (SQLAlchemy) and asyncio are imported by the functions that use them, not here.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from bot.brain import Brain, Store
    from bot.config import Settings


# Exit codes (README, `brain --help`): 0 done; 1 the command could not be done (not found,
# ambiguous, refused by the vault); 2 the command line is wrong and nothing was opened or
# changed; 130 interrupted.
EXIT_ERROR = 1
EXIT_USAGE = 2

_json_errors: ContextVar[bool] = ContextVar("json_errors", default=False)


@contextmanager
def json_errors(on: bool) -> Iterator[None]:
    """While on (the command line has --json), errors are printed as JSON on stdout."""
    token = _json_errors.set(on)
    try:
        yield
    finally:
        _json_errors.reset(token)


def version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("second-brain-slack")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class UsageExit(Exception):
    """argparse refused the command line (already printed); `code` is the exit status."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class BrainParser(argparse.ArgumentParser):
    """argparse, with its refusals as JSON under --json, and no SystemExit for them."""

    def error(self, message: str) -> NoReturn:
        if _json_errors.get():
            print_json({"error": {"kind": "usage", "message": f"{self.prog}: {message}",
                                  "exit": EXIT_USAGE}})
        else:
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise UsageExit(EXIT_USAGE)


class VerbParser(BrainParser):
    """A verb's parser: options are accepted anywhere among its words
    (`brain search budget --json q3` as well as `brain search --json budget q3`)."""

    _mixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._mixing:  # the two passes of parse_known_intermixed_args
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vault", metavar="DIR", type=Path,
                        help="use DIR as the vault, as it is (it must exist; see --create)")
    parser.add_argument("--user", metavar="ID",
                        help="act for this user (default: BRAIN_OWNER, else 'local'); another "
                             "user must have a vault already (see --create)")
    parser.add_argument("--create", action="store_true",
                        help="start an empty vault if the --vault DIR or the --user's vault "
                             "does not exist yet")
    parser.add_argument("--json", action="store_true", help="print JSON (errors too)")


def port_number(text: str) -> int:
    """A TCP port for --port (argparse type): 1-65535, else a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a whole number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {value}")
    return value


def user_id(settings: Settings, args: argparse.Namespace) -> str:
    return getattr(args, "user", None) or settings.default_user


def check_vault(settings: Settings, args: argparse.Namespace) -> None:
    """Before anything opens: the vault a verb acts on exists, or --create says to make it.

    `--vault DIR` must be a folder. A user is known when their vault folder exists
    (`<vault root>/<id>`); the default user (BRAIN_OWNER, else `local`) always is, and their
    vault is made on first use. So a typo in --user is an error, not an empty vault."""
    from storage.types import is_user_id

    create = bool(getattr(args, "create", False))
    vault = getattr(args, "vault", None)
    if vault is not None:
        path = Path(vault)
        if path.exists() and not path.is_dir():
            raise CommandError(f"--vault {path} is a file, not a folder", EXIT_USAGE, "usage")
        if not path.exists():
            if not create:
                raise CommandError(f"no vault at {path}: check the path, or add --create to "
                                   "start an empty one there", EXIT_ERROR, "not_found")
            path.mkdir(parents=True)
        return
    user = user_id(settings, args)
    if not is_user_id(user):
        raise CommandError(f"not a valid user id: {user!r}", EXIT_USAGE, "usage")
    if settings.owner and user != settings.owner:  # <root>/<user> is a folder of theirs
        raise CommandError(f"BRAIN_OWNER is set: this brain keeps one vault, {settings.owner}'s "
                           f"(the vault root), and --user names no one else; {user!r} is not "
                           "them. Nothing was opened", EXIT_USAGE, "usage")
    folder = settings.vault_for(user)
    if user == settings.default_user or create or folder.is_dir() or folder.is_symlink():
        return  # (a symlinked folder is refused when the store opens, with its own message)
    if settings.store == "database":
        return  # held in the database, maybe mirrored elsewhere only: asked once it is open
    raise no_vault(settings, user, folder)


async def check_held(brain: Brain, settings: Settings, args: argparse.Namespace, user: str) -> None:
    """The database store: a user with no mirror on this machine is known when the database
    holds their vault (or anything of theirs)."""
    folder = settings.vault_for(user)
    if settings.store != "database" or getattr(args, "vault", None) is not None \
            or user == settings.default_user or getattr(args, "create", False) \
            or folder.is_dir() or await brain.accounts.holds(user):
        return
    raise no_vault(settings, user, folder)


def no_vault(settings: Settings, user: str, folder: Path) -> CommandError:
    return CommandError(f"no vault for user {user!r} (looked for {folder}); check the id"
                       f"{known_users(settings)}, or add --create to start an empty vault for "
                       "them", EXIT_ERROR, "not_found")


def known_users(settings: Settings, most: int = 10) -> str:
    """", known: A, B" for an error message: the vault folders under the vault root."""
    from storage.types import CATEGORIES, TRASH_DIR

    if settings.owner:  # the root is the owner's vault: its folders are not people
        return f" (known: {settings.owner}, the owner)"
    root = settings.vault_root
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and p.name not in CATEGORIES and p.name != TRASH_DIR) if root.is_dir() else []
    if not names:
        return ""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f" (known: {', '.join(names[:most])}{more})"


class CommandError(Exception):
    """What a verb found it cannot do, before or while doing it: a message and exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR, kind: str = "error") -> None:
        super().__init__(message)
        self.message, self.code, self.kind = message, code, kind


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
    check_vault(settings, args)
    from bot.stores import cli_model

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
            await check_held(brain, settings, args, user)
            with brain.acting_as(user, "cli"):  # the history says who changed what, and from where
                yield Opened(settings, brain, user, brain.store_for(user))
        finally:
            await brain.close()
    finally:
        if loading is not None:
            await loading  # never leave the load running: kitoken must not outlive its thread


def print_json(data: Any) -> None:
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    # A lone surrogate (from a model, a file name) cannot be written as UTF-8: "?" instead of
    # a traceback in place of the whole answer.
    print(text.encode("utf-8", "replace").decode("utf-8"))


def fail(message: str, code: int = EXIT_USAGE, kind: str | None = None,
         **extra: Any) -> int:
    """Say what went wrong (stderr, or JSON on stdout under --json); returns `code`."""
    if _json_errors.get():
        kind = kind or ("usage" if code == EXIT_USAGE else "error")
        print_json({"error": {"kind": kind, "message": message, "exit": code, **extra}})
    else:
        print(f"brain: {message}", file=sys.stderr)
    return code


def configuration_problem(exc: BaseException) -> str | None:
    """What is wrong with the settings, when `exc` is about them (a value the environment
    gave, settings that do not go together); None for anything else."""
    from pydantic import ValidationError

    from bot.config import ConfigError, Settings, settings_problem

    if isinstance(exc, ConfigError):
        return str(exc)
    if isinstance(exc, ValidationError) and exc.title == Settings.__name__:
        return settings_problem(exc)
    return None


def crashed(exc: BaseException) -> int:
    """An error no verb expected (a bug): one line (JSON under --json), never a traceback on
    the terminal; the traceback goes to a private file the line names, for the bug report."""
    import tempfile
    import traceback

    where = ""
    try:
        with tempfile.NamedTemporaryFile("w", prefix="brain-error-", suffix=".txt",
                                         delete=False, encoding="utf-8") as f:
            traceback.print_exception(exc, file=f)
        where = f"; the details are in {f.name}"
    except OSError:
        pass
    what = f"{type(exc).__name__}: {' '.join(str(exc).split())}"  # one line
    if len(what) > 300:
        what = what[:299] + "\u2026"
    return fail(f"unexpected error ({what}){where}", EXIT_ERROR, "internal")


# A verb allocates mostly long-lived objects (its imports, the index rows it reads): with
# Python's default of 700 the cyclic collector's passes took ~65 ms of a `brain search` on 20k
# notes, with 7000 ~40 ms.
SHORT_RUN_GC_THRESHOLD = 7000


def run(coro_fn: Callable[[], Awaitable[int]]) -> int:
    """Run an async verb; expected storage errors become a message and exit code 2."""
    import asyncio

    return guarded(lambda: asyncio.run(coro_fn()))  # type: ignore[arg-type]


def guarded(verb: Callable[[], int]) -> int:
    """Run a verb (that runs its own event loop); expected errors become a message and an
    exit code, Ctrl-C exit code 130."""
    from storage.errors import Ambiguous, StorageError

    before = gc.get_threshold()
    gc.set_threshold(SHORT_RUN_GC_THRESHOLD, *before[1:])
    try:
        return verb()
    except Ambiguous as exc:
        if _json_errors.get():
            return fail(exc.message, EXIT_ERROR, "ambiguous",
                        candidates=[{"path": c.path, "name": c.name} for c in exc.candidates])
        lines = [exc.message] + [f"  {c.path}  ({c.name})" for c in exc.candidates]
        return fail("\n".join(lines), EXIT_ERROR)
    except CommandError as exc:
        return fail(exc.message, exc.code, exc.kind)
    except StorageError as exc:  # its code: not_found, invalid, unsafe_path, changed_since
        return fail(exc.message, EXIT_ERROR, exc.code)
    except KeyboardInterrupt:
        return 130
    finally:
        gc.set_threshold(*before)  # as it was: tests run many verbs in one process


# Vectors a verb gives notes that lack them before it searches by meaning, and after a write:
# a first search of a vault nobody reindexed embeds it (resumably) instead of silently
# searching by words alone; a note written from the CLI is found by meaning next time.
SEARCH_EMBED_SECONDS = 60.0  # a first search of a few hundred short notes embeds them all
WRITE_EMBED_SECONDS = 3.0


async def meaning_ready(opened: Opened, *, quiet: bool) -> None:
    """Before a search by meaning: give the vault's notes without vectors theirs (newest
    first, for up to SEARCH_EMBED_SECONDS; the rest next time), saying so on stderr."""
    from bot.commands.progress import ProgressLine

    line = ProgressLine(sys.stderr, label="vectors for search by meaning", quiet=quiet)
    told = False

    def progress(done: int, total: int, seconds: float) -> None:
        nonlocal told
        if total and not told and not line.live:
            print(f"brain: giving {total:,} passage(s) of your notes vectors for search by "
                  "meaning (once; resumable)", file=sys.stderr)
            told = True
        line.update(done, total, seconds)

    stats = await opened.brain.stores.catch_up(opened.store, budget=SEARCH_EMBED_SECONDS,
                                                progress=progress)
    line.done()
    if stats is None:
        print(f"brain: search by meaning is off ({opened.store.meaning.why}); searching by "
              "words and names only", file=sys.stderr)
    elif stats.pending:
        print(f"brain: {stats.pending:,} passage(s) still have no vectors, so search by "
              "meaning does not see them yet; each search gives more of them theirs, or `brain "
              "reindex` gives all of them at once", file=sys.stderr)


async def embed_written(opened: Opened) -> None:
    """After a write: the notes just written (the newest) get their vectors."""
    await opened.brain.stores.catch_up(opened.store, budget=WRITE_EMBED_SECONDS, window=8)
