"""`brain search` and `brain ask` answered by a running `brain mcp` of the same data (a local
socket, real processes): the same output as a run of their own, and never needed: a server
that was killed, one of other data, or a socket folder others may enter, and the verb runs in
the CLI's own process with the same answer.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.commands.via_server import identity
from bot.config import Settings
from bot.local_socket import socket_path
from tests.brain_cli import REPO, Result, run_process
from tests.databases import database_env

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="Unix sockets")

NOTES = {
    "projects/offsite.md": "---\nname: Offsite\ncategory: projects\n---\nWe decided to hold "
                           "the spring offsite in Sintra because the venue fits all 60 people.\n",
    "people/priya.md": "---\nname: Priya\ncategory: people\n---\nPriya is moving to Lisbon in "
                       "January and will work remotely.\n",
}


def _vault(root: Path) -> Path:
    vault = root / "vault"
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    return vault


@pytest.fixture
def sockets() -> Iterator[Path]:
    """A temp folder of the test's own for the socket's folder (TMPDIR), short enough for a
    socket's path."""
    folder = Path(tempfile.mkdtemp(prefix="bs", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _env(tmp: Path, db: dict[str, str], sockets: Path) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp / "data"), "TMPDIR": str(sockets), **db}


def _sock(tmp: Path, db: dict[str, str], vault: Path, sockets: Path) -> Path:
    settings = Settings(_env_file=None, BRAIN_DATA_DIR=tmp / "data",  # type: ignore[call-arg]
                        DATABASE_URL=db.get("DATABASE_URL"))
    name = socket_path(identity(settings, vault)).name
    return sockets / f"brain-{os.getuid()}" / name


@contextmanager
def server(tmp: Path, env: dict[str, str], vault: Path, sock: Path) -> Iterator[
        subprocess.Popen[str]]:
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_"))
            and k != "DATABASE_URL"}
    full.update(env, PYTHONPATH=str(REPO))
    # `brain mcp` over stdio, its client silent (stdin stays open): it serves until stopped
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "mcp", "--vault", str(vault),
                             "--log-level", "info"], env=full, cwd=tmp, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no socket: {proc.communicate()}")
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _both(tmp: Path, env: dict[str, str], *argv: str) -> tuple[Result, Result]:
    """The verb as a user runs it, and the same verb made to run in its own process."""
    served = run_process(tmp, *argv, env=env)
    local = run_process(tmp, *argv, env={**env, "BRAIN_CLI_LOCAL": "1"})
    return served, local


def test_a_running_server_answers_the_same_and_a_killed_one_is_not_needed(
        tmp_path: Path, sockets: Path) -> None:
    vault, db = _vault(tmp_path), database_env(tmp_path)
    env = _env(tmp_path, db, sockets)
    sock = _sock(tmp_path, db, vault, sockets)
    search = ("search", "Sintra offsite", "--vault", str(vault), "--json")
    ask = ("ask", "where is Priya moving?", "--vault", str(vault), "--json")
    with server(tmp_path, env, vault, sock) as proc:
        assert sock.stat().st_mode & 0o777 == 0o600
        assert sock.parent.stat().st_mode & 0o777 == 0o700
        for argv in (search, ask):
            served, local = _both(tmp_path, env, *argv)
            assert served.json() == local.json()
        assert served.json()["sources"][0]["path"] == "people/priya.md"
        _out, err = proc.communicate(timeout=30)  # its client leaves: a clean stop
    assert "answered the CLI's search" in err and "answered the CLI's ask" in err
    assert not sock.exists()  # a clean stop takes its socket away

    with server(tmp_path, env, vault, sock) as proc:
        proc.kill()  # kill -9: the socket file stays behind, nobody listens
        proc.wait()
        assert sock.exists()
        served, local = _both(tmp_path, env, *search)
        assert served.code == 0 and served.json() == local.json()
        assert served.json()["entries"][0]["path"] == "projects/offsite.md"


def test_a_server_of_other_data_or_an_open_socket_folder_is_not_asked(
        tmp_path: Path, sockets: Path) -> None:
    vault, db = _vault(tmp_path), database_env(tmp_path)
    env = _env(tmp_path, db, sockets)
    sock = _sock(tmp_path, db, vault, sockets)
    other = tmp_path / "elsewhere"
    other.mkdir()
    with server(tmp_path, env, vault, sock) as proc:
        # Another vault of the same data directory: its own answer, from its own process.
        empty = run_process(tmp_path, "search", "Sintra", "--vault", str(other), "--json",
                            env=env)
        assert empty.json()["entries"] == []
        # A socket folder others may enter is never trusted.
        sock.parent.chmod(0o755)
        try:
            run_process(tmp_path, "search", "Sintra", "--vault", str(vault), env=env)
        finally:
            sock.parent.chmod(0o700)
        _out, err = proc.communicate(timeout=30)  # its client leaves: a clean stop
    assert "answered the CLI's" not in err
