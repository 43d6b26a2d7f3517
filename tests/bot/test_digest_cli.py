"""`brain digest` through `bot.cli.main` in this process (tests/brain_cli.py): no key set,
offline rules, a fresh data dir."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.brain_cli import BrainCLI, Result
from tests.databases import on_postgres


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


@pytest.fixture
def brain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    cli = BrainCLI(capsys, tmp_path,
                   {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_TZ": "UTC"})

    def digest(*args: str, llm: str = "offline") -> Result:
        return cli("digest", *args, BRAIN_LLM=llm)

    return digest


def test_daily_names_project_person_and_admin(tmp_path: Path, vault: Path,
                                              brain: Callable[..., Result]) -> None:
    done = brain("daily", "--vault", str(vault))
    assert done.code == 0, done.err
    text = done.out
    assert "Q3 Budget" in text and "Send the draft to finance" in text
    assert "Sara" in text and "offsite venue" in text
    assert "Renew the car insurance" in text
    assert "Taxes" not in text and "Old garden" not in text  # done: not due, not active
    assert len(text.split()) <= 150
    assert (tmp_path / "data" / "brain.db").is_file() is not on_postgres()


def test_json_form_without_a_key_falls_back_to_rules(vault: Path,
                                                    brain: Callable[..., Result]) -> None:
    done = brain("daily", "--vault", str(vault), "--json", llm="openai")
    assert done.code == 0, done.err
    out = json.loads(done.out)
    assert out["source"] == "offline" and out["kind"] == "daily"
    ids = {i for items in out["sections"].values() for it in items for i in it["ids"]}
    assert ids == {"e_aaaaaaaaaaaa", "e_bbbbbbbbbbbb", "e_cccccccccccc"}
    assert out["words"] <= 150


def test_bad_input_is_refused(vault: Path, brain: Callable[..., Result]) -> None:
    done = brain("monthly", "--vault", str(vault))
    assert done.code == 2 and "I don't know “monthly”" in done.err and "subscribe" in done.err
    done = brain("daily", "--vault", str(vault), "--tz", "Mars/Base")
    assert done.code == 2 and "unknown time zone" in done.err
    assert done.out == ""


def test_settings_words_are_the_slack_ones(brain: Callable[..., Result]) -> None:
    """`brain digest status | off | unsubscribe | subscribe` parse as Slack's /digest does."""
    assert "No scheduled digests" in brain("status").out
    done = brain("subscribe", "daily", "07:30")
    assert done.code == 0 and "daily at 07:30" in done.out
    assert "daily at 07:30" in brain("status").out
    assert "turned off" in brain("unsubscribe").out
    assert "No scheduled digests" in brain("status").out
    brain("subscribe", "weekly")
    assert "turned off" in brain("off", "weekly").out
    assert brain("off", "forever").code == 2
