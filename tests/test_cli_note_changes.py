"""`brain chat` as a process, offline provider: a message that names a note and a change to it
updates that note (and `brain undo` puts it back); an ambiguous name or a change that cannot
be read gets a question and changes nothing; the same thought sent twice is filed once."""

from __future__ import annotations

import re
from pathlib import Path

from tests.brain_cli import REPO, Result, run_process


def env(tmp_path: Path) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_LLM": "offline"}


def chat(tmp_path: Path, *lines: str) -> Result:
    proc = run_process(tmp_path, "chat", "--new", env=env(tmp_path),
                       stdin="".join(f"{line}\n" for line in lines))
    assert proc.code == 0, proc.err
    return proc


def notes(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "data" / "vaults" / "local"
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.md")) if not p.relative_to(root).parts[0].startswith(".")}


def test_mark_the_passport_as_done_sets_that_notes_status_and_undo_puts_it_back(
        tmp_path: Path) -> None:
    proc = chat(tmp_path, "Renew the passport before June", "mark the passport as done")
    ((path, text),) = notes(tmp_path).items()  # one note: no second one for the change
    assert path == "admin/renew-the-passport-before-june.md"
    assert re.search(r"^status: done$", text, re.M), text
    replies = proc.out.strip().splitlines()
    assert replies[-1].startswith("Updated Renew the passport before June: status done"), replies

    undo = run_process(tmp_path, "undo", env=env(tmp_path))
    assert undo.code == 0, undo.err
    ((_, text),) = notes(tmp_path).items()
    assert re.search(r"^status: todo$", text, re.M), text


def test_other_phrasings_change_the_note_they_name(tmp_path: Path) -> None:
    chat(tmp_path, "Renew the passport before June", "Plan the team offsite in Lisbon")
    (offsite,) = [p for p in notes(tmp_path) if p.startswith("projects/")]
    proc = chat(tmp_path, "push the passport to 2027-03-01", "the offsite is blocked",
                "rename the passport to Passport renewal", "move the offsite to ideas")
    files = notes(tmp_path)
    moved = offsite.replace("projects/", "ideas/")
    assert sorted(files) == ["admin/renew-the-passport-before-june.md", moved], proc.out
    passport = files["admin/renew-the-passport-before-june.md"]
    assert "due_date: '2027-03-01'" in passport and "name: Passport renewal" in passport
    assert "status: blocked" in files[moved]


def test_an_ambiguous_name_asks_which_and_changes_nothing(tmp_path: Path) -> None:
    chat(tmp_path, "Renew the passport before June", "Book passport photos for the visa")
    before = notes(tmp_path)
    proc = chat(tmp_path, "mark the passport as done")
    assert notes(tmp_path) == before  # nothing changed, nothing filed
    reply = proc.out.strip()
    assert reply.startswith("Which one did you mean:"), reply
    assert "Renew the passport before June" in reply
    assert "Book passport photos for the visa" in reply


def test_a_change_that_cannot_be_read_asks_and_files_nothing(tmp_path: Path) -> None:
    chat(tmp_path, "Renew the passport before June")
    before = notes(tmp_path)
    proc = chat(tmp_path, "mark the passport as urgent", "rename the passport",
                "mark the dentist as done")
    assert notes(tmp_path) == before
    asked, renamed, missing = proc.out.strip().splitlines()
    assert asked.startswith("Which status should \u201cpassport\u201d get?"), asked
    assert renamed.startswith("Which new name should \u201cpassport\u201d get?"), renamed
    assert missing == "No note matches 'dentist'; nothing was changed or saved.", missing


def test_a_statement_about_a_note_that_is_not_there_is_filed_as_a_thought(
        tmp_path: Path) -> None:
    proc = chat(tmp_path, "The vendor contract is blocked")
    assert len(notes(tmp_path)) == 1, proc.out  # nothing the person said is lost
    assert proc.out.startswith(("Filed to", "Saved to inbox")), proc.out


def readme_thought() -> str:
    """The first thing the README's example sends."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^you:\s+(.+)$", text, re.M)
    assert found, "the README's example is gone"
    return found.group(1).strip()


def test_the_readme_example_sent_twice_makes_one_note(tmp_path: Path) -> None:
    thought = readme_thought()
    proc = chat(tmp_path, thought, "fix: projects", thought)
    again = chat(tmp_path, thought)  # another chat, a moment later
    files = notes(tmp_path)
    assert list(files) == ["projects/sara.md"], (proc.out, again.out)  # no sara-2.md
    for reply in (proc.out.strip().splitlines()[-1], again.out.strip()):
        assert reply.startswith("Already in your notes: Sara [projects/sara.md]"), reply
        assert "nothing new was saved" in reply


def test_with_the_model_unreachable_a_request_files_nothing_and_a_statement_is_kept(
        tmp_path: Path) -> None:
    chat(tmp_path, "Renew the passport before June")
    before = notes(tmp_path)
    down = {**env(tmp_path), "BRAIN_LLM": "openai", "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "BRAIN_LLM_MAX_RETRIES": "0",
            "BRAIN_LLM_TIMEOUT": "5"}
    proc = run_process(tmp_path, "chat", "--new", env=down,
                       stdin="mark the passport as done\n")
    assert proc.code == 0, proc.err
    assert notes(tmp_path) == before, proc.out  # a change asked for is never filed as a note
    assert "nothing" in proc.out.lower(), proc.out  # and the reply says nothing was saved
    proc = run_process(tmp_path, "chat", "--new", env=down,
                       stdin="The vendor contract is blocked\n")
    assert proc.code == 0, proc.err
    added = sorted(set(notes(tmp_path)) - set(before))
    assert len(added) == 1 and added[0].startswith("inbox/"), proc.out  # a thought: kept
