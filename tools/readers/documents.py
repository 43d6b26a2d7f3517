"""Text out of documents: PDF (pypdf, page by page), DOCX (python-docx), HTML (the standard
library's parser: the page's text without scripts and styles) and plain text."""

from __future__ import annotations

import io
import logging
import re
from html.parser import HTMLParser

MAX_PAGES = 200  # a PDF's pages read; the rest is said, and stays in the file


class Unreadable(Exception):
    """The file is not what its name says, is encrypted or broken: the message says which."""


def plain_text(data: bytes, keep: int) -> str:
    """The text, decoding only what a note can keep (about `keep` characters): a 20 MB log
    is not turned into a 20 MB string to keep its first page."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    head = data[start:start + keep * 4 + 4] if len(data) > keep * 4 + 4 + start else data[start:]
    return head.decode("utf-8", errors="replace").replace("\x00", "")


def pdf_text(data: bytes, max_pages: int) -> tuple[str, str]:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a broken file is said once, by us
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("the PDF is encrypted (it needs a password)")
        pages = reader.pages
        count = len(pages)
        texts = []
        for page in list(pages)[:max_pages]:
            texts.append(page.extract_text() or "")
    except Unreadable:
        raise
    except Exception as exc:  # pypdf raises many kinds on a hostile file; none may escape
        raise Unreadable(f"the PDF cannot be read ({type(exc).__name__})") from exc
    detail = f"{count} page{'s' if count != 1 else ''}"
    if count > max_pages:
        detail += f", the first {max_pages} read"
    return "\n\n".join(t.strip() for t in texts if t.strip()), detail


def docx_text(data: bytes) -> str:
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # not a zip, a zip that is not a document, hostile XML
        raise Unreadable(f"the DOCX cannot be read ({type(exc).__name__})") from exc
    lines = [p.text for p in document.paragraphs if p.text.strip()]
    for table in document.tables:
        for row in table.rows:
            cells = [c.text.strip() for c in row.cells if c.text.strip()]
            if cells:
                lines.append(" | ".join(cells))
    return "\n".join(lines)


class _Text(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg", "head"}
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
             "article", "blockquote", "pre", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIP:
            self._skip += 1
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP and self._skip:
            self._skip -= 1
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def html_text(data: bytes) -> str:
    parser = _Text()
    parser.feed(plain_text(data, len(data)))
    parser.close()
    body = re.sub(r"[ \t\r\f\v]+", " ", "".join(parser.parts))
    body = re.sub(r"\n\s*\n+", "\n\n", body).strip()
    title = " ".join(parser.title.split())
    return f"{title}\n\n{body}" if title and title not in body[:200] else body
