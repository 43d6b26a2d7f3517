"""DigestData over real vaults (files + index + SQLite): every item satisfies its filter,
the bounds hold, and nothing that matches is missing while there is room."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.digest.data import build_data
from bot.digest.model import (
    MAX_ADMIN,
    MAX_INBOX,
    MAX_LOOPS,
    MAX_PEOPLE,
    MAX_PROJECTS,
    MAX_REVIEW,
    DigestData,
)
from storage import repositories
from storage.db import Database
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url

TODAY = date(2026, 6, 15)
NOON = datetime(2026, 6, 15, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Spec:
    folder: str  # a category folder, or "misc" (no category)
    status: str | None
    due: int | str | None  # days from TODAY, a bad string, or none
    updated: int  # days from TODAY (<= 0)
    follow_ups: Any
    has_id: bool


def write_vault(root: Path, specs: list[Spec]) -> list[tuple[str, Spec]]:
    """Write the notes; returns (ref, spec) per note (ref = id, or path without one)."""
    out = []
    for i, spec in enumerate(specs):
        fm: dict[str, Any] = {"name": f"Note {i}"}
        note_id = f"e_{i:012x}"
        if spec.has_id:
            fm["id"] = note_id
        if spec.folder != "misc":
            fm["category"] = spec.folder
        if spec.status is not None:
            fm["status"] = spec.status
        if isinstance(spec.due, int):
            fm["due_date"] = (TODAY + timedelta(days=spec.due)).isoformat()
        elif spec.due is not None:
            fm["due_date"] = spec.due
        if spec.follow_ups is not None:
            fm["follow_ups"] = spec.follow_ups
        fm["next_action"] = f"Step {i}"
        fm["updated"] = (NOON + timedelta(days=spec.updated)).isoformat()
        rel = f"{spec.folder}/note-{i}.md"
        (root / spec.folder).mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("---\n" + yaml.safe_dump(fm, sort_keys=False) + "---\nBody\n",
                                encoding="utf-8")
        out.append((note_id if spec.has_id else rel, spec))
    return out


def due_day(spec: Spec) -> date | None:
    return TODAY + timedelta(days=spec.due) if isinstance(spec.due, int) else None


def has_follow_ups(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, list) and any(str(v).strip() for v in value if v is not None)


def expected(notes: list[tuple[str, Spec]]) -> dict[str, set[str]]:
    def refs(pred: Any) -> set[str]:
        return {r for r, s in notes if pred(s)}
    return {
        "projects": refs(lambda s: s.folder == "projects" and s.status in (None, "active")),
        "people": refs(lambda s: s.folder == "people" and has_follow_ups(s.follow_ups)),
        "admin": refs(lambda s: s.folder == "admin" and s.status == "todo"
                      and (d := due_day(s)) is not None and d <= TODAY),
        "inbox": refs(lambda s: s.folder == "inbox"),
        "changed_projects": refs(lambda s: s.folder == "projects" and s.updated >= -6
                                 and s.status in ("waiting", "blocked", "someday", "done")),
        "open_loops": refs(lambda s: s.folder == "projects" and (
            s.status in ("waiting", "blocked")
            or (s.status in (None, "active") and s.updated < -14))),
    }


def check(data: DigestData, exp: dict[str, set[str]]) -> None:
    lists = {"projects": (data.projects, MAX_PROJECTS), "people": (data.people, MAX_PEOPLE),
             "admin": (data.admin, MAX_ADMIN), "inbox": (data.inbox, MAX_INBOX),
             "changed_projects": (data.changed_projects, 10),
             "open_loops": (data.open_loops, MAX_LOOPS)}
    if data.kind == "weekly":
        lists["inbox"] = (data.needs_review, MAX_REVIEW)
    for key, (items, bound) in lists.items():
        if data.kind == "daily" and key in ("changed_projects", "open_loops"):
            assert items == ()
            continue
        if data.kind == "weekly" and key in ("projects", "people", "admin"):
            assert items == ()
            continue
        got = [n.ref for n in items]
        assert len(got) == len(set(got)), key
        assert set(got) <= exp[key], (key, set(got) - exp[key])
        assert len(got) == min(bound, len(exp[key])), key
    # overdue first
    dues = [n.due_date or "" for n in data.admin]
    assert dues == sorted(dues)
    # blocked before waiting before stale
    order = {"blocked": 0, "waiting": 1}
    ranks = [order.get(n.status or "", 2) for n in data.open_loops]
    assert ranks == sorted(ranks)


async def build(db: Database, root: Path, kind: str) -> DigestData:
    return await build_data(Store(Vault(root), db), db, "U1", kind, today=TODAY, tz="UTC")


spec_st = st.builds(
    Spec,
    folder=st.sampled_from(["projects", "people", "admin", "inbox", "ideas", "misc"]),
    status=st.sampled_from([None, "active", "waiting", "blocked", "someday", "done", "todo",
                            "odd"]),
    due=st.one_of(st.none(), st.integers(-20, 20), st.just("next week")),
    updated=st.integers(-40, 0),
    follow_ups=st.one_of(st.none(), st.just([]), st.just(""), st.just("Call back"),
                         st.lists(st.sampled_from(["Ask X", "", "Send Y"]), max_size=3)),
    has_id=st.booleans(),
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("digest-data")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(spec_st, max_size=40))
def test_every_item_satisfies_its_filter_and_bounds(base: Path, specs: list[Spec]) -> None:
    root = base / uuid.uuid4().hex
    root.mkdir()
    notes = write_vault(root, specs)
    exp = expected(notes)

    async def go() -> None:
        db = await Database.open(fresh_url(base))
        try:
            check(await build(db, root, "daily"), exp)
            check(await build(db, root, "weekly"), exp)
        finally:
            await db.close()

    asyncio.run(go())


@pytest.fixture
async def db(tmp_path: Path) -> Any:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


async def test_bounds_hold_on_a_big_vault(tmp_path: Path, db: Database) -> None:
    specs = ([Spec("admin", "todo", -i, -1, None, True) for i in range(25)]
             + [Spec("projects", "active", None, -1, None, True) for _ in range(30)]
             + [Spec("projects", "blocked", None, -1, None, True) for _ in range(15)]
             + [Spec("people", None, None, -1, ["Call"], True) for _ in range(15)]
             + [Spec("inbox", None, None, -1, None, True) for _ in range(15)])
    root = tmp_path / "vault"
    notes = write_vault(root, specs)
    daily = await build(db, root, "daily")
    assert (len(daily.admin), len(daily.projects), len(daily.people), len(daily.inbox)) == (
        MAX_ADMIN, MAX_PROJECTS, MAX_PEOPLE, MAX_INBOX)
    assert daily.totals["admin"] == 25 and daily.totals["inbox"] == 15
    # the most overdue come first
    assert daily.admin[0].due_date == (TODAY - timedelta(days=24)).isoformat()
    check(daily, expected(notes))
    weekly = await build(db, root, "weekly")
    assert len(weekly.open_loops) == MAX_LOOPS
    check(weekly, expected(notes))


async def test_captures_yesterday_and_this_week(tmp_path: Path, db: Database) -> None:
    root = tmp_path / "vault"
    notes = write_vault(root, [Spec("projects", "active", None, 0, None, True),
                               Spec("inbox", None, None, 0, None, True)])
    (project_ref, _), (inbox_ref, _) = notes
    async with db.session() as s:
        await repositories.add_receipt(s, user_id="U1", original_text="Plan the launch",
                                       entry_id=project_ref, path="projects/note-0.md",
                                       category="projects", confidence=0.9, status="filed")
        await repositories.add_receipt(s, user_id="U1", original_text="hmm something",
                                       entry_id=inbox_ref, path="inbox/note-1.md",
                                       category="inbox", confidence=0.3,
                                       status="needs_review")
        await repositories.add_receipt(s, user_id="OTHER", original_text="not mine",
                                       entry_id="e_x", path="x.md", category="ideas",
                                       confidence=0.9, status="filed")
        await s.commit()
    store = Store(Vault(root), db)
    now = datetime.now(UTC).date()
    # Captures made now are "yesterday's" for tomorrow's daily digest, not for today's.
    tomorrow = await build_data(store, db, "U1", "daily", today=now + timedelta(days=1),
                                tz="UTC")
    assert {c.ref for c in tomorrow.captures} == {project_ref, inbox_ref}
    assert {c.name for c in tomorrow.captures} == {"Note 0", "Note 1"}
    today = await build_data(store, db, "U1", "daily", today=now, tz="UTC")
    assert today.captures == ()
    weekly = await build_data(store, db, "U1", "weekly", today=now, tz="UTC")
    assert weekly.capture_counts == {"projects": 1, "inbox": 1}
    assert [n.ref for n in weekly.needs_review] == [inbox_ref]
    later = await build_data(store, db, "U1", "weekly", today=now + timedelta(days=7),
                             tz="UTC")
    assert later.captures == () and later.capture_counts == {}


async def test_refiled_capture_counts_as_moved(tmp_path: Path, db: Database) -> None:
    root = tmp_path / "vault"
    [(ref, _)] = write_vault(root, [Spec("projects", "active", None, 0, None, True)])
    async with db.session() as s:
        await repositories.add_receipt(s, user_id="U1", original_text="launch", entry_id=ref,
                                       path="projects/note-0.md", category="projects",
                                       confidence=0.4, status="fixed")
        await s.commit()
    weekly = await build_data(Store(Vault(root), db), db, "U1", "weekly",
                              today=datetime.now(UTC).date(), tz="UTC")
    assert [n.ref for n in weekly.changed_projects] == [ref]


async def test_unknown_kind_is_refused(tmp_path: Path, db: Database) -> None:
    with pytest.raises(ValueError, match="daily or weekly"):
        await build(db, tmp_path, "monthly")
