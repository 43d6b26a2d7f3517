"""One limit for a message at every door (tools/capture/limits.py): at most 40,000 characters
of text. A longer message, or one that is not text (a binary file piped in), is refused with a
reply that says why and nothing is filed; a long message within the limit is kept once, in
the body, never repeated in the frontmatter. Through the CLI as a process (`brain chat`,
`brain add`, `brain list`, `brain log`, `brain doctor`) and MCP's capture through the real
client; Slack's door is tests/e2e/test_slack_message_limits.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.brain_cli import REPO, Result, run_process
from tests.databases import database_env
from tests.test_cli_mcp import stdio
from tools.capture.limits import MAX_MESSAGE, MAX_ORIGINAL

WORDS = ("budget", "river", "lantern", "copper", "meadow", "signal", "harbor", "violet")


def long_text(chars: int, seed: int = 36) -> str:
    rng = random.Random(seed)
    words = rng.choices(WORDS, k=chars // 4 + 1)  # each with its space: 5 to 8 characters
    return " ".join(words)[:chars].rstrip()


def binary(n: int = 3000, seed: int = 36) -> bytes:
    return random.Random(seed).randbytes(n)


def _env(tmp_path: Path) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp_path / "data")}


def brain(tmp_path: Path, *args: str, stdin: str | bytes = "") -> Result:
    """The console command; bytes go down a real pipe as they are (`cat file | brain chat`)."""
    if isinstance(stdin, str):
        return run_process(tmp_path, *args, stdin=stdin, env=_env(tmp_path), timeout=120)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    env.update(database_env(tmp_path), **_env(tmp_path), PYTHONPATH=str(REPO))
    proc = subprocess.run([str(Path(sys.executable).with_name("brain")), *args], input=stdin,
                          cwd=tmp_path, env=env, capture_output=True, timeout=120, check=False)
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                  proc.stderr.decode("utf-8", "replace"))


def notes(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "data" / "vaults" / "local").rglob("*.md"))


def frontmatter(note: Path) -> dict[str, Any]:
    text = note.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    data: dict[str, Any] = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
    return data


def _clean(result: Result) -> None:
    assert result.code == 0, result.err
    assert "Traceback" not in result.out + result.err


def test_a_line_over_the_limit_is_refused_and_nothing_is_filed(tmp_path: Path) -> None:
    huge = long_text(1_200_000)
    chat = brain(tmp_path, "chat", "--new", stdin=huge + "\n")
    _clean(chat)
    assert f"over the limit of {MAX_MESSAGE:,}" in chat.out and "nothing was saved" in chat.out
    assert notes(tmp_path) == []
    listed = brain(tmp_path, "list", "--json")
    _clean(listed)
    assert json.loads(listed.out)["entries"] == []
    logged = brain(tmp_path, "log")
    _clean(logged)
    assert len(logged.out) < 2_000  # never the whole text


def test_random_bytes_piped_in_file_nothing(tmp_path: Path) -> None:
    chat = brain(tmp_path, "chat", "--new", stdin=binary())
    _clean(chat)
    replies = chat.out.strip().splitlines()
    assert replies and all("is not text" in r for r in replies), replies
    assert notes(tmp_path) == []
    listed = brain(tmp_path, "list", "--json")
    _clean(listed)
    assert json.loads(listed.out)["entries"] == []
    digest = brain(tmp_path, "digest", "daily")
    _clean(digest)


def test_a_long_message_within_the_limit_is_kept_once_and_every_view_of_it_is_short(
        tmp_path: Path) -> None:
    text = long_text(12_000)
    chat = brain(tmp_path, "chat", "--new", stdin=text + "\n")
    _clean(chat)
    (note,) = notes(tmp_path)
    assert note.stat().st_size < 1.3 * len(text)  # the text once, not twice
    fields = frontmatter(note)
    assert fields.get("id")  # the app reads its own note
    assert len(str(fields.get("original_text", ""))) <= MAX_ORIGINAL + 2
    listed = brain(tmp_path, "list", "--json")
    _clean(listed)
    assert [e["id"] for e in json.loads(listed.out)["entries"]] == [fields["id"]]
    doctor = brain(tmp_path, "doctor", "--local")
    assert "every note's frontmatter reads" in doctor.out, doctor.out
    logged = brain(tmp_path, "log")
    _clean(logged)
    assert len(logged.out) < 2_000 and "12,000 characters" in logged.out


def test_add_refuses_text_over_the_limit_and_text_that_is_not_text(tmp_path: Path) -> None:
    over = run_process(tmp_path, "add", long_text(MAX_MESSAGE + 10), "--category", "ideas",
                       env=_env(tmp_path))
    assert over.code == 2 and "over the limit" in over.err and "Traceback" not in over.err
    junk = run_process(tmp_path, "add", "\x01\x02\x03\x04 x", "--category", "ideas", "--json",
                       env=_env(tmp_path))
    assert junk.code == 2 and "not text" in json.loads(junk.out)["error"]["message"]
    assert notes(tmp_path) == []


async def test_mcp_capture_keeps_the_same_limit_and_refuses_what_is_not_text(
        tmp_path: Path) -> None:
    inbox = {"category": "inbox", "confidence": 0.9, "name": "Long paste"}
    async with stdio(tmp_path, **database_env(tmp_path)) as client:
        over = await client.call_tool("classify_and_capture",
                                      {"text": long_text(MAX_MESSAGE + 10)})
        junk = await client.call_tool("classify_and_capture",
                                      {"text": binary(600).decode("utf-8", "replace")})
        kept = await client.call_tool("classify_and_capture",
                                      {"text": long_text(10_000), "hints": inbox})
    vault = tmp_path / "data" / "vaults" / "local"
    assert over.is_error and "40000" in over.content[0].text
    assert junk.is_error and "not text" in junk.content[0].text
    assert not kept.is_error, kept.content[0].text
    (note,) = sorted(vault.rglob("*.md"))
    assert note.relative_to(vault).parts[0] == "inbox"
    assert note.stat().st_size < 13_000
    original = str(frontmatter(note)["original_text"])
    assert len(original) <= MAX_ORIGINAL + 2 and original.endswith("\u2026")
