"""Dependencies point one way (docs/architecture.md): checked by parsing every module's imports.

storage imports nothing of ours; tools imports storage only; SDKs and SQL stay in the one place
that owns them. Each violation names the file, the line and the import.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "tools", "storage")
# The adapters (DESIGN.md): they reach storage only through bot.brain, the one door.
ADAPTERS = ("bot/slack/", "bot/commands/", "bot/mcp/", "bot/sync/", "bot/cli.py")
# git's protocol, server side (dulwich's handlers): only the adapter that serves it.
GIT_SERVER = ("dulwich.server", "dulwich.protocol", "dulwich.web", "dulwich.aiohttp")
ADAPTER_STORAGE = ("storage.types", "storage.errors")
MAX_LINES = 400


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


def _brain_parameters(path: Path, rel: str) -> list[str]:
    """A service takes the Core (bot/core.py), never the Brain: no parameter named `brain`
    outside the adapters and the Brain itself."""
    if not rel.startswith("bot/") or rel.startswith(ADAPTERS) or rel == "bot/brain.py":
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{rel}:{arg.lineno} takes a `brain`: services take the Core, never the Brain"
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
            if arg.arg == "brain"]


def violations(root: Path = ROOT) -> list[str]:
    problems: list[str] = []
    seen: set[tuple[int, str]] = set()  # `from bot import x` yields bot and bot.x: report once
    for path in all_modules(root):
        rel = path.relative_to(root).as_posix()
        problems += _brain_parameters(path, rel)
        for imp in imports_of(path, root):
            for why in _rules(rel, imp):
                if (imp.line, rel + why) not in seen:
                    seen.add((imp.line, rel + why))
                    problems.append(f"{imp}: {why}")
    return problems


# Each rule: when an import in the module at `rel` breaks it, and what it says.
RULES: list[tuple[Callable[[str, Import], bool], str]] = [
    (lambda rel, imp: rel.startswith("storage/") and imp.top() in ("bot", "tools"),
     "storage must not import bot or tools"),
    (lambda rel, imp: rel.startswith("tools/") and imp.top() == "bot",
     "tools must not import bot"),
    (lambda rel, imp: imp.top() in ("slack_bolt", "slack_sdk") and not rel.startswith("bot/slack/"),
     "Slack SDKs only in bot/slack/"),
    (lambda rel, imp: imp.top() == "openai" and rel != "bot/llm/openai_provider.py",
     "openai only in bot/llm/openai_provider.py"),
    (lambda rel, imp: imp.top() == "anthropic" and rel != "bot/llm/anthropic_provider.py",
     "anthropic only in bot/llm/anthropic_provider.py"),
    (lambda rel, imp: imp.top() in ("sqlalchemy", "alembic", "aiosqlite", "asyncpg")
     and not rel.startswith("storage/"),
     "SQL (sqlalchemy/alembic/aiosqlite) only in storage/"),
    (lambda rel, imp: imp.top() in ("mcp", "mcp_types", "starlette", "uvicorn")
     and not rel.startswith("bot/mcp/"),
     "the MCP SDK (and its HTTP stack) only in bot/mcp/"),
    (lambda rel, imp: any(imp.under(m) for m in GIT_SERVER) and not rel.startswith("bot/sync/"),
     "git's server protocol (dulwich.server, .protocol, .web) only in bot/sync/"),
    (lambda rel, imp: rel.startswith("bot/") and not rel.startswith(ADAPTERS)
     and rel != "bot/brain.py" and imp.under("bot.brain"),
     "services never import the Brain (they take bot.core.Core)"),
    (lambda rel, imp: rel.startswith("bot/llm/") and imp.under("bot.slack"),
     "bot/llm must not import bot.slack"),
    (lambda rel, imp: rel.startswith(ADAPTERS) and imp.top() == "storage"
     and not any(imp.under(m) for m in ADAPTER_STORAGE),
     "adapters reach storage through bot.brain (only storage.types and "
     "storage.errors, plain data and errors, are theirs to import)"),
]


def _rules(rel: str, imp: Import) -> list[str]:
    return [why for broken, why in RULES if broken(rel, imp)]


def test_dependencies_point_one_way() -> None:
    problems = violations()
    assert not problems, "import rules broken:\n" + "\n".join(problems)


def core_reach_throughs(root: Path = ROOT) -> list[str]:
    """Adapters call `brain.<service>.<operation>`; the Core behind the door is the
    services' (`brain.core.x` in an adapter is a reach past the door)."""
    found = []
    for path in all_modules(root):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith(ADAPTERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "core" and (
                    (isinstance(node.value, ast.Name) and node.value.id == "brain")
                    or (isinstance(node.value, ast.Attribute) and node.value.attr == "brain")):
                found.append(f"{rel}:{node.lineno} reaches brain.core: add what it needs to "
                             "the Brain")
    return found


def test_adapters_do_not_reach_past_the_door() -> None:
    problems = core_reach_throughs()
    assert not problems, "\n".join(problems)


def turn_runs_in_adapters(root: Path = ROOT) -> list[str]:
    """A message is answered through one use case, `brain.replies.reply`, whatever the
    surface: an adapter that ran the turn itself (`brain.turns.handle`) would have to repeat
    what goes with it."""
    found = []
    for path in all_modules(root):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith(ADAPTERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "handle" \
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "turns":
                found.append(f"{rel}:{node.lineno} runs a turn itself: call "
                             "brain.replies.reply")
    return found


def test_every_surface_answers_a_message_through_one_use_case() -> None:
    assert turn_runs_in_adapters() == []
    callers = {p.relative_to(ROOT).as_posix() for p in all_modules()
               if "replies.reply(" in p.read_text(encoding="utf-8")}
    assert {"bot/slack/handlers/turns.py", "bot/commands/chat.py"} <= callers


def test_the_scan_sees_the_packages() -> None:
    # Guard against a silently empty scan (wrong root), which would pass everything.
    files = {p.relative_to(ROOT).as_posix() for p in all_modules()}
    assert "bot/cli.py" in files and "storage/types.py" in files and "tools/__init__.py" in files


# --- the checker itself catches each kind of violation ----------------------------------------

BAD_CASES = [
    ("bot/slack/x.py", "from storage import repositories\n", "adapters reach storage through"),
    ("bot/commands/x.py", "def f():\n    from storage.db import Database\n",
     "adapters reach storage through"),
    ("bot/mcp/x.py", "import storage.vault.store\n", "adapters reach storage through"),
    ("bot/slack/x.py", "from storage.repositories.journal import JobRow\n", "adapters reach storage"),
    ("storage/x.py", "from bot.config import Settings\n", "storage must not import bot"),
    ("storage/x.py", "import tools.base\n", "storage must not import bot or tools"),
    ("storage/sub/x.py", "from ...tools import base\n", "storage must not import bot or tools"),
    ("tools/x.py", "from bot import brain\n", "tools must not import bot"),
    ("tools/x.py", "def f():\n    import bot.turn.loop\n", "tools must not import bot"),
    ("bot/brain.py", "import slack_bolt\n", "Slack SDKs only in bot/slack/"),
    ("tools/x.py", "from slack_sdk.web import WebClient\n", "Slack SDKs only in bot/slack/"),
    ("bot/llm/configs.py", "import openai\n", "openai only in bot/llm/openai_provider.py"),
    ("bot/llm/openai_provider.py", "import anthropic\n", "anthropic only in"),
    ("bot/turn/loop.py", "from sqlalchemy import select\n", "SQL (sqlalchemy/alembic/aiosqlite)"),
    ("tools/x.py", "import aiosqlite\n", "SQL (sqlalchemy/alembic/aiosqlite)"),
    ("bot/cli.py", "from alembic import command\n", "SQL (sqlalchemy/alembic/aiosqlite)"),
    ("bot/cli.py", "import mcp\n", "the MCP SDK (and its HTTP stack) only in bot/mcp/"),
    ("bot/commands/x.py", "from mcp.server import Server\n", "the MCP SDK"),
    ("bot/brain.py", "import mcp_types as types\n", "the MCP SDK"),
    ("tools/x.py", "def f():\n    import uvicorn\n", "the MCP SDK"),
    ("bot/llm/offline.py", "from bot.slack import cards\n", "bot/llm must not import bot.slack"),
    ("bot/llm/offline.py", "from bot import slack\n", "bot/llm must not import bot.slack"),
    ("bot/llm/offline.py", "from ..slack.app import x\n", "bot/llm must not import bot.slack"),
    ("bot/capture/messages.py", "from bot.brain import Brain\n", "services never import the Brain"),
    ("storage/sync/x.py", "from dulwich.server import ReceivePackHandler\n",
     "git's server protocol"),
    ("bot/slack/x.py", "import dulwich.protocol\n", "git's server protocol"),
    ("bot/sync/x.py", "from storage.sync import tokens\n", "adapters reach storage through"),
    ("bot/answers/x.py", "if X:\n    from bot import brain\n", "services never import the Brain"),
    ("bot/home.py", "class Home:\n    def __init__(self, brain):\n        pass\n",
     "services take the Core, never the Brain"),
    ("bot/x/y.py", "async def f(*, brain=None):\n    pass\n", "services take the Core"),
]

GOOD_CASES = [
    ("bot/slack/x.py", "from storage.types import CATEGORIES\nfrom storage.errors import NotFound\n"),
    ("bot/commands/x.py", "def f():\n    from bot.brain import Brain\n"),
    ("storage/x.py", "from storage.types import Entry\nfrom .errors import NotFound\n"),
    ("storage/db.py", "import sqlalchemy\nfrom alembic import command\nimport aiosqlite\n"),
    ("tools/x.py", "from storage.vault.store import Store\n"),
    ("bot/slack/app.py", "from slack_bolt.async_app import AsyncApp\nimport slack_sdk\n"),
    ("bot/llm/openai_provider.py", "import openai\n"),
    ("bot/llm/anthropic_provider.py", "from anthropic import AsyncAnthropic\n"),
    ("bot/cli.py", "from bot.slack import app\nfrom tools.registry import TOOLS\n"),
    ("bot/llm/configs.py", "from bot.llm.types import Usage\nimport slackish\n"),
    ("bot/mcp/server.py", "from mcp import types\nfrom mcp.server import Server\n"),
    ("bot/commands/x.py", "def f():\n    from bot.mcp.transports import serve_stdio\n"),
    ("bot/slack/handlers/turns.py", "from bot.brain import Brain\ndef f(brain: Brain):\n    pass\n"),
    ("bot/home.py", "from bot.core import Core\ndef f(core: Core):\n    pass\n"),
    ("bot/sync/wire.py", "from dulwich.server import UploadPackHandler\n"
     "from dulwich.protocol import ReceivableProtocol\n"),
    ("storage/sync/x.py", "from dulwich.repo import BaseRepo\nfrom dulwich.hooks import Hook\n"),
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


# --- no import circles -------------------------------------------------------------------------


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> our modules it imports, anywhere in the file: at the top, inside functions
    (lazy imports) and under TYPE_CHECKING alike, since each is a dependency of the design.
    `from pkg import sub` depends on pkg.sub, not on pkg's __init__."""
    files = {module_name(p, root): p for p in all_modules(root)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        found = [imp.module for imp in imports_of(path, root)]
        deps: set[str] = set()
        for module in found:
            if any(other.startswith(module + ".") and other in files for other in found):
                continue  # `from pkg import sub`: the edge goes to pkg.sub
            while module and module not in files:
                module = module.rsplit(".", 1)[0] if "." in module else ""
            if module and module != name:
                deps.add(module)
        graph[name] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = _pop_group(stack, on_stack, node)
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def _pop_group(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    """The modules above `root` on Tarjan's stack, `root` included: one connected group."""
    group: list[str] = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        group.append(member)
        if member == root:
            return group


def test_there_are_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    (tmp_path / "bot" / "slack").mkdir(parents=True)
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir(exist_ok=True)
    (tmp_path / "bot" / "slack" / "app.py").write_text(
        "def f():\n    from bot.slack import listeners\n", encoding="utf-8")
    (tmp_path / "bot" / "slack" / "listeners.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.slack.app import X\n",
        encoding="utf-8")
    assert circles(import_graph(tmp_path)) == [["bot.slack.app", "bot.slack.listeners"]]


# --- small modules -----------------------------------------------------------------------------


def test_no_source_file_is_over_400_lines() -> None:
    long = {p.relative_to(ROOT).as_posix(): n for p in all_modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these by responsibility: {long}"


def test_every_module_the_architecture_page_names_exists() -> None:
    import re

    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:bot|tools|storage)/[A-Za-z0-9_/]+\.py)`", page))
    assert len(named) > 20  # the page really names modules
    missing = sorted(n for n in named if not (ROOT / n).is_file())
    assert missing == [], f"docs/architecture.md names modules that do not exist: {missing}"
    unnamed = sorted(rel for p in all_modules()
                     if (rel := p.relative_to(ROOT).as_posix()) not in named
                     and not rel.endswith("/__init__.py") and "/migrations/" not in rel)
    assert unnamed == [], f"add these modules to docs/architecture.md: {unnamed}"
