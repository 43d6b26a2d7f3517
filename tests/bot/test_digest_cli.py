"""`brain digest` as a subprocess: no key set, offline rules, a fresh data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.databases import database_env, on_postgres

ROOT = Path(__file__).resolve().parents[2]


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    today = datetime.now(UTC).date().isoformat()
    write(root, "projects/q3-budget.md", "---\nid: e_aaaaaaaaaaaa\ncategory: projects\n"
          "name: Q3 Budget\nstatus: active\nnext_action: Send the draft to finance\n---\n")
    write(root, "people/sara.md", "---\nid: e_bbbbbbbbbbbb\ncategory: people\nname: Sara\n"
          "follow_ups:\n  - Ask about the offsite venue\n---\nMet at the conference.\n")
    write(root, "admin/car-insurance.md", "---\nid: e_cccccccccccc\ncategory: admin\n"
          f"name: Car insurance\nstatus: todo\ndue_date: {today}\n"
          "next_action: Renew the car insurance\n---\n")
    write(root, "admin/taxes.md", "---\ncategory: admin\nname: Taxes\nstatus: done\n"
          f"due_date: {today}\n---\n")
    write(root, "projects/old.md", "---\ncategory: projects\nname: Old garden\n"
          "status: done\n---\n")
    return root


def brain(tmp_path: Path, *args: str, llm: str = "offline") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "BRAIN_", "DATABASE_", "SLACK_"))}
    env.update(BRAIN_LLM=llm, BRAIN_DATA_DIR=str(tmp_path / "data"), BRAIN_TZ="UTC",
               PYTHONPATH=str(ROOT), **database_env(tmp_path))
    return subprocess.run([sys.executable, "-m", "bot.cli", "digest", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def test_daily_names_project_person_and_admin(tmp_path: Path, vault: Path) -> None:
    done = brain(tmp_path, "daily", "--vault", str(vault))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Q3 Budget" in text and "Send the draft to finance" in text
    assert "Sara" in text and "offsite venue" in text
    assert "Renew the car insurance" in text
    assert "Taxes" not in text and "Old garden" not in text  # done: not due, not active
    assert len(text.split()) <= 150
    assert (tmp_path / "data" / "brain.db").is_file() is not on_postgres()


def test_json_form_without_a_key_falls_back_to_rules(tmp_path: Path, vault: Path) -> None:
    done = brain(tmp_path, "daily", "--vault", str(vault), "--json", llm="openai")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["source"] == "offline" and out["kind"] == "daily"
    ids = {i for items in out["sections"].values() for it in items for i in it["ids"]}
    assert ids == {"e_aaaaaaaaaaaa", "e_bbbbbbbbbbbb", "e_cccccccccccc"}
    assert out["words"] <= 150


def test_bad_input_is_refused(tmp_path: Path, vault: Path) -> None:
    done = brain(tmp_path, "monthly", "--vault", str(vault))
    assert done.returncode == 2 and "invalid choice" in done.stderr
    done = brain(tmp_path, "daily", "--vault", str(vault), "--tz", "Mars/Base")
    assert done.returncode == 2 and "unknown time zone" in done.stderr
    assert done.stdout == ""
