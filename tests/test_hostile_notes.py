"""A vault holding what anyone with write access (a sync, a shared folder) can put there: a YAML
alias bomb, frontmatter nested 500 deep, broken frontmatter, a 20 MB note, a binary file named
`.md`, and symlinks inside the vault pointing out of it (a secret file, another person's note,
a folder). Every verb, the export and MCP run in real processes with a time and memory limit:
no hang, no crash, no crawl, and nothing from outside the vault is read, searched, shown,
exported or served. On both databases (the suite's).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.brain_cli import REPO
from tests.databases import database_env
from tests.storage.test_yaml_bounds import HOSTILE

SECRET = "TOPSECRET-0xDEADBEEF"
HUGE_WORD = "zanzibarquux"
LIMIT = 3 << 30  # 3 GB of address space: the alias bomb alone wanted more than 6 GB
BOB = "UBOB00001"


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    env.update(database_env(tmp), BRAIN_DATA_DIR=str(tmp / "data"), BRAIN_LLM="offline",
               PYTHONPATH=str(REPO))
    return env


def brain(tmp: Path, *argv: str, timeout: float = 120) -> tuple[int, str, str, float]:
    """`brain ARGV` in a child process with the memory limit; a hang fails the test."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bot.cli", *argv], env=_env(tmp), cwd=tmp,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, preexec_fn=_limit)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    vault = tmp / "data" / "vaults" / "local"
    for folder in ("projects", "ideas", "people", "admin"):
        (vault / folder).mkdir(parents=True)
    (vault / "projects" / "budget.md").write_text(
        "---\nname: Budget\ncategory: projects\nstatus: active\n---\nQ3 budget with finance\n")
    (vault / "ideas" / "lol.md").write_text(HOSTILE["alias-bomb"])
    (vault / "ideas" / "deep.md").write_text(HOSTILE["deep-flow"])
    (vault / "ideas" / "broken.md").write_text("---\nname: [unclosed\n---\nbroken but readable\n")
    with (vault / "people" / "huge.md").open("w") as f:  # 20 MB
        # (PostgreSQL's word index holds a body's first 100,000 characters: migration 0004)
        f.write(f"---\nname: Huge\n---\nIt starts with {HUGE_WORD}.\n")
        line = "a long line of a very long note that someone pasted in whole. " * 8 + "\n"
        for _ in range(20 * 1024 * 1024 // len(line)):
            f.write(line)
    (vault / "admin" / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400)
    # symlinks inside the vault that point out of it
    (tmp / "secret.txt").write_text(f"---\nname: Secret\n---\n{SECRET}\n")
    (vault / "people" / "passwd.md").symlink_to(tmp / "secret.txt")
    bob = tmp / "data" / "vaults" / BOB / "projects"
    bob.mkdir(parents=True)
    (bob / "plan.md").write_text(f"---\nname: Bob plan\n---\n{SECRET} of Bob\n")
    (vault / "ideas" / "bobs-plan.md").symlink_to(bob / "plan.md")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "note.md").write_text(f"---\nname: Outside\n---\n{SECRET} outside\n")
    (vault / "linked-folder").symlink_to(tmp / "outside")
    return tmp


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text and "Bob plan" not in text


def test_list_search_show_reindex_finish_and_leak_nothing(hostile: Path) -> None:
    code, out, err, seconds = brain(hostile, "reindex", "--json")
    assert code == 0, err
    assert seconds < 90, seconds  # 20 MB of text indexed, no crawl
    code, out, err, _ = brain(hostile, "list", "--json", "--limit", "100")
    assert code == 0, err
    paths = sorted(e["path"] for e in json.loads(out)["entries"])
    assert paths == ["admin/photo.md", "ideas/broken.md", "ideas/deep.md", "ideas/lol.md",
                     "people/huge.md", "projects/budget.md"]
    _no_secret(out, err)
    for query, expected in (("lol note", "ideas/lol.md"), (HUGE_WORD, "people/huge.md"),
                            ("budget", "projects/budget.md")):
        code, out, err, seconds = brain(hostile, "search", query, "--json")
        assert code == 0 and seconds < 60, (query, err, seconds)
        assert expected in [e["path"] for e in json.loads(out)["entries"]], (query, out[:500])
        _no_secret(out, err)
    code, out, err, _ = brain(hostile, "search", SECRET, "--json")
    assert code == 0 and json.loads(out)["entries"] == [] or all(
        e["path"] not in ("people/passwd.md", "ideas/bobs-plan.md")
        for e in json.loads(out)["entries"])
    _no_secret(out, err)
    code, out, err, _ = brain(hostile, "show", "ideas/lol.md")
    assert code == 0 and "The lol note." in out and "lol\nlol" not in out
    for link in ("people/passwd.md", "ideas/bobs-plan.md", "linked-folder/note.md"):
        code, out, err, _ = brain(hostile, "show", link)
        assert code == 1 and "Traceback" not in err, (link, err)
        _no_secret(out, err)


def test_doctor_names_the_notes_it_cannot_read(hostile: Path) -> None:
    code, out, err, _ = brain(hostile, "doctor", "--local")
    assert code == 0, out + err
    line = next(x for x in out.splitlines() if x.startswith("WARN") and "Notes" in x)
    for rel in ("ideas/lol.md", "ideas/deep.md", "ideas/broken.md", "admin/photo.md"):
        assert rel in line, line
    assert "aliases" in line and "not UTF-8" in line
    _no_secret(out)


def test_export_holds_no_file_from_outside(hostile: Path) -> None:
    out_zip = hostile / "export.zip"
    code, out, err, _ = brain(hostile, "export", "--user", "local", "--out", str(out_zip))
    assert code == 0, err
    with zipfile.ZipFile(out_zip) as zf:
        names = zf.namelist()
        blob = b"".join(zf.read(n) for n in names if n != "vault/people/huge.md")
    assert "vault/ideas/lol.md" in names and "vault/people/huge.md" in names
    assert not any(n.endswith(("passwd.md", "bobs-plan.md")) or "linked-folder" in n
                   for n in names)
    assert SECRET.encode() not in blob


@pytest.mark.files_store
async def test_mcp_serves_nothing_from_outside(hostile: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "bot.cli", "mcp"],
                                   env=_env(hostile), cwd=str(hostile))
    seen: list[Any] = []
    async with Client(params, read_timeout_seconds=60) as client:
        for name, args in (("list_entries", {"limit": 50}), ("search_entries", {"query": SECRET}),
                           ("search_entries", {"query": "Bob plan"}),
                           ("get_entry", {"path": "people/passwd.md"}),
                           ("get_entry", {"path": "ideas/bobs-plan.md"}),
                           ("get_entry", {"path": "linked-folder/note.md"}),
                           ("list_backlinks", {"path": "people/passwd.md"}),
                           ("get_entry", {"path": "people/huge.md"}),
                           ("get_entry", {"path": "ideas/lol.md"})):
            result = await client.call_tool(name, args)
            seen.append((name, args, result))
    texts = [r.content[0].text for _, _, r in seen]
    _no_secret(*(t.replace(json.dumps(a.get("query")), "") for (_, a, _), t in zip(seen, texts,
                                                                                 strict=True)))
    for (name, args, result), text in zip(seen, texts, strict=True):
        if name == "get_entry" and args["path"] in ("people/passwd.md", "ideas/bobs-plan.md",
                                                    "linked-folder/note.md"):
            assert result.is_error, text
    huge = texts[-2]
    assert len(huge) < 20_000 and not seen[-2][2].is_error  # capped, not 20 MB on the wire
    assert "The lol note." in texts[-1]
