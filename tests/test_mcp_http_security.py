"""`brain mcp --http` from a browser's point of view (DNS rebinding) and from the network's
(the bearer token): real server processes, raw HTTP requests and the SDK's own client.

A page on evil.example can make a browser send requests to a server on the user's machine; with
a DNS name that resolves there it can read the answers. Every bind address gets the SDK's
Host/Origin checks with our list; off loopback a token is required as well.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.test_cli_mcp import wait_healthy

REPO = Path(__file__).resolve().parents[1]
TOKEN = "t0ken-for-the-tests-0123456789"
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "rebinding-test", "version": "1"}}}).encode()


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    from tests.databases import database_env

    env.update(database_env(tmp_path))
    env.update({"BRAIN_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO),
                "BRAIN_LLM": "offline"}, **extra)
    return env


def _command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "bot.cli", "mcp", "--http", "--host", host, "--port", str(port)]


@contextmanager
def served(tmp_path: Path, host: str, **env: str) -> Iterator[int]:
    """`brain mcp --http --host HOST` on a free port, until the block ends (SIGTERM)."""
    port = _free_port()
    proc = subprocess.Popen(_command(host, port), env=_env(tmp_path, **env), cwd=tmp_path,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    connect = "127.0.0.1" if host in ("0.0.0.0", "127.0.0.1") else host
    try:
        wait_healthy(proc, f"http://{connect}:{port}/health")
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def initialize(address: str, port: int, **headers: str) -> tuple[int, str]:
    """POST an `initialize` to /mcp at address:port with these headers: (status, body)."""
    request = urllib.request.Request(f"http://{address}:{port}/mcp", data=INITIALIZE,
                                     method="POST", headers={
                                         "Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream",
                                         **{k.replace("_", "-"): v for k, v in headers.items()}})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(2000).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_loopback_bind_refuses_foreign_host_and_origin_and_null(tmp_path: Path) -> None:
    with served(tmp_path, "127.0.0.1") as port:
        assert initialize("127.0.0.1", port, Host="evil.example")[0] == 421
        assert initialize("127.0.0.1", port, Host=f"evil.example:{port}")[0] == 421
        assert initialize("127.0.0.1", port, Origin="http://evil.example")[0] == 403
        assert initialize("127.0.0.1", port, Origin="null")[0] == 403
        ok, body = initialize("127.0.0.1", port, Origin=f"http://localhost:{port}")
        assert ok == 200, body
        assert initialize("127.0.0.1", port, Host=f"localhost:{port}")[0] == 200


def test_other_loopback_addresses_are_protected_too(tmp_path: Path) -> None:
    """127.0.0.2 is loopback but not one of the SDK's three names: it was left open."""
    with served(tmp_path, "127.0.0.2") as port:
        assert initialize("127.0.0.2", port, Host=f"evil.example:{port}")[0] == 421
        assert initialize("127.0.0.2", port, Origin="null")[0] == 403
        assert initialize("127.0.0.2", port)[0] == 200  # Host: 127.0.0.2:port, the bind


def test_a_non_loopback_bind_needs_a_token(tmp_path: Path) -> None:
    port = _free_port()
    for env, why in (({}, "set BRAIN_MCP_TOKEN"), ({"BRAIN_MCP_TOKEN": "short"}, "too short")):
        proc = subprocess.run(_command("0.0.0.0", port), env=_env(tmp_path, **env),
                              cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, proc.stderr
        assert why in proc.stderr and "Traceback" not in proc.stderr
    with socket.socket() as sock:  # nothing was left listening
        sock.bind(("0.0.0.0", port))


async def test_token_and_rebinding_on_a_non_loopback_bind(tmp_path: Path) -> None:
    with served(tmp_path, "0.0.0.0", BRAIN_MCP_TOKEN=TOKEN,
                BRAIN_MCP_ALLOWED_HOSTS="brain.test, other.test:9999") as port:
        bearer = f"Bearer {TOKEN}"
        assert initialize("127.0.0.1", port)[0] == 401
        assert initialize("127.0.0.1", port, Authorization="Bearer wrong-token-0123456789")[0] \
            == 401
        assert initialize("127.0.0.1", port, Authorization=TOKEN)[0] == 401  # no scheme
        # the token does not stand in for the Host check: a rebinding page cannot have it,
        # but a leaked one must not open the server to any name either
        assert initialize("127.0.0.1", port, Authorization=bearer,
                          Host=f"evil.example:{port}")[0] == 421
        assert initialize("127.0.0.1", port, Authorization=bearer, Origin="null")[0] == 403
        assert initialize("127.0.0.1", port, Authorization=bearer,
                          Host=f"other.test:{port}")[0] == 421  # only its port 9999
        for host, origin in ((f"brain.test:{port}", "https://brain.test"),
                             ("brain.test", "https://brain.test"),
                             ("other.test:9999", "http://other.test:9999"),
                             (f"127.0.0.1:{port}", f"http://localhost:{port}")):
            status, body = initialize("127.0.0.1", port, Authorization=bearer, Host=host,
                                      Origin=origin)
            assert status == 200, (host, body)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            assert json.loads(r.read()) == {"ok": True}  # health needs no token

        client = create_mcp_http_client(headers={"Authorization": bearer})
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client)
        async with Client(transport, read_timeout_seconds=30) as mcp:
            listed = (await mcp.list_tools()).tools
        assert "search_entries" in {t.name for t in listed}


def test_a_bad_allowed_hosts_value_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(_command("127.0.0.1", _free_port()),
                          env=_env(tmp_path, BRAIN_MCP_ALLOWED_HOSTS="https://brain.test/"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "BRAIN_MCP_ALLOWED_HOSTS" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("port", ["99999", "0", "http"])
def test_a_bad_port_is_a_usage_error(tmp_path: Path, port: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "mcp", "--http", "--port", port],
                          env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "port must be" in proc.stderr
    assert "Traceback" not in proc.stderr
