"""What `brain` loads when it starts, seen in a fresh process (this one has imported it all).

`brain --help` builds every verb's parser and must load none of the heavy libraries; a storage
verb on a database already at the newest migration loads SQLAlchemy but not Alembic, the LLM
SDKs, Slack or jsonschema. docs/performance.md ("CLI") has the timings this keeps.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from storage.db import Database
from storage.urls import default_url

REPO = Path(__file__).resolve().parents[1]
NEVER_AT_START = {"sqlalchemy", "alembic", "mako", "aiosqlite", "pydantic", "pydantic_settings",
                  "jsonschema", "openai", "anthropic", "httpx", "slack_sdk", "slack_bolt",
                  "aiohttp", "rapidfuzz", "yaml", "asyncio"}
# A storage verb goes through the door (bot.brain), which is light: the turn machinery, the
# tools and the model layer are not loaded.
NOT_FOR_A_STORAGE_VERB = {"alembic", "mako", "jsonschema", "openai", "anthropic", "httpx",
                          "slack_sdk", "slack_bolt", "aiohttp", "tools", "bot.turn.runner",
                          "bot.turn.loop", "bot.llm", "numpy", "onnxruntime", "bot.jobs.queue", "bot.jobs.worker",
                          "storage.repositories.journal", "storage.models", "storage.repositories"}

REPORT = """
import json, sys
from bot.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --help
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_by(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
           "BRAIN_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run([sys.executable, "-c", REPORT, *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


def loaded(modules: set[str], names: set[str]) -> set[str]:
    return {n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)}


def test_help_builds_every_parser_without_heavy_libraries(tmp_path: Path) -> None:
    code, modules = loaded_by(tmp_path, "--help")
    assert code == 0
    assert {"bot.commands.chat", "bot.commands.digest", "bot.commands.serve",
            "bot.commands.storage_cmds"} <= modules  # every verb is registered
    assert loaded(modules, NEVER_AT_START) == set()


def test_storage_verb_on_a_current_database_skips_alembic_and_the_turn_machinery(tmp_path: Path) -> None:
    async def migrate() -> None:  # the first open of a new database does run the migrations
        await (await Database.open(default_url(tmp_path / "data"))).close()

    asyncio.run(migrate())
    vault = tmp_path / "vault" / "ideas"
    vault.mkdir(parents=True)
    (vault / "kites.md").write_text("---\nname: Kites\ncategory: ideas\n---\nKites\n",
                                    encoding="utf-8")
    code, modules = loaded_by(tmp_path, "list", "--vault", str(vault.parent))
    assert code == 0
    assert "sqlalchemy" in modules  # the check is looking at a real run
    assert loaded(modules, NOT_FOR_A_STORAGE_VERB) == set()
    # search ranks by meaning too: it loads the embedding model, and still no turn machinery
    code, modules = loaded_by(tmp_path, "search", "kites", "--vault", str(vault.parent))
    assert code == 0
    assert {"numpy", "onnxruntime"} <= modules
    assert loaded(modules, NOT_FOR_A_STORAGE_VERB - {"numpy", "onnxruntime"}) == set()


ASK_SERVER = """
import argparse, json, sys
from bot.commands.via_server import ask_server
found = ask_server(argparse.Namespace(user=None, vault=None), "search",
                   {"query": "kites", "category": None, "limit": 5})
print(json.dumps({"found": found, "modules": sorted(sys.modules)}))
"""


def test_looking_for_a_running_server_loads_no_database_layer(tmp_path: Path) -> None:
    """`brain search`/`ask` first ask a running server of the same data (bot/local_socket.py);
    naming that data must not load what the server is there to spare the CLI."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
           "BRAIN_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run([sys.executable, "-c", ASK_SERVER], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["found"] is None  # no server here: the verb would run in this process
    assert loaded(set(report["modules"]), {"sqlalchemy", "aiosqlite", "alembic", "numpy",
                                           "onnxruntime", "bot.core", "bot.brain"}) == set()


def test_brain_mcp_refuses_a_bad_start_before_loading_the_sdk_or_the_brain(
        tmp_path: Path) -> None:
    """A bad --user, or a bind off loopback without a token, is said in ~0.3 s of CPU, not
    after the MCP SDK and the brain are loaded (~2 s)."""
    heavy = {"mcp", "mcp_types", "starlette", "uvicorn", "sqlalchemy", "bot.brain", "aiohttp"}
    for argv in (("mcp", "--user", "../bob"), ("mcp", "--http", "--host", "0.0.0.0")):
        code, modules = loaded_by(tmp_path, *argv)
        assert code == 2, argv
        assert loaded(modules, heavy) == set(), argv
