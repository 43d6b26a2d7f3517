"""`brain chat` as a user runs it: piped stdin, real SDKs against a local server speaking each
provider's wire format. One test runs the real process (a pipe into the console command); the
others call `bot.cli.main` in this process (tests/brain_cli.py)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bot.fake_llm_server import (
    FakeLLMServer,
    anthropic_text,
    anthropic_tool_uses,
    openai_tool_calls,
)
from tests.brain_cli import BrainCLI, Result, run_process


def base_env(tmp_path: Path) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_LLM_MAX_RETRIES": "0",
            "BRAIN_LLM_TIMEOUT": "5"}


@pytest.fixture
def brain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    return BrainCLI(capsys, tmp_path, base_env(tmp_path))


def vault(tmp_path: Path) -> Path:
    return tmp_path / "data" / "vaults" / "local"


def test_offline_files_then_fix_moves_the_note(tmp_path: Path) -> None:
    """The real process: messages piped into the console command's stdin."""
    proc = run_process(tmp_path, "chat", "--new", env=base_env(tmp_path),
                       stdin="Call Sara about the Q3 budget\nfix: projects\n")
    assert proc.code == 0, proc.err
    assert proc.err.count("offline") == 1  # announced once
    notes = [p.relative_to(vault(tmp_path)).as_posix() for p in vault(tmp_path).rglob("*.md")]
    assert len(notes) == 1 and notes[0].startswith("projects/"), notes
    lines = proc.out.strip().splitlines()
    assert "Filed to" in lines[0] or "inbox" in lines[0]
    assert "projects" in lines[-1]


def test_verbose_prints_each_tool_call_and_log_shows_it(brain: Callable[..., Result]) -> None:
    proc = brain("chat", "--new", "--verbose", stdin="Renew passport before June\n")
    assert proc.code == 0, proc.err
    assert "→ classify_and_capture" in proc.out and " ok " in proc.out and "ms" in proc.out
    log = brain("log", "--json")
    assert log.code == 0, log.err
    turns = json.loads(log.out)
    assert turns[0]["tool_runs"][0]["tool"] == "classify_and_capture"
    assert turns[0]["user_text"] == "Renew passport before June"


def test_a_message_with_a_nul_is_filed_and_logged(brain: Callable[..., Result],
                                                   tmp_path: Path) -> None:
    # PostgreSQL refuses NUL in text: it must become a stored character, not a traceback.
    proc = brain("chat", "--new", stdin="Renew pass\x00port before June\n")
    assert proc.code == 0, proc.err
    assert "Traceback" not in proc.err
    assert len(list(vault(tmp_path).rglob("*.md"))) == 1
    log = brain("log", "--json")
    assert log.code == 0, log.err
    assert json.loads(log.out)[0]["user_text"] == "Renew pass\ufffdport before June"


def test_openai_wire_files_and_returns_list_result_with_its_call_id(
        tmp_path: Path, brain: Callable[..., Result]) -> None:
    with FakeLLMServer() as srv:
        srv.script([
            openai_tool_calls([("call_cap_1", "classify_and_capture", {
                "text": "Renew passport before June",
                "hints": {"category": "admin", "confidence": 0.91, "name": "Renew passport",
                          "due_date": "2027-06-01"}})]),
            openai_tool_calls([("call_list_7", "list_entries", {"category": "admin"})]),
            # The answer cites a note the list returned (kept), a note it did not return and a
            # quote that is not in the note (both dropped, and their sentences with them).
            openai_tool_calls([("call_ans_8", "answer", {"sentences": [
                {"text": "You have 1 admin note: Renew passport.", "citations": [
                    {"id": "admin/renew-passport.md", "quote": "renew passport  before june"}]},
                {"text": "You also have to pay the dentist.", "citations": [
                    {"id": "admin/pay-dentist.md", "quote": "Pay the dentist"}]},
                {"text": "It is due in March.", "citations": [
                    {"id": "admin/renew-passport.md", "quote": "due in March"}]}]})]),
        ])
        proc = brain("chat", "--new",
                     stdin="Renew passport before June\nlist my admin notes\n",
                     BRAIN_LLM="openai", OPENAI_API_KEY="x", OPENAI_BASE_URL=srv.openai_base_url)
        bodies = srv.bodies("/v1/chat/completions")
    assert proc.code == 0, proc.err
    assert (vault(tmp_path) / "admin" / "renew-passport.md").exists()
    assert len(bodies) == 3  # capture: 1 call; list, then the cited answer: 2 calls
    tool_msgs = [m for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["tool_call_id"] == "call_list_7"
    assert "renew-passport" in tool_msgs[-1]["content"]
    assert "You have 1 admin note" in proc.out
    assert "dentist" not in proc.out and "March" not in proc.out


def test_anthropic_wire_files_and_returns_list_result_with_its_tool_use_id(
        tmp_path: Path, brain: Callable[..., Result]) -> None:
    with FakeLLMServer() as srv:
        srv.script([
            anthropic_tool_uses([("toolu_cap", "classify_and_capture", {
                "text": "Idea: a podcast about gardening",
                "hints": {"category": "ideas", "confidence": 0.88, "name": "Gardening podcast",
                          "one_liner": "A podcast about gardening"}})]),
            anthropic_tool_uses([("toolu_list_3", "list_entries", {"category": "ideas"})]),
            anthropic_text("One idea: Gardening podcast, and one about beekeeping."),
            # The prose goes through the constrained final step: forced, cited, checked.
            anthropic_tool_uses([("toolu_ans_4", "answer", {"sentences": [
                {"text": "One idea: Gardening podcast.", "citations": [
                    {"id": "ideas/gardening-podcast.md", "quote": "A podcast about gardening"}]},
                {"text": "And one about beekeeping.", "citations": [
                    {"id": "ideas/beekeeping.md", "quote": "beekeeping"}]}]})]),
        ])
        proc = brain("chat", "--new",
                     stdin="Idea: a podcast about gardening\nlist my ideas\n",
                     BRAIN_LLM="anthropic", ANTHROPIC_API_KEY="x",
                     ANTHROPIC_BASE_URL=srv.anthropic_base_url)
        bodies = srv.bodies("/v1/messages")
    assert proc.code == 0, proc.err
    assert (vault(tmp_path) / "ideas" / "gardening-podcast.md").exists()
    last_user = bodies[2]["messages"][-1]
    assert last_user["role"] == "user"
    assert last_user["content"][0]["type"] == "tool_result"
    assert last_user["content"][0]["tool_use_id"] == "toolu_list_3"
    final = bodies[3]
    assert final["tool_choice"] == {"type": "tool", "name": "answer"}
    assert [t["name"] for t in final["tools"]] == ["answer"]
    assert "One idea: Gardening podcast." in proc.out
    assert "beekeeping" not in proc.out


def test_llm_down_the_thought_is_in_the_inbox(tmp_path: Path,
                                              brain: Callable[..., Result]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = brain("chat", "--new", stdin="Pick up the dry cleaning on Friday\n",
                 BRAIN_LLM="openai", OPENAI_API_KEY="x",
                 OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    assert proc.code == 0, proc.err
    inbox = list((vault(tmp_path) / "inbox").glob("*.md"))
    assert len(inbox) == 1 and "Pick up the dry cleaning" in inbox[0].read_text()
    assert "inbox" in proc.out


def test_news_of_a_known_person_goes_into_their_note(brain: Callable[..., Result],
                                                     tmp_path: Path) -> None:
    """Without a model, news about someone who has a note is added to that note (a dated
    line, once), not filed as a second note of the same name; `brain undo` takes it back."""
    proc = brain("chat", "--new", stdin="Call Sara about the Q3 budget next week\n"
                                         "Sara mentioned she is moving to Berlin\n")
    assert proc.code == 0, proc.err
    assert "Added to Sara" in proc.out
    (person,) = sorted((vault(tmp_path) / "people").glob("*.md"))
    text = person.read_text()
    assert "Q3 budget" in text and "- 20" in text and "moving to Berlin" in text
    assert brain("show", "Sara").code == 0  # one note answers to the name
    assert brain("undo").code == 0
    assert "moving to Berlin" not in person.read_text()


def test_two_people_of_one_name_get_a_new_note(brain: Callable[..., Result],
                                               tmp_path: Path) -> None:
    """When the name is not one person's (two notes carry it), nothing is merged."""
    for _ in range(2):
        assert brain("add", "Sara from the design team", "--category", "people", "--name",
                     "Sara").code == 0
    proc = brain("chat", "--new", stdin="Sara mentioned she is moving to Berlin\n")
    assert proc.code == 0, proc.err
    people = sorted((vault(tmp_path) / "people").glob("*.md"))
    assert len(people) == 3 and any("moving to Berlin" in p.read_text() and
                                    "design team" not in p.read_text() for p in people)


def test_model_flag_picks_the_connection_for_this_chat(tmp_path: Path,
                                                       brain: Callable[..., Result]) -> None:
    """BRAIN_LLM says offline; `--model anthropic` talks to Anthropic's wire for this chat;
    an unknown id, or one whose key is missing, is a usage error before anything runs."""
    with FakeLLMServer() as srv:
        srv.script([anthropic_text("Nothing is due this week.")])
        proc = brain("chat", "--new", "--model", "anthropic", stdin="what is due this week?\n",
                     BRAIN_LLM="offline", ANTHROPIC_API_KEY="x",
                     ANTHROPIC_BASE_URL=srv.anthropic_base_url)
        assert proc.code == 0, proc.err
        assert "Nothing is due this week." in proc.out and len(srv.requests) == 1
    unknown = brain("chat", "--new", "--model", "gpt-9", stdin="hi\n")
    assert unknown.code == 2 and "--model gpt-9: no such connection" in unknown.err
    keyless = brain("chat", "--new", "--model", "openai", stdin="hi\n", OPENAI_API_KEY="")
    assert keyless.code == 2 and "its key (OPENAI_API_KEY) is not set" in keyless.err
