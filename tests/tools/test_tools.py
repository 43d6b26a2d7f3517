"""Each tool over a real vault and database, through the registry as the loop calls it."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from storage import repositories
from storage.db import Database
from tests.tools.conftest import Sandbox, snapshot, write_note
from tools.base import ToolContext
from tools.registry import Execution, execute
from tools.rules import classify

PROJECT = """---
name: Website relaunch
category: projects
status: active
next_action: Email the designer
tags: [web]
---
Relaunch the site before the conference. See [[sara-lee|Sara]].
"""
PERSON = """---
name: Sara Lee
category: people
context: Designer at Acme
---
Met at the offsite.
"""


async def call(ctx: ToolContext, name: str, **arguments: Any) -> Execution:
    return await execute(ctx, "call_1", name, arguments)


async def receipts(db: Database, entry_id: str) -> repositories.ReceiptRow | None:
    async with db.session() as s:
        return await repositories.receipt_for_entry(s, entry_id)


# ------------------------------------------------------------------ classify_and_capture

async def test_capture_with_confident_hints_files_to_the_category(
        ctx: ToolContext, vault_root: Path, db: Database) -> None:
    async with db.session() as s:
        conversation = await repositories.get_or_create_conversation(
            s, "slack:D1:1700000000.000100", "U1", channel="D1", thread_ts="1700000000.000100")
        turn_id = await repositories.start_turn(s, conversation.id, "Q3 budget ...")
        await s.commit()
    ctx.conversation_id, ctx.turn_id = conversation.id, turn_id
    ctx.channel, ctx.thread_ts = "D1", "1700000000.000100"
    text = "Q3 budget: send the draft to finance by Friday"
    ex = await call(ctx, "classify_and_capture", text=text, hints={
        "category": "projects", "confidence": 0.82, "name": "Q3 budget",
        "next_action": "Send the draft to finance", "due_date": "2030-07-05",
        "one_liner": "not a project field", "context": "not a project field either"})

    assert ex.status == "ok", ex.content
    assert ex.output is not None and ex.output.kind == "capture"
    assert ex.output.text == "Filed to projects: Q3 budget (0.82)"
    data = ex.output.data
    assert data["category"] == "projects" and data["status"] == "filed"
    assert data["path"].startswith("projects/") and "suggested_category" not in data
    note = (vault_root / data["path"]).read_text(encoding="utf-8")
    assert text in note  # the body keeps the user's words
    got = await call(ctx, "get_entry", path=data["id"])
    fields = got.output.data if got.output else {}
    assert fields["next_action"] == "Send the draft to finance"
    assert fields["due_date"] == "2030-07-05"
    assert fields["confidence"] == 0.82 and fields["source"] == "cli"
    assert fields["status"] == "active"  # the category's default
    assert "one_liner" not in fields and "context" not in fields

    row = await receipts(db, data["id"])
    assert row is not None
    assert (row.status, row.category, row.path) == ("filed", "projects", data["path"])
    assert row.original_text == text and row.user_id == "U1"
    assert (row.channel, row.thread_ts) == ("D1", "1700000000.000100")
    assert (row.conversation_id, row.turn_id) == (conversation.id, turn_id)


async def test_capture_of_a_person_keeps_people_fields(
        ctx: ToolContext, vault_root: Path) -> None:
    ex = await call(ctx, "classify_and_capture", text="Met Ana, she runs ops at Globex", hints={
        "category": "people", "confidence": 0.9, "name": "Ana", "context": "Runs ops at Globex",
        "follow_ups": ["Send her the deck"], "tags": ["globex"], "next_action": "not people"})
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["path"] == "people/ana.md"
    assert data["fields"]["context"] == "Runs ops at Globex"
    assert data["fields"]["follow_ups"] == ["Send her the deck"]
    assert data["fields"]["tags"] == ["globex"] and "next_action" not in data["fields"]


async def test_capture_the_model_sends_to_the_inbox(ctx: ToolContext, db: Database) -> None:
    ex = await call(ctx, "classify_and_capture", text="hmm",
                    hints={"category": "inbox", "confidence": 0.95})
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert (data["category"], data["status"]) == ("inbox", "needs_review")
    assert "suggested_category" not in data
    row = await receipts(db, data["id"])
    assert row is not None and row.status == "needs_review"


async def test_capture_below_threshold_waits_in_the_inbox(
        ctx: ToolContext, vault_root: Path, db: Database) -> None:
    text = "something about the boat maybe"
    ex = await call(ctx, "classify_and_capture", text=text,
                    hints={"category": "ideas", "confidence": 0.45, "name": "Boat"})

    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["category"] == "inbox" and data["status"] == "needs_review"
    assert data["suggested_category"] == "ideas"
    assert data["path"].startswith("inbox/")
    got = await call(ctx, "get_entry", path=data["path"])
    fields = got.output.data if got.output else {}
    assert fields["original_text"] == text
    assert fields["suggested_category"] == "ideas"
    assert fields["reason"] == "confidence 0.45 below 0.60"
    row = await receipts(db, data["id"])
    assert row is not None and row.status == "needs_review" and row.category == "inbox"


async def test_capture_without_hints_uses_the_keyword_classifier(ctx: ToolContext) -> None:
    text = "Call Sara about the Q3 budget next week"
    expected = classify.classify(text)
    ex = await call(ctx, "classify_and_capture", text=text)

    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["confidence"] == round(expected.confidence, 2)
    if expected.confidence >= ctx.deps.confidence_threshold:
        assert data["category"] == expected.category
    else:
        assert data["category"] == "inbox"
        assert data["suggested_category"] == expected.category


async def test_capture_with_a_category_but_no_confidence_keeps_the_models_choice(
        ctx: ToolContext) -> None:
    # The keyword rules say admin here: agreement files it, disagreement asks for review.
    text = "Pay the electricity bill by Friday"
    assert classify.classify(text).category == "admin"
    agreed = await call(ctx, "classify_and_capture", text=text, hints={"category": "admin"})
    data = agreed.output.data if agreed.output else {}
    assert data["category"] == "admin" and data["status"] == "filed"

    text = "Pay the water bill by Friday"  # another thought (the same words: a repeat)
    assert classify.classify(text).category == "admin"
    differs = await call(ctx, "classify_and_capture", text=text, hints={"category": "ideas"})
    data = differs.output.data if differs.output else {}
    assert data["category"] == "inbox" and data["suggested_category"] == "ideas"


async def test_a_failed_receipt_does_not_fail_the_capture(ctx: ToolContext,
                                                          tmp_path: Path) -> None:
    # A broken receipts table (a bad migration, someone's hand in the database): the note is
    # on disk, so the model must hear success, or it would capture the thought twice.
    async with ctx.deps.db.engine.begin() as conn:
        await conn.execute(text("DROP TABLE receipts"))
    ex = await call(ctx, "classify_and_capture", text="Renew passport",
                    hints={"category": "admin", "confidence": 0.9, "name": "Renew passport"})
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["receipt"].startswith("not recorded")
    assert (ctx.deps.store.vault.root / data["path"]).exists()


async def test_capture_replaces_a_status_the_category_does_not_know(ctx: ToolContext) -> None:
    ex = await call(ctx, "classify_and_capture", text="Tax return",
                    hints={"category": "admin", "confidence": 0.9, "status": "in progress"})
    assert ex.status == "ok", ex.content
    got = await call(ctx, "get_entry", path=ex.output.data["path"] if ex.output else "")
    assert got.output is not None and got.output.data["status"] == "todo"


async def test_blank_text_is_refused_and_nothing_is_written(
        ctx: ToolContext, vault_root: Path) -> None:
    ex = await call(ctx, "classify_and_capture", text=" \n\t ")
    assert ex.status == "error" and ex.error is not None
    assert ex.error["message"] == "text is empty: there is nothing to save"
    assert snapshot(vault_root) == {}


GARDEN_BEDS = itertools.count(1)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(confidence=st.floats(min_value=0.0, max_value=1.0, allow_nan=False))
def test_confidence_routes_to_category_or_inbox(sandbox: Sandbox, confidence: float) -> None:
    # Each example a thought of its own: the same words again would be a repeat (no note).
    text = f"Plan the garden, bed {next(GARDEN_BEDS)}"
    ex = sandbox.run(execute(sandbox.ctx, "c", "classify_and_capture", {
        "text": text, "hints": {"category": "projects", "confidence": confidence}}))
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    stored = round(confidence, 2)
    assert data["confidence"] == stored
    if stored >= sandbox.ctx.deps.confidence_threshold:
        assert data["category"] == "projects" and data["path"].startswith("projects/")
    else:
        assert data["category"] == "inbox" and data["suggested_category"] == "projects"
    assert (sandbox.root / data["path"]).is_file()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(
    st.text(min_size=1, max_size=80),
    st.sampled_from(["../../etc/passwd", "/etc/passwd", "..", ".", "~/x", "a/../../b",
                     "C:\\Windows\\x", ".trash", "con", "\x00", "名前 ✓"])))
def test_no_capture_name_leaves_the_vault(sandbox: Sandbox, name: str) -> None:
    ex = sandbox.run(execute(sandbox.ctx, "c", "classify_and_capture", {
        "text": "a thought", "hints": {"category": "ideas", "confidence": 0.9, "name": name}}))
    assert ex.status == "ok", ex.content
    created = (sandbox.root / ex.output.data["path"]).resolve() if ex.output else Path("/")
    assert created.is_file()
    assert created.is_relative_to(sandbox.root.resolve())
    assert created.parent == (sandbox.root / "ideas").resolve()


# ------------------------------------------------------------------ reading tools

async def test_list_entries_filters_and_limits(ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "projects/website.md", PROJECT)
    write_note(vault_root, "projects/old.md", "---\nname: Old\nstatus: done\n---\nx\n")
    write_note(vault_root, "people/sara-lee.md", PERSON)

    ex = await call(ctx, "list_entries", category="projects", status="active")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert [e["name"] for e in data["entries"]] == ["Website relaunch"]
    assert data["filters"] == {"category": "projects", "status": "active", "limit": 10}

    ex = await call(ctx, "list_entries", limit=1)
    data = ex.output.data if ex.output else {}
    assert len(data["entries"]) == 1 and data["total"] == 3


async def test_get_entry_by_name_and_capped_body(ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "people/sara-lee.md", PERSON)
    write_note(vault_root, "ideas/long.md", "---\nname: Long\n---\n" + "word " * 2000)

    ex = await call(ctx, "get_entry", path="Sara Lee")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["path"] == "people/sara-lee.md" and data["context"] == "Designer at Acme"
    assert "truncated" not in data

    ex = await call(ctx, "get_entry", path="ideas/long.md")
    data = ex.output.data if ex.output else {}
    assert len(data["body"]) == 2000 and data["truncated"] is True


async def test_search_entries_finds_by_words(ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "projects/website.md", PROJECT)
    write_note(vault_root, "people/sara-lee.md", PERSON)

    ex = await call(ctx, "search_entries", query="conference")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert [e["path"] for e in data["entries"]][:1] == ["projects/website.md"]
    assert data["query"] == "conference"


async def test_list_backlinks(ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "projects/website.md", PROJECT)
    write_note(vault_root, "people/sara-lee.md", PERSON)

    ex = await call(ctx, "list_backlinks", path="Sara Lee")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["target"] == "people/sara-lee.md"
    assert [b["path"] for b in data["backlinks"]] == ["projects/website.md"]


# ------------------------------------------------------------------ update_entry

async def test_update_sets_fields_and_appends(ctx: ToolContext, vault_root: Path) -> None:
    path = write_note(vault_root, "projects/website.md", PROJECT)

    ex = await call(ctx, "update_entry", path="Website relaunch",
                    updates={"status": "waiting", "tags": ["web", "q3"]},
                    append="Waiting on the designer.")
    assert ex.status == "ok", ex.content
    assert ex.output is not None and ex.output.kind == "update"
    text = path.read_text(encoding="utf-8")
    assert "status: waiting" in text and "Waiting on the designer." in text
    assert "next_action: Email the designer" in text  # untouched fields stay
    assert ex.output.data["status"] == "waiting"


async def test_update_refuses_protected_fields_and_empty_calls(
        ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "projects/website.md", PROJECT)
    before = snapshot(vault_root)

    for arguments, fragment in (
            ({"updates": {"id": "e_hacked"}}, "cannot change id"),
            ({"updates": {"created": "2000-01-01"}}, "cannot change created"),
            ({"updates": {"category": "ideas"}}, "move_entry"),
            ({"updates": {}}, "nothing to update"),
            ({"append": "   "}, "nothing to update")):
        ex = await execute(ctx, "c", "update_entry", {"path": "Website relaunch", **arguments})
        assert ex.status == "error" and ex.error is not None
        assert fragment in ex.error["message"], ex.error
    assert snapshot(vault_root) == before


# ------------------------------------------------------------------ move_entry

async def test_move_refiles_and_marks_the_receipt_fixed(
        ctx: ToolContext, vault_root: Path, db: Database) -> None:
    cap = await call(ctx, "classify_and_capture", text="Sara said try the new espresso place",
                     hints={"category": "ideas", "confidence": 0.7, "name": "Espresso place"})
    assert cap.output is not None
    old = cap.output.data["path"]

    ex = await call(ctx, "move_entry", path=cap.output.data["id"], target_category="admin")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["old_path"] == old and data["new_path"].startswith("admin/")
    assert data["name"] == "Espresso place" and data["category"] == "admin"
    assert not (vault_root / old).exists() and (vault_root / data["new_path"]).is_file()
    row = await receipts(db, cap.output.data["id"])
    assert row is not None
    assert (row.status, row.category, row.path) == ("fixed", "admin", data["new_path"])


async def test_move_of_a_hand_written_note_needs_no_receipt(
        ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "people/sara-lee.md", PERSON)
    ex = await call(ctx, "move_entry", path="people/sara-lee.md", target_category="projects")
    assert ex.status == "ok", ex.content
    assert ex.output is not None and ex.output.data["new_path"].startswith("projects/")


# ------------------------------------------------------------------ generate_digest

async def test_basic_daily_and_weekly_digest(ctx: ToolContext, vault_root: Path) -> None:
    write_note(vault_root, "projects/website.md", PROJECT)
    write_note(vault_root, "people/sara-lee.md", PERSON)
    write_note(vault_root, "inbox/unsure.md", "---\nname: Unsure\ncategory: inbox\n---\nhm\n")

    ex = await call(ctx, "generate_digest", type="daily")
    assert ex.status == "ok", ex.content
    data = ex.output.data if ex.output else {}
    assert data["inbox_count"] == 1
    assert {"path": "projects/website.md", "name": "Website relaunch", "category": "projects",
            "next_action": "Email the designer", "due_date": None} in data["focus"]

    ex = await call(ctx, "generate_digest", type="weekly")
    data = ex.output.data if ex.output else {}
    assert data["counts"]["projects"] == 1 and data["counts"]["people"] == 1
    assert data["total"] == 3


async def test_digest_uses_the_injected_digest_maker(ctx: ToolContext) -> None:
    asked: list[str] = []

    async def make(kind: str) -> dict[str, Any]:
        asked.append(kind)
        return {"headline": "All calm", "kind": kind}

    ctx.deps = replace(ctx.deps, make_digest=make)
    ex = await call(ctx, "generate_digest", type="weekly")
    assert ex.status == "ok", ex.content
    assert asked == ["weekly"]
    assert ex.output is not None and ex.output.data["headline"] == "All calm"


# ------------------------------------------------------------------ any input, a clear answer

_CLEAR_CODES = {"not_found", "ambiguous", "unsafe_path", "invalid", "invalid_arguments"}


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(min_size=1, max_size=60)
       | st.sampled_from(['"', "*", "AND", "NEAR(a b)", "a OR", "-x", "^", "'", "name:x",
                          "col:", "(", "\x00", "  ", "%", "_"]))
def test_any_search_query_gets_results_or_a_clear_error(sandbox: Sandbox, query: str) -> None:
    write_note(sandbox.root, "projects/website.md", PROJECT)
    ex = sandbox.run(execute(sandbox.ctx, "c", "search_entries", {"query": query}))
    assert ex.status == "ok" or (ex.error or {}).get("code") in _CLEAR_CODES, ex.content


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ref=st.text(min_size=1, max_size=60)
       | st.sampled_from(["..", "/", "\\", "C:\\x.md", "projects/", "projects/../../x.md",
                          ".trash/a.md", "~", "e_", "%2e%2e/x", " ", "\x00"]))
def test_any_reference_gets_a_note_or_a_clear_error(sandbox: Sandbox, ref: str) -> None:
    write_note(sandbox.root, "projects/website.md", PROJECT)
    before = snapshot(sandbox.root)
    for name in ("get_entry", "list_backlinks"):
        ex = sandbox.run(execute(sandbox.ctx, "c", name, {"path": ref}))
        assert ex.status == "ok" or (ex.error or {}).get("code") in _CLEAR_CODES, ex.content
    assert snapshot(sandbox.root) == before
