"""Names that spoof (issue 31, finding 9), through a real `brain serve --http` with signed
requests against the fake Slack, on the test's database (BRAIN_TEST_DB=postgres too): a name
shown in a card carries no right-to-left override, bidi isolate or zero-width character,
whether the note was filed from a DM, saved from someone's message or written by hand; and a
name whose word mixes look-alike scripts says so."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.brain_cli import run_process
from tests.e2e.served import served
from tests.e2e.slack_harness import (
    AUTHOR,
    USER,
    message_event,
    save_shortcut,
    vault_files,
)
from tests.e2e.test_slack_serve import idle

HIDDEN = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides, isolates
SPOOF = "Idea: \u202egnirts\u202c team offsite \u200bin Li\u200dsbon with \u2066kayaks\u2069"


def head(body: dict[str, Any]) -> str:
    """The card's sections of text (the note's name is in one) and the message's text."""
    return "\n".join([*(b["text"]["text"] for b in body["blocks"]
                         if b["type"] == "section" and "text" in b), body["text"]])


def frontmatter_name(path: Path) -> str:
    line = next(ln for ln in path.read_text().splitlines() if ln.startswith("name: "))
    return json.loads(line.removeprefix("name: ")) if line.endswith('"') else \
        line.removeprefix("name: ")


@pytest.mark.files_store
async def test_card_names_carry_no_bidi_or_zero_width_characters(tmp_path: Path) -> None:
    async with served(tmp_path) as bot:
        fake, send, vault = bot.fake, bot.send, bot.vault
        await send.event(message_event(SPOOF, ts="1767261600.000100", event_id="EvName1"))
        (card,) = await fake.wait_for("chat.postMessage", timeout=60)
        await idle(send)
        shown = head(card.body)
        assert "gnirts team offsite in Lisbon" in shown and not HIDDEN.search(shown), shown
        (note,) = vault_files(vault)
        name = frontmatter_name(vault / note)
        assert not HIDDEN.search(name) and len(name) <= 120, name

        # Someone's message with a look-alike letter (a Cyrillic "а" in "Pаypal").
        body = save_shortcut(trigger="TName", response_url=fake.hook_url("save"))
        message = copy.deepcopy(body["message"])
        message.update(ts="1767261900.000900", user=AUTHOR, blocks=[],
                       text="P\u0430ypal invoice: pay the \u202dvendor\u202c before Friday")
        body.update(message_ts=message["ts"], message=message)
        await send.action(body)
        (told,) = await fake.wait_for("hook:save", timeout=60)
        await idle(send)
        shown = head(told.body)
        assert "P\u0430ypal invoice (mixes Cyrillic and Latin letters)" in shown, shown
        assert "Pаypal invoice (mixes Cyrillic and Latin letters) (0." in told.body["text"]
        assert not HIDDEN.search(shown)

        # A note written by hand, its name full of controls and far too long.
        long_name = "\u202eSpoofed\u202c id\u200bea " + "very long words " * 40
        (vault / "ideas").mkdir(exist_ok=True)
        (vault / "ideas" / "by-hand.md").write_text(
            f"---\nname: \"{long_name}\"\ncategory: ideas\n---\nWritten by hand.\n")
        indexed = run_process(tmp_path, "list", "--user", USER, "--json", env=bot.env)
        assert indexed.code == 0, indexed.err
        (row,) = [e for e in json.loads(indexed.out)["entries"]
                  if e["path"] == "ideas/by-hand.md"]
        assert row["name"].startswith("Spoofed idea very long words") and \
            len(row["name"]) <= 120 and not HIDDEN.search(row["name"])
        await send.event(message_event("show my ideas", ts="1767262000.000100",
                                       event_id="EvName2"))
        await fake.wait_for("chat.stopStream", timeout=60)  # the answer is streamed
        await idle(send)
        cards = json.dumps([c.body for c in fake.calls
                            if c.method in ("chat.appendStream", "chat.stopStream")],
                           ensure_ascii=False)
        names = re.findall(r"• \*(.+?)\* — ", cards)
        assert names and names[0].startswith("Spoofed idea very long words"), names
        assert not [n for n in names if HIDDEN.search(n)], names
        assert not BIDI.search(cards)  # no text of a card is reordered, names or not
