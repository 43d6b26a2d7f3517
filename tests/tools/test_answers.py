"""Answers from the notes (tools/answers/): questions read into filters, the extractive answer
on a vault of realistic captures (the targets of bench/bench_answers.py), citations checked,
and, for any question at all, no source outside the vault and no quote outside its note."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.answer_sets import TODAY, questions, write_captures
from storage.db import Database
from storage.index.indexer import embed_pending
from storage.meaning.shared_model import Meaning
from storage.types import Entry
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tools.answers.cite import checked
from tools.answers.extract import extractive
from tools.answers.question import read_question
from tools.answers.sentences import quote_in, sentences

MEANING = Meaning.load()
ON_THE_VAULT = pytest.mark.asyncio(loop_scope="module")  # the tests that share `store`


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def store(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Store]:
    root = tmp_path_factory.mktemp("captures")
    db = await Database.open(fresh_url(root, "answers"))
    store = Store(Vault(write_captures(root / "vault")), db, meaning=MEANING)
    await store.refresh()
    if MEANING.available:
        await embed_pending(db, store.index.key, MEANING)
    yield store
    await db.close()


WED = date(2026, 11, 25)


@pytest.mark.parametrize(("text", "after", "until", "status", "category", "query"), [
    ("What did I decide about the offsite?", None, None, None, None, "offsite"),
    ("what's due this week?", date(2026, 11, 25), date(2026, 11, 29), None, None, ""),
    ("what's on my plate this week?", None, date(2026, 11, 29), None, None, ""),
    ("anything overdue?", None, date(2026, 11, 24), None, None, ""),
    ("what is due Friday", date(2026, 11, 27), date(2026, 11, 27), None, None, ""),
    ("what is due by the 20th?", None, date(2026, 12, 20), None, None, ""),
    ("what do I need to do in the next 7 days", None, date(2026, 12, 1), None, None, ""),
    ("which projects are blocked?", None, None, "blocked", "projects", ""),
    ("list my active tasks", None, None, "todo", "admin", ""),
    ("who is Priya?", None, None, None, None, "Priya"),
])
def test_time_and_status_phrases_become_filters(text: str, after: date | None,
                                                until: date | None, status: str | None,
                                                category: str | None, query: str) -> None:
    q = read_question(text, WED)
    assert (q.due_after, q.due_until, q.status, q.category, q.query) == \
        (after, until, status, category, query)


@ON_THE_VAULT
async def test_the_captures_set_meets_its_targets(store: Store) -> None:
    asked = questions("captures")
    found, nothing, answerable, unanswerable = 0, 0, 0, 0
    misses = []
    for item in asked:
        answer = await extractive(store, read_question(item.question, TODAY))
        paths = [s.path for s in answer.sources]
        if item.answerable:
            answerable += 1
            ok = any(p in item.expect for p in paths)
            found += ok
        else:
            unanswerable += 1
            ok = not answer.found and not answer.sources
            nothing += ok
        if not ok:
            misses.append((item.question, answer.text))
    assert answerable >= 20 and unanswerable >= 6
    assert found / answerable >= 0.85, misses
    assert nothing / unanswerable >= 0.9, misses


@ON_THE_VAULT
async def test_a_filter_question_lists_what_passes_with_the_line_that_shows_it(
        store: Store) -> None:
    answer = await extractive(store, read_question("What is overdue?", TODAY))
    assert [s.path for s in answer.sources] == ["admin/renew-passport.md"]
    assert answer.sources[0].quote == "due_date: 2026-11-24"
    assert "Renew passport" in answer.text
    blocked = await extractive(store, read_question("Which projects are blocked?", TODAY))
    assert [s.path for s in blocked.sources] == ["projects/website-redesign.md"]


@ON_THE_VAULT
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(question=st.one_of(
    st.text(min_size=1, max_size=120),
    st.lists(st.sampled_from(["what", "who", "Sara", "budget", "offsite", "due", "this week",
                              "blocked", "passport", "the", "?", "Milo", "overdue", "zebra",
                              "projects", "ideas", "when", "how much", "podcast", "[[x]]"]),
             min_size=1, max_size=8).map(" ".join)))
async def test_any_question_cites_only_notes_of_the_vault_and_their_own_words(
        store: Store, question: str) -> None:
    answer = await extractive(store, read_question(question, TODAY))
    if not answer.found:
        assert answer.sources == []
    root = store.vault.root
    for source in answer.sources:
        path = (root / source.path).resolve()
        assert path.is_file() and path.is_relative_to(root.resolve())
        entry = await store.get(source.path)
        assert quote_in(source.quote, entry), (question, source)


def _note(body: str, **fields: Any) -> Entry:
    return Entry(path="ideas/x.md", id="e_1", name="Gamify reviews",
                 category="ideas", fields={"one_liner": "Points for reviewers", **fields},
                 body=body)


async def test_citations_that_fail_are_dropped_with_their_sentences() -> None:
    note = _note("Could we gamify code reviews with points?\nA leaderboard might help.")
    returned = {"e_1": {"id": "e_1", "path": "ideas/x.md", "name": "Gamify reviews"},
                "ideas/x.md": {"id": "e_1", "path": "ideas/x.md", "name": "Gamify reviews"}}

    async def read(ref: str) -> Entry | None:
        return note if ref in ("e_1", "ideas/x.md") else None

    answer = await checked("idea?", [
        {"text": "You thought of points for reviews.",
         "citations": [{"id": "e_1", "quote": "gamify  code REVIEWS with points"}]},
        {"text": "And a leaderboard.", "citations": [
            {"id": "e_9", "quote": "A leaderboard might help."}]},  # not returned this turn
        {"text": "It launched in May.", "citations": [
            {"id": "ideas/x.md", "quote": "launched in May"}]},  # not in the note
        {"text": "Reviewers get points.", "citations": [
            {"id": "ideas/x.md", "quote": "Points for reviewers"}]},  # a frontmatter field
    ], returned, read)
    assert answer.found
    assert answer.text == "You thought of points for reviews. Reviewers get points."
    assert len(answer.dropped) == 2
    assert {s.quote for s in answer.sources} == {"gamify  code REVIEWS with points",
                                                 "Points for reviewers"}
    nothing = await checked("?", [{"text": "Made up.", "citations": [
        {"id": "e_1", "quote": "not there"}]}], returned, read)
    assert not nothing.found and nothing.sources == []
    assert nothing.text.startswith("I could not find that in your notes")
    assert "Gamify reviews" in nothing.text  # the closest notes are named


def test_sentences_are_quotable_spans_and_skip_code_tables_and_bare_links() -> None:
    note = _note("# Plan\n\nFirst sentence here. Second one\ncontinues here.\n\n"
                 "- [ ] call the venue about dates\n| a | b |\n```\ncode here please\n```\n"
                 "[[Some Link]]\n")
    quotes = [s.quote for s in sentences(note)]
    assert quotes == ["Points for reviewers", "First sentence here.",
                      "Second one continues here.", "call the venue about dates"]
    assert all(quote_in(q, note) for q in quotes)
