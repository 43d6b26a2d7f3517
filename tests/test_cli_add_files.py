"""`brain add --file` (issue 18): a PDF, a Word document, an HTML page and a text file become
a note holding their text, the files kept in `attachments/` byte for byte and embedded; a
search for a sentence found only inside a file returns the note; what cannot be read is said,
and the note is filed anyway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.brain_cli import BrainCLI
from tests.tools.test_readers import make_docx, make_pdf

SENTENCES = {
    "report.pdf": "The Lisbon offsite costs forty two thousand euros",
    "minutes.docx": "Marta will negotiate the catering contract by Friday",
    "page.html": "Quarterly churn fell to three percent after the onboarding redesign",
    "notes.txt": "The staging database password rotates every ninety days",
}


def files(tmp: Path) -> dict[str, Path]:
    data = {
        "report.pdf": make_pdf(["Offsite budget", SENTENCES["report.pdf"]]),
        "minutes.docx": make_docx(["Minutes", SENTENCES["minutes.docx"]]),
        "page.html": (b"<html><head><title>Metrics</title></head><body><p>"
                      + SENTENCES["page.html"].encode() + b"</p></body></html>"),
        "notes.txt": SENTENCES["notes.txt"].encode(),
    }
    out = {}
    for name, content in data.items():
        (tmp / name).write_bytes(content)
        out[name] = tmp / name
    return out


@pytest.fixture
def brain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> BrainCLI:
    return BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data")})


def test_each_kind_of_file_becomes_a_note_found_by_its_inside(tmp_path: Path,
                                                              brain: BrainCLI) -> None:
    vault = tmp_path / "data" / "vaults" / "local"
    made = {}
    for name, path in files(tmp_path).items():
        added = brain("add", "--file", str(path), "--category", "ideas", "--json")
        assert added.code == 0, added.err
        made[name] = added.json()["path"]
    for name, sentence in SENTENCES.items():
        found = brain("search", sentence.split(" ", 2)[2], "--json").json()["entries"]
        assert found and found[0]["path"] == made[name], (name, found)
        note = (vault / made[name]).read_text(encoding="utf-8")
        assert f"## From {name}" in note and sentence in note
        assert f"![[attachments/{name}]]" in note  # it opens from the note
        assert (vault / "attachments" / name).read_bytes() == (tmp_path / name).read_bytes()


def test_what_cannot_be_read_is_said_and_the_note_is_filed(tmp_path: Path,
                                                          brain: BrainCLI) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 half a file")
    added = brain("add", "budget for Q3", "--file", str(tmp_path / "broken.pdf"),
                  "--category", "projects", "--json")
    assert added.code == 0, added.err
    assert "broken.pdf: the PDF cannot be read" in added.err
    note = (tmp_path / "data" / "vaults" / "local" / added.json()["path"]).read_text()
    assert note.startswith("---") and "budget for Q3" in note
    assert "_Could not read it: the PDF cannot be read" in note


def test_a_file_over_the_size_limit_is_named_not_read(tmp_path: Path, brain: BrainCLI) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * 2_000_000)
    added = brain("add", "the big log", "--file", str(tmp_path / "big.txt"), "--category",
                  "admin", "--json", BRAIN_MAX_FILE_MB="1")
    assert added.code == 0, added.err
    note = (tmp_path / "data" / "vaults" / "local" / added.json()["path"]).read_text()
    assert "over BRAIN_MAX_FILE_MB (1)" in note and "[big.txt](" in note
    assert not (tmp_path / "data" / "vaults" / "local" / "attachments").exists()


def test_bad_file_arguments_change_nothing(tmp_path: Path, brain: BrainCLI) -> None:
    missing = brain("add", "--file", str(tmp_path / "nope.pdf"), "--category", "ideas",
                    "--json")
    assert missing.code == 2 and "no such file" in json.loads(missing.out)["error"]["message"]
    empty = brain("add", "--category", "ideas")
    assert empty.code == 2 and "give TEXT, --file PATH, --url URL or several" in empty.err
    for bad in ("example.com/page", "file:///etc/passwd", "http://"):
        not_web = brain("add", "--url", bad, "--category", "ideas")
        assert not_web.code == 2 and f"--url {bad}: not a web address" in not_web.err
    assert not (tmp_path / "data" / "vaults" / "local").exists()


def test_a_screenshot_and_a_spoken_clip_are_read_offline(tmp_path: Path,
                                                         brain: BrainCLI) -> None:
    """OCR and speech to text with no key and nothing downloaded: the search finds each note
    by words that are only inside its file."""
    from tests.media import screenshot, spoken_wav

    (tmp_path / "screenshot.png").write_bytes(screenshot(
        ["Incident review", "The backup job failed on the night of the ninth"]))
    (tmp_path / "memo.wav").write_bytes(spoken_wav(
        "Remember to water the tomatoes on the balcony every morning.", tmp_path))
    made = {}
    for name in ("screenshot.png", "memo.wav"):
        added = brain("add", "--file", str(tmp_path / name), "--category", "ideas", "--json")
        assert added.code == 0, added.err
        made[name] = added.json()["path"]
    for query, name in (("backup job failed", "screenshot.png"),
                        ("water the tomatoes on the balcony", "memo.wav")):
        found = brain("search", query, "--json").json()["entries"]
        assert found and found[0]["path"] == made[name], (name, found)


def test_a_link_becomes_a_note_with_its_page_and_a_refused_one_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.web_pages import ARTICLE_SENTENCE, pages_in_thread

    brain = BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data"),
                                        "BRAIN_FETCH_ALLOW_HOSTS": "127.0.0.1"})
    vault = tmp_path / "data" / "vaults" / "local"
    with pages_in_thread() as pages:
        added = brain("add", "--url", pages.url("/article"), "--category", "ideas", "--json")
        assert added.code == 0, added.err
        note = (vault / added.json()["path"]).read_text(encoding="utf-8")
        assert "name: Growing vegetables on a city balcony" in note
        assert ARTICLE_SENTENCE in note and "Ana Ruiz · Urban Garden Weekly" in note
        found = brain("search", "south-facing balcony sun", "--json").json()["entries"]
        assert found and found[0]["path"] == added.json()["path"]

        refused = brain("add", "Read later", "--url", pages.url("/to-private"),
                        "--category", "admin", "--json")
        assert refused.code == 0 and pages.hits("/article") == 1  # the redirect not followed
        assert "not fetched: 127.0.0.2 is a private or local address" in refused.err
        kept = (vault / refused.json()["path"]).read_text(encoding="utf-8")
        assert "Read later" in kept and f"<{pages.url('/to-private')}>" in kept


def test_export_holds_the_attachments_and_forget_erases_them(tmp_path: Path,
                                                             brain: BrainCLI) -> None:
    import zipfile

    pdf = files(tmp_path)["report.pdf"]
    assert brain("add", "Offsite", "--file", str(pdf), "--category", "ideas").code == 0
    out = tmp_path / "export.zip"
    assert brain("export", "--user", "local", "--out", str(out)).code == 0
    with zipfile.ZipFile(out) as zf:
        assert zf.read("vault/attachments/report.pdf") == pdf.read_bytes()
    assert brain("forget", "--user", "local", "--yes").code == 0
    assert not (tmp_path / "data" / "vaults" / "local" / "attachments").exists()
