"""Capture from anywhere, end to end through the real Bolt app with signed requests: the
Save-to-brain message shortcut and the capture reaction file someone else's message into the
presser's vault once, with its permalink and author, and tell only that person."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from storage import repositories
from tests.e2e.bot_harness import Harness
from tests.e2e.fake_slack import BOT_USER_ID
from tests.e2e.slack_harness import (
    AUTHOR,
    CHANNEL,
    OTHER_USER,
    SAVED_TEXT,
    SAVED_TS,
    USER,
    button_press,
    posted_entry_id,
    reaction_added,
    save_shortcut,
    vault_files,
)

PERMALINK = f"https://slack.com/archives/{CHANNEL}/p{SAVED_TS.replace('.', '')}"


async def receipts_of(h: Harness, user: str) -> list[repositories.ReceiptRow]:
    async with h.brain.core.db.session() as s:
        return await repositories.receipts_since(s, user, datetime(1970, 1, 1, tzinfo=UTC))


async def test_save_shortcut_files_the_message_once_with_its_permalink_and_author(
        slack: Harness) -> None:
    slack.fake.names[AUTHOR] = "Dana Scully"
    status, _ = await slack.send.action(save_shortcut(trigger="T1",
                                                      response_url=slack.fake.hook_url("s1")))
    assert status == 200
    (hook,) = await slack.fake.wait_for("hook:s1")
    await slack.settle()
    assert hook.body["response_type"] == "ephemeral"
    assert "Saved to your brain" in hook.body["text"]
    entry_id = posted_entry_id(hook.body["blocks"])  # the card's buttons
    (note,) = vault_files(slack.vault)
    text = (slack.vault / note).read_text()
    assert SAVED_TEXT in text and entry_id in text
    assert f"source: {PERMALINK}" in text and "author: Dana Scully" in text
    # the same message saved again by the same person: nothing new is filed
    await slack.send.action(save_shortcut(trigger="T2", response_url=slack.fake.hook_url("s2")))
    (again,) = await slack.fake.wait_for("hook:s2")
    await slack.settle()
    assert "already in your brain" in again.body["text"]
    assert posted_entry_id(again.body["blocks"]) == entry_id
    assert vault_files(slack.vault) == [note]
    assert len(await receipts_of(slack, USER)) == 1
    assert slack.fake.calls_to("chat.postMessage") == []  # nothing public
    slack.check_cards()


async def test_another_person_saving_the_same_message_gets_their_own_note(
        slack: Harness) -> None:
    await slack.send.action(save_shortcut(trigger="T1", response_url=slack.fake.hook_url("a")))
    await slack.send.action(save_shortcut(trigger="T2", response_url=slack.fake.hook_url("b"),
                                          user=OTHER_USER))
    await slack.fake.wait_for("hook:b")
    await slack.settle()
    assert len(vault_files(slack.vault)) == 1
    assert len(vault_files(slack.data_dir / "vaults" / OTHER_USER)) == 1


async def test_capture_reaction_files_the_message_once_and_tells_only_the_reactor(
        slack: Harness) -> None:
    slack.fake.seed_message(CHANNEL, SAVED_TEXT, user=AUTHOR, ts=SAVED_TS)
    status, _ = await slack.send.event(reaction_added(event_id="EvR1"))
    assert status == 200
    (told,) = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert (told.body["channel"], told.body["user"]) == (CHANNEL, USER)
    assert "Saved to your brain" in told.body["text"]
    read = slack.fake.calls_to("conversations.history")[0].body
    assert (read["channel"], read["latest"]) == (CHANNEL, SAVED_TS)
    (note,) = vault_files(slack.vault)
    assert SAVED_TEXT in (slack.vault / note).read_text()
    # the reaction again (removed and added), and then the shortcut: still one note, and a
    # second reaction says nothing
    await slack.send.event(reaction_added(event_id="EvR2"))
    await slack.settle()
    assert len(slack.fake.calls_to("chat.postEphemeral")) == 1
    await slack.send.action(save_shortcut(trigger="T9", response_url=slack.fake.hook_url("s")))
    (hook,) = await slack.fake.wait_for("hook:s")
    await slack.settle()
    assert "already in your brain" in hook.body["text"]
    assert vault_files(slack.vault) == [note]
    assert slack.fake.calls_to("chat.postMessage") == []
    slack.check_cards()


async def test_other_reactions_and_reactions_to_the_bots_replies_file_nothing(
        slack: Harness) -> None:
    slack.fake.seed_message(CHANNEL, SAVED_TEXT, user=AUTHOR, ts=SAVED_TS)
    await slack.send.event(reaction_added(event_id="EvR3", reaction="thumbsup"))
    own = reaction_added(event_id="EvR3b")
    own["event"]["item_user"] = BOT_USER_ID
    await slack.send.event(own)
    await slack.settle()
    assert slack.fake.web_api_calls() == [] and not slack.vault.exists()


async def test_a_reaction_on_a_thread_reply_files_that_reply(slack: Harness) -> None:
    slack.fake.seed_message(CHANNEL, "Offsite planning thread", user=AUTHOR,
                            ts="1767261000.000100")
    slack.fake.seed_message(CHANNEL, "Book the venue for the offsite by Friday", user=AUTHOR,
                            ts="1767261050.000200", thread_ts="1767261000.000100")
    await slack.send.event(reaction_added(event_id="EvR4", ts="1767261050.000200"))
    (told,) = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert told.body["thread_ts"] == "1767261000.000100"  # shown where the reply is
    (note,) = vault_files(slack.vault)
    text = (slack.vault / note).read_text()
    assert "Book the venue" in text and "Offsite planning" not in text
    assert "thread_ts=1767261000.000100" in text  # the permalink opens the reply in its thread


async def test_a_deleted_message_is_not_saved_and_the_reactor_is_told(slack: Harness) -> None:
    await slack.send.event(reaction_added(event_id="EvR5", ts="1767269999.000999"))
    (told,) = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert "gone" in told.body["text"] and not slack.vault.exists()


async def test_the_ephemeral_cards_button_replaces_it_through_its_response_url(
        slack: Harness) -> None:
    await slack.send.action(save_shortcut(trigger="T1", response_url=slack.fake.hook_url("s")))
    (hook,) = await slack.fake.wait_for("hook:s")
    await slack.settle()
    entry_id = posted_entry_id(hook.body["blocks"])
    current = vault_files(slack.vault)[0].split("/")[0]
    target = "ideas" if current != "ideas" else "admin"
    press = button_press(entry_id, target, user=USER, channel=CHANNEL, message_ts=SAVED_TS,
                         thread_ts=SAVED_TS, response_url=slack.fake.hook_url("card"),
                         ephemeral=True)
    assert (await slack.send.action(press))[0] == 200
    (replaced,) = await slack.fake.wait_for("hook:card")
    await slack.settle()
    assert replaced.body["replace_original"] is True
    assert f"Moved to *{target.capitalize()}*" in json.dumps(replaced.body["blocks"])
    assert vault_files(slack.vault)[0].startswith(f"{target}/")
    assert slack.fake.calls_to("chat.update") == []  # ephemeral cards cannot be chat.update'd


async def test_saving_a_message_with_a_file_keeps_the_file_and_its_text(
        slack: Harness) -> None:
    """The shortcut brings the message's files, the reaction reads them with the message; the
    job downloads them with the bot token and the note holds their text either way."""
    from tests.tools.test_readers import make_pdf

    pdf = slack.fake.share_file("FS1", "venues.pdf", make_pdf(["The riverside hall seats 120"]))
    shortcut = save_shortcut(trigger="T1", response_url=slack.fake.hook_url("s1"))
    shortcut["message"]["files"] = [pdf]
    await slack.send.action(shortcut)
    await slack.fake.wait_for("hook:s1", timeout=30)
    shot = slack.fake.share_file("FS2", "notes.txt", b"Caterer quotes arrive on Friday")
    message = slack.fake.seed_message(CHANNEL, "", user=AUTHOR, ts="1767262000.000100")
    message["files"] = [shot]
    await slack.send.event(reaction_added(event_id="EvRF", ts="1767262000.000100"))
    await slack.fake.wait_for("chat.postEphemeral", timeout=30)
    await slack.settle()
    store = slack.brain.store_for(USER)
    for query, kept in (("riverside hall seats", "venues.pdf"),
                        ("caterer quotes Friday", "notes.txt")):
        (found,) = (await store.search(query)).entries
        assert f"![[attachments/{kept}]]" in (slack.vault / found.path).read_text()
    assert {c.token for c in slack.fake.file_gets} == {"Bearer xoxb-test"}
