"""Who may talk to `brain mcp --http`: the Host and Origin a request may carry (DNS rebinding),
and the bearer token (`BRAIN_MCP_TOKEN`) required on any address but loopback.

A web page the user opens can make their browser send requests to a server on their machine
or network; with a DNS name of its own that resolves to that address (DNS rebinding) the page
even reads the answers. The SDK checks Host and Origin only when told what to allow, and on
its own only for three literal loopback names, so we pass the settings for every bind
address: the loopback names, the bound address itself and `BRAIN_MCP_ALLOWED_HOSTS`. Origin
`null` (sandboxed frames, `file:` pages) is never on the list, so it is refused. A request
without an Origin (a desktop client, curl) passes the Origin check, not the Host check.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING

# Only for types: `brain mcp` checks its token and host list with this module before it
# imports the SDK (~1 s of CPU), so a refused start stays cheap.
if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
MIN_TOKEN_CHARS = 16
OPEN_PATHS = frozenset({"/health"})  # says only {"ok": true}: load balancers need no token


class Refused(ValueError):
    """The server must not start as asked (a non-loopback bind without a token...)."""


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    """IPv6 addresses appear in Host headers and origins in brackets."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare


def parse_hosts(text: str | None) -> list[str]:
    """`BRAIN_MCP_ALLOWED_HOSTS`: comma-separated names, `name:port` or `name:*`."""
    hosts = []
    for part in (text or "").split(","):
        item = part.strip()
        if not item:
            continue
        if "/" in item or "*" in item.rsplit(":", 1)[0] or " " in item:
            raise Refused(f"BRAIN_MCP_ALLOWED_HOSTS: {item!r} is not a host name (give names "
                          "like brain.example.com, brain.example.com:8443 or brain:*)")
        if item.count(":") > 1 and not item.startswith("["):
            item = f"[{item}]"  # a bare IPv6 address
        hosts.append(item.lower())
    return hosts


def _with_ports(host: str) -> list[str]:
    """A Host value as the SDK matches it: `name:port` and `name:*` as given, a bare name with
    any port or none."""
    bare = host[1:host.index("]")] if host.startswith("[") else host.split(":", 1)[0]
    shown = f"[{bare}]" if host.startswith("[") else bare
    if host != shown:  # a port (or :*) was given
        return [host]
    return [host, f"{host}:*"]


def transport_security(bind: str, allowed: Iterable[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection for a server bound to `bind`: the loopback names, the bound
    address (unless it is 0.0.0.0 / ::) and the configured names, as Host and as Origin."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = list(LOOPBACK_NAMES)
    if not _unspecified(bind) and _bracketed(bind).lower() not in names:
        names.append(_bracketed(bind).lower())
    names += [h for h in allowed if h not in names]
    hosts: list[str] = []
    for name in names:
        hosts += [h for h in _with_ports(name) if h not in hosts]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=hosts, allowed_origins=origins)


def check_token(bind: str, token: str | None) -> str | None:
    """The token to require, or None; Refused when the bind needs one and has none."""
    token = (token or "").strip() or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise Refused(f"BRAIN_MCP_TOKEN is too short ({len(token)} characters; use at least "
                      f"{MIN_TOKEN_CHARS}, e.g. the output of "
                      "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    if token is None and not is_loopback(bind):
        raise Refused(f"--host {bind} is reachable from other machines: set BRAIN_MCP_TOKEN "
                      "(clients then send `Authorization: Bearer <token>`), or serve on "
                      "127.0.0.1")
    return token


class BearerToken:
    """ASGI middleware: every request but /health carries `Authorization: Bearer <token>`
    (compared in constant time), else 401 with `WWW-Authenticate: Bearer`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = b'{"error": "unauthorized: send Authorization: Bearer <BRAIN_MCP_TOKEN>"}'
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="brain"')]})
        await send({"type": "http.response.body", "body": body})
