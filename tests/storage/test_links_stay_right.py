"""Links the bot writes keep naming the note they meant, through captures, moves and renames,
by the bot's resolver and by Obsidian's rule written out here on its own (issue 20)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.db import Database
from storage.vault.files import Vault
from storage.vault.links import extract_links
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.shared import REAL_VAULT
from tests.storage.conftest import make_history_store as make_store

FILED = ("people", "projects", "ideas", "admin")
NAMES = ("Project Phoenix", "Sara Lopez", "Budget", "Phoenix")


def obsidian_resolve(target: str, paths: list[str]) -> str | None:
    """Obsidian's rule for `[[target]]`: the note at that path, else the notes whose path
    ends with it, the one nearest the vault's root; case-insensitive, `.md` optional."""
    want = target.casefold().removesuffix(".md")
    bare = {p: p.casefold().removesuffix(".md") for p in paths}
    exact = [p for p, key in bare.items() if key == want]
    if exact:
        return exact[0]
    ending = [p for p, key in bare.items() if key.endswith("/" + want)]
    if not ending:
        return None
    return min(ending, key=lambda p: (p.count("/"), len(p), p))


@pytest.fixture
def store(history_store: Store) -> Store:  # tests/storage/conftest.py
    return history_store


async def path_of(store: Store, note_id: str) -> str:
    entry = await store.find_id(note_id)
    assert entry is not None, note_id
    return entry.path


async def check(store: Store, meant: list[tuple[str, str]]) -> None:
    """Every (source id, target id) link the bot wrote reaches the target, both ways."""
    paths = sorted(rel for rel, _m, _s in store.vault.scan())
    for source_id, target_id in meant:
        source, target = await path_of(store, source_id), await path_of(store, target_id)
        links = [link for link in extract_links(store.vault.read(source).body)
                 if link.alias is not None]
        assert links, (source, store.vault.read_text(source))
        for link in links:
            assert obsidian_resolve(link.target, paths) == target, (link, paths)
        backlinks = await store.backlinks(target)
        assert source in {b.path for b in backlinks.backlinks}


async def link_note(store: Store, source_name: str, target_id: str, category: str) -> str:
    """A note whose body links to the target as the bot writes a link (`Store.link_to`)."""
    target = await store.find_id(target_id)
    assert target is not None
    text = await store.link_to(target.path)
    entry = await store.create(category, source_name, {}, f"See [[{text}|{target.name}]].\n")
    assert entry.id is not None
    return entry.id


async def test_two_notes_with_one_stem_keep_their_links_apart(store: Store) -> None:
    typed = store.vault.root / "projects" / "project-phoenix.md"
    typed.parent.mkdir(parents=True)
    typed.write_bytes(b"# The project, typed in Obsidian\n")
    await store.refresh()
    idea = await store.create("ideas", "Project Phoenix", {}, "A bird.")
    assert idea.path == "ideas/project-phoenix-2.md"  # the stem names one note
    assert idea.id is not None
    source = await link_note(store, "Notes on birds", idea.id, "ideas")
    await check(store, [(source, idea.id)])
    # A link to the typed note is by its path while its stem is shared.
    assert await store.link_to("projects/project-phoenix.md") == "project-phoenix"
    (store.vault.root / "ideas" / "project-phoenix.md").write_bytes(b"another\n")
    await store.refresh()
    assert await store.link_to("projects/project-phoenix.md") == "projects/project-phoenix"
    # Moving the note to where its old stem is taken: the link follows it.
    moved = await store.move(idea.path, "projects")
    assert moved.new_path == "projects/project-phoenix-2.md"
    await check(store, [(source, idea.id)])


async def test_a_move_rewrites_path_links_to_the_note_in_the_same_change(store: Store) -> None:
    target = await store.create("ideas", "Garden podcast", {}, "x")
    note = store.vault.root / "inbox" / "typed.md"
    note.parent.mkdir(parents=True)
    original = "Links: [[ideas/garden-podcast#Plan|the plan]] and `[[ideas/garden-podcast]]`\r\n"
    note.write_bytes(original.encode())
    await store.refresh()
    moved = await store.move(target.path, "projects")
    assert note.read_bytes() == (  # a path stays a path (the new one); code is not a link
        b"Links: [[projects/garden-podcast#Plan|the plan]] and `[[ideas/garden-podcast]]`\r\n")
    change = (await store.changes(limit=1))[0]
    assert change.action == "move" and set(change.paths) == {
        target.path, moved.new_path, "inbox/typed.md"}
    await store.undo(change.id)  # one undo puts the note and its links back
    assert note.read_bytes() == original.encode()
    assert (store.vault.root / target.path).is_file()


STEP = st.tuples(st.sampled_from(["create", "link", "move", "rename", "collide"]),
                 st.integers(0, 30), st.integers(0, 30))


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=2, max_size=20))
def test_after_any_captures_moves_and_renames_every_link_reaches_its_note(
        tmp_path: Path, steps: list[tuple[str, int, int]]) -> None:
    async def go() -> None:
        db = await Database.open(fresh_url(tmp_path, name="links"))
        try:
            store = make_store(db, Path(tempfile.mkdtemp(dir=tmp_path)))
            ids: list[str] = []
            meant: list[tuple[str, str]] = []
            for kind, a, b in steps:
                if kind == "create" or not ids:
                    entry = await store.create(FILED[b % 4], NAMES[a % len(NAMES)], {}, "x")
                    assert entry.id is not None
                    ids.append(entry.id)
                elif kind == "link":
                    target = ids[a % len(ids)]
                    source = await link_note(store, f"About {a}", target, FILED[b % 4])
                    ids.append(source)
                    meant.append((source, target))
                elif kind == "move":
                    await store.move(await path_of(store, ids[a % len(ids)]), FILED[b % 4])
                elif kind == "rename":
                    await store.update(ids[a % len(ids)], {"name": f"{NAMES[b % 4]} {b}"})
                else:  # a note with a taken stem typed in Obsidian, in another folder
                    stem = Path(await path_of(store, ids[a % len(ids)])).stem
                    typed = store.vault.root / FILED[b % 4] / "typed" / f"{stem}.md"
                    typed.parent.mkdir(parents=True, exist_ok=True)
                    typed.write_bytes(b"typed\n")
                    await store.refresh()
                await check(store, [m for m in meant if kind != "collide"])
        finally:
            await db.close()

    asyncio.run(go())


@pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="real vault not present")
async def test_the_resolver_follows_obsidian_on_the_real_vault(tmp_path: Path) -> None:
    """Every note's backlinks in the bot are exactly the notes whose links Obsidian's rule
    sends to it, over the 395 real notes; no byte of them changes."""
    root = REAL_VAULT.resolve()
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    db = await Database.open(fresh_url(tmp_path))
    try:
        store = Store(Vault(root), db)
        await store.refresh()
        paths = sorted(rel for rel, _m, _s in store.vault.scan())
        expected: dict[str, set[str]] = {}
        for source in paths:
            for link in extract_links(store.vault.read_text(source)):
                target = obsidian_resolve(link.target, paths) if link.target else None
                if target is not None and target != source:
                    expected.setdefault(target, set()).add(source)
        assert sum(len(s) for s in expected.values()) > 300  # the vault is well linked
        for target in paths:
            found = {b.path for b in (await store.backlinks(target)).backlinks}
            assert found == expected.get(target, set()), target
    finally:
        await db.close()
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
