"""A running `brain serve` / `brain mcp` answers the CLI's read-only verbs (`search`, `ask`)
over a local socket, so a one-shot command does not load the model, the vectors and the index
again: the process that already holds them answers in milliseconds.

The socket is `<tmp>/brain-<uid>/<hash>.sock`: a folder only this OS user may enter (0700,
ours, else not used), named by a hash of the data directory and the vault the server serves,
so a CLI finds only a server of its own data and vault. The server also checks the peer's uid
(SO_PEERCRED where the OS has it). The CLI asks only when the answer would be the same as its
own; anything else (no server, a socket left by a killed one, a refusal, a timeout, an error)
runs the verb in the CLI's process as before, so a server is never needed.

What a served answer sees: the server's index, which rescans the vault every 2 s; an edit made
outside the bot in the last moments may be missed where a one-shot command rescans first.

The client half imports the standard library only: it runs before anything heavy loads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import stat
import struct
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `brain --help` imports this module: asyncio loads when a server starts
    import asyncio

log = logging.getLogger(__name__)

PROTOCOL = 1
ASK_TIMEOUT = 30.0  # seconds the CLI waits for a served answer before it answers itself
MAX_REQUEST = 64 * 1024

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


def socket_path(identity: list[str]) -> Path:
    """Where the server of this data (its directory, vault root, database, vault override:
    `identity`) listens."""
    digest = hashlib.sha256("\0".join(identity).encode()).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"brain-{os.getuid()}" / f"{digest}.sock"


def _private_folder(folder: Path, *, make: bool) -> bool:
    """The socket's folder exists (made when `make`), is ours and no one else may enter it."""
    if make:
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and stat.S_IMODE(info.st_mode) & 0o077 == 0)


# -- the CLI's side ------------------------------------------------------------------------------

def ask_running(identity: list[str], verb: str, args: dict[str, Any], *,
                timeout: float = ASK_TIMEOUT) -> Any | None:
    """The result of `verb` from a running server of the same data, or None when there is
    none to ask or it did not answer (the caller then runs the verb itself)."""
    path = socket_path(identity)
    if not _private_folder(path.parent, make=False):
        return None
    request = json.dumps({"v": PROTOCOL, "verb": verb, "args": args}).encode() + b"\n"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(request)
            reply = _read_line(sock)
    except OSError:  # no server, a stale socket, a timeout: answer locally
        return None
    try:
        answer = json.loads(reply)
    except ValueError:
        return None
    if not isinstance(answer, dict) or not answer.get("ok"):
        return None
    return answer.get("result")


def _read_line(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


# -- the server's side ---------------------------------------------------------------------------

@contextlib.asynccontextmanager
async def serving(identity: list[str],
                  handlers: dict[str, Handler]) -> AsyncIterator[Path | None]:
    """Listen for the CLI while the block runs (None when it cannot: the CLI then answers
    itself). A socket of a server that is still running is left alone."""
    import asyncio

    path = socket_path(identity)
    server = None
    try:
        if not _private_folder(path.parent, make=True):
            log.warning("not answering the CLI: %s is not a private folder", path.parent)
        elif _alive(path):
            log.info("another process of this data directory answers the CLI at %s", path)
        else:
            server = await asyncio.start_unix_server(
                lambda r, w: _serve_one(r, w, handlers), sock=_bound(path), limit=MAX_REQUEST)
    except OSError as exc:
        log.warning("not answering the CLI at %s: %s", path, exc)
        server = None
    try:
        yield path if server is not None else None
    finally:
        if server is not None:
            server.close()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            await server.wait_closed()


def _bound(path: Path) -> socket.socket:
    """A listening socket at `path`, reachable by its owner only from the first moment: bound
    under a temporary name, made 0600, then renamed over a killed server's leftover."""
    temp = path.with_name(f".{os.getpid()}.{path.name}")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(temp))
        os.chmod(temp, 0o600)
        sock.listen(64)
        os.replace(temp, path)
    except OSError:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    return sock


def _alive(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def _peer_is_us(writer: asyncio.StreamWriter) -> bool:
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return True  # the folder's permissions are the guard where the OS has no SO_PEERCRED
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


async def _serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     handlers: dict[str, Handler]) -> None:
    import asyncio

    try:
        if not _peer_is_us(writer):
            reply: dict[str, Any] = {"ok": False, "error": "not this user's server"}
        else:
            reply = await _answer(await reader.readline(), handlers)
        writer.write(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")
        await writer.drain()
    except (OSError, ValueError, asyncio.LimitOverrunError) as exc:
        log.info("a CLI request went unanswered: %s", exc)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def _answer(line: bytes, handlers: dict[str, Handler]) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except ValueError:
        return {"ok": False, "error": "not JSON"}
    if not isinstance(request, dict) or request.get("v") != PROTOCOL:
        return {"ok": False, "error": "another protocol"}
    handler = handlers.get(str(request.get("verb")))
    args = request.get("args")
    if handler is None or not isinstance(args, dict):
        return {"ok": False, "error": "unknown verb"}
    try:
        result = await handler(args)
        log.info("answered the CLI's %s", request.get("verb"))
        return {"ok": True, "result": result}
    except Exception as exc:  # the CLI answers itself, and says what went wrong in its words
        log.info("a served %s failed: %s", request.get("verb"), exc)
        return {"ok": False, "error": str(exc)}
