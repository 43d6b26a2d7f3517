"""Another person's markdown never becomes a note of yours (issue 31, finding 1), through a real
`brain serve --http` process with signed requests against the fake Slack, on the test's
database (BRAIN_TEST_DB=postgres too).

*Save to brain* keeps a message's files in the vault's `attachments/`. Someone shares a
`minutes.md` whose frontmatter carries the id of one of your notes and a due date, and an
`agenda.md` carrying the id your save of a third person's message will get. After you save
their message: your card's buttons still work, their due date is not in your App Home, the
files are kept and linked from the note, and the later save is really kept. The same holds
for files in the vault written by hand: a copy of your note (Obsidian's "duplicate"), and a
note carrying the id a later save will get.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.capture.messages import capture_key
from tests.brain_cli import run_process
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.served import Served, served
from tests.e2e.slack_harness import (
    AUTHOR,
    CHANNEL,
    DM,
    USER,
    SlackSender,
    button_press,
    home_opened,
    message_event,
    posted_entry_id,
    save_shortcut,
    vault_files,
)
from tests.e2e.test_slack_serve import idle
from tools.base import derived_id

DM_TS = "1767261600.000100"
SHARED_TS = "1767261900.000400"  # AUTHOR's message with the two files
THIRD_TS, THIRD_TEXT = "1767262000.000500", "Renew the parking permit for the office garage"
FOURTH_TS, FOURTH_TEXT = "1767262100.000600", "Book the tram tickets for the Porto trip"
PLANTED = "Pay the Mallory invoice"


def front(entry_id: str, name: str, *, category: str = "admin", due: str | None = None) -> str:
    lines = ["---", f"id: {entry_id}", f"category: {category}", f"name: {name}"]
    if due:
        lines += [f"due_date: '{due}'", "status: todo"]
    return "\n".join([*lines, "---", f"{name}: planted.", ""])


def shortcut(fake: FakeSlack, hook: str, *, ts: str, text: str, author: str,
             files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body = save_shortcut(trigger=f"T{hook}", response_url=fake.hook_url(hook))
    message = copy.deepcopy(body["message"])
    message.update(ts=ts, text=text, user=author, blocks=[])
    if files:
        message["files"] = files
    body.update(message_ts=ts, message=message)
    return body


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Served]:
    async with served(tmp_path) as running:
        yield running


async def save(fake: FakeSlack, send: SlackSender, hook: str, **message: Any) -> dict[str, Any]:
    """A Save-to-brain press; what the person is told (through the response_url)."""
    status, _ = await send.action(shortcut(fake, hook, **message))
    assert status == 200
    (told,) = await fake.wait_for(f"hook:{hook}", timeout=60)
    await idle(send)
    body: dict[str, Any] = told.body
    return body


async def press(fake: FakeSlack, send: SlackSender, entry_id: str, to: str, *,
                message_ts: str, ephemeral: bool = False, hook: str = "press") -> str:
    """A card's move button; the card it leaves, as text (chat.update, or the hook)."""
    before = len(fake.calls_to("chat.update"))
    status, _ = await send.action(button_press(
        entry_id, to, user=USER, channel=DM if not ephemeral else CHANNEL,
        message_ts=message_ts, thread_ts=DM_TS if not ephemeral else message_ts,
        response_url=fake.hook_url(hook), ephemeral=ephemeral, trigger=f"trigger-{hook}"))
    assert status == 200
    if ephemeral:
        (card,) = await fake.wait_for(f"hook:{hook}", timeout=60)
    else:
        card = (await fake.wait_for("chat.update", before + 1, timeout=60))[-1]
    await idle(send)
    return json.dumps(card.body)


def notes_with(vault: Path, words: str) -> list[str]:
    """The notes (not kept files, not the trash) whose text holds `words`."""
    return [f for f in vault_files(vault) if not f.startswith(("attachments/", ".trash/"))
            and words in (vault / f).read_text(encoding="utf-8")]


def id_of(vault: Path, rel: str) -> str:
    line = next(ln for ln in (vault / rel).read_text().splitlines() if ln.startswith("id: "))
    return line.removeprefix("id: ").strip()


@pytest.mark.files_store
async def test_shared_markdown_and_copies_never_take_over_your_notes(
        bot: Served, tmp_path: Path) -> None:
    fake, send, vault, env = bot.fake, bot.send, bot.vault, bot.env
    # Your note, with its card.
    status, _ = await send.event(message_event("Call the dentist about the crown next Tuesday",
                                               ts=DM_TS, event_id="EvFor1"))
    assert status == 200
    (card,) = await fake.wait_for("chat.postMessage", timeout=60)
    await idle(send)
    mine = posted_entry_id(card.body["blocks"])
    card_ts = str(card.response["ts"]) if card.response else ""
    third_id = derived_id(capture_key(USER, CHANNEL, THIRD_TS), 1)

    # Someone's message shares two markdown files made to collide with your ids.
    soon = (date.today() + timedelta(days=2)).isoformat()
    planted = {"minutes.md": front(mine, PLANTED, due=soon).encode(),
               "agenda.md": front(third_id, "Planted agenda", category="projects").encode()}
    files = [fake.share_file(f"F{n}", name, data)
             for n, (name, data) in enumerate(planted.items())]
    told = await save(fake, send, "shared", ts=SHARED_TS, author=AUTHOR, files=files,
                      text="Minutes and agenda of the vendor review")
    assert "Saved to your brain" in told["text"]
    (saved,) = notes_with(vault, "Minutes and agenda of the vendor review")
    text = (vault / saved).read_text(encoding="utf-8")
    for name, data in planted.items():  # kept as the files they are, and linked from the note
        assert (vault / "attachments" / name).read_bytes() == data
        assert f"![[attachments/{name}]]" in text

    # Your card's buttons still act on your note alone.
    moved = await press(fake, send, mine, "projects", message_ts=card_ts)
    assert "Moved to *Projects*" in moved and "notes match" not in moved
    (yours,) = [f for f in vault_files(vault) if f.startswith("projects/")]
    assert id_of(vault, yours) == mine and "dentist" in (vault / yours).read_text()
    assert (vault / "attachments" / "minutes.md").read_bytes() == planted["minutes.md"]

    # Their due date is not yours: the App Home's due list does not show it.
    await send.event(home_opened(event_id="EvForHome"))
    await fake.wait_for("views.publish", timeout=60)
    await idle(send)
    home = json.dumps(fake.homes[USER])
    assert "Due in the next 7 days" in home and PLANTED not in home
    assert "Planted agenda" not in home

    # The third person's message: really kept, under the id the planted file carried.
    told = await save(fake, send, "third", ts=THIRD_TS, author="U0SBTHIRD", text=THIRD_TEXT)
    assert "Saved to your brain" in told["text"]
    (third,) = notes_with(vault, THIRD_TEXT)
    assert id_of(vault, third) == third_id == posted_entry_id(told["blocks"])
    moved = await press(fake, send, third_id, "ideas", message_ts=THIRD_TS, ephemeral=True,
                        hook="third-press")
    assert "Moved to *Ideas*" in moved
    assert [f.split("/")[0] for f in notes_with(vault, THIRD_TEXT)] == ["ideas"]

    # Files written by hand in the vault: a copy of your note (same id), and a note carrying
    # the id your next save will get. A CLI run indexes them into the same database.
    fourth_id = derived_id(capture_key(USER, CHANNEL, FOURTH_TS), 1)
    (vault / "notes").mkdir()
    (vault / "notes" / "dentist copy.md").write_bytes((vault / yours).read_bytes())
    (vault / "notes" / "tickets.md").write_text(front(fourth_id, "Tickets (by hand)"))
    listed = run_process(tmp_path, "list", "--user", USER, "--limit", "50", "--json", env=env)
    assert listed.code == 0, listed.err
    assert {"notes/dentist copy.md", "notes/tickets.md"} <= {
        e["path"] for e in json.loads(listed.out)["entries"]}
    moved = await press(fake, send, mine, "ideas", message_ts=card_ts, hook="again")
    assert "Moved to *Ideas*" in moved and "notes match" not in moved
    assert id_of(vault, "notes/dentist copy.md") == mine  # the copy stays where it was
    told = await save(fake, send, "fourth", ts=FOURTH_TS, author="U0SBTHIRD", text=FOURTH_TEXT)
    assert "Saved to your brain" in told["text"]
    (fourth,) = notes_with(vault, FOURTH_TEXT)
    assert fourth != "notes/tickets.md" and id_of(vault, fourth) == fourth_id
    assert "Tickets (by hand)" in (vault / "notes" / "tickets.md").read_text()
