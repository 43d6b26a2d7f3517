"""Readers (tools/readers): real files of each kind, made here, give back the text inside them;
broken, encrypted and unknown ones give a reason instead, never an exception."""

from __future__ import annotations

import io

import docx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from tools.readers import MAX_TEXT, read
from tools.readers.read import Limits

SENTENCE = "The quarterly budget for the Lisbon offsite is 42,000 euros"


def make_pdf(pages: list[str]) -> bytes:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for text in pages:
        pdf.drawString(72, 720, text)
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def make_docx(paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                grid.cell(r, c).text = cell
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_pdf_is_read_page_by_page() -> None:
    reading = read("report.pdf", make_pdf(["Page one: the plan.", SENTENCE, "Page three."]))
    assert reading.ok and reading.kind == "pdf" and reading.detail == "3 pages"
    assert SENTENCE in reading.text and reading.text.index("plan") < reading.text.index("Lisbon")


def test_a_long_pdf_is_read_up_to_its_page_cap() -> None:
    reading = read("long.pdf", make_pdf([f"page {i}" for i in range(12)]), Limits(max_pages=10))
    assert reading.ok and "page 9" in reading.text and "page 10" not in reading.text
    assert reading.detail == "12 pages, the first 10 read"


def test_an_encrypted_pdf_says_so() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([SENTENCE]))))
    writer.encrypt(user_password="secret", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    reading = read("locked.pdf", out.getvalue())
    assert not reading.ok and reading.problem == "the PDF is encrypted (it needs a password)"


def test_a_docx_gives_its_paragraphs_and_tables() -> None:
    data = make_docx(["Minutes", SENTENCE], [["Owner", "Sara"], ["Due", "Friday"]])
    reading = read("minutes.docx", data)
    assert reading.ok and SENTENCE in reading.text and "Owner | Sara" in reading.text


def test_html_gives_its_title_and_text_without_scripts() -> None:
    page = (b"<html><head><title>Offsite plan</title><style>p{color:red}</style>"
            b"<script>steal()</script></head><body><h1>Plan</h1><p>" + SENTENCE.encode()
            + b" &amp; more</p></body></html>")
    reading = read("plan.html", page)
    assert reading.ok and reading.text.startswith("Offsite plan")
    assert SENTENCE + " & more" in reading.text
    assert "steal" not in reading.text and "color" not in reading.text


def test_plain_text_keeps_its_words_and_a_long_file_is_cut() -> None:
    assert read("notes.md", b"\xef\xbb\xbf# Notes\n" + SENTENCE.encode()).text.endswith("euros")
    long = read("log.txt", ("word " * 10_000).encode())
    assert len(long.text) <= MAX_TEXT + 2 and "cut at 20,000 characters" in long.detail


@pytest.mark.parametrize(("name", "data", "problem"), [
    ("broken.pdf", b"%PDF-1.7\n1 0 obj <</Type /Catalog", "the PDF cannot be read"),
    ("fake.docx", b"this is not a zip", "the DOCX cannot be read"),
    ("scan.pdf", make_pdf([""]), "no text in it"),
    ("archive.zip", b"PK\x03\x04", ".zip files are not a kind I can read"),
])
def test_what_cannot_be_read_says_why(name: str, data: bytes, problem: str) -> None:
    reading = read(name, data)
    assert not reading.ok and reading.text == ""
    assert reading.problem is not None and problem in reading.problem


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(["a.pdf", "b.docx", "c.html", "d.txt", "e.bin", "f.png", "g.flac",
                             "h.m4a"]),
       data=st.binary(max_size=3000))
def test_any_bytes_under_any_name_give_a_reading_not_an_exception(name: str,
                                                                  data: bytes) -> None:
    reading = read(name, data)
    assert reading.ok or reading.problem is not None
    assert len(reading.text) <= MAX_TEXT + 2
