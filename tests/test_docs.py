"""The README says what the code does: every command and every setting, no more, no less."""

from __future__ import annotations

import argparse
import re

from bot.cli import build_parser
from bot.config import Settings
from tests.shared import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_command_is_in_the_readme_table_and_nothing_else() -> None:
    documented = set(re.findall(r"^\| `brain ([a-z]+)", README, re.M))
    assert documented == _commands()


def test_every_setting_is_documented_in_the_readme() -> None:
    names = {field.alias for field in Settings.model_fields.values() if field.alias}
    missing = {name for name in names if f"`{name}`" not in README}
    assert not missing, f"add these to the README's configuration table: {sorted(missing)}"


def test_the_readme_names_no_setting_the_code_does_not_read() -> None:
    names = {field.alias for field in Settings.model_fields.values() if field.alias}
    table = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    mentioned = set(re.findall(r"`((?:BRAIN|SLACK|OPENAI|ANTHROPIC|DATABASE)_[A-Z_]+)`", table))
    assert mentioned <= names, f"documented but never read: {sorted(mentioned - names)}"
