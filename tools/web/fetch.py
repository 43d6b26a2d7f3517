"""Fetching a page someone shared, and nothing else: only http(s); every hop's address is
checked after DNS (loopback, private, link-local, multicast and reserved ones are refused, the
check is the one the connection uses, so a second lookup cannot swap the address); redirects
are followed by hand (five at most), each checked again; 10 s and 5 MB at most; no cookies; a
user agent naming the app. Hosts in BRAIN_FETCH_ALLOW_HOSTS (an intranet wiki) skip the
address check."""

from __future__ import annotations

import functools
import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlparse

# aiohttp (~0.15 s of imports) is imported by `fetch`, when a page is fetched: every process
# that has the tools (`brain mcp`, `brain chat`, ...) imports this module at start.
if TYPE_CHECKING:
    from aiohttp.abc import AbstractResolver

USER_AGENT = "SecondBrainForSlack/0.1 (link capture; +https://github.com/second-brain-slack)"
TIMEOUT_SECONDS = 10
CONNECT_SECONDS = 5
MAX_BYTES = 5 * 2**20
MAX_REDIRECTS = 5
CHUNK = 1 << 16


class Refused(Exception):
    """A fetch that was not attempted (or stopped) on purpose; the message says why."""


class Failed(Exception):
    """A fetch that was attempted and did not work (timeout, 404, too big)."""


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    content_type: str
    data: bytes


def public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def allow_set(setting: str | None) -> frozenset[str]:
    return frozenset(h.strip().lower().strip("[]") for h in (setting or "").split(",")
                     if h.strip())


@functools.cache
def _checking_resolver() -> type[AbstractResolver]:
    """The resolver class (made on the first fetch: it subclasses aiohttp's)."""
    from aiohttp.abc import AbstractResolver, ResolveResult
    from aiohttp.resolver import DefaultResolver

    class CheckingResolver(AbstractResolver):
        """The default resolver, refusing a name whose addresses are not all public."""

        def __init__(self, allow: frozenset[str]) -> None:
            self._inner = DefaultResolver()
            self._allow = allow

        async def resolve(self, host: str, port: int = 0,
                          family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
            found = await self._inner.resolve(host, port, family)
            if host.lower() not in self._allow:
                for r in found:
                    if not public(r["host"]):
                        raise Refused(f"{host} is a private or local address ({r['host']})")
            return found

        async def close(self) -> None:
            await self._inner.close()

    return CheckingResolver


def check_url(url: str, allow: frozenset[str]) -> str:
    """The host of a URL that may be fetched; Refused otherwise (before any connection)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        raise Refused(f"only http and https links are fetched, not {parsed.scheme or 'this'}:")
    host = (parsed.hostname or "").lower()
    if not host:
        raise Refused("the link has no host")
    if parsed.username or parsed.password:
        raise Refused("links with a user name or password in them are not fetched")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        return host  # a name: the resolver checks what it resolves to
    if host not in allow and not public(str(literal)):
        raise Refused(f"{host} is a private or local address")
    return host


async def fetch(url: str, allow: frozenset[str] = frozenset()) -> Fetched:
    """The page at `url` (following checked redirects). Raises Refused or Failed."""
    import aiohttp

    resolver = _checking_resolver()(allow)  # type: ignore[call-arg]
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml,"
               "application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5"}
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS, sock_connect=CONNECT_SECONDS)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers,
                                     cookie_jar=aiohttp.DummyCookieJar()) as session:
        for _hop in range(MAX_REDIRECTS + 1):
            check_url(url, allow)
            try:
                async with session.get(url, allow_redirects=False) as resp:
                    if resp.status in (301, 302, 303, 307, 308) and "Location" in resp.headers:
                        url = urljoin(url, resp.headers["Location"])
                        continue
                    if resp.status >= 400:
                        raise Failed(f"the site answered HTTP {resp.status}")
                    return Fetched(str(resp.url), resp.headers.get("Content-Type", ""),
                                   await _body(resp))
            except (Refused, Failed):
                raise
            except aiohttp.ClientConnectorError as exc:
                if isinstance(exc.__cause__, Refused) or isinstance(exc.os_error, Refused):
                    raise Refused(str(exc.os_error)) from None
                raise Failed(f"could not connect ({exc.os_error.strerror or exc})") from None
            except TimeoutError:
                raise Failed(f"no answer within {TIMEOUT_SECONDS} s") from None
            except (aiohttp.ClientError, ValueError, UnicodeError) as exc:
                raise Failed(f"the fetch failed ({type(exc).__name__})") from None
        raise Failed(f"more than {MAX_REDIRECTS} redirects")


async def _body(resp: Any) -> bytes:
    declared = resp.content_length
    if declared is not None and declared > MAX_BYTES:
        raise Failed(f"the page is over {MAX_BYTES // 2**20} MB")
    out = bytearray()
    async for chunk in resp.content.iter_chunked(CHUNK):
        out += chunk
        if len(out) > MAX_BYTES:
            raise Failed(f"the page is over {MAX_BYTES // 2**20} MB")
    return bytes(out)
