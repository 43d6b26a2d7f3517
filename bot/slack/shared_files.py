"""Files shared in a Slack message: what of them the job keeps (`files_of`), and fetching
them with the bot token (`files_download`, Slack's `url_private_download`: the `files:read`
scope). The token goes to Slack's file host only (or the test's fake Slack); a file Slack
will not give, or one over the size limit, is named with why, never lost silently."""

from __future__ import annotations

import logging
import tempfile
from typing import Any
from urllib.parse import urlparse

import aiohttp

from tools.readers.sections import SharedFile

log = logging.getLogger(__name__)

MAX_FILES = 10  # files read from one message; the rest are linked
SLACK_FILE_HOSTS = {"files.slack.com"}
TIMEOUT = aiohttp.ClientTimeout(total=60, sock_connect=10)
CHUNK = 1 << 16


def files_of(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The files of a message event, as the job's payload keeps them (no file bytes)."""
    out = []
    found = event.get("files")
    for f in found if isinstance(found, list) else []:
        if not isinstance(f, dict) or not f.get("id"):
            continue
        out.append({"id": str(f["id"]), "name": str(f.get("name") or f.get("title") or f["id"]),
                    "size": f["size"] if isinstance(f.get("size"), int) else 0,
                    "url": str(f.get("url_private_download") or f.get("url_private") or ""),
                    "permalink": str(f.get("permalink") or "")})
    return out


def _allowed(url: str, api_url: str | None) -> bool:
    parsed = urlparse(url)
    hosts = set(SLACK_FILE_HOSTS)
    if api_url:  # a test's fake Slack (SLACK_API_URL) serves its files too
        hosts.add(urlparse(api_url).hostname or "")
    return parsed.scheme in ("https", "http") and (parsed.hostname or "") in hosts and (
        parsed.scheme == "https" or bool(api_url))


async def files_download(token: str, api_url: str | None, files: list[dict[str, Any]],
                         max_bytes: int) -> list[SharedFile]:
    """Each file's bytes, or why it is not here (too big, refused, not Slack's)."""
    out: list[SharedFile] = []
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        for n, f in enumerate(files):
            name, link = f["name"], f.get("permalink") or None
            if n >= MAX_FILES:
                out.append(SharedFile(name, None, link, f"only {MAX_FILES} files are read "
                                                        "from one message"))
            elif f.get("size", 0) > max_bytes:
                out.append(SharedFile(name, None, link, f"it is over BRAIN_MAX_FILE_MB "
                                                        f"({max_bytes / 2**20:g} MB)"))
            elif not _allowed(f.get("url", ""), api_url):
                out.append(SharedFile(name, None, link, "Slack gave no download address"))
            else:
                out.append(await _fetch(session, token, f["url"], name, link, max_bytes))
    return out


async def _fetch(session: aiohttp.ClientSession, token: str, url: str, name: str,
                 link: str | None, max_bytes: int) -> SharedFile:
    try:
        async with session.get(url, headers={"Authorization": f"Bearer {token}"},
                               allow_redirects=False) as resp:
            kind = resp.headers.get("Content-Type", "")
            login_page = kind.startswith("text/html") and not name.lower().endswith(
                (".html", ".htm", ".xhtml"))
            if resp.status != 200 or login_page:
                # Slack answers a missing scope or a deleted file with a login page or a 403.
                return SharedFile(name, None, link, f"Slack would not give the file (HTTP "
                                                    f"{resp.status}; is files:read granted?)")
            # Spooled through an unnamed temporary file, so the bytes are held once (a
            # growing buffer turned into bytes would be held twice at the end).
            with tempfile.TemporaryFile() as spool:
                size = 0
                async for chunk in resp.content.iter_chunked(CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        return SharedFile(name, None, link, "it is over BRAIN_MAX_FILE_MB "
                                                            f"({max_bytes / 2**20:g} MB)")
                    spool.write(chunk)
                spool.seek(0)
                return SharedFile(name, spool.read(), link)
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("downloading a shared file failed: %s", type(exc).__name__)
        return SharedFile(name, None, link, f"the download failed ({type(exc).__name__})")
