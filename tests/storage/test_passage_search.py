"""Search by passages (issue 33): a long note is found by a sentence deep in its body, by its
words and by its meaning, and the hit shows that passage with the query's words marked; word
forms meet ("research" / "researching"); every hit carries its note's day, and a query that
names a time ranks (or lists) the notes of that time; an edit re-embeds only the passages it
changed. Real model, real database (SQLite, or PostgreSQL with `BRAIN_TEST_DB=postgres`)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from storage.db import Database
from storage.index.indexer import embed_pending
from storage.meaning.shared_model import Meaning
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.tools.conftest import write_note

MEANING = Meaning.load()
needs_model = pytest.mark.skipif(not MEANING.available, reason=f"no model: {MEANING.why}")

CHATTER = [
    "Morning! Did you sleep at all after the party?",
    "Barely. The neighbours' dog barked until two.",
    "We should plan the spring trip soon, the prices go up in March.",
    "Agreed. I can look at trains this weekend.",
    "How is your mum doing with the new tablet?",
    "She video called us by accident twice yesterday, camera pointed at the ceiling.",
    "Classic. Lien says hi, by the way.",
    "Tell her the soup recipe worked, even the kids ate it.",
    "Work is quiet this week, which is nice for once.",
    "Did the landlord ever fix the heating?",
    "He sent someone on Tuesday. It works, but it rattles.",
    "Better than cold. Are you still running on Sundays?",
    "Trying to. My knee complains after ten kilometres.",
    "Stretch more. I say that and never do it myself.",
    "Ha. Anyway, the cinema on the corner is closing in June.",
    "No! That's where we saw all the old westerns.",
    "I know. They're doing a last weekend of films from the eighties.",
    "We have to go. Saturday or Sunday?",
    "Sunday afternoon works for me.",
    "Booked two seats for the three o'clock showing.",
    "Dana has been researching co-working spaces near the station for her new team.",
    "Oh nice, she hates working from the kitchen table.",
    "She found one with a roof terrace, two hundred a month per desk.",
    "Cheaper than I thought. Ok, I have to cook now.",
    "Talk tomorrow!",
]


def _chat(created: str) -> str:
    lines = [f"{'Tobias' if i % 2 else 'Maren'}, 13 Apr 2025 10:{i:02d}: {text}"
             for i, text in enumerate(CHATTER)]
    return (f"---\nname: Chat with Tobias, 13 April 2025\ncategory: people\n"
            f"created: '{created}'\n---\n" + "\n\n".join(lines) + "\n")


OTHERS = {
    "projects/office-move.md": ("---\nname: Office move\ncategory: projects\ncreated: "
                                "'2025-05-02'\n---\nWe move to the new office in the autumn. "
                                "The team wants desks by the windows.\n"),
    "ideas/station-cafe.md": ("---\nname: Station cafe idea\ncategory: ideas\ncreated: "
                              "'2025-07-14'\n---\nA small cafe near the station, open early "
                              "for commuters.\n"),
    "admin/budget-may.md": ("---\nname: Budget review\ncategory: admin\ncreated: '2025-05-20'"
                            "\n---\nThe budget review of the quarter: spending on travel is "
                            "up, on software down.\n"),
    "admin/budget-july.md": ("---\nname: Budget review again\ncategory: admin\ncreated: "
                             "'2025-07-22'\n---\nThe budget review of the quarter: spending on "
                             "travel is down, on software up.\n"),
}


async def _store(tmp_path: Path, meaning: Meaning | None = MEANING) -> Store:
    root = tmp_path / "vault"
    write_note(root, "people/chat-with-tobias.md", _chat("2025-04-13T21:15:00+00:00"))
    for rel, text in OTHERS.items():
        write_note(root, rel, text)
    db = await Database.open(fresh_url(tmp_path))
    store = Store(Vault(root), db, meaning=meaning)
    await store.refresh()
    if meaning is not None:
        await embed_pending(db, store.index.key, meaning)
    return store


@needs_model
async def test_a_sentence_deep_in_a_long_chat_finds_it_and_shows_that_passage(
        tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        # By its words, then by meaning (the passage says "co-working", not "shared office").
        for query in ("what did Dana research", "shared office space for a team"):
            hits = (await store.search(query, limit=3)).entries
            [hit] = [h for h in hits if h.path == "people/chat-with-tobias.md"]
            assert hit.passage is not None and "co-working spaces" in hit.passage["text"]
            assert hit.passage["n"] > 0  # not the first passage: the chat's 21st message
            assert "co-working" in (hit.snippet or "")
        words_hit = (await store.search("what did Dana research", limit=1)).entries[0]
        assert words_hit.path == "people/chat-with-tobias.md"
        marked = [(words_hit.snippet or "")[a:b] for a, b in words_hit.marks or []]
        assert {"Dana", "researching"} <= set(marked)
    finally:
        await store.db.close()


async def test_word_forms_meet_without_the_model(tmp_path: Path) -> None:
    store = await _store(tmp_path, meaning=None)
    try:
        for query in ("research co-working", "researched coworking spaces", "researches"):
            found = await store.search(query, limit=5)
            assert [e.path for e in found.entries][:1] == ["people/chat-with-tobias.md"], query
        exact = await store.search("cafe near the station", limit=2)
        assert exact.entries[0].path == "ideas/station-cafe.md"  # exact words still lead
        assert "stems" in (exact.entries[0].signals or {})
    finally:
        await store.db.close()


async def test_every_hit_shows_its_notes_day(tmp_path: Path) -> None:
    store = await _store(tmp_path, meaning=None)
    root = store.vault.root
    write_note(root, "inbox/product-sync-2025-06-03.md",
               "---\nname: Product sync, 3 June 2025\n---\nThe budget for the sync.\n")
    write_note(root, "inbox/loose-budget.md", "A loose note about the budget.\n")
    stamp = dt.datetime(2024, 2, 29, 12, tzinfo=dt.UTC).timestamp()
    os.utime(root / "inbox/loose-budget.md", (stamp, stamp))
    await store.refresh()  # (a Store trusts a slow scan for a moment: be sure it saw them)
    try:
        found = {e.path: e.date for e in (await store.search("budget", limit=10)).entries}
        assert found["admin/budget-may.md"] == "2025-05-20"  # created
        assert found["inbox/product-sync-2025-06-03.md"] == "2025-06-03"  # its title's date
        assert found["inbox/loose-budget.md"] == "2024-02-29"  # its file's time
    finally:
        await store.db.close()


async def test_a_time_in_the_query_ranks_the_notes_of_that_time_first(tmp_path: Path) -> None:
    store = await _store(tmp_path, meaning=None)
    today = dt.date(2025, 7, 30)
    try:
        for query, first in (("budget review in May 2025", "admin/budget-may.md"),
                             ("budget review in July", "admin/budget-july.md"),
                             ("what did the budget review say last week",
                              "admin/budget-july.md")):
            found = await store.search(query, limit=2, today=today)
            assert found.entries[0].path == first, query
        listed = await store.search("what did I write in May", today=today)
        assert [e.path for e in listed.entries] == ["admin/budget-may.md",
                                                    "projects/office-move.md"]
    finally:
        await store.db.close()


@needs_model
async def test_an_edit_embeds_only_the_passages_it_changed(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        path = store.vault.root / "people/chat-with-tobias.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("two hundred a month", "three hundred a month"),
                        encoding="utf-8")
        await store.refresh()
        again = await embed_pending(store.db, store.index.key, MEANING)
        assert again.embedded == 1 and again.notes == 1
        hit = (await store.search("three hundred a month per desk", limit=1)).entries[0]
        assert hit.path == "people/chat-with-tobias.md"
        assert "three hundred" in (hit.passage or {}).get("text", "")
    finally:
        await store.db.close()


async def test_a_rare_word_said_once_outranks_a_name_said_many_times(tmp_path: Path) -> None:
    """bm25 on both databases: a word's repeats saturate and a rare word weighs most, so the
    chat that mentions "De Kade" once comes before the logs that say "Tobias" a hundred times.
    (PostgreSQL's ts_rank_cd alone counts every repeat in full: the logs came first.)"""
    root = tmp_path / "vault"
    write_note(root, "people/chat-with-tobias.md", _chat("2025-04-13T21:15:00+00:00").replace(
        "Talk tomorrow!", "Tobias got the old bakery from De Kade for one symbolic euro."))
    for i in range(4):
        calls = " ".join(f"Tobias called about the van, day {d}." for d in range(100))
        write_note(root, f"admin/calls-{i}.md",
                   f"---\nname: Calls log {i}\ncategory: admin\n---\n{calls}\n")
    db = await Database.open(fresh_url(tmp_path))
    store = Store(Vault(root), db)
    try:
        await store.refresh()
        found = await store.search("What did Tobias get from De Kade?", limit=5)
        assert [e.path for e in found.entries][:1] == ["people/chat-with-tobias.md"]
    finally:
        await db.close()


async def test_a_note_without_the_querys_small_words_counts_as_having_all_its_words(
        tmp_path: Path) -> None:
    """"the garden plan" names the note "Garden plan", which never says "the": it has every
    word that matters, so it is the one note that matches ("1 note matches"), not one of
    every note that says "plan" (stopwords are not required, on both databases)."""
    root = tmp_path / "vault"
    write_note(root, "projects/garden-plan.md",
               "---\nname: Garden plan\n---\nRaised beds behind a shed.\n")
    for i in range(3):
        write_note(root, f"admin/plan-{i}.md",
                   f"---\nname: Errand {i}\n---\nWe made the plan for the week {i}.\n")
    db = await Database.open(fresh_url(tmp_path))
    store = Store(Vault(root), db)
    try:
        await store.refresh()
        found = await store.search("the garden plan", limit=5)
        assert [e.path for e in found.entries][:1] == ["projects/garden-plan.md"]
        assert found.total == 1
    finally:
        await db.close()
