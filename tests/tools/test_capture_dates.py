"""The capture tool reads a thought's dates in the user's zone and keeps a due date whatever
the category (the keyword classifier's fallback, without hints from a model)."""

from __future__ import annotations

from dataclasses import replace

from tests.tools.test_tools import call
from tools.base import ToolContext
from tools.rules import classify


async def test_capture_without_hints_reads_dates_in_the_users_zone(ctx: ToolContext) -> None:
    # UTC+14 is always a day ahead of UTC-12: "tomorrow" depends on whose tomorrow it is.
    ctx.deps = replace(ctx.deps, tz="Pacific/Kiritimati")
    ex = await call(ctx, "classify_and_capture",
                    text="Follow up with Dr. Patel about the results tomorrow")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert (data["category"], data["name"]) == ("people", "Dr. Patel")
    assert data["fields"]["due_date"] == classify.due_date(
        "tomorrow", classify.today_in("Pacific/Kiritimati"))


async def test_capture_keeps_a_due_date_the_model_gives_a_person(ctx: ToolContext) -> None:
    ex = await call(ctx, "classify_and_capture", text="Ask Lena for feedback by Friday",
                    hints={"category": "people", "confidence": 0.9, "name": "Lena",
                           "due_date": "2030-07-05", "next_action": "not a people field"})
    assert ex.status == "ok", ex.content
    fields = ex.output.data["fields"] if ex.output else {}
    assert fields["due_date"] == "2030-07-05" and "next_action" not in fields


async def test_capture_without_hints_asks_the_neighbours_when_unsure(ctx: ToolContext) -> None:
    asked: list[str] = []

    def similar(text: str) -> list[tuple[str, float]]:
        asked.append(text)
        return [("ideas", 0.8), ("ideas", 0.7)]

    ctx.deps = replace(ctx.deps, similar=similar)
    ex = await call(ctx, "classify_and_capture", text="the sky was very blue this morning")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert asked == ["the sky was very blue this morning"]
    assert data["category"] == "ideas" and data["confidence"] >= 0.6
