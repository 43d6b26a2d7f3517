"""A link someone shares, as a note's section: the page's title, author and site, and its
readable main text (trafilatura), or Slack's own unfurl when the message carries one (no fetch
then). A PDF or a text file behind the link goes to the readers. A refused or failed fetch is
a section that links the page and says why; nothing raises.

A message is "a link" when, without its links, a few words at most are left: "https://…",
"worth reading https://…". A longer message that mentions a link is a thought like any other."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from tools.readers.pool import read_safely
from tools.readers.read import MAX_TEXT, Limits, Reading
from tools.readers.sections import Read, SharedFile, read_all
from tools.web.fetch import Failed, Refused, allow_set, fetch

# Slack writes links as <https://…> or <https://…|label>; typed text has them bare.
URL = re.compile(r"<(https?://[^>|\s]+)(?:\|[^>]*)?>|(?<![\w<])((?:https?|file|ftp)://[^\s<>]+)")
MAX_LINKS = 3  # links read from one message
MOSTLY = 6  # words beside the links, at most, for a message to be "a link"


@dataclass(frozen=True)
class Unfurl:
    url: str
    title: str
    text: str
    site: str


def urls_in(text: str) -> list[str]:
    out = []
    for slack, bare in URL.findall(text or ""):
        url = (slack or bare).rstrip(".,;:!?)")
        if url not in out:
            out.append(url)
    return out


def mostly_links(text: str) -> bool:
    urls = urls_in(text)
    rest = URL.sub(" ", text or "")
    return bool(urls) and len(rest.split()) <= MOSTLY


def unfurls_of(event: dict[str, Any]) -> list[dict[str, str]]:
    """Slack's unfurls in a message event (`attachments` with `from_url`), as a job keeps them."""
    out = []
    found = event.get("attachments")
    for a in found if isinstance(found, list) else []:
        if isinstance(a, dict) and isinstance(a.get("from_url"), str):
            out.append({"url": a["from_url"], "title": str(a.get("title") or ""),
                        "text": str(a.get("text") or ""),
                        "site": str(a.get("service_name") or "")})
    return out


def page_reading(url: str, html: bytes) -> Reading:
    """A page's title, author, site and main text (run in a reader process: read_safely)."""
    import trafilatura

    doc = html.decode("utf-8", errors="replace")
    meta = trafilatura.extract_metadata(doc)
    title = (meta.title if meta else None) or urlparse(url).hostname or url
    by = " · ".join(x for x in ((meta.author if meta else None),
                                (meta.sitename if meta else None)) if x)
    text = (trafilatura.extract(doc, url=url, include_comments=False) or "").strip()
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT].rsplit(" ", 1)[0] + " …"
    body = "\n\n".join(x for x in (f"_{by}_" if by else "", text) if x)
    if not text:
        return Reading(title, "page", body, "no readable text on the page")
    return Reading(title, "page", body)


async def read_link(url: str, *, allow: frozenset[str], limits: Limits,
                    unfurl: dict[str, str] | None = None) -> SharedFile:
    if unfurl and (unfurl.get("title") or unfurl.get("text")):
        by = f"_{unfurl['site']}_\n\n" if unfurl.get("site") else ""
        title = unfurl.get("title") or url
        return SharedFile(title, None, url, reading=Reading(
            title, "page", by + unfurl.get("text", ""), None, "Slack's preview"))
    try:
        got = await fetch(url, allow)
    except (Refused, Failed) as exc:
        why = f"not fetched: {exc}" if isinstance(exc, Refused) else str(exc)
        return SharedFile(url, None, url, why)
    kind = got.content_type.split(";", 1)[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml", ""):
        # In a reader process too: a 5 MB page of 200,000 paragraphs is 20 s of CPU.
        reading = await read_safely(url, got.data, limits, page=got.url)
    else:  # a PDF, a text file, an image behind the link: the readers know them
        name = urlparse(got.url).path.rsplit("/", 1)[-1] or "page"
        reading = await read_safely(name, got.data, limits)
    return SharedFile(reading.name, None, url, reading.problem, reading=reading)


async def message_links(text: str, *, allow_hosts: str | None, limits: Limits,
                        unfurls: list[dict[str, str]] | None = None) -> Read:
    """The pages of a message that is (mostly) links (MAX_LINKS of them); [] for a message
    that only mentions a link: that is a thought like any other."""
    if not mostly_links(text):
        return []
    return await shared_links(urls_in(text)[:MAX_LINKS], allow_hosts=allow_hosts,
                              limits=limits, unfurls=unfurls)


async def shared_links(urls: list[str], *, allow_hosts: str | None, limits: Limits,
                       unfurls: list[dict[str, str]] | None = None) -> Read:
    """The links read, as a message's shared files are (tools/readers/sections.py)."""
    return await read_all(await read_links(urls, allow_hosts=allow_hosts, limits=limits,
                                           unfurls=unfurls), limits)


async def read_links(urls: list[str], *, allow_hosts: str | None, limits: Limits,
                     unfurls: list[dict[str, str]] | None = None) -> list[SharedFile]:
    """Each link as a section of the note that files the message."""
    allow = allow_set(allow_hosts)
    known = {u["url"]: u for u in unfurls or []}
    return list(await asyncio.gather(*(
        read_link(url, allow=allow, limits=limits, unfurl=known.get(url))
        for url in urls)))
