"""SearchIndex over a real SQLite file and real note files."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from storage.db import Database
from storage.index import SearchIndex, fts_expression, query_tokens
from storage.vault.files import Vault
from tests.databases import fresh_url
from tests.storage.conftest import ODD_NOTES


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


def write(vault: Vault, rel: str, text: str, *, mtime: float | None = None) -> Path:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def note(name: str, body: str = "", **fields: str) -> str:
    lines = [f"name: {name}"] + [f"{k}: {v}" for k, v in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


async def refreshed(db: Database, index: SearchIndex) -> None:
    async with db.session() as s:
        await index.refresh(s)
        await s.commit()


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
async def sample(vault: Vault, db: Database) -> SearchIndex:
    write(vault, "projects/q3-budget.md", note(
        "Q3 budget review", "Numbers for the quarter.", category="projects", status="active",
        next_action="Send the draft to Sarah", updated="2024-05-03T10:00:00+00:00"))
    write(vault, "projects/offsite.md", note(
        "Team offsite", "Venue ideas. The budget is tight this year.", category="projects",
        status="waiting", updated="2024-05-02T10:00:00+00:00"))
    write(vault, "people/sarah-chen.md", note(
        "Sarah Chen", "Finance lead.", category="people", context="Owns the budget numbers",
        updated="2024-05-01T10:00:00+00:00"))
    write(vault, "ideas/garden.md", note(
        "Rooftop garden", "Plant tomatoes.", category="ideas", one_liner="Grow food at work",
        updated="2024-04-01T10:00:00+00:00"))
    write(vault, "admin/taxes.md", note(
        "File taxes", "Before April.", category="admin", status="todo",
        updated="2024-03-01T10:00:00+00:00"))
    write(vault, "inbox/random.md", note("Random thought", "Maybe a podcast about budgets?",
                                         updated="2024-02-01T10:00:00+00:00"))
    index = SearchIndex(vault)
    await refreshed(db, index)
    return index


# --- refresh ---------------------------------------------------------------------------------


async def test_refresh_indexes_every_note_then_finds_nothing_to_do(
        odd_vault: Vault, db: Database) -> None:
    before = digests(odd_vault.root)
    index = SearchIndex(odd_vault)
    async with db.session() as s:
        first = await index.refresh(s)
        await s.commit()
        second = await index.refresh(s)
    assert (first.added, first.updated, first.removed) == (len(ODD_NOTES), 0, 0)
    assert (second.added, second.updated, second.removed, second.unchanged) == (
        0, 0, 0, len(ODD_NOTES))
    assert digests(odd_vault.root) == before  # reading never writes to the vault


async def test_refresh_sees_files_added_edited_and_deleted_outside(
        sample: SearchIndex, vault: Vault, db: Database) -> None:
    write(vault, "ideas/kite.md", note("Kite festival", "Zephyrine winds."))
    write(vault, "ideas/garden.md", note("Rooftop garden", "Now with quinoa."), mtime=1e9)
    (vault.root / "admin/taxes.md").unlink()
    async with db.session() as s:
        stats = await sample.refresh(s)
        await s.commit()
        assert (stats.added, stats.updated, stats.removed) == (1, 1, 1)
        assert [e.path for e in (await sample.search(s, "zephyrine")).entries] == [
            "ideas/kite.md"]
        assert [e.path for e in (await sample.search(s, "quinoa")).entries] == ["ideas/garden.md"]
        assert (await sample.search(s, "tomatoes")).total == 0
        assert (await sample.search(s, "taxes")).total == 0
        assert await sample.lookup(s, "admin/taxes.md") == []


async def test_touched_file_with_same_bytes_is_not_reparsed(
        sample: SearchIndex, vault: Vault, db: Database) -> None:
    path = vault.root / "ideas/garden.md"
    os.utime(path, (2e9, 2e9))
    async with db.session() as s:
        stats = await sample.refresh(s)
        await s.commit()
        again = await sample.refresh(s)
    assert (stats.added, stats.updated, stats.removed) == (0, 0, 0)
    assert again.unchanged == 6  # the new mtime was recorded


async def test_refresh_paths_indexes_and_removes_just_those(
        sample: SearchIndex, vault: Vault, db: Database) -> None:
    write(vault, "ideas/new.md", note("Brand new", "Xylophone lessons."))
    write(vault, "ideas/other.md", note("Not yet", "Unseen marimba."))
    (vault.root / "people/sarah-chen.md").unlink()
    async with db.session() as s:
        await sample.refresh_paths(s, ["ideas/new.md", "people/sarah-chen.md", "../x.md"])
        await s.commit()
        assert (await sample.search(s, "xylophone")).total == 1
        assert (await sample.search(s, "marimba")).total == 0  # not among the paths given
        assert await sample.lookup(s, "Sarah Chen") == []


async def test_two_vaults_in_one_database_do_not_mix(tmp_path: Path, db: Database) -> None:
    a, b = Vault(tmp_path / "a"), Vault(tmp_path / "b")
    write(a, "ideas/one.md", note("Shared word", "alpha"))
    write(b, "ideas/one.md", note("Shared word", "beta"))
    ia, ib = SearchIndex(a), SearchIndex(b)
    await refreshed(db, ia)
    await refreshed(db, ib)
    async with db.session() as s:
        assert (await ia.search(s, "beta")).total == 0
        assert (await ib.search(s, "beta")).total == 1
        assert (await ia.list(s)).total == 1
        (a.root / "ideas/one.md").unlink()
        await ia.refresh(s)
        await s.commit()
        assert (await ib.search(s, "shared")).total == 1


async def test_a_vault_indexed_during_a_search_never_shows_in_it(
        tmp_path: Path, db: Database) -> None:
    """Another person's vault indexed by another process between a search's reads (on SQLite
    they are not one snapshot): the search of an empty vault still finds nothing of theirs."""
    theirs, mine = Vault(tmp_path / "theirs"), Vault(tmp_path / "mine")
    write(theirs, "projects/offsite.md", note("Team offsite", "Sintra in May."))

    def index_theirs() -> None:  # another process: its own connection, its own loop
        async def run() -> None:
            other = await Database.open(db.url)
            try:
                await refreshed(other, SearchIndex(theirs))
            finally:
                await other.close()
        asyncio.run(run())

    def after(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "FROM index_vaults WHERE vault = " in statement and not done:
            done.append(True)  # once the search has asked which vaults there are
            worker = threading.Thread(target=index_theirs)
            worker.start()
            worker.join()

    done: list[bool] = []
    event.listen(db.engine.sync_engine, "after_cursor_execute", after)
    try:
        async with db.session() as s:
            found = await SearchIndex(mine).search(s, "Sintra")
    finally:
        event.remove(db.engine.sync_engine, "after_cursor_execute", after)
    assert done, "the search asked about the vaults"
    assert found.entries == [] and found.total == 0
    async with db.session() as s:  # their note is indexed, and found in their own vault
        assert [e.path for e in (await SearchIndex(theirs).search(s, "Sintra")).entries] == [
            "projects/offsite.md"]


# --- extraction ------------------------------------------------------------------------------


async def test_hand_written_notes_are_indexed_tolerantly(odd_vault: Vault, db: Database) -> None:
    index = SearchIndex(odd_vault)
    await refreshed(db, index)
    async with db.session() as s:
        tagged = await index.lookup(s, "Tagged")
        assert [e.path for e in tagged] == ["notes/comma-tags.md"]
        # Broken YAML: still indexed, by its stem, searchable in the body.
        assert [e.path for e in (await index.search(s, "template body")).entries] == [
            "notes/broken-yaml.md"]
        assert [e.name for e in await index.lookup(s, "notes/bom")] == ["With BOM"]
        listed = await index.list(s, limit=50)
        assert listed.total == len(ODD_NOTES)
        assert all(e.category is None for e in listed.entries)


# --- search ----------------------------------------------------------------------------------


async def test_search_ranks_name_above_body_and_contains_the_word(
        sample: SearchIndex, db: Database) -> None:
    async with db.session() as s:
        found = await sample.search(s, "budget")
    paths = [e.path for e in found.entries]
    assert paths[0] == "projects/q3-budget.md"  # in the name
    assert set(paths) == {"projects/q3-budget.md", "projects/offsite.md",
                          "people/sarah-chen.md", "inbox/random.md"}
    assert found.total == 4
    scores = [e.score for e in found.entries]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


async def test_a_note_named_exactly_as_the_query_comes_first(
        vault: Vault, db: Database) -> None:
    index = SearchIndex(vault)
    # Longer names and bodies repeating the words would win on bm25 alone.
    write(vault, "a/samples.md", note("Dependencies Samples - Recurring Tasks",
                                      "recurring tasks " * 20))
    write(vault, "b/statuses.md", note("Recurring Tasks and Custom Statuses",
                                       "recurring tasks " * 10))
    write(vault, "c/recurring.md", note("Recurring Tasks", "How repeating work is set up."))
    await refreshed(db, index)
    async with db.session() as s:
        found = await index.search(s, "recurring tasks")
        filtered = await index.search(s, "Recurring Tasks", category="ideas")
    assert found.entries[0].path == "c/recurring.md" and found.total == 3
    assert filtered.entries == [] and filtered.total == 0  # the boost obeys the filters


async def test_search_honours_category_status_and_limit(
        sample: SearchIndex, db: Database) -> None:
    async with db.session() as s:
        projects = await sample.search(s, "budget", category="projects")
        waiting = await sample.search(s, "budget", status="waiting")
        one = await sample.search(s, "budget", limit=1)
    assert {e.category for e in projects.entries} == {"projects"}
    assert projects.total == 2
    assert [e.path for e in waiting.entries] == ["projects/offsite.md"]
    assert len(one.entries) == 1 and one.total == 4


async def test_search_prefix_diacritics_and_or_fallback(
        sample: SearchIndex, vault: Vault, db: Database) -> None:
    write(vault, "ideas/cafe.md", note("Café crawl", "Visit every café in town."))
    await refreshed(db, sample)
    async with db.session() as s:
        assert "ideas/garden.md" in [e.path for e in (await sample.search(s, "roofto")).entries]
        assert [e.path for e in (await sample.search(s, "cafe")).entries] == ["ideas/cafe.md"]
        # No note has both words: the OR retry still answers.
        either = await sample.search(s, "tomatoes xylophone")
        assert [e.path for e in either.entries] == ["ideas/garden.md"]


async def test_words_inside_links_addresses_and_paths_are_found(
        vault: Vault, db: Database) -> None:
    # PostgreSQL's parser keeps a host, an e-mail address or a file path as one token; FTS5
    # splits them. Both databases must find the word inside.
    write(vault, "ideas/links.md", note(
        "Reading list", "See https://www.codecademy.com/article/what-is-an-ide and "
        "docs/setup_guide.md, or mail ada@lovelace.example.", next_action="open intro.pdf"))
    write(vault, "ideas/other.md", note("Other", "Nothing to see."))
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        for query in ("codecademy", "setup", "guide", "lovelace", "intro", "article"):
            found = await index.search(s, query)
            assert [e.path for e in found.entries] == ["ideas/links.md"], query


async def test_when_no_note_has_every_word_the_rarer_word_ranks_first(
        vault: Vault, db: Database) -> None:
    # "meeting" is in twenty notes, "kayak" in one: the note with the rare word is what the
    # person means, though the common word's notes name it (bm25's idf on SQLite; on
    # PostgreSQL each word's ts_rank_cd weighted by the same idf).
    for i in range(20):
        write(vault, f"admin/m{i}.md", note(f"Meeting {i}", "The weekly meeting, again."))
    write(vault, "ideas/river.md", note("River trip", "Borrow a kayak for the weekend."))
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        found = await index.search(s, "meeting kayak", limit=5)
    assert found.entries[0].path == "ideas/river.md"
    assert len(found.entries) == 5  # the common word's notes still follow


async def test_search_matches_whole_words_in_every_field_and_folds_case_and_accents(
        sample: SearchIndex, vault: Vault, db: Database) -> None:
    write(vault, "ideas/start.md", note("Kick-off", "We start on Monday."))
    write(vault, "ideas/art.md", note("Gallery visit", "Modern art, then lunch."))
    write(vault, "ideas/cafe.md", note("Café crawl", "Visit every café in town."))
    await refreshed(db, sample)
    async with db.session() as s:
        assert [e.path for e in (await sample.search(s, "art")).entries] == ["ideas/art.md"]
        assert [e.path for e in (await sample.search(s, "CAFÉ")).entries] == ["ideas/cafe.md"]
        # next_action, context and one_liner are searched, not only name and body
        assert [e.path for e in (await sample.search(s, "draft")).entries] == [
            "projects/q3-budget.md"]
        assert [e.path for e in (await sample.search(s, "owns")).entries] == [
            "people/sarah-chen.md"]
        assert [e.path for e in (await sample.search(s, "food")).entries] == ["ideas/garden.md"]


async def test_a_word_in_hundreds_of_notes_ranks_fields_first_and_keeps_filters(
        vault: Vault, db: Database) -> None:
    # More matches than either database ranks whole (PostgreSQL: 400), so the search takes
    # its bounded path; what the user sees must still make sense.
    for i in range(450):
        category = "projects" if i % 9 == 0 else "ideas"
        write(vault, f"{category}/n{i}.md", note(f"Note {i}", f"Walk past the zebra {i}.",
                                                 category=category))
    write(vault, "ideas/crossing.md", note("Crossing", "Look both ways.",
                                           one_liner="A zebra crossing"))
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        found = await index.search(s, "zebra", limit=5)
        projects = await index.search(s, "zebra", category="projects", limit=50)
    assert found.entries[0].path == "ideas/crossing.md"  # in a field, not only a body
    assert len(found.entries) == 5 and found.total >= 401
    assert {e.category for e in projects.entries} == {"projects"}
    assert projects.total == 50 and len(projects.entries) == 50


async def test_snippet_prefers_fields_then_body(sample: SearchIndex, db: Database) -> None:
    async with db.session() as s:
        garden = (await sample.search(s, "rooftop")).entries[0]
        taxes = (await sample.search(s, "taxes")).entries[0]
    assert garden.snippet == "Grow food at work"
    assert taxes.snippet == "Before April."


@pytest.mark.parametrize("query", ["Sara", "sarha", "budgte", "ofsite", "Rooftp gardn"])
async def test_typos_in_names_still_find_the_note(
        sample: SearchIndex, db: Database, query: str) -> None:
    expected = {"Sara": "Sarah Chen", "sarha": "Sarah Chen", "budgte": "Q3 budget review",
                "ofsite": "Team offsite", "Rooftp gardn": "Rooftop garden"}[query]
    async with db.session() as s:
        found = await sample.search(s, query)
    assert expected in [e.name for e in found.entries]
    assert found.total >= 1


async def test_fuzzy_matches_respect_filters(sample: SearchIndex, db: Database) -> None:
    async with db.session() as s:
        assert (await sample.search(s, "budgte", category="people")).total == 0
        found = await sample.search(s, "sarha", category="people")
    assert [e.name for e in found.entries] == ["Sarah Chen"]


async def test_fuzzy_cache_follows_renames(sample: SearchIndex, vault: Vault,
                                           db: Database) -> None:
    async with db.session() as s:
        assert (await sample.search(s, "Kaleidoskope")).total == 0
    write(vault, "ideas/garden.md", note("Kaleidoscope garden", "x"), mtime=1.5e9)
    await refreshed(db, sample)
    async with db.session() as s:
        found = await sample.search(s, "Kaleidoskope")
    assert [e.path for e in found.entries] == ["ideas/garden.md"]


HOSTILE = ['"', '""', "'", "*", "budget*", "-budget", "NOT budget", "budget AND", "OR", "AND OR NOT",
           "name:budget", "(budget", "budget)", "NEAR(budget sarah)", "NEAR(", "^budget",
           "{name}: x", "\\", "💸💸", "🎉 budget 🎉", "Größe straße", "日本語のメモ", "", "   ",
           "\x00", "a" * 10_000, "budget " * 2_000, "a b c d e f g h i j k l m n o p q r s"]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_raise(sample: SearchIndex, db: Database,
                                           query: str) -> None:
    async with db.session() as s:
        found = await sample.search(s, query)
    assert found.total >= len(found.entries)
    if not query_tokens(query):
        assert found.entries == [] and found.total == 0


def test_fts_expression_quotes_every_word() -> None:
    tokens = query_tokens('NEAR("x" -y) AND name:z*')
    assert tokens == ["NEAR", "x", "y", "AND", "name", "z"]
    assert fts_expression(tokens) == '"NEAR" AND "x" AND "y" AND "AND" AND "name" AND "z"'
    assert fts_expression(["bud", "get"], "OR") == '"bud" OR "get"*'


def test_any_text_is_a_safe_query(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    vault = Vault(tmp_path / "v")
    write(vault, "ideas/a.md", note("Alpha beta", "gamma delta"))
    index = SearchIndex(vault)
    db = loop.run_until_complete(Database.open(fresh_url(tmp_path, "h")))
    loop.run_until_complete(refreshed(db, index))

    @settings(max_examples=150, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.text(), st.sampled_from([None, "ideas", "people"]), st.integers(0, 20))
    def check(query: str, category: str | None, limit: int) -> None:
        async def run() -> None:
            async with db.session() as s:
                found = await index.search(s, query, category=category, limit=limit)
            assert len(found.entries) <= limit
            assert found.total >= len(found.entries)
            assert all(category is None or e.category == category for e in found.entries)
        loop.run_until_complete(run())

    try:
        check()
    finally:
        loop.run_until_complete(db.close())
        loop.close()


# --- list ------------------------------------------------------------------------------------


async def test_list_is_newest_first_with_filters(sample: SearchIndex, db: Database) -> None:
    async with db.session() as s:
        everything = await sample.list(s, limit=50)
        projects = await sample.list(s, category="projects")
        active = await sample.list(s, category="projects", status="active")
        two = await sample.list(s, limit=2)
    assert [e.path for e in everything.entries][:3] == [
        "projects/q3-budget.md", "projects/offsite.md", "people/sarah-chen.md"]
    assert everything.total == 6
    assert [e.path for e in projects.entries] == ["projects/q3-budget.md", "projects/offsite.md"]
    assert [e.name for e in active.entries] == ["Q3 budget review"]
    assert len(two.entries) == 2 and two.total == 6


NOTE_SPECS = st.lists(st.tuples(
    st.sampled_from(["people", "projects", "ideas", "admin", "inbox", "misc"]),
    st.sampled_from([None, "active", "done", "todo"]),
    st.integers(1_500_000_000, 1_800_000_000)), max_size=12)


def test_list_filters_limit_and_total_hold(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    db = loop.run_until_complete(Database.open(fresh_url(tmp_path, "p")))

    @settings(max_examples=40, deadline=None)
    @given(NOTE_SPECS, st.sampled_from([None, "people", "projects", "ideas", "admin", "inbox"]),
           st.sampled_from([None, "active", "done", "todo"]), st.integers(0, 15))
    def check(specs: list[tuple[str, str | None, int]], category: str | None,
              status: str | None, limit: int) -> None:
        vault = Vault(tmp_path / uuid.uuid4().hex)  # a fresh vault in the same database
        for i, (folder, stat, stamp) in enumerate(specs):
            fields = {"updated": f"'{stamp}'"} if i % 2 else {}
            if stat:
                fields["status"] = stat
            write(vault, f"{folder}/n{i}.md", note(f"Note {i}", "x", **fields), mtime=stamp)
        index = SearchIndex(vault)

        async def run() -> None:
            await refreshed(db, index)
            async with db.session() as s:
                found = await index.list(s, category=category, status=status, limit=limit)
            expected = [f"{f}/n{i}.md" for i, (f, st_, _) in enumerate(specs)
                        if (category is None or f == category) and (status is None or st_ == status)]
            assert len(found.entries) <= limit
            assert found.total == len(expected)
            assert len(found.entries) == min(limit, len(expected))
            for e in found.entries:
                assert e.path in expected
                assert category is None or e.category == category
                assert status is None or e.status == status
        loop.run_until_complete(run())

    try:
        check()
    finally:
        loop.run_until_complete(db.close())
        loop.close()


# --- lookup, backlinks, summary ------------------------------------------------------------


async def test_lookup_by_id_path_name_and_stem(vault: Vault, db: Database) -> None:
    write(vault, "people/sara.md", "---\nid: e_000000000001\nname: Sara Lind\n---\nx\n")
    write(vault, "notes/Sara Lind.md", "plain note named like her\n")
    write(vault, "notes/Dates.md", "about dates\n")
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        assert [e.path for e in await index.lookup(s, "e_000000000001")] == ["people/sara.md"]
        assert [e.path for e in await index.lookup(s, "./people/sara")] == ["people/sara.md"]
        assert [e.path for e in await index.lookup(s, "people/sara.md")] == ["people/sara.md"]
        assert {e.path for e in await index.lookup(s, "sara lind")} == {
            "people/sara.md", "notes/Sara Lind.md"}  # both: the caller must choose
        assert [e.path for e in await index.lookup(s, "dates")] == ["notes/Dates.md"]
        assert await index.lookup(s, "nobody") == []
        assert await index.lookup(s, "   ") == []


async def test_backlinks_follow_obsidian_link_forms(vault: Vault, db: Database) -> None:
    write(vault, "people/Sara.md", note("Sara", "Target note."))
    write(vault, "a.md", "Met [[Sara]] today.\n")
    write(vault, "b.md", "See [[people/Sara]] too.\n")
    write(vault, "c.md", "Call [[Sara|my colleague]].\n")
    write(vault, "d.md", "Her notes: [[Sara#Budget]].\n")
    write(vault, "e.md", '---\nrelated: "[[Sara]]"\n---\nbody\n')
    write(vault, "f.md", "```\n[[Sara]] in a fence\n```\nAnd `[[Sara]]` in code.\n")
    write(vault, "g.md", "Link to [[Nobody]] and to [[sara.md]].\n")
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        result = await index.backlinks(s, "people/Sara.md")
        assert await index.backlinks(s, "a.md") == type(result)(target="a.md", backlinks=[])
    by_path = {b.path: b.context for b in result.backlinks}
    assert set(by_path) == {"a.md", "b.md", "c.md", "d.md", "e.md", "g.md"}
    assert by_path["c.md"] == "Call [[Sara|my colleague]]."
    assert by_path["e.md"] == "related: [[Sara]]"


async def test_backlink_resolution_follows_notes_added_later(vault: Vault, db: Database) -> None:
    write(vault, "deep/folder/Plan.md", "deep plan\n")
    write(vault, "linker.md", "Read [[Plan]].\n")
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        assert [b.path for b in (await index.backlinks(s, "deep/folder/Plan.md")).backlinks] == [
            "linker.md"]
    write(vault, "Plan.md", "top plan\n")  # now the shorter path wins, as in Obsidian
    await refreshed(db, index)
    async with db.session() as s:
        assert (await index.backlinks(s, "deep/folder/Plan.md")).backlinks == []
        assert [b.path for b in (await index.backlinks(s, "Plan.md")).backlinks] == ["linker.md"]


async def test_summary_is_bounded(vault: Vault, db: Database) -> None:
    for i in range(12):
        write(vault, f"projects/p{i}.md", note(f"Project {i}", "x", status="active",
                                               updated=f"2024-01-{i + 1:02d}T00:00:00+00:00"))
    write(vault, "projects/done.md", note("Old one", "x", status="done"))
    write(vault, "inbox/a.md", note("Unsure", "x"))
    write(vault, "misc/loose.md", "loose\n")
    index = SearchIndex(vault)
    await refreshed(db, index)
    async with db.session() as s:
        summary = await index.summary(s, max_names=5)
    assert summary.active_projects == [f"Project {i}" for i in (11, 10, 9, 8, 7)]
    assert summary.counts["projects"] == 13 and summary.counts["other"] == 1
    assert summary.inbox_waiting == 1 and summary.total == 15
