"""The App Home end to end: published when opened (valid Block Kit, at most 100 blocks, saying
what is left out), updated after a press on it and after a change made elsewhere."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from slack_sdk.models.views import View

from bot.slack.cards import validate_message
from bot.slack.home_view import DIGEST_DAILY
from storage import repositories
from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import OTHER_USER, USER, home_opened, home_press, vault_files


def dump(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def blocks_of(call: Any) -> list[dict[str, Any]]:
    view = call.body["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert view["type"] == "home"
    blocks: list[dict[str, Any]] = view["blocks"]
    return blocks


def block(blocks: list[dict[str, Any]], block_id: str) -> dict[str, Any]:
    return next(b for b in blocks if b.get("block_id") == block_id)


async def open_home(h: Harness, n: int = 1, event_id: str = "EvH1") -> list[dict[str, Any]]:
    assert (await h.send.event(home_opened(event_id=event_id)))[0] == 200
    calls = await h.fake.wait_for("views.publish", n)
    await h.settle()
    return blocks_of(calls[-1])


async def test_the_home_shows_everything_within_slacks_limits(slack: Harness) -> None:
    store = slack.brain.store_for(USER)
    today = datetime.now(UTC).astimezone(ZoneInfo("Asia/Tokyo")).date()  # the user's zone
    for i in range(25):
        await store.create("inbox", f"Loose thought {i}", {"reason": "unsure"}, f"text {i}\n")
    for i in range(20):
        await store.create("projects", f"Project {i:02d}",
                           {"status": "active", "next_action": f"step {i}",
                            "due_date": (today + timedelta(days=i)).isoformat()}, "")
    await store.create("admin", "Renew passport", {"status": "todo",
                                                   "due_date": today.isoformat()}, "")
    await slack.file_dm()
    blocks = await open_home(slack)
    (call,) = slack.fake.calls_to("views.publish")
    assert call.body["user_id"] == USER
    assert len(blocks) <= 100
    assert validate_message(blocks, "home", max_blocks=100) == blocks
    View(type="home", blocks=blocks).to_dict()  # the SDK's own view checks
    text = dump(blocks)
    assert "Inbox to review (25)" in text and "…and 15 more in the inbox" in text
    assert "brain list --category inbox" in text  # how to see what is left out
    # the 15 most recently updated of 20 (which 15 varies: notes made in one second tie)
    assert text.count("* — next: step ") == 15 and "Active projects (20)" in text
    assert "…and 5 more active projects" in text
    assert f"{today.isoformat()} *today* · *Renew passport*" in text
    assert "Due in the next 7 days" in text and "Latest captures" in text
    buttons = block(blocks, "home-inbox-buttons-0")["elements"]
    assert {b["action_id"] for b in buttons} >= {"move_entry:projects", "undo_entry"}
    selects = block(blocks, "home-digests")["elements"]
    assert [s["action_id"] for s in selects] == ["home_digest_daily", "home_digest_weekly"]


async def test_a_button_on_the_home_moves_the_note_and_the_home_updates(
        slack: Harness) -> None:
    store = slack.brain.store_for(USER)
    note = await store.create("inbox", "Maybe learn Rust", {"reason": "unsure"}, "text\n")
    blocks = await open_home(slack)
    button = next(b for b in block(blocks, "home-inbox-buttons-0")["elements"]
                  if b["action_id"] == "move_entry:ideas")
    press = home_press("move_entry:ideas", button["value"], trigger="H1")
    assert (await slack.send.action(press))[0] == 200
    calls = await slack.fake.wait_for("views.publish", 2)
    await slack.settle()
    assert vault_files(slack.vault) == [note.path.replace("inbox/", "ideas/")]
    after = dump(blocks_of(calls[-1]))
    assert "Moved to Ideas: Maybe learn Rust" in after and "Inbox to review (0)" in after


async def test_a_home_press_acts_only_on_the_pressers_own_vault(slack: Harness) -> None:
    note = await slack.brain.store_for(USER).create("inbox", "Mine", {"reason": "x"}, "t\n")
    value = json.dumps({"entry_id": note.id, "to": "ideas"})
    await slack.send.action(home_press("move_entry:ideas", value, trigger="H9",
                                       user=OTHER_USER))
    (call,) = await slack.fake.wait_for("views.publish")
    await slack.settle()
    assert call.body["user_id"] == OTHER_USER
    assert "Couldn't change it" in dump(blocks_of(call))
    assert vault_files(slack.vault) == [note.path]


async def test_the_digest_select_changes_the_schedule_like_the_command(slack: Harness) -> None:
    await open_home(slack)
    await slack.send.action(home_press(DIGEST_DAILY, "subscribe daily 07:00", trigger="H2",
                                       select=True))
    calls = await slack.fake.wait_for("views.publish", 2)
    await slack.settle()
    async with slack.brain.core.db.session() as s:
        (sub,) = await repositories.list_subscriptions(s)
    assert (sub.user_id, sub.kind, sub.hour, sub.minute, sub.tz) == \
        (USER, "daily", 7, 0, "Asia/Tokyo")  # the zone from users.info, as /digest does
    daily = block(blocks_of(calls[-1]), "home-digests")["elements"][0]
    assert daily["initial_option"]["value"] == "subscribe daily 07:00"
    assert "daily at 07:00 (Asia/Tokyo)" in dump(blocks_of(calls[-1]))
    await slack.send.action(home_press(DIGEST_DAILY, "off daily", trigger="H3", select=True))
    await slack.fake.wait_for("views.publish", 3)
    await slack.settle()
    async with slack.brain.core.db.session() as s:
        assert await repositories.list_subscriptions(s) == []


async def test_the_home_refreshes_after_a_capture_made_elsewhere(slack: Harness) -> None:
    await slack.file_dm("Remember to water the office plants", event_id="EvP0")
    assert slack.fake.calls_to("views.publish") == []  # never opened: nothing to refresh
    await open_home(slack)
    await slack.file_dm("Call the dentist about the crown next Tuesday",
                        ts="1767261700.000100", event_id="EvP1")
    calls = slack.fake.calls_to("views.publish")
    assert len(calls) == 2  # the capture refreshed the open Home
    assert "dentist" in dump(blocks_of(calls[-1])).lower()


async def test_the_home_lists_the_latest_changes_and_undoes_one(slack: Harness) -> None:
    store = slack.brain.store_for(USER)
    note = await store.create("inbox", "Maybe learn Rust", {"reason": "unsure"}, "text\n")
    original = (slack.vault / note.path).read_bytes()
    await store.move(note.path, "ideas")
    blocks = await open_home(slack)
    text = dump(blocks)
    assert "Latest changes" in text and "*move*: Maybe learn Rust to ideas" in text
    (move,) = [b for b in blocks if b.get("block_id", "").startswith("change-")
               and "*move*" in b["text"]["text"]]
    button = move["accessory"]
    assert button["action_id"] == "home_undo_change"
    await slack.send.action(home_press("home_undo_change", button["value"], trigger="H7"))
    calls = await slack.fake.wait_for("views.publish", 2)
    await slack.settle()
    assert vault_files(slack.vault) == [note.path]
    assert (slack.vault / note.path).read_bytes() == original
    assert "Undone: move: Maybe learn Rust to ideas" in dump(blocks_of(calls[-1]))
