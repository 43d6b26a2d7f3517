"""`brain mcp` as an MCP client runs it: a real process driven by the official SDK's own client,
over stdio (as desktop clients start it) and over streamable HTTP.

The tests marked ON_ALICE share one stdio server and session (`alice`, built once per module
and xdist worker): a start costs ~2 s of CPU, mostly imports. Each works on notes of its own,
so none depends on another having run; tests about the start, the handshake, a flag or the
environment, or the stop start their own process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from bot.brain import Brain
from bot.config import Settings
from storage import repositories
from tests.bot.scripted import ScriptedProvider, call, text, tools
from tools.registry import TOOLS, tool_specs

REPO = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
        "BRAIN_LLM", "BRAIN_MODEL", "BRAIN_OWNER", "BRAIN_VAULT_DIR", "DATABASE_URL")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update({"BRAIN_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO)}, **extra)
    return env


@asynccontextmanager
async def stdio(tmp_path: Path, *args: str, mode: str = "auto",
                **env: str) -> AsyncIterator[Client]:
    """`brain mcp ARGS` started by the SDK's stdio client, as Claude Desktop would."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(command=sys.executable, args=["-m", "bot.cli", "mcp", *args],
                                   env=_env(tmp_path, **env), cwd=str(tmp_path))
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        yield client


@dataclass(frozen=True)
class Served:
    """The shared `brain mcp --user alice --create` and its data directory."""

    client: Client
    data: Path

    @property
    def vault(self) -> Path:
        return self.data / "vaults" / "alice"


ON_ALICE = pytest.mark.asyncio(loop_scope="module")  # the tests that share `alice`


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alice(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    tmp = tmp_path_factory.mktemp("alice")
    ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def hold() -> None:  # the client's task groups are entered and left in one task
        async with stdio(tmp, "--user", "alice", "--create") as client:
            ready.set_result(client)
            await stop.wait()

    holder = asyncio.create_task(hold())
    await asyncio.wait({holder, ready}, return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        holder.result()  # the start failed: its error
        raise AssertionError("the shared server stopped before its session started")
    try:
        yield Served(ready.result(), tmp / "data")
    finally:
        stop.set()
        await holder


def _text(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    text_: str = result.content[0].text
    return text_


@ON_ALICE
async def test_lists_every_tool_with_the_models_schema_and_read_only_hints(
        alice: Served) -> None:
    _check_listed((await alice.client.list_tools()).tools)  # the 2026 discovery (mode auto)


async def test_lists_the_same_tools_after_the_legacy_initialize_handshake(
        tmp_path: Path) -> None:
    async with stdio(tmp_path, mode="legacy") as client:
        _check_listed((await client.list_tools()).tools)


def _check_listed(listed: list[Any]) -> None:
    offered = [s for s in tool_specs() if not TOOLS[s["name"]].internal]
    assert [t.name for t in listed] == [s["name"] for s in offered] + [
        "ask", "history", "undo", "undo_session"]
    assert "answer" not in [t.name for t in listed]  # the loop's own final step
    session = listed.pop()
    assert session.annotations is not None and session.annotations.destructive_hint is True
    undo, history, asked = listed.pop(), listed.pop(), listed.pop()
    assert asked.annotations is not None and asked.annotations.read_only_hint is True
    assert history.annotations is not None and history.annotations.read_only_hint is True
    assert undo.annotations is not None and undo.annotations.destructive_hint is True
    for tool, spec in zip(listed, offered, strict=True):
        assert tool.input_schema == spec["parameters"]  # verbatim: the model's schema
        assert tool.description == spec["description"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is TOOLS[tool.name].read_only
    hints = {t.name: t.annotations.read_only_hint for t in listed if t.annotations}
    assert hints["search_entries"] is True and hints["get_entry"] is True
    assert hints["classify_and_capture"] is False and hints["move_entry"] is False


@ON_ALICE
async def test_capture_files_a_note_with_its_receipt_and_search_finds_it(alice: Served) -> None:
    client = alice.client
    captured = await client.call_tool("classify_and_capture", {
        "text": "Renew the passport before the June trip",
        "hints": {"category": "admin", "confidence": 0.9, "name": "Renew passport",
                  "due_date": "2031-05-31"}})
    assert not captured.is_error, _text(captured)
    note = captured.structured_content
    assert note["category"] == "admin" and note["status"] == "filed"
    found = await client.call_tool("search_entries", {"query": "passport"})
    assert not found.is_error, _text(found)
    assert [e["path"] for e in found.structured_content["entries"]] == [note["path"]]
    # The note is a file in alice's vault, and its capture receipt is written like any other.
    assert "Renew the passport" in (alice.vault / note["path"]).read_text(encoding="utf-8")
    receipt = await _receipt(alice.data, note["id"])
    assert receipt is not None
    assert (receipt.user_id, receipt.path, receipt.status) == ("alice", note["path"], "filed")


async def test_capture_with_a_url_keeps_the_page_and_refuses_a_private_one(
        tmp_path: Path) -> None:
    from tests.web_pages import ARTICLE_SENTENCE, serve_pages

    pages = await serve_pages()
    try:
        async with stdio(tmp_path, "--user", "alice", "--create",
                         BRAIN_FETCH_ALLOW_HOSTS="127.0.0.1") as client:
            kept = await client.call_tool("classify_and_capture", {
                "text": "Balcony gardening article", "url": pages.url("/article")})
            refused = await client.call_tool("classify_and_capture", {
                "text": "Router admin page", "url": "http://192.168.1.1/"})
        assert not kept.is_error and not refused.is_error, (_text(kept), _text(refused))
        vault = tmp_path / "data" / "vaults" / "alice"
        page = (vault / kept.structured_content["path"]).read_text(encoding="utf-8")
        assert ARTICLE_SENTENCE in page and "## From Growing vegetables" in page
        note = (vault / refused.structured_content["path"]).read_text(encoding="utf-8")
        assert "not fetched: 192.168.1.1 is a private or local address" in note
    finally:
        await pages.close()


@ON_ALICE
async def test_ask_answers_with_sources_from_the_vault(alice: Served) -> None:
    client = alice.client
    await client.call_tool("classify_and_capture", {
        "text": "We decided to hold the offsite in Sintra: the venue fits all 60 people",
        "hints": {"category": "projects", "confidence": 0.9, "name": "Company offsite"}})
    asked = await client.call_tool("ask", {"question": "Where is the offsite?"})
    nothing = await client.call_tool("ask", {"question": "What is my wifi password?"})
    bad = await client.call_tool("ask", {"question": ""})
    with pytest.raises(MCPError) as hidden:  # the loop's own final step is not offered
        await client.call_tool("answer", {"sentences": []})
    assert not asked.is_error, _text(asked)
    answer = asked.structured_content
    assert answer["found"] is True and "Sintra" in answer["answer"]
    (source,) = answer["sources"]
    assert source["path"] == "projects/company-offsite.md" and "Sintra" in source["quote"]
    assert nothing.structured_content == {"answer": "Nothing in your notes about that.",
                                          "found": False, "sources": []}
    assert bad.is_error and "question" in _text(bad)
    assert hidden.value.message == "Unknown tool: answer"


@ON_ALICE
async def test_history_and_undo_name_the_client_and_put_files_back(alice: Served) -> None:
    client = alice.client
    captured = await client.call_tool("classify_and_capture", {
        "text": "Call the plumber about the leak",
        "hints": {"category": "admin", "confidence": 0.9, "name": "Call plumber"}})
    path = captured.structured_content["path"]
    moved = await client.call_tool("move_entry", {"path": path, "target_category": "projects"})
    assert not moved.is_error, _text(moved)
    listed = await client.call_tool("history", {"note": "Call plumber"})
    undone = await client.call_tool("undo", {})  # alice's last change: the move just made
    bad = await client.call_tool("undo", {"change": "zz"})
    unknown = await client.call_tool("history", {"limit": 0})
    assert not listed.is_error, _text(listed)
    changes = listed.structured_content["changes"]
    assert [c["action"] for c in changes] == ["move", "create"]
    assert all(c["who"] == "alice" and c["source"].startswith("mcp ") for c in changes)
    assert not undone.is_error, _text(undone)
    assert undone.structured_content["undoes"] == changes[0]["id"]
    assert (alice.vault / path).is_file() and not (alice.vault / moved.structured_content[
        "new_path"]).exists()
    assert bad.is_error and unknown.is_error and "limit" in _text(unknown)


async def _receipt(data: Path, entry_id: str) -> repositories.ReceiptRow | None:
    brain = await Brain.start(Settings(BRAIN_DATA_DIR=data),  # type: ignore[call-arg]
                              provider=ScriptedProvider())
    try:
        async with brain.core.db.session() as s:
            return await repositories.receipt_for_entry(s, entry_id)
    finally:
        await brain.close()


async def test_vault_flag_serves_that_folder_as_it_is(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    (vault / "Reading").mkdir(parents=True)
    (vault / "Reading" / "Gödel Escher Bach.md").write_text(
        "Strange loops and [[Hofstadter]].\n", encoding="utf-8")
    async with stdio(tmp_path, "--vault", str(vault)) as client:
        found = await client.call_tool("search_entries", {"query": "strange loops"})
        shown = await client.call_tool("get_entry", {"path": "Reading/Gödel Escher Bach.md"})
    assert [e["name"] for e in found.structured_content["entries"]] == ["Gödel Escher Bach"]
    assert "Strange loops" in shown.structured_content["body"]


# (tool, arguments) an MCP client or a model might send wrong
BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_entries", {"query": 5, "limit": 0}),
    ("classify_and_capture", {"text": 7, "hints": {"confidence": 2, "colour": "red"}}),
    ("get_entry", {"path": "no such note"}),
    ("move_entry", {"path": "../../etc/passwd", "target_category": "ideas"}),
]


@ON_ALICE
async def test_bad_calls_get_exactly_the_error_the_model_gets(alice: Served) -> None:
    # the model's turn runs on the same data and user, so a name lookup sees the same notes
    seen_by_model = await _model_sees(alice.data, "alice", BAD_CALLS)
    for (name, args), expected in zip(BAD_CALLS, seen_by_model, strict=True):
        result = await alice.client.call_tool(name, args)
        assert result.is_error, name
        assert _text(result) == expected
    assert "limit: 0 is less than the minimum of 1" in seen_by_model[0]


@ON_ALICE
async def test_an_unknown_tool_is_the_protocol_error_the_spec_names(alice: Served) -> None:
    """MCP: "Unknown tools" are a JSON-RPC error -32602, not a tool result (a model, which
    can correct itself, still gets an error result: tests/tools/test_registry.py)."""
    with pytest.raises(MCPError) as raised:
        await alice.client.call_tool("forget_everything", {})
    listed = await alice.client.list_tools()  # the session goes on
    assert raised.value.code == INVALID_PARAMS == -32602
    assert raised.value.message == "Unknown tool: forget_everything"
    assert "forget_everything" not in {t.name for t in listed.tools}


async def _model_sees(data: Path, user: str,
                      calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The tool results a model gets for these calls in one turn (what its next request holds),
    acting for `user` on the data directory `data`."""
    provider = ScriptedProvider(answers=[
        tools(*(call(name, args, f"c{i}") for i, (name, args) in enumerate(calls))),
        text("Sorry, that did not work.")])
    brain = await Brain.start(Settings(BRAIN_DATA_DIR=data),  # type: ignore[call-arg]
                              provider=provider)
    try:
        await brain.turns.handle(conversation_key=f"cli:{user}:t", user_id=user,
                                 text="do things")
    finally:
        await brain.close()
    results = provider.requests[1].messages[-1].tool_results
    assert all(r.is_error for r in results)
    return [r.content for r in results]


def test_help_does_not_import_the_mcp_sdk() -> None:
    code = ("import sys\nfrom bot.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_a_bad_user_id_is_refused_before_serving(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "mcp", "--user", "../bob"],
                          capture_output=True, text=True, env=_env(tmp_path), cwd=tmp_path,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2
    assert "not a valid user id" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


# -- streamable HTTP ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(proc: subprocess.Popen[str], url: str, seconds: float = 30) -> None:
    """Until `url` answers 200; AssertionError with the server's output if it exits first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                assert r.status == 200
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"server did not start: {proc.communicate()}") from None
            time.sleep(0.1)


@contextmanager
def http_server(tmp_path: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "mcp", "--http", "--port",
                             str(port)], env=_env(tmp_path), cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health")
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def test_streamable_http_serves_the_same_tools(tmp_path: Path) -> None:
    port = _free_port()
    with http_server(tmp_path, port) as proc:
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=30) as client:
            listed = (await client.list_tools()).tools
            captured = await client.call_tool("classify_and_capture",
                                              {"text": "Idea: a bike rack for the office"})
            found = await client.call_tool("search_entries", {"query": "bike rack"})
            bad = await client.call_tool("list_entries", {"limit": "ten"})
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 15) == 0  # a clean stop on SIGTERM
    assert {t.name for t in listed} == {n for n, t in TOOLS.items() if not t.internal} | {
        "ask", "history", "undo", "undo_session"}
    assert not captured.is_error, _text(captured)
    path = captured.structured_content["path"]
    assert (tmp_path / "data" / "vaults" / "local" / path).is_file()
    assert path in [e["path"] for e in found.structured_content["entries"]]
    assert bad.is_error and "limit: 'ten' is not of type 'integer'" in _text(bad)


@ON_ALICE
async def test_update_entry_reads_dates_as_a_capture_does(alice: Served) -> None:
    """"tomorrow" becomes its day; "2026-13-45" is refused and the note stays as it was (it
    was stored, and digests and reminders then skipped the note)."""
    client = alice.client
    made = await client.call_tool("classify_and_capture",
                                  {"text": "Project: website relaunch with the agency"})
    ref = made.structured_content["id"]
    good = await client.call_tool("update_entry", {"path": ref,
                                                   "updates": {"due_date": "tomorrow"}})
    path = alice.vault / made.structured_content["path"]
    before = path.read_bytes()
    bad = await client.call_tool("update_entry", {"path": ref,
                                                  "updates": {"due_date": "2026-13-45"}})
    assert not good.is_error, _text(good)
    due = good.structured_content["due_date"]
    assert len(due) == 10 and due[4] == "-" and due[7] == "-"
    assert bad.is_error and "due_date: '2026-13-45' is not a date" in _text(bad)
    assert path.read_bytes() == before
