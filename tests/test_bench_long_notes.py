"""The long-note retrieval set of bench/bench_long_notes.py stays whole (issue 33).

Fast, no search: the notes in bench/long_notes/ read as the app's notes, the questions in
bench/long_note_questions.yaml quote passages their notes really hold, and paraphrases stay
paraphrases. Whoever edits a note or a question runs into these first.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from bench.long_note_set import (
    KINDS,
    NOTES,
    SESSION_MESSAGES,
    SESSION_WORDS,
    Passage,
    Question,
    content_stems,
    in_series,
    load_questions,
    messages,
    problems,
    read_notes,
    series,
    sessions,
)
from storage.types import Entry
from storage.vault.note_text import parse_note


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


def test_the_set_holds_long_chats_between_the_same_two_people(
        notes: dict[str, Entry], questions: list[Question]) -> None:
    """The shape of a long conversation saved a session at a time: at least two series of ten
    sessions or more, each between the same two people, and questions asked of them that are
    mostly single facts."""
    chats = series(notes)
    assert sum(1 for rels in chats.values() if len(rels) >= 10) >= 2, chats
    for who, rels in chats.items():
        pairs = {frozenset(m.who for m in messages(notes[rel].body)) for rel in rels}
        assert len(pairs) == 1 and who in next(iter(pairs)), (who, pairs)
        low, high = SESSION_MESSAGES
        assert all(low <= len(messages(notes[rel].body)) <= high for rel in rels), who
        low, high = SESSION_WORDS
        assert all(low <= len(notes[rel].body.split()) <= high for rel in rels), who
    asked = [q for q in questions if in_series(q, sessions(notes))]
    assert len(asked) >= 150
    kinds = Counter(q.kind for q in asked)
    assert set(kinds) == set(KINDS) and kinds.most_common(1)[0][0] == "fact", kinds
    assert sum(1 for q in asked if q.kind == "multi" and len(q.relevant) >= 2) >= 15, kinds
    asked_of = Counter(p.note for q in asked for p in q.passages)
    assert all(asked_of[rel] >= 3 for rels in chats.values() for rel in rels), asked_of


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


def test_messages_are_read_in_the_three_forms_people_paste() -> None:
    body = ("Tobias, 9 Feb 2025 19:02: You got a minute?\n\n"
            "[06/03/2025, 20:14] Ines: Are you still up?\n\n"
            "Yara · 8 Sep 2025 · 19:58\nHi Maren!\n\n"
            "Not a message, 9 Feb 2025: a line that only looks like one\n")
    assert [(m.who, m.day.isoformat()) for m in messages(body)] == [
        ("Tobias", "2025-02-09"), ("Ines", "2025-03-06"), ("Yara", "2025-09-08")]


def _copy_series(notes: dict[str, Entry], who: str, root: Path) -> list[Path]:
    (root / "people").mkdir(parents=True)
    copied = []
    for rel in series(notes)[who]:
        copied.append(root / rel)
        shutil.copyfile(NOTES / rel, root / rel)
    return copied


def test_the_checker_reads_a_broken_series(notes: dict[str, Entry], tmp_path: Path) -> None:
    copied = _copy_series(notes, "Tobias", tmp_path)
    assert not problems(read_notes(tmp_path), [])
    first, second = copied[0], copied[1]
    text = first.read_text(encoding="utf-8")
    first.write_text(text.replace("Maren, 9 Feb 2025 19:05: Always.",
                                  "Sam, 9 Feb 2025 19:05: Always."), encoding="utf-8")
    text = second.read_text(encoding="utf-8")
    second.write_text(text.replace("Maren, 1 Mar 2025 10:30: Read it.",
                                   "Maren, 2 Mar 2025 10:30: Read it."), encoding="utf-8")
    for extra in copied[-3:]:
        extra.unlink()
    found = problems(read_notes(tmp_path), [])
    assert any("fewer than 10" in line for line in found), found
    assert any(first.name in line and "not Tobias and one other" in line for line in found)
    assert any("not between the same two people" in line for line in found), found
    assert any(second.name in line and "2025-03-02" in line for line in found), found


def test_a_question_belongs_to_the_series_by_the_passage_it_was_written_for(
        notes: dict[str, Entry]) -> None:
    chat = "people/chat-with-tobias-2025-12-14.md"
    log = "projects/marathon-training-log.md"
    asked_of_chat = Question("fact", "Where?", (Passage(chat, "x"), Passage(log, "y")))
    asked_of_log = Question("fact", "Where?", (Passage(log, "y"), Passage(chat, "x")))
    assert in_series(asked_of_chat, sessions(notes))
    assert not in_series(asked_of_log, sessions(notes))
