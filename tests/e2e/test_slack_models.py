"""Each person's model (issue 21, item 4): the App Home offers the connections set up here
(names, never keys); a choice is used for that person's next turn through the real SDK of
that provider (both, against local fakes) and nobody else's; a choice that is no longer set
up falls back to the default and says so once."""

from __future__ import annotations

from pathlib import Path

from storage.repositories import slack_state
from tests.bot.fake_llm_server import (
    ANTHROPIC_PATH,
    FakeLLMServer,
    anthropic_text,
    openai_text,
)
from tests.e2e.bot_harness import Harness, running_bot
from tests.e2e.slack_harness import OTHER_USER, USER, home_opened, home_press, message_event


def model_select(h: Harness) -> dict:
    view = h.fake.calls_to("views.publish")[-1].body["view"]
    (block,) = [b for b in view["blocks"] if b.get("block_id") == "home-model"]
    (select,) = block["elements"]
    return dict(select)


async def dm(h: Harness, text: str, n: int, user: str = USER) -> str:
    await h.send.event(message_event(text, ts=f"17672650{n:02d}.000100", event_id=f"EvM{n}",
                                     user=user))
    posts = await h.fake.wait_for_reply(n, timeout=30)
    await h.settle()
    return str(posts[n - 1]["text"])


async def test_a_persons_model_from_the_app_home_is_used_for_their_turns(
        tmp_path: Path) -> None:
    llm = FakeLLMServer().start()
    try:
        async with running_bot(tmp_path, BRAIN_LLM="offline",
                               OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm.openai_base_url,
                               ANTHROPIC_API_KEY="sk-ant-test",
                               ANTHROPIC_BASE_URL=llm.anthropic_base_url) as h:
            await h.send.event(home_opened(event_id="EvHomeM"))
            await h.fake.wait_for("views.publish")
            await h.settle()
            select = model_select(h)
            assert sorted(o["value"] for o in select["options"]) == ["anthropic", "offline", "openai"]
            assert select["initial_option"]["value"] == "offline"  # the app's default
            assert "sk-" not in str(select)

            await h.send.action(home_press("home_model", "openai", trigger="T-m1", select=True))
            await h.fake.wait_for("views.publish", count=2)
            await h.settle()
            assert model_select(h)["initial_option"]["value"] == "openai"
            llm.script([openai_text("Hello from the OpenAI side.")])
            assert "Hello from the OpenAI side." in await dm(h, "what is on my plate?", 1)
            assert [r.path for r in llm.requests] == ["/v1/chat/completions"]

            await h.send.action(home_press("home_model", "anthropic", trigger="T-m2",
                                           select=True))
            await h.fake.wait_for("views.publish", count=3)
            await h.settle()
            llm.script([anthropic_text("Hello from the Anthropic side.")])
            assert "Hello from the Anthropic side." in await dm(h, "what should I do next?", 2)
            assert llm.requests[-1].path == ANTHROPIC_PATH

            # someone who chose nothing: the default (the offline rules), no request made
            await dm(h, "what is due this week?", 3, user=OTHER_USER)
            assert len(llm.requests) == 2

            # a choice no longer set up: the default, said once
            async with h.brain.core.db.session() as s:
                await slack_state.set_model(s, USER, "retired-model")
                await s.commit()
            first = await dm(h, "what is due this week?", 4)
            assert "The model you chose (retired-model) is not set up here any more" in first
            second = await dm(h, "what is due this week?", 5)
            assert "not set up here" not in second
            assert len(llm.requests) == 2
    finally:
        llm.stop()
