"""Store: the operations tools call, over a real vault folder and a real SQLite file."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.db import Database
from storage.errors import Ambiguous, InvalidValue, NotFound, UnsafePath
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url


@pytest.fixture
async def store(tmp_path: Path, vault: Vault) -> AsyncIterator[Store]:
    db = await Database.open(fresh_url(tmp_path))
    # Every read rescans: these tests edit files behind the Store's back and look at once.
    # (By default a read trusts a scan that cost over 50 ms for twice its cost: on a loaded
    # machine even this tiny vault's scan does, and an edit made right after it went unseen.)
    yield Store(vault, db, fresh_within=0.0)
    await db.close()


def write(vault: Vault, rel: str, text: str) -> Path:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_created_note_is_found_at_once(store: Store) -> None:
    entry = await store.create("projects", "Q3 budget", {"next_action": "Email Sara"},
                               "Numbers for the quarter.")
    found = await store.search("quarter")
    assert [e.path for e in found.entries] == [entry.path]
    assert found.entries[0].snippet == "Email Sara"
    listed = await store.list(category="projects", status="active")
    assert [e.id for e in listed.entries] == [entry.id]
    assert (await store.get(entry.id or "")).body.strip() == "Numbers for the quarter."


async def test_resolve_by_id_path_and_name(store: Store) -> None:
    entry = await store.create("people", "Sara Lind", {"context": "Finance"}, "")
    assert entry.id is not None
    for ref in (entry.id, entry.path, entry.path[:-3], f"./{entry.path}", "sara lind",
                "  Sara Lind  "):
        assert await store.resolve(ref) == entry.path


async def test_ambiguous_name_gives_candidates_and_changes_nothing(store: Store) -> None:
    one = await store.create("people", "Alex", {}, "first")
    two = await store.create("projects", "Alex", {}, "second")
    with pytest.raises(Ambiguous) as caught:
        await store.update("alex", {"tags": ["x"]})
    assert {c.path for c in caught.value.candidates} == {one.path, two.path}
    assert "alex" in caught.value.message.lower()
    assert (await store.get(one.path)).fields.get("tags") == []
    assert await store.resolve(two.id or "") == two.path  # the id is never ambiguous


async def test_unknown_and_unsafe_refs_fail_clearly(store: Store, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("outside the vault\n")
    with pytest.raises(NotFound, match="nobody"):
        await store.get("nobody")
    for ref in ("../../etc/passwd", "../secret.md", "/etc/passwd", str(secret)):
        with pytest.raises(UnsafePath):
            await store.get(ref)
        with pytest.raises(UnsafePath):
            await store.trash(ref)
    assert secret.read_text() == "outside the vault\n"
    with pytest.raises(InvalidValue):
        await store.resolve("   ")


async def test_get_returns_what_is_on_disk(store: Store, vault: Vault) -> None:
    entry = await store.create("ideas", "Kite", {"one_liner": "Fly it"}, "v1")
    path = vault.root / entry.path
    path.write_text(path.read_text().replace("v1", "v2 edited in Obsidian"))
    got = await store.get("Kite")
    assert got.body.strip() == "v2 edited in Obsidian"
    assert got.fields["one_liner"] == "Fly it"


async def test_outside_edits_show_up_in_the_next_query(store: Store, vault: Vault) -> None:
    await store.create("ideas", "Garden", {}, "tomatoes")
    assert (await store.search("tomatoes")).total == 1
    write(vault, "ideas/hand.md", "---\nname: Handwritten\n---\nzucchini\n")
    garden = vault.root / "ideas/garden.md"
    garden.write_text(garden.read_text().replace("tomatoes", "pumpkins"))
    os.utime(garden, (3e9, 3e9))
    assert [e.name for e in (await store.search("zucchini")).entries] == ["Handwritten"]
    assert (await store.search("tomatoes")).total == 0
    assert (await store.search("pumpkins")).total == 1
    (vault.root / "ideas/hand.md").unlink()
    assert (await store.search("zucchini")).total == 0
    assert (await store.summary()).counts["ideas"] == 1


async def test_update_is_searchable_at_once(store: Store) -> None:
    entry = await store.create("projects", "Website", {}, "")
    updated = await store.update(entry.path, {"next_action": "Call the designer"},
                                 append_body="Budget approved.")
    assert updated.fields["next_action"] == "Call the designer"
    found = await store.search("designer")
    assert [e.path for e in found.entries] == [entry.path]
    assert (await store.search("approved")).total == 1


async def test_move_keeps_id_and_is_found_at_the_new_path(store: Store, vault: Vault) -> None:
    entry = await store.create("inbox", "Offsite venue", {}, "Somewhere with a lake")
    result = await store.move(entry.id or "", "projects")
    assert result.old_path == entry.path and result.new_path.startswith("projects/")
    assert result.entry.id == entry.id
    assert not (vault.root / entry.path).exists()
    found = await store.search("lake")
    assert [(e.path, e.id, e.category) for e in found.entries] == [
        (result.new_path, entry.id, "projects")]
    assert await store.resolve(entry.id or "") == result.new_path
    assert (await store.summary()).inbox_waiting == 0


async def test_trash_removes_from_every_read(store: Store, vault: Vault) -> None:
    entry = await store.create("admin", "Renew passport", {}, "before june")
    trashed = await store.trash("Renew passport")
    assert (vault.root / trashed).is_file() and trashed.startswith(".trash/")
    assert (await store.search("passport")).total == 0
    assert (await store.list()).total == 0
    with pytest.raises(NotFound):
        await store.get(entry.id or "")


async def test_backlinks_through_the_store(store: Store, vault: Vault) -> None:
    sara = await store.create("people", "Sara", {}, "")
    write(vault, "notes/meeting.md", "Met [[Sara]] about the budget.\n")
    links = await store.backlinks("Sara")
    assert links.target == sara.path
    assert [(b.path, b.context) for b in links.backlinks] == [
        ("notes/meeting.md", "Met [[Sara]] about the budget.")]


async def test_backlinks_follow_obsidian_not_display_names(store: Store, vault: Vault) -> None:
    """`[[Sara Lee]]` is a link to a file named "Sara Lee", in Obsidian and here alike; the
    bot's `people/sara-lee.md` carries its name in `aliases`, so Obsidian offers it when the
    name is typed and writes `[[sara-lee|Sara Lee]]`, which both resolve to it."""
    sara = await store.create("people", "Sara Lee", {}, "")  # people/sara-lee.md
    assert sara.fields["aliases"] == ["Sara Lee"]
    write(vault, "notes/meeting.md", "Met [[Sara Lee]] today.\n")
    write(vault, "notes/chat.md", "Ping [[sara-lee|her]] and [[People/Sara-Lee]].\n")
    write(vault, "notes/other.md", "See [[Sara]] (someone else).\n")
    links = await store.backlinks(sara.path)
    assert [b.path for b in links.backlinks] == ["notes/chat.md"]
    write(vault, "Sara Lee.md", "the other Sara Lee\n")
    assert [b.path for b in (await store.backlinks("Sara Lee.md")).backlinks] == [
        "notes/meeting.md"]


async def test_summary_is_small_and_counts(store: Store, vault: Vault) -> None:
    for i in range(8):
        await store.create("projects", f"Project {i}", {}, "")
    await store.create("inbox", "Unsure", {}, "")
    write(vault, "Journal/today.md", "a day\n")
    summary = await store.summary()
    assert len(summary.active_projects) == 5
    assert summary.counts["projects"] == 8 and summary.counts["other"] == 1
    assert summary.inbox_waiting == 1 and summary.total == 10


async def test_concurrent_reads_and_writes_do_not_collide(store: Store, vault: Vault) -> None:
    for i in range(5):
        write(vault, f"ideas/pre-{i}.md", f"---\nname: Pre {i}\n---\nseed words\n")
    results = await asyncio.gather(
        *(store.search("seed") for _ in range(4)),
        *(store.create("ideas", f"Idea {i}", {}, "seed words") for i in range(4)),
        store.summary(), store.list(limit=50))
    assert all(r is not None for r in results)
    assert (await store.search("seed", limit=50)).total == 9


async def test_reads_never_change_the_vault(store: Store, vault: Vault) -> None:
    write(vault, "notes/a.md", "---\ntitle: A\ntags: x, y\n---\n[[B]]\n")
    write(vault, "notes/b.md", "no frontmatter\n")
    write(vault, "notes/broken.md", "---\nname: {{x}}\n---\nbody\n")

    def digest() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in vault.root.rglob("*") if p.is_file()}

    before = digest()
    await store.refresh()
    await store.search("body")
    await store.list()
    await store.backlinks("notes/b.md")
    await store.summary()
    await store.get("broken")
    assert digest() == before
