"""A message that names a note and a change to it changes that note and never files a new one
(tools/rules/note_changes.py, the offline provider's reading): properties over generated phrasings,
on the rules alone and through whole turns of the real Brain on a real vault and database."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine, Iterator
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.brain import Brain
from bot.config import Settings
from bot.llm.offline import OfflineProvider
from tests.databases import database_env
from tools.rules.categories import CATEGORY_WORDS
from tools.rules.intent import route
from tools.rules.note_changes import STATUS_WORDS, read_named

T = TypeVar("T")
TODAY = date(2026, 11, 27)
SEEDED = ["Renew the passport before June", "Book passport photos for the visa",
          "Plan the team offsite in Lisbon"]
# Requests: a change to the note the words name, whatever the vault holds.
REQUESTS = [
    "mark {n} as {s}", "mark the {n} {s}", "Mark my {n} note as {s}.", "set {n} to {s}",
    "please mark the {n} as {s}", "could you mark {n} as {s} please",
    "push {n} to {d}", "move the {n} to {d}", "postpone the {n} until {d}",
    "could you push the {n} back to {d}", "set the due date of the {n} to {d}",
    "reschedule {n} to {d}", "rename the {n} to {w}", "rename {n}", "move the {n} to {c}",
    "file the {n} under {c}", "mark the {n} as {x}", "update the {n} note",
]
DAYS = ["Friday", "next week", "March 3", "tomorrow", "next Tuesday", "2027-02-01",
        "the end of the month"]
JUNK = ["urgent", "important", "maybe later", "green"]
NAME_WORDS = ["passport", "photos", "visa", "offsite", "lisbon", "team offsite", "dentist",
              "budget review", "passport photos", "renew the passport"]
word = st.from_regex(r"[a-z]{3,9}", fullmatch=True).filter(
    lambda w: w not in {"the", "our", "its", "all", "one", "you", "she", "they", "him", "her",
                        "them", "this", "that", "note", "task", "entry", "item", "todo"})
names = st.one_of(st.sampled_from(NAME_WORDS),
                  st.lists(word, min_size=1, max_size=3).map(" ".join))


@st.composite
def requests(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(REQUESTS))
    return template.format(n=draw(names), s=draw(st.sampled_from(sorted(STATUS_WORDS))),
                           d=draw(st.sampled_from(DAYS)), w=draw(names).title(),
                           c=draw(st.sampled_from(sorted(CATEGORY_WORDS))),
                           x=draw(st.sampled_from(JUNK)))


@settings(max_examples=300, deadline=None)
@given(text=requests())
def test_a_request_to_change_a_named_note_is_never_read_as_a_thought(text: str) -> None:
    decided = route(text, today=TODAY)
    assert decided.tool != "classify_and_capture", (text, decided)
    assert decided.or_else is None  # a request asks, it never falls back to filing
    if decided.tool is not None:
        assert decided.tool in ("update_entry", "move_entry")
        assert decided.arguments and decided.arguments["path"], text
    else:
        assert decided.text and "Nothing was changed" in decided.text, text


@pytest.mark.parametrize(("text", "tool", "arguments"), [
    ("mark the passport as done", "update_entry", {"path": "passport",
                                                   "updates": {"status": "done"}}),
    ("OK, mark my passport note finished", "update_entry", {"path": "passport",
                                                            "updates": {"status": "done"}}),
    ("actually the passport is done", "update_entry", {"path": "passport",
                                                       "updates": {"status": "done"}}),
    ("the launch is on hold", "update_entry", {"path": "launch",
                                               "updates": {"status": "waiting"}}),
    ("push the dentist to 2027-01-08", "update_entry", {"path": "dentist",
                                                        "updates": {"due_date": "2027-01-08"}}),
    ("update: the offsite moved to March 3", "update_entry",
     {"path": "offsite", "updates": {"due_date": "2027-03-03"}}),
    ("set the deadline of the offsite to Friday", "update_entry",
     {"path": "offsite", "updates": {"due_date": "2026-12-04"}}),
    ("rename the passport to Passport renewal", "update_entry",
     {"path": "passport", "updates": {"name": "Passport renewal"}}),
    ("move the offsite to projects", "move_entry", {"path": "offsite",
                                                    "target_category": "projects"}),
    ("file the dentist under tasks", "move_entry", {"path": "dentist",
                                                    "target_category": "admin"}),
])
def test_each_phrasing_is_the_call_a_model_would_make(text: str, tool: str,
                                                      arguments: dict[str, Any]) -> None:
    decided = route(text, today=TODAY)  # a Friday is 2026-12-04 from here
    assert (decided.tool, decided.arguments) == (tool, arguments)


@pytest.mark.parametrize("text", [
    "Renew the passport before June", "Call Sara about the Q3 budget next week",
    "Sara moved to Berlin", "push the team to finish by Friday", "put the milk in the fridge",
    "mark it done", "I'm done", "Everything is done", "Could we gamify code reviews?",
])
def test_thoughts_and_corrections_of_the_thread_are_not_named_changes(text: str) -> None:
    assert read_named(text, today=TODAY) is None


class Turns:
    """A real Brain (offline provider, the suite's database) on a private loop, for
    synchronous hypothesis tests; the vault has the SEEDED notes."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        settings = Settings(_env_file=None, BRAIN_DATA_DIR=tmp / "data",  # type: ignore[call-arg]
                            **database_env(tmp))
        self.brain = self.run(Brain.start(settings, provider=OfflineProvider(tz="UTC")))
        self.keys = itertools.count()
        for text in SEEDED:
            assert self.turn(text).filed

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def turn(self, text: str) -> Any:
        return self.run(self.brain.turns.handle(
            conversation_key=f"cli:u1:{next(self.keys)}", user_id="u1", text=text))

    def ids(self) -> set[str]:
        listed = self.run(self.brain.store_for("u1").list(limit=50))
        return {e.id or e.path for e in listed.entries}

    def close(self) -> None:
        self.run(self.brain.close())
        self.loop.close()


@pytest.fixture(scope="module")
def turns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Turns]:
    from tests.databases import kept

    with kept():  # one database for the module's examples
        box = Turns(tmp_path_factory.mktemp("named"))
        yield box
        box.close()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=requests())
def test_a_request_to_change_a_note_never_creates_one(turns: Turns, text: str) -> None:
    before = turns.ids()
    result = turns.turn(text)
    assert turns.ids() == before, (text, result.text)  # changed or asked: never a new note
    assert not result.filed, text
    assert result.text.strip(), text  # it said what happened (or asked)
