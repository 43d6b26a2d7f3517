"""Links (tools/web): a page's title, author, site and main text come back from a real HTTP
server; every address the guards must refuse is refused (directly, after a redirect, by name),
with the reason in words; no cookie is ever sent back; caps hold."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tools.test_readers import make_pdf
from tests.web_pages import ARTICLE_SENTENCE, Pages, serve_pages
from tools.readers.read import Limits
from tools.web.fetch import USER_AGENT, public
from tools.web.links import mostly_links, read_links, unfurls_of, urls_in

ALLOW = "127.0.0.1"


@pytest.fixture
async def pages() -> AsyncIterator[Pages]:
    served = await serve_pages({"/report.pdf": make_pdf(["Budget", "The venue costs 9,000"])})
    yield served
    await served.close()


async def one(url: str, allow: str | None = ALLOW, tmp: Path = Path("/tmp")) -> tuple[str, str,
                                                                                   str | None]:
    (shared,) = await read_links([url], allow_hosts=allow, limits=Limits(cache=tmp))
    reading = shared.reading
    return shared.name, (reading.text if reading else ""), shared.problem


async def test_an_article_gives_its_title_author_site_and_main_text(pages: Pages) -> None:
    name, text, problem = await one(pages.url("/article"))
    assert problem is None and name == "Growing vegetables on a city balcony"
    assert "Ana Ruiz · Urban Garden Weekly" in text and ARTICLE_SENTENCE in text
    assert "Subscribe" not in text and "Copyright" not in text  # the page's chrome is not kept
    (request,) = pages.requests
    assert request["headers"]["User-Agent"] == USER_AGENT


async def test_a_pdf_behind_a_link_goes_to_the_pdf_reader(pages: Pages) -> None:
    name, text, problem = await one(pages.url("/report.pdf"))
    assert problem is None and name == "report.pdf" and "The venue costs 9,000" in text


@pytest.mark.parametrize(("path", "host", "why"), [
    ("/article", "127.0.0.2", "127.0.0.2 is a private or local address"),
    ("/to-private", "127.0.0.1", "127.0.0.2 is a private or local address"),
    ("/to-localhost", "127.0.0.1", "localhost is a private or local address"),
    ("/to-file", "127.0.0.1", "only http and https links are fetched, not file:"),
])
async def test_refused_addresses_are_never_fetched(pages: Pages, path: str, host: str,
                                                   why: str) -> None:
    name, text, problem = await one(pages.url(path, host))
    assert problem is not None and problem.startswith(f"not fetched: {why}") and text == ""
    assert pages.hits("/article") == 0  # the refused hop never reached the server


@pytest.mark.parametrize("url", [
    "file:///etc/passwd", "ftp://127.0.0.1/x", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8080/", "http://10.0.0.5/", "http://0.0.0.0/", "http://user:pw@example.com/",
    "gopher://127.0.0.1:25/"])
async def test_hostile_links_are_refused_before_any_connection(url: str) -> None:
    _name, _text, problem = await one(url, allow=None)
    assert problem is not None and problem.startswith("not fetched: ")


async def test_without_the_allow_list_loopback_itself_is_refused(pages: Pages) -> None:
    _name, _text, problem = await one(pages.url("/article"), allow=None)
    assert problem == "not fetched: 127.0.0.1 is a private or local address"
    assert pages.requests == []


async def test_a_cookie_set_on_a_redirect_is_not_sent_back(pages: Pages) -> None:
    _name, text, problem = await one(pages.url("/with-cookie"))
    assert problem is None and ARTICLE_SENTENCE in text
    assert [("Cookie" in r["headers"]) for r in pages.requests] == [False, False]


async def test_a_page_over_the_cap_and_a_missing_page_say_why(pages: Pages) -> None:
    assert (await one(pages.url("/huge")))[2] == "the page is over 5 MB"
    assert (await one(pages.url("/gone")))[2] == "the site answered HTTP 404"


def test_only_public_addresses_are_public() -> None:
    assert public("93.184.216.34") and public("2606:2800:220:1::1")
    for address in ("127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                    "224.0.0.1", "240.0.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::1",
                    "::ffff:127.0.0.1", "100.64.0.1"):
        assert not public(address), address


@given(st.text(max_size=300))
def test_link_finding_never_fails_and_finds_only_what_is_there(text: str) -> None:
    for url in urls_in(text):
        assert url in text
    if mostly_links(text):
        assert urls_in(text)


def test_a_message_is_a_link_when_little_else_is_said() -> None:
    assert mostly_links("<https://example.com/a|example.com/a>")
    assert mostly_links("worth reading https://example.com/a")
    assert not mostly_links("Maria said the offsite budget is fine, see https://example.com/a "
                            "for the numbers she sent last week")
    assert urls_in("see <https://example.com/a|a> and https://example.com/b.") == [
        "https://example.com/a", "https://example.com/b"]


@given(st.dictionaries(st.sampled_from(["attachments", "text"]),
                       st.none() | st.integers() | st.text(max_size=5)
                       | st.lists(st.none() | st.integers() | st.dictionaries(
                           st.sampled_from(["from_url", "title", "text"]),
                           st.none() | st.integers() | st.text(max_size=5)), max_size=3)))
def test_unfurls_of_any_event_shape_never_fail(event: dict) -> None:
    for unfurl in unfurls_of(event):
        assert isinstance(unfurl["url"], str)
