"""Vault: the files of one vault. Real files in tmp_path; no mocks."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.errors import InvalidValue, NotFound, UnsafePath
from storage.types import CATEGORIES
from storage.vault.files import Vault
from storage.vault.note_text import parse_note
from tests.storage.conftest import ODD_NOTES

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")


def files(vault: Vault) -> list[str]:
    return sorted(rel for rel, _, _ in vault.scan())


# --- create ------------------------------------------------------------------------------------


def test_create_writes_a_complete_note(vault: Vault) -> None:
    entry = vault.create("projects", "Q3 Budget", {"tags": "finance", "confidence": 0.9,
                                                   "source": "cli", "mood": "keen"}, "Call Sara")
    assert entry.path == "projects/q3-budget.md"
    assert re.fullmatch(r"e_[0-9a-f]{12}", entry.id or "")
    assert entry.name == "Q3 Budget" and entry.category == "projects"
    front = parse_note(vault.read_text(entry.path)).frontmatter
    assert list(front) == ["id", "category", "name", "aliases", "status", "next_action",
                           "due_date", "tags", "confidence", "source", "created", "updated",
                           "mood"]
    assert front["status"] == "active" and front["tags"] == ["finance"]
    assert front["aliases"] == ["Q3 Budget"]  # Obsidian offers the note when the name is typed
    assert ISO.match(front["created"]) and front["created"] == front["updated"]
    assert vault.read(entry.path) == entry
    assert entry.body == "Call Sara\n"


@pytest.mark.parametrize("category, defaults", [
    ("people", {"context": None, "follow_ups": [], "last_touched": None, "tags": []}),
    ("admin", {"status": "todo", "due_date": None, "next_action": None}),
    ("ideas", {"one_liner": None, "tags": []}),
    ("inbox", {"original_text": None, "suggested_category": None, "reason": None}),
])
def test_create_fills_category_defaults(vault: Vault, category: str,
                                        defaults: dict[str, object]) -> None:
    entry = vault.create(category, "Thing", {}, "")
    for key, value in defaults.items():
        assert entry.fields[key] == value


def test_create_refuses_bad_input_and_writes_nothing(vault: Vault) -> None:
    with pytest.raises(InvalidValue, match="unknown category"):
        vault.create("recipes", "Soup", {}, "")
    with pytest.raises(InvalidValue, match="status"):
        vault.create("projects", "P", {"status": "finished"}, "")
    with pytest.raises(InvalidValue, match="list"):
        vault.create("people", "Ann", {"tags": [{"a": 1}]}, "")
    with pytest.raises(InvalidValue, match="name"):
        vault.create("ideas", "  ", {}, "")
    assert files(vault) == []


def test_slug_collisions_get_suffixes(vault: Vault) -> None:
    paths = [vault.create("ideas", "Same Name", {}, f"n{i}").path for i in range(3)]
    assert paths == ["ideas/same-name.md", "ideas/same-name-2.md", "ideas/same-name-3.md"]
    assert [vault.read(p).body for p in paths] == ["n0\n", "n1\n", "n2\n"]


def test_concurrent_creators_never_overwrite(vault: Vault) -> None:
    barrier = threading.Barrier(20)
    results: list[str] = []

    def create(i: int) -> None:
        barrier.wait()
        results.append(vault.create("people", "Sara", {}, f"body {i}").path)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 20
    assert len(files(vault)) == 20
    bodies = sorted(vault.read(p).body for p in results)
    assert bodies == sorted(f"body {i}\n" for i in range(20))


# --- read / scan -------------------------------------------------------------------------------


def test_odd_notes_read_fine_and_reads_never_write(odd_vault: Vault) -> None:
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in odd_vault.root.rglob("*.md")}
    for name in ODD_NOTES:
        entry = odd_vault.read(f"notes/{name}")
        assert entry.category is None and entry.id is None
    assert odd_vault.read("notes/comma-tags.md").name == "Tagged"
    assert odd_vault.read("notes/bom.md").name == "With BOM"
    assert odd_vault.read("notes/no-frontmatter.md").name == "no-frontmatter"
    assert odd_vault.read("notes/broken-yaml.md").body == "Template body\n"
    assert odd_vault.read("notes/wikilink-value").fields["related"] == "[[Sara]]"
    list(odd_vault.scan())
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in odd_vault.root.rglob("*")
             if p.is_file()}
    assert after == before


def test_read_missing_and_unsafe(vault: Vault) -> None:
    with pytest.raises(NotFound):
        vault.read("projects/nope.md")
    with pytest.raises(UnsafePath):
        vault.read("../outside.md")


def test_category_from_folder_or_frontmatter(vault: Vault) -> None:
    (vault.root / "projects").mkdir()
    (vault.root / "projects" / "hand.md").write_text("# by hand\n")
    (vault.root / "misc").mkdir()
    (vault.root / "misc" / "tagged.md").write_text("---\ncategory: ideas\n---\n")
    (vault.root / "misc" / "odd.md").write_text("---\ncategory: recipes\n---\n")
    assert vault.read("projects/hand.md").category == "projects"
    assert vault.read("misc/tagged.md").category == "ideas"
    assert vault.read("misc/odd.md").category is None


def test_scan_skips_dot_folders_symlinks_out_and_non_md(vault: Vault, tmp_path: Path) -> None:
    root = vault.root
    for rel in ["a.md", "sub/deep/b.md", "sub/c.MD", ".trash/t.md", ".obsidian/o.md",
                ".git/g.md", "sub/.hidden.md", "notes.txt"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    os.symlink(outside, root / "out")
    os.symlink(outside / "secret.md", root / "secret.md")
    os.symlink(root / "sub", root / "sub-again")  # its notes are listed once, under sub/
    os.symlink(root, root / "sub" / "loop")
    rels = files(vault)
    assert rels == ["a.md", "sub/c.MD", "sub/deep/b.md"]
    assert "secret.md" not in rels and "notes.txt" not in rels
    for rel, mtime, size in vault.scan():
        assert (root / rel).stat().st_size == size and mtime > 0


# --- update ------------------------------------------------------------------------------------


def test_update_changes_only_the_given_fields(vault: Vault) -> None:
    (vault.root / "projects").mkdir()
    text = ("---\nid: e_000000000001\n# keep me\nname: 'Launch'\nstatus: active\n"
            "custom: {a: 1}\nupdated: 2024-01-01\n---\nBody\n")
    (vault.root / "projects" / "launch.md").write_text(text)
    entry = vault.update("projects/launch.md", {"status": "Blocked", "tags": "urgent"},
                         append_body="Blocked on legal.")
    assert entry.fields["status"] == "blocked" and entry.fields["tags"] == ["urgent"]
    assert entry.fields["custom"] == {"a": 1} and ISO.match(entry.fields["updated"])
    new = vault.read_text("projects/launch.md")
    assert "# keep me\nname: 'Launch'\n" in new and "custom: {a: 1}\n" in new
    assert new.endswith("Body\n\nBlocked on legal.\n")


def test_update_refuses_bad_values_and_changes_nothing(vault: Vault) -> None:
    entry = vault.create("admin", "Taxes", {}, "")
    path = vault.root / entry.path
    before = path.read_bytes()
    for changes, match in [({"status": "active"}, "todo, done"), ({"id": "e_x"}, "id"),
                           ({"category": "ideas"}, "move"), ({"follow_ups": 3}, "list"),
                           ({"x": object()}, "cannot be stored")]:
        with pytest.raises(InvalidValue, match=match):
            vault.update(entry.path, changes)
    assert path.read_bytes() == before


def test_update_refuses_broken_yaml(odd_vault: Vault) -> None:
    path = odd_vault.root / "notes" / "broken-yaml.md"
    with pytest.raises(InvalidValue, match="frontmatter that cannot be read"):
        odd_vault.update("notes/broken-yaml.md", {"status": "done"})
    assert path.read_text() == ODD_NOTES["broken-yaml.md"]


def test_update_without_real_change_leaves_the_file(vault: Vault) -> None:
    entry = vault.create("projects", "P", {}, "")
    stat = (vault.root / entry.path).stat()
    vault.update(entry.path, {"status": "active", "id": entry.id})
    assert (vault.root / entry.path).stat().st_mtime_ns == stat.st_mtime_ns


def test_update_hand_written_note_keeps_its_bytes(odd_vault: Vault) -> None:
    odd_vault.update("notes/crlf.md", {"status": "done"})
    text = (odd_vault.root / "notes" / "crlf.md").read_bytes().decode()
    assert text.startswith("---\r\nname: Windows note\r\ntags:\r\n  - a\r\nstatus: done\r\n")
    assert text.endswith("---\r\nLine one\r\nLine two\r\n")


# --- move --------------------------------------------------------------------------------------


def test_move_keeps_id_and_fields_and_adds_defaults(vault: Vault) -> None:
    entry = vault.create("inbox", "Offsite plan", {"original_text": "plan the offsite"}, "B")
    result = vault.move(entry.path, "projects")
    assert (result.old_path, result.new_path) == ("inbox/offsite-plan.md",
                                                  "projects/offsite-plan.md")
    assert not (vault.root / entry.path).exists()
    moved = vault.read(result.new_path)
    assert moved.id == entry.id and moved.category == "projects"
    assert moved.fields["original_text"] == "plan the offsite"
    assert moved.fields["status"] == "active" and moved.fields["tags"] == []
    assert moved.body == "B\n"


def test_move_maps_invalid_status(vault: Vault) -> None:
    todo = vault.create("admin", "Renew passport", {}, "")
    assert vault.move(todo.path, "projects").entry.fields["status"] == "active"
    done = vault.create("projects", "Old", {"status": "done"}, "")
    assert vault.move(done.path, "admin").entry.fields["status"] == "done"


def test_move_to_same_category_is_a_no_op(vault: Vault) -> None:
    entry = vault.create("ideas", "Idea", {}, "")
    before = (vault.root / entry.path).read_bytes()
    result = vault.move(entry.path, "ideas")
    assert result.old_path == result.new_path == entry.path
    assert (vault.root / entry.path).read_bytes() == before


def test_move_collision_gets_suffix(vault: Vault) -> None:
    vault.create("people", "Sara", {}, "existing")
    idea = vault.create("ideas", "Sara", {}, "moved")
    result = vault.move(idea.path, "people")
    assert result.new_path == "people/sara-2.md"
    assert vault.read("people/sara.md").body == "existing\n"


def test_move_hand_written_note_gets_id_and_keeps_name(odd_vault: Vault) -> None:
    result = odd_vault.move("notes/no-frontmatter.md", "ideas")
    assert result.new_path == "ideas/no-frontmatter.md"
    assert re.fullmatch(r"e_[0-9a-f]{12}", result.entry.id or "")
    assert result.entry.name == "no-frontmatter"
    assert result.entry.body == ODD_NOTES["no-frontmatter.md"]


def test_move_refuses_unknown_category(vault: Vault) -> None:
    entry = vault.create("ideas", "I", {}, "")
    with pytest.raises(InvalidValue):
        vault.move(entry.path, "nowhere")
    assert files(vault) == [entry.path]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moves=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(CATEGORIES)), max_size=12))
def test_moves_never_lose_a_note(tmp_path_factory: pytest.TempPathFactory,
                                 moves: list[tuple[int, str]]) -> None:
    vault = Vault(tmp_path_factory.mktemp("v"))
    ids = {vault.create(cat, "Same", {}, cat).id for cat in ("ideas", "ideas", "people",
                                                             "admin", "inbox")}
    for index, category in moves:
        rels = files(vault)
        vault.move(rels[index % len(rels)], category)
        found = [vault.read(rel).id for rel in files(vault)]
        assert sorted(found, key=str) == sorted(ids, key=str)  # one file per id, none lost


# --- trash ---------------------------------------------------------------------------


def test_trash_keeps_each_note_under_a_free_name(vault: Vault) -> None:
    entry = vault.create("ideas", "Bin me", {}, "x")
    trashed = vault.trash(entry.path)
    assert trashed == ".trash/ideas/bin-me.md"
    assert files(vault) == []
    with pytest.raises(InvalidValue, match="already"):
        vault.trash(trashed)
    again = vault.create("ideas", "Bin me", {}, "y")
    assert vault.trash(again.path) == ".trash/ideas/bin-me-2.md"
