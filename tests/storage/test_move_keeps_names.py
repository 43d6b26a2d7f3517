"""A move keeps the file's name and rewrites a link only where it would no longer reach the
note, in the link's own form (issue 36); its undo leaves no folder it made behind. Links are
resolved here by Obsidian's rule written out on its own (`obsidian_resolve`). On both
databases."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path, PurePosixPath

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.db import Database
from storage.vault.links import extract_links
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.storage.conftest import make_history_store
from tests.storage.test_links_stay_right import obsidian_resolve


def write(store: Store, rel: str, text: str) -> None:
    path = store.vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())


def tree(root: Path) -> tuple[dict[str, bytes], set[str]]:
    """Every file's bytes and every folder of a vault."""
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
             if p.is_file()}
    folders = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}
    return files, folders


async def test_a_collision_in_the_folder_numbers_the_name_in_its_style(
        history_store: Store) -> None:
    store = history_store
    write(store, "docs/Combining Filters.md", "# Moved one\n")
    write(store, "projects/Combining Filters.md", "# Stays\n")
    source = ("See [[Combining Filters]], [[Combining Filters#Appendix|the appendix]], "
              "[[docs/Combining Filters.md]] and [[docs/Combining Filters | spaced]].\n"
              "The other: [[projects/Combining Filters]].\n")
    write(store, "notes/index.md", source)
    await store.refresh()
    moved = await store.move("docs/Combining Filters.md", "projects")
    assert moved.new_path == "projects/Combining Filters 2.md"
    assert (store.vault.root / "notes/index.md").read_text() == (
        "See [[Combining Filters 2]], [[Combining Filters 2#Appendix|the appendix]], "
        "[[projects/Combining Filters 2.md]] and [[projects/Combining Filters 2 | spaced]].\n"
        "The other: [[projects/Combining Filters]].\n")
    assert (store.vault.root / "projects/Combining Filters.md").read_bytes() == b"# Stays\n"


async def test_a_move_never_takes_over_a_link_meant_for_another_note(
        history_store: Store) -> None:
    """`[[Plan]]` reaches `deep/er/Plan.md`, the shortest path named so; moving another
    `Plan.md` to `ideas/` (shorter) would take the link over: it is named `Plan 2`."""
    store = history_store
    write(store, "deep/er/Plan.md", "the plan\n")
    write(store, "far/away/deep/Plan.md", "another plan\n")
    write(store, "notes/a.md", "Read [[Plan]].\n")
    await store.refresh()
    moved = await store.move("far/away/deep/Plan.md", "ideas")
    assert moved.new_path == "ideas/Plan 2.md"
    assert (store.vault.root / "notes/a.md").read_bytes() == b"Read [[Plan]].\n"


async def test_undo_of_a_move_leaves_no_folder_it_made(history_store: Store) -> None:
    store = history_store
    write(store, "docs/Queries/Combining Filters.md", "# Filters\n")
    write(store, "docs/Queries/Other.md", "See [[Combining Filters]].\n")
    await store.refresh()
    await store.changes()  # the first snapshot
    before = tree(store.vault.root)
    moved = await store.move("docs/Queries/Combining Filters.md", "projects")
    assert moved.new_path == "projects/Combining Filters.md"
    await store.undo()
    assert tree(store.vault.root) == before  # `projects/` went with the note

    # A folder the note came from that was removed meanwhile is made again.
    write(store, "solo/Lonely.md", "alone\n")
    await store.refresh()
    before = tree(store.vault.root)
    await store.move("solo/Lonely.md", "ideas")
    (store.vault.root / "solo").rmdir()  # left empty by the move, then removed by hand
    await store.undo()
    assert tree(store.vault.root) == before


FOLDERS = ("", "docs", "docs/Queries", "projects", "ideas", "a/b", "people/x")
NAMES = ("Combining Filters", "Plan", "plan", "Budget 2", "sara-lopez")
TARGETS = ("people", "projects", "ideas", "admin", "inbox")
FORMS = ("name", "path", "path.md", "partial", "lower", "nowhere")


def link_text(target: str, form: str, decoration: int) -> str:
    stem = target.rsplit("/", 1)[-1][:-3]
    written = {"name": stem, "path": target[:-3], "path.md": target, "lower": stem.lower(),
               "partial": "/".join(target[:-3].split("/")[-2:]), "nowhere": "Nowhere"}[form]
    return "[[" + written + ("", "#Heading", "|an alias", "#H|both")[decoration] + "]]"


NOTE = st.tuples(st.sampled_from(FOLDERS), st.sampled_from(NAMES))
LINK = st.tuples(st.integers(0, 50), st.sampled_from(FORMS), st.integers(0, 3))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notes=st.lists(NOTE, min_size=2, max_size=9, unique=True),
       links=st.lists(st.lists(LINK, max_size=4), min_size=9, max_size=9),
       moving=st.integers(0, 50), target=st.sampled_from(TARGETS))
def test_after_any_move_every_link_reaches_the_same_note_and_the_rest_keep_their_bytes(
        tmp_path: Path, notes: list[tuple[str, str]], links: list[list[tuple[int, str, int]]],
        moving: int, target: str) -> None:
    paths = sorted({f"{folder}/{name}.md".lstrip("/") for folder, name in notes},
                   key=str.casefold)
    paths = [p for i, p in enumerate(paths)  # one file per path, case-insensitively
             if i == 0 or p.casefold() != paths[i - 1].casefold()]

    async def go() -> None:
        db = await Database.open(fresh_url(tmp_path, name="moves"))
        try:
            store = make_history_store(db, Path(tempfile.mkdtemp(dir=tmp_path)))
            for i, rel in enumerate(paths):
                body = " ".join(link_text(paths[t % len(paths)], form, d)
                                for t, form, d in links[i])
                write(store, rel, f"# Note {i}\n\nLinks: {body}\n")
            await store.refresh()
            await store.changes()  # the first snapshot
            old_files, old_folders = tree(store.vault.root)
            old = paths[moving % len(paths)]
            meant = {rel: [obsidian_resolve(link.target, paths)
                           for link in extract_links(old_files[rel].decode())]
                     for rel in paths}

            moved = await store.move(old, target)
            if not moved.changed:  # already filed there: nothing moves, nothing changes
                assert tree(store.vault.root) == (old_files, old_folders)
                return
            new = moved.new_path
            stem = PurePosixPath(old).stem  # kept, or numbered in its style where it must be
            assert re.fullmatch(re.escape(stem) + r"([ -]\d+)?", PurePosixPath(new).stem)
            now = sorted(p if p != old else new for p in paths)
            files, _folders = tree(store.vault.root)
            for rel in paths:
                at = new if rel == old else rel
                found = extract_links(files[at].decode())
                before = extract_links(old_files[rel].decode())
                assert len(found) == len(before)
                for was, link, reached in zip(before, found, meant[rel], strict=True):
                    if reached is None:
                        continue  # it reached nothing: it may reach the moved note now
                    expected = new if reached == old else reached
                    assert obsidian_resolve(link.target, now) == expected, (rel, link, now)
                    if reached != old:  # links to notes that did not move: untouched
                        assert (link.target, link.embed) == (was.target, was.embed)
                    assert (link.heading, link.alias) == (was.heading, was.alias)
                if rel != old and old not in meant[rel]:
                    assert files[at] == old_files[rel]  # not a byte changed

            await store.undo()
            assert tree(store.vault.root) == (old_files, old_folders)
        finally:
            await db.close()

    asyncio.run(go())

