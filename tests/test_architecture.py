"""Dependencies point one way (docs/architecture.md): checked by parsing every module's imports.

storage imports nothing of ours; tools imports storage only; SDKs and SQL stay in the one place
that owns them. Each violation names the file, the line and the import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "tools", "storage")


@dataclass(frozen=True)
class Import:
    file: str  # repo-relative POSIX path
    line: int
    module: str  # absolute dotted name, relative imports resolved

    def top(self) -> str:
        return self.module.split(".")[0]

    def under(self, prefix: str) -> bool:
        return self.module == prefix or self.module.startswith(prefix + ".")

    def __str__(self) -> str:
        return f"{self.file}:{self.line} imports {self.module}"


def _package_of(rel: Path) -> list[str]:
    parts = list(rel.with_suffix("").parts)
    return parts[:-1] if parts[-1] != "__init__" else parts[:-1]


def imports_of(path: Path, root: Path = ROOT) -> list[Import]:
    """Every import in the file (including ones inside functions and TYPE_CHECKING blocks)."""
    rel = path.relative_to(root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
    package = _package_of(rel)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(rel.as_posix(), node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # `from . import x` / `from ..storage import y`
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            names = [f"{mod}.{a.name}" for a in node.names if a.name != "*"]
            # `from bot import slack` imports bot.slack: record both the module and its names
            found.append(Import(rel.as_posix(), node.lineno, mod))
            found += [Import(rel.as_posix(), node.lineno, n) for n in names]
    return found


def all_modules(root: Path = ROOT) -> list[Path]:
    files: list[Path] = []
    for pkg in PACKAGES:
        files += sorted(p for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)
    return files


def violations(root: Path = ROOT) -> list[str]:
    problems: list[str] = []
    seen: set[tuple[int, str]] = set()  # `from bot import x` yields bot and bot.x: report once
    for path in all_modules(root):
        rel = path.relative_to(root).as_posix()
        for imp in imports_of(path, root):
            for why in _rules(rel, imp):
                if (imp.line, rel + why) not in seen:
                    seen.add((imp.line, rel + why))
                    problems.append(f"{imp}: {why}")
    return problems


def _rules(rel: str, imp: Import) -> list[str]:
    why: list[str] = []
    top = imp.top()
    if rel.startswith("storage/") and top in ("bot", "tools"):
        why.append("storage must not import bot or tools")
    if rel.startswith("tools/") and top == "bot":
        why.append("tools must not import bot")
    if top in ("slack_bolt", "slack_sdk") and not rel.startswith("bot/slack/"):
        why.append("Slack SDKs only in bot/slack/")
    if top == "openai" and rel != "bot/llm/openai_provider.py":
        why.append("openai only in bot/llm/openai_provider.py")
    if top == "anthropic" and rel != "bot/llm/anthropic_provider.py":
        why.append("anthropic only in bot/llm/anthropic_provider.py")
    if top in ("sqlalchemy", "alembic", "aiosqlite", "asyncpg") and not rel.startswith("storage/"):
        why.append("SQL (sqlalchemy/alembic/aiosqlite) only in storage/")
    if top in ("mcp", "mcp_types", "starlette", "uvicorn") and not rel.startswith("bot/mcp/"):
        why.append("the MCP SDK (and its HTTP stack) only in bot/mcp/")
    if rel.startswith("bot/llm/") and imp.under("bot.slack"):
        why.append("bot/llm must not import bot.slack")
    return why


def test_dependencies_point_one_way() -> None:
    problems = violations()
    assert not problems, "import rules broken:\n" + "\n".join(problems)


def test_the_scan_sees_the_packages() -> None:
    # Guard against a silently empty scan (wrong root), which would pass everything.
    files = {p.relative_to(ROOT).as_posix() for p in all_modules()}
    assert "bot/cli.py" in files and "storage/types.py" in files and "tools/__init__.py" in files


# --- the checker itself catches each kind of violation ----------------------------------------

BAD_CASES = [
    ("storage/x.py", "from bot.config import Settings\n", "storage must not import bot"),
    ("storage/x.py", "import tools.base\n", "storage must not import bot or tools"),
    ("storage/sub/x.py", "from ...tools import base\n", "storage must not import bot or tools"),
    ("tools/x.py", "from bot import brain\n", "tools must not import bot"),
    ("tools/x.py", "def f():\n    import bot.loop\n", "tools must not import bot"),
    ("bot/brain.py", "import slack_bolt\n", "Slack SDKs only in bot/slack/"),
    ("tools/x.py", "from slack_sdk.web import WebClient\n", "Slack SDKs only in bot/slack/"),
    ("bot/llm/configs.py", "import openai\n", "openai only in bot/llm/openai_provider.py"),
    ("bot/llm/openai_provider.py", "import anthropic\n", "anthropic only in"),
    ("bot/loop.py", "from sqlalchemy import select\n", "SQL (sqlalchemy/alembic/aiosqlite)"),
    ("tools/x.py", "import aiosqlite\n", "SQL (sqlalchemy/alembic/aiosqlite)"),
    ("bot/cli.py", "from alembic import command\n", "SQL (sqlalchemy/alembic/aiosqlite)"),
    ("bot/cli.py", "import mcp\n", "the MCP SDK (and its HTTP stack) only in bot/mcp/"),
    ("bot/commands/x.py", "from mcp.server import Server\n", "the MCP SDK"),
    ("bot/brain.py", "import mcp_types as types\n", "the MCP SDK"),
    ("tools/x.py", "def f():\n    import uvicorn\n", "the MCP SDK"),
    ("bot/llm/offline.py", "from bot.slack import cards\n", "bot/llm must not import bot.slack"),
    ("bot/llm/offline.py", "from bot import slack\n", "bot/llm must not import bot.slack"),
    ("bot/llm/offline.py", "from ..slack.app import x\n", "bot/llm must not import bot.slack"),
]

GOOD_CASES = [
    ("storage/x.py", "from storage.types import Entry\nfrom .errors import NotFound\n"),
    ("storage/db.py", "import sqlalchemy\nfrom alembic import command\nimport aiosqlite\n"),
    ("tools/x.py", "from storage.store import Store\n"),
    ("bot/slack/app.py", "from slack_bolt.async_app import AsyncApp\nimport slack_sdk\n"),
    ("bot/llm/openai_provider.py", "import openai\n"),
    ("bot/llm/anthropic_provider.py", "from anthropic import AsyncAnthropic\n"),
    ("bot/cli.py", "from bot.slack import app\nfrom tools.registry import TOOLS\n"),
    ("bot/llm/configs.py", "from bot.llm.types import Usage\nimport slackish\n"),
    ("bot/mcp/server.py", "from mcp import types\nfrom mcp.server import Server\n"),
    ("bot/commands/x.py", "def f():\n    from bot.mcp.transports import serve_stdio\n"),
]


def _fake_repo(tmp_path: Path, rel: str, source: str) -> Path:
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir(exist_ok=True)
    target = tmp_path / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("rel", "source", "reason"), BAD_CASES)
def test_checker_reports_file_and_import(tmp_path: Path, rel: str, source: str,
                                         reason: str) -> None:
    problems = violations(_fake_repo(tmp_path, rel, source))
    assert problems, f"{rel}: {source!r} should break a rule"
    assert any(p.startswith(f"{rel}:") and reason in p for p in problems), problems


@pytest.mark.parametrize(("rel", "source"), GOOD_CASES)
def test_checker_allows_the_intended_imports(tmp_path: Path, rel: str, source: str) -> None:
    assert violations(_fake_repo(tmp_path, rel, source)) == []
