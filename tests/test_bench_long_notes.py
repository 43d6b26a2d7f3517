"""The long-note retrieval set of bench/bench_long_notes.py stays whole (issue 33).

Fast, no search: the notes in bench/long_notes/ read as the app's notes, the questions in
bench/long_note_questions.yaml quote passages their notes really hold, and paraphrases stay
paraphrases. Whoever edits a note or a question runs into these first.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bench.long_note_set import (
    KINDS,
    NOTES,
    Passage,
    Question,
    content_stems,
    load_questions,
    problems,
    read_notes,
)
from storage.notes import parse_note
from storage.types import Entry


@pytest.fixture(scope="module")
def notes() -> dict[str, Entry]:
    return read_notes()


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    return load_questions()


def test_the_set_is_big_enough_in_every_kind(notes: dict[str, Entry],
                                             questions: list[Question]) -> None:
    assert len(notes) >= 30
    assert len(questions) >= 200
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == set(KINDS), kinds
    assert min(kinds.values()) >= 40, kinds


def test_the_notes_are_long_and_read_as_the_apps_notes(notes: dict[str, Entry]) -> None:
    for rel, entry in notes.items():
        parsed = parse_note((NOTES / rel).read_text(encoding="utf-8"))
        assert parsed.has_frontmatter and parsed.frontmatter_error is None, rel
        assert str(parsed.frontmatter.get("id", "")).startswith("e_"), rel
        assert len(entry.body.split()) >= 400, f"{rel} is not a long note"
    folders = Counter(rel.split("/", 1)[0] for rel in notes)
    assert set(folders) == {"people", "projects", "ideas", "admin", "inbox"}, folders


def test_every_question_quotes_its_notes_and_paraphrases_share_no_word(
        notes: dict[str, Entry], questions: list[Question]) -> None:
    found = problems(notes, questions)
    assert not found, "the long-note set is broken:\n" + "\n".join(found)


def test_multi_questions_need_two_passages_and_some_span_two_notes(
        questions: list[Question]) -> None:
    multi = [q for q in questions if q.kind == "multi"]
    assert all(len(q.passages) >= 2 for q in multi)
    assert sum(1 for q in multi if len(q.relevant) >= 2) >= 20


# --- the checks catch what they are there to catch ---------------------------------------------

def _one(notes: dict[str, Entry], kind: str, text: str, note: str, quote: str) -> list[str]:
    return problems(notes, [Question(kind, text, (Passage(note, quote),))])


def test_a_quote_that_is_not_in_its_note_is_reported(notes: dict[str, Entry]) -> None:
    note = "admin/bathroom-leak-with-landlord-chat.md"
    assert _one(notes, "fact", "What caused the leak?", note, "the seal has cracked")  # reworded
    assert not _one(notes, "fact", "What caused the leak?", note,
                    "the seal between the shower tray and\n   the waste pipe has cracked")
    assert _one(notes, "fact", "What caused the leak?", "admin/no-such-note.md", "the seal")


def test_a_paraphrase_sharing_a_word_form_with_its_passage_or_title_is_reported(
        notes: dict[str, Entry]) -> None:
    note = "admin/bathroom-leak-with-landlord-chat.md"  # titled "Bathroom leak, chat with ..."
    quote = "the seal between the shower tray and the waste pipe has cracked"
    assert _one(notes, "paraphrase", "Why did the gasket under the tray give way?", note, quote)
    assert _one(notes, "paraphrase", "What was cracking under the basin?", note, quote)
    assert _one(notes, "paraphrase", "What was leaking?", note, quote)  # the title's word
    assert not _one(notes, "paraphrase", "What gave way under the basin?", note, quote)
    assert not _one(notes, "fact", "What cracked under the shower tray?", note, quote)


def test_word_forms_meet_and_function_words_do_not_count() -> None:
    assert content_stems("researching") == content_stems("research")
    assert content_stems("budgets") == content_stems("budget")
    assert content_stems("What did we do about it?") == set()


def test_the_checker_reads_a_broken_note(tmp_path: Path) -> None:
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "no-id.md").write_text("---\nname: x\n---\nsome text\n")
    found = problems(read_notes(tmp_path), [])
    assert any("lacks id" in line for line in found), found
