"""Files shared in a DM (issue 18), through the served app: the job (never the ack) fetches
them from the fake Slack with the bot token, the note holds their text and keeps the file,
a search finds a sentence only inside the file, and what cannot be read is said."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import USER, message_event, vault_files
from tests.media import screenshot, silence_wav, spoken_wav, to_m4a
from tests.tools.test_readers import make_docx, make_pdf

SENTENCE = "The Lisbon offsite costs forty two thousand euros"


def with_files(text: str, files: list[dict], *, ts: str, event_id: str) -> dict:
    body = message_event(text, ts=ts, event_id=event_id)
    body["event"].update(subtype="file_share", files=files)
    return body


async def test_a_pdf_and_a_docx_in_a_dm_become_a_note_found_by_their_text(
        slack: Harness) -> None:
    files = [slack.fake.share_file("F1", "report.pdf", make_pdf(["Budget", SENTENCE])),
             slack.fake.share_file("F2", "minutes.docx", make_docx(["Marta owns catering"])),
             slack.fake.share_file("F6", "agenda.html", b"<html><body><script>x()</script>"
                                   b"<p>Kickoff with the Lisbon venue on Monday</p></body></html>")]
    status, _ = await slack.send.event(with_files("Idea: budget for the Q3 offsite", files,
                                                  ts="1767261000.000100", event_id="EvF1"))
    assert status == 200
    posts = await slack.fake.wait_for("chat.postMessage")
    await slack.settle()
    assert {c.token for c in slack.fake.file_gets} == {"Bearer xoxb-test"}
    statuses = [c.body.get("status") for c in slack.fake.calls_to(
        "assistant.threads.setStatus")]
    assert "Reading report.pdf…" in statuses  # progress while it reads
    (note,) = [f for f in vault_files(slack.vault) if f.endswith(".md")]
    text = (slack.vault / note).read_text(encoding="utf-8")
    assert "budget for the Q3 offsite" in text and SENTENCE in text
    assert "Marta owns catering" in text and "Kickoff with the Lisbon venue" in text
    assert "x()" not in text
    assert "![[attachments/report.pdf]]" in text and "![[attachments/minutes.docx]]" in text
    assert (slack.vault / "attachments" / "report.pdf").read_bytes() == slack.fake.files["F1"]
    found = await slack.brain.store_for(USER).search("forty two thousand euros")
    assert [e.path for e in found.entries] == [note]
    assert "Filed" in json.dumps(posts[-1].body) or "Saved" in json.dumps(posts[-1].body)


async def test_a_file_slack_will_not_give_is_said_and_the_note_is_filed(
        slack: Harness) -> None:
    gone = slack.fake.share_file("F9", "deleted.pdf", b"")
    slack.fake.files.pop("F9")  # deleted before the job ran: Slack answers 404
    await slack.send.event(with_files("Project Phoenix: launch notes", [gone],
                                      ts="1767261100.000100", event_id="EvF9"))
    await slack.fake.wait_for("chat.postMessage")
    await slack.settle()
    (note,) = [f for f in vault_files(slack.vault) if f.endswith(".md")]
    text = (slack.vault / note).read_text(encoding="utf-8")
    assert "launch notes" in text
    assert "_Could not read it: Slack would not give the file (HTTP 404" in text
    assert not (slack.vault / "attachments").exists()


async def test_a_message_of_files_alone_is_filed_by_the_files(slack: Harness) -> None:
    shared = slack.fake.share_file("F3", "notes.txt", b"Call the plumber about the leak")
    await slack.send.event(with_files("", [shared], ts="1767261200.000100", event_id="EvF3"))
    await slack.fake.wait_for("chat.postMessage")
    await slack.settle()
    (note,) = [f for f in vault_files(slack.vault) if f.endswith(".md")]
    text = (slack.vault / note).read_text(encoding="utf-8")
    assert "Shared notes.txt" in text and "Call the plumber about the leak" in text


async def test_a_screenshot_and_a_voice_clip_become_notes_found_by_what_they_hold(
        slack: Harness, tmp_path: Path) -> None:
    shot = slack.fake.share_file("F4", "dashboard.png", screenshot(
        ["Weekly metrics", "Signups doubled after the pricing change"]))
    await slack.send.event(with_files("Idea: dashboard from the growth review", [shot],
                                      ts="1767261300.000100", event_id="EvF4"))
    clip = slack.fake.share_file("F5", "audio_message.m4a", to_m4a(spoken_wav(
        "Remember that the greenhouse heater needs a new thermostat.", tmp_path)))
    await slack.send.event(with_files("", [clip], ts="1767261400.000100", event_id="EvF5"))
    await slack.fake.wait_for("chat.postMessage", count=2, timeout=90)
    await slack.settle()
    store = slack.brain.store_for(USER)
    for query, fid in (("signups doubled after the pricing change", "F4"),
                       ("greenhouse heater thermostat", "F5")):
        found = await store.search(query)
        assert found.entries, query
        text = (slack.vault / found.entries[0].path).read_text(encoding="utf-8")
        (kept,) = re.findall(r"!\[\[(attachments/[^\]]+)\]\]", text)  # opens from the note
        assert (slack.vault / kept).read_bytes() == slack.fake.files[fid]


async def test_a_link_in_a_dm_becomes_a_note_with_its_page(tmp_path: Path) -> None:
    from tests.e2e.bot_harness import running_bot
    from tests.web_pages import ARTICLE_SENTENCE, serve_pages

    pages = await serve_pages()
    try:
        async with running_bot(tmp_path, BRAIN_FETCH_ALLOW_HOSTS="127.0.0.1") as slack:
            url = pages.url("/article")
            await slack.send.event(message_event(f"<{url}>", ts="1767261500.000100",
                                                 event_id="EvL1"))
            # Slack's own preview, carried by the event: used as it is, nothing fetched.
            unfurled = message_event("<https://news.example.org/a|news.example.org/a>",
                                     ts="1767261600.000100", event_id="EvL2")
            unfurled["event"]["attachments"] = [{
                "from_url": "https://news.example.org/a", "service_name": "Example News",
                "title": "Council approves the riverside bike lane",
                "text": "The lane opens in May and links the station to the old harbour."}]
            await slack.send.event(unfurled)
            await slack.fake.wait_for("chat.postMessage", count=2, timeout=30)
            await slack.settle()
            statuses = [c.body.get("status") for c in slack.fake.calls_to(
                "assistant.threads.setStatus")]
            assert "Reading 127.0.0.1…" in statuses
            store = slack.brain.store_for(USER)
            (page,) = (await store.search("south-facing balcony")).entries
            assert page.name == "Growing vegetables on a city balcony"
            assert ARTICLE_SENTENCE in (slack.vault / page.path).read_text(encoding="utf-8")
            (news,) = (await store.search("riverside bike lane harbour")).entries
            assert news.name == "Council approves the riverside bike lane"
            assert pages.hits("/article") == 1
    finally:
        await pages.close()


def _encrypted_pdf() -> bytes:
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(["secret"]))))
    writer.encrypt("hunter2")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


FAILURES = {  # what is shared -> what the note and the reply must say
    "encrypted": ("budget.pdf", _encrypted_pdf, "the PDF is encrypted"),
    "corrupt": ("scan.pdf", lambda: b"%PDF-1.7\n1 0 obj <</Type /Cat", "the PDF cannot be read"),
    "unreadable image": ("photo.png", lambda: b"\x89PNG\r\n\x1a\nbroken",
                         "the image cannot be opened"),
    "unsupported": ("backup.zip", lambda: b"PK\x03\x04zip", ".zip files are not a kind"),
    "no speech": ("memo.wav", lambda: silence_wav(3), "no speech heard in the clip"),
    "missing scope": ("plan.pdf", lambda: make_pdf(["x"]), "Slack would not give the file "
                                                             "(HTTP 403"),
    "deleted": ("old.pdf", lambda: make_pdf(["x"]), "Slack would not give the file (HTTP 404"),
}


@pytest.mark.parametrize("case", list(FAILURES))
async def test_what_cannot_be_read_is_said_in_the_note_and_the_reply(slack: Harness,
                                                                     case: str) -> None:
    name, make, why = FAILURES[case]
    shared = slack.fake.share_file("FX", name, make())
    if case == "missing scope":
        slack.fake.refused_files.add("FX")
    if case == "deleted":
        slack.fake.files.pop("FX")
    await slack.send.event(with_files("Project Phoenix: launch notes", [shared],
                                      ts="1767261700.000100", event_id="EvFX"))
    (post,) = await slack.fake.wait_for("chat.postMessage", timeout=60)
    await slack.settle()
    (note,) = [f for f in vault_files(slack.vault) if f.endswith(".md")]
    text = (slack.vault / note).read_text(encoding="utf-8")
    assert "launch notes" in text and f"## From {name}" in text
    assert f"_Could not read it: {why}" in text
    assert f"Could not read {name}: {why}" in json.dumps(post.body)  # the reply says so


async def test_a_question_with_a_file_is_answered_not_filed(slack: Harness) -> None:
    shared = slack.fake.share_file("FQ", "report.pdf", make_pdf(["Budget", SENTENCE]))
    await slack.send.event(with_files("What does this report say about the offsite?", [shared],
                                      ts="1767261800.000100", event_id="EvFQ"))
    await slack.fake.wait_for_reply(timeout=30)
    await slack.settle()
    assert slack.fake.file_gets  # it was read, to answer with
    assert [f for f in vault_files(slack.vault)] == []  # and nothing was filed or kept
