"""Text out of documents: PDF (pypdf, page by page), DOCX (python-docx), HTML (the standard
library's parser: the page's text without scripts and styles) and plain text. Each stops once
a note's worth of text is read, and refuses what would cost too much before parsing it (a page
of megabytes of drawing instructions, a DOCX that unpacks to gigabytes): issue 31."""

from __future__ import annotations

import io
import logging
import re
import time
from html.parser import HTMLParser
from itertools import islice

MAX_PAGES = 200  # a PDF's pages read; the rest is said, and stays in the file
PAGE_BYTES = 2 * 2**20  # of a page's drawing instructions (pypdf reads about 1 MB in 3 s)
PDF_SECONDS = 8.0  # of CPU for one PDF's pages: then the rest is said, as past the page cap
DOCX_BYTES = 256 * 2**20  # a DOCX unpacked (python-docx holds every part in memory)
DOCX_XML_BYTES = 32 * 2**20  # its XML unpacked (parsed into a tree about ten times that)
ZIP_RATIO = 400  # a part over 1 MB unpacking to 400 times its size is a zip bomb
TOO_LARGE = "too large to read safely"
SPARE = 1000  # characters read past a note's worth, so its cut falls where it always did


class Unreadable(Exception):
    """The file is not what its name says, is encrypted or broken: the message says which."""


class TooLarge(Unreadable):
    """Reading the file would cost more than a file may (time, memory): said, never tried."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what} is {TOO_LARGE} ({why})")


def failed(what: str, exc: BaseException, said: str = "") -> Unreadable:
    """What a library's exception means for the user: out of memory (the reader process's
    limit, tools/readers/worker.py) or over the library's own limits is "too large to read
    safely"; anything else is `said` ("<what> cannot be read") and the exception's kind."""
    name = type(exc).__name__
    text = str(exc).lower()
    if name == "LimitReachedError":
        return TooLarge(what, "over pypdf's limits")
    if isinstance(exc, MemoryError) or ("alloc" in text and "memory" in text):
        return TooLarge(what, "it needs more memory than a file may use")
    return Unreadable(f"{said or what + ' cannot be read'} ({name})")


def megabytes(n: float) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def plain_text(data: bytes, keep: int) -> str:
    """The text, decoding only what a note can keep (about `keep` characters): a 20 MB log
    is not turned into a 20 MB string to keep its first page."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    head = data[start:start + keep * 4 + 4] if len(data) > keep * 4 + 4 + start else data[start:]
    return head.decode("utf-8", errors="replace").replace("\x00", "")


def pdf_text(data: bytes, max_pages: int, keep: int) -> tuple[str, str]:
    """The pages' text until `keep` characters are read (the rest is said, as past the page
    cap); a page with more than PAGE_BYTES of drawing instructions is skipped and said."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a broken file is said once, by us
    started = time.process_time()
    texts: list[str] = []
    tried = skipped = kept = 0
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("the PDF is encrypted (it needs a password)")
        pages = reader.pages
        count = len(pages)
        for page in islice(pages, max_pages):
            if kept > keep + SPARE or time.process_time() - started > PDF_SECONDS:
                break
            tried += 1
            contents = page.get_contents()
            if contents is not None and len(contents.get_data()) > PAGE_BYTES:
                skipped += 1
                continue
            text = (page.extract_text() or "").strip()
            kept += len(text)
            texts.append(text)
    except Unreadable:
        raise
    except Exception as exc:  # pypdf raises many kinds on a hostile file; none may escape
        raise failed("the PDF", exc) from exc
    if skipped and not kept:
        raise TooLarge("the PDF", f"{skipped} page{'s' if skipped != 1 else ''} with over "
                                  f"{megabytes(PAGE_BYTES)} of drawing instructions")
    detail = f"{count} page{'s' if count != 1 else ''}"
    if tried < count:
        detail += f", the first {tried} read"
    if skipped:
        detail += f", {skipped} {TOO_LARGE}"
    return "\n\n".join(t for t in texts if t), detail


def _docx_size(data: bytes) -> None:
    """Refuses a DOCX that would unpack to more than python-docx may hold, from the sizes its
    zip declares (Python's zipfile never inflates a part past its declared size)."""
    import zipfile

    try:
        parts = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return  # not a zip: python-docx says so, as before
    total = sum(p.file_size for p in parts)
    xml = sum(p.file_size for p in parts if p.filename.endswith((".xml", ".rels")))
    ratio = max((p.file_size / max(1, p.compress_size) for p in parts
                 if p.file_size > 2**20), default=0.0)
    if total > DOCX_BYTES or xml > DOCX_XML_BYTES:
        raise TooLarge("the DOCX", f"it unpacks to {megabytes(total)}")
    if ratio > ZIP_RATIO:
        raise TooLarge("the DOCX", f"a part unpacks to {ratio:.0f} times its size")


def docx_text(data: bytes, keep: int) -> str:
    """Paragraphs, then tables, until `keep` characters are read."""
    import docx

    _docx_size(data)
    try:
        document = docx.Document(io.BytesIO(data))
        lines: list[str] = []
        kept = 0
        for p in document.paragraphs:
            if kept > keep + SPARE:
                return "\n".join(lines)
            if p.text.strip():
                lines.append(p.text)
                kept += len(p.text) + 1
        for table in document.tables:
            for row in table.rows:
                if kept > keep + SPARE:
                    return "\n".join(lines)
                cells = [c.text.strip() for c in row.cells if c.text.strip()]
                if cells:
                    lines.append(" | ".join(cells))
                    kept += len(lines[-1]) + 1
    except Exception as exc:  # not a zip, a zip that is not a document, hostile XML
        raise failed("the DOCX", exc) from exc
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
