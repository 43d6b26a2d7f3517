"""Search by meaning from the command line: `brain reindex` gives notes their vectors and says
so, `brain search --json` says which signals found each note; with `BRAIN_EMBEDDING_MODEL`
pointing nowhere search still works by words and names, reindex and doctor say why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage.meaning.shared_model import Meaning
from tests.brain_cli import BrainCLI
from tests.tools.conftest import write_note

pytestmark = pytest.mark.skipif(not Meaning.load().available, reason="no embedding model")

NOTES = {
    "projects/q3-budget.md": "---\nname: Q3 budget\n---\nHow much each team gets from July "
                             "to September.\n",
    "people/sara-chen.md": "---\nname: Sara Chen\n---\nFinance lead.\n",
    "ideas/garden.md": "---\nname: Garden beds\n---\nRaised beds for tomatoes.\n",
}


def _cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], **env: str) -> BrainCLI:
    for rel, text in NOTES.items():
        write_note(tmp_path / "vault", rel, text)
    return BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data"),
                                       "BRAIN_OWNER": "me",
                                       "BRAIN_VAULT_DIR": str(tmp_path / "vault"), **env})


@pytest.mark.files_store
def test_reindex_embeds_and_search_explains_its_signals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = _cli(tmp_path, capsys)
    done = cli("reindex")
    assert done.code == 0, done.err
    assert "added 3" in done.out and "vectors: 3 passage(s) of 3 note(s) given vectors (3 embedded)" in done.out
    assert "embedding [" not in done.err  # no progress bar when stderr is not a terminal
    again = cli("reindex", "--json").json()
    assert again["meaning"] == "on" and again["vectors"]["embedded"] == 0

    found = cli("search", "spending", "for", "the", "summer", "quarter", "--json").json()
    top = found["entries"][0]
    assert top["name"] == "Q3 budget" and top["signals"].get("meaning") == 1
    named = cli("search", "Sara", "Chen", "--json").json()["entries"][0]
    assert named["name"] == "Sara Chen" and {"words", "name", "exact"} <= set(named["signals"])
    filtered = cli("search", "spending", "money", "--category", "ideas", "--json").json()
    assert all(e["category"] == "ideas" for e in filtered["entries"])


def test_without_the_model_search_reindex_and_doctor_say_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = _cli(tmp_path, capsys, BRAIN_EMBEDDING_MODEL=str(tmp_path / "nowhere.onnx"),
               BRAIN_LLM="offline")
    done = cli("reindex")
    assert done.code == 0 and "search by meaning is off: no model file at" in done.out
    assert "Traceback" not in done.err
    found = cli("search", "Sara", "--json").json()["entries"]
    assert [e["name"] for e in found] == ["Sara Chen"] and "meaning" not in found[0]["signals"]

    doctor = cli("doctor", "--offline")
    line = next(x for x in doctor.out.splitlines() if "Search by meaning" in x)
    assert line.startswith("FAIL") and "nowhere.onnx" in line
    assert "BRAIN_EMBEDDING_MODEL" in doctor.out
    assert "search by meaning is off" in cli("search", "Sara").err


REAL_VAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-vault"


def test_a_note_added_is_found_by_meaning_with_no_reindex(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's example: nothing shares a word with the note, only its meaning."""
    cli = BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data")})
    added = cli("add", "Idea: a podcast about urban gardening", "--category", "ideas")
    assert added.code == 0, added.err
    found = cli("search", "growing", "vegetables", "in", "the", "city", "--json").json()
    assert [e["name"] for e in found["entries"]] == ["Idea: a podcast about urban gardening"]
    assert found["entries"][0]["signals"].get("meaning") == 1
    asked = cli("ask", "--json", "any ideas about growing vegetables in the city?").json()
    assert asked["found"] and asked["sources"][0]["path"] == found["entries"][0]["path"]


# Three folders of the real vault (51 notes): embedding all 395 here cost ~15 s of CPU, and
# tests/storage/test_real_vault_meaning.py ranks the whole vault by meaning already.
REAL_FOLDERS = ("docs/Getting Started", "docs/Queries", "docs/How To")


@pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="real vault not present")
def test_a_vault_never_reindexed_is_searched_by_meaning_on_first_use(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real notes (a copy of part of the real vault, read, never written), a fresh data
    directory, no `brain reindex`: the first search gives the notes their vectors (saying so
    on stderr under --json) and finds a paraphrase that shares no word with the note it
    means."""
    vault = tmp_path / "real"
    for folder in REAL_FOLDERS:
        shutil.copytree(REAL_VAULT / folder, vault / folder)
    before = {p: p.stat().st_mtime_ns for p in vault.rglob("*.md")}
    assert len(before) > 40
    cli = BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data")})
    first = cli("search", "--vault", str(vault), "--json",
                "this job can't begin until that other one is finished")
    assert first.code == 0, first.err
    assert "vectors for search by meaning" in first.err
    names = [e["name"] for e in first.json()["entries"][:3]]
    assert "Task Dependencies" in names
    # Resumable: each search embeds more (a busy machine may need a few), none repeats work.
    for _ in range(8):
        again = cli("search", "--vault", str(vault), "--json", "turn on more verbose "
                    "diagnostic messages")
        assert again.code == 0, again.err
        if "vectors" not in again.err:
            break
    assert "vectors" not in again.err  # every passage has its vector now
    assert {p: p.stat().st_mtime_ns for p in vault.rglob("*.md")} == before
