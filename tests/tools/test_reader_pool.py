"""Files read out of process (tools/readers/pool.py, issue 31): a normal file reads exactly as
it does in this process; a file past its CPU, memory or wall-clock budget ends its reader
(another takes its place) and says "too large to read safely"; one person's files wait their
turn while another person's file is read at once. Real reader processes, real files."""

from __future__ import annotations

import asyncio
import io
import os
import time
import zipfile
from pathlib import Path

import pytest

from tests.e2e.processes import children
from tests.hostile_files import _deflated, _zip, pdf_bomb
from tests.media import screenshot, spoken_wav, to_m4a
from tests.tools.test_readers import make_docx, make_pdf
from tools.readers.pool import READERS, ReaderPool, read_safely
from tools.readers.read import Limits, read
from tools.web.links import page_reading

SENTENCE = "The quarterly budget for the Lisbon offsite is 42,000 euros"
TOO_LARGE = "too large to read safely"


def big_docx(megabytes: float) -> bytes:
    """A real DOCX whose document.xml holds `megabytes` MB of short paragraphs (under the
    size caps, so only a memory budget can stop it)."""
    real = zipfile.ZipFile(io.BytesIO(make_docx(["x"])))
    members = []
    for info in real.infolist():
        data = real.read(info)
        if info.filename == "word/document.xml":
            head = data.partition(b"<w:body>")[0] + b"<w:body>"
            chunk = b"<w:p><w:r><w:t>The budget for the offsite</w:t></w:r></w:p>" * 1000
            members.append((info.filename, *_deflated(
                head, chunk, int(megabytes * 2**20 / len(chunk)), b"</w:body></w:document>")))
        else:
            members.append((info.filename, *_deflated(data, b"", 0, b"")))
    return _zip(members)


async def test_normal_files_read_out_of_process_exactly_as_in_process(tmp_path: Path) -> None:
    limits = Limits(cache=tmp_path / "models")
    wav = spoken_wav("Remember to renew the car insurance before the twentieth.", tmp_path)
    files = {  # name -> (the file, what its reading holds)
        "report.pdf": (make_pdf(["Page one: the plan.", SENTENCE, "Page three."]), SENTENCE),
        "long.pdf": (make_pdf([SENTENCE * 3] * 150), "cut at 20,000 characters"),
        "minutes.docx": (make_docx(["Minutes", SENTENCE], [["Owner", "Sara"]]), "Owner | Sara"),
        "plan.html": (b"<html><title>Plan</title><body><p>" + SENTENCE.encode() + b"</p>",
                      SENTENCE),
        "dashboard.png": (screenshot(["Quarterly dashboard", "Revenue grew eleven percent"]),
                          "Revenue grew eleven percent"),
        "memo.m4a": (to_m4a(wav), "car insurance"),  # (Whisper's words, as in the other tests)
    }
    for name, (data, holds) in files.items():
        here = read(name, data, limits)
        apart = await read_safely(name, data, limits)
        assert apart == here, name
        assert here.problem is None, (name, here.problem)
        assert holds in f"{here.text} {here.detail}", name
    page = (b"<html><head><title>Offsite plan</title></head><body><article><p>"
            + SENTENCE.encode() * 5 + b"</p></article></body></html>")
    url = "https://example.org/offsite"
    apart = await read_safely(url, page, limits, page=url)
    assert apart == page_reading(url, page) and apart.name == "Offsite plan"


async def test_a_page_past_its_cpu_budget_says_so() -> None:
    """The largest page the fetcher takes (5 MB) of 200,000 paragraphs: about 20 s of CPU."""
    url = "https://example.org/huge"
    page = b"<html><body>" + b"<p>word word word word</p>" * 200_000 + b"</body></html>"
    reading = await read_safely(url, page, Limits(cpu_seconds=1), page=url)
    assert reading.problem == f"the page is {TOO_LARGE} (reading it took over 1 s of CPU)"


async def test_a_file_past_its_cpu_budget_ends_its_reader_and_the_next_file_reads() -> None:
    slow = pdf_bomb(pages=2, mb=1.5)  # under the page cap: only the CPU budget stops it
    reading = await read_safely("slow.pdf", slow, Limits(cpu_seconds=1))
    assert reading.problem == f"the PDF is {TOO_LARGE} (reading it took over 1 s of CPU)"
    assert reading.text == ""
    after = await read_safely("report.pdf", make_pdf([SENTENCE]))
    assert after.text == SENTENCE  # a new reader took the killed one's place
    assert len(children(os.getpid())) <= 2 * READERS


async def test_a_file_past_its_memory_budget_says_so() -> None:
    reading = await read_safely("big.docx", big_docx(20), Limits(memory_mb=64))
    assert reading.problem == (f"the DOCX is {TOO_LARGE} "
                               "(it needs more memory than a file may use)")
    whole = await read_safely("big.docx", big_docx(20))  # within the default budget: read
    assert whole.ok and whole.text.startswith("The budget for the offsite")


async def test_a_file_past_its_wall_clock_budget_is_stopped() -> None:
    # A page of 45 lines: ~4 s of OCR here, so 0.3 s is passed on any machine (a one-word
    # shot took 0.34 s once its reader was warm, and once finished under the budget).
    lines = [f"Line {i}: the quarterly budget review notes" for i in range(45)]
    started = time.monotonic()
    reading = await read_safely("shot.png", screenshot(lines, size=(1280, 3800)),
                                Limits(wall_seconds=0.3))
    assert reading.problem == f"the image is {TOO_LARGE} (reading it took over 0.3 s)"
    assert time.monotonic() - started < 30


async def test_one_persons_files_wait_their_turn_while_anothers_is_read_at_once() -> None:
    pool = ReaderPool()
    try:
        slow = pdf_bomb(pages=1, mb=0.5)
        theirs = [asyncio.wrap_future(pool.submit(f"slow{i}.pdf", slow, Limits(person="UA")))
                  for i in range(4)]
        mine = asyncio.wrap_future(pool.submit("small.pdf", make_pdf([SENTENCE]),
                                               Limits(person="UB")))
        done, _ = await asyncio.wait([mine, theirs[1]], return_when=asyncio.FIRST_COMPLETED)
        assert done == {mine}, "the other person's file waited for one person's files"
        assert (await mine).text == SENTENCE
        assert not any(t.done() for t in theirs[1:])  # theirs are read one at a time
        readings = await asyncio.gather(*theirs)
        assert all(r.ok for r in readings)
    finally:
        pool.close()


@pytest.mark.parametrize("person", ["", "UA"])
async def test_a_cancelled_wait_never_reads_the_file(person: str) -> None:
    pool = ReaderPool(readers=1)
    try:
        first = asyncio.wrap_future(pool.submit("a.pdf", pdf_bomb(pages=1, mb=0.3),
                                                Limits(person=person)))
        second = pool.submit("b.pdf", make_pdf([SENTENCE]), Limits(person=person))
        assert second.cancel()  # still waiting: cancelled, never read
        assert (await first).ok
        assert second.cancelled()
    finally:
        pool.close()
