"""A person's vault as their own git remote (issue 35), end to end: Debian's real `git` (what
obsidian-git runs underneath) against a real `brain serve --http` process on the test's
database (BRAIN_TEST_DB=postgres too), notes filed through the fake Slack, and the `brain`
verbs a person would run on the server. The scenarios served by `brain serve` run on both stores
(`vault_store`: the database store, BRAIN_STORE=database, in the PostgreSQL pass only); the same
remote across two machines that share only PostgreSQL is tests/e2e/test_git_remote_machines.py."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import aiohttp

from tests.brain_cli import Result, run_process
from tests.e2e.bot_harness import Harness
from tests.e2e.git_client import GitClient, files_of, needs_git
from tests.e2e.served import Served, served
from tests.e2e.slack_harness import OTHER_USER, USER, message_event
from tests.e2e.test_slack_serve import idle

pytestmark = needs_git


async def brain(bot: Served, tmp_path: Path, *argv: str) -> Result:
    return await asyncio.to_thread(run_process, tmp_path, *argv, "--user", USER, env=bot.env)


async def dm(bot: Served, text: str, n: int, user: str = USER, *, key: int | None = None) -> None:
    """A thought sent to the bot in a DM, filed (its card is reply `n`; `key` numbers the
    event when another process shares the database)."""
    key = n if key is None else key
    ts = f"17672616{key:02d}.000100"
    await bot.send.event(message_event(text, ts=ts, event_id=f"EvGit{key}", user=user))
    await bot.fake.wait_for("chat.postMessage", n, timeout=60)
    await idle(bot.send)


async def linked(bot: Served, tmp_path: Path) -> dict[str, Any]:
    found = await brain(bot, tmp_path, "sync", "url", "--json")
    link: dict[str, Any] = found.json()
    assert link["url"] == f"{bot.url}/git/{USER}.git" and link["token"].startswith("bsk_")
    return link


def history(found: Result) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = found.json()
    return changes


async def test_a_clone_pushes_an_edit_and_a_note_the_brain_finds_lists_and_undoes(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    async with served(tmp_path, **vault_store) as bot:
        await dm(bot, "Call Sara about the Q3 budget next week", 1)
        await dm(bot, "Idea: a lending library for the office", 2)
        link = await linked(bot, tmp_path)
        git = GitClient(tmp_path, link["token"])
        await git.ok("clone", link["url"], "my-brain")
        work = tmp_path / "my-brain"
        assert files_of(work) == files_of(bot.vault) and len(files_of(work)) == 2
        log = (await git.ok("log", "--format=%an|%s%n%b", cwd=work)).splitlines()
        created = [line for line in log if line.startswith(f"{USER}|create: ")]
        assert len(created) == 2 and any("start of history" in line for line in log), log
        assert any(line.startswith(f"by {USER} via slack ") for line in log), log

        sara = next(p for p in files_of(work) if "sara" in p)
        before = (work / sara).read_bytes()
        (work / sara).write_bytes(before + b"\nBring the Q3 numbers printed.\n")
        (work / "ideas" / "zebra-crossing.md").write_text(
            "---\ncategory: ideas\n---\n# Zebra crossings\nPaint zebra crossings near the "
            "primary school.\n")
        await git.ok("add", "-A", cwd=work)
        await git.ok("commit", "-m", "Edits from Obsidian", cwd=work)
        pushed = await git("push", cwd=work)
        assert pushed.ok, pushed.err
        assert files_of(bot.vault) == files_of(work)

        found = (await brain(bot, tmp_path, "search", "zebra crossings", "--json")).json()
        assert "ideas/zebra-crossing.md" in [e["path"] for e in found["entries"]], found
        newest = history(await brain(bot, tmp_path, "history", "--json"))[0]
        assert newest["action"] == f"git push by {USER}" and newest["who"] == USER
        assert newest["summary"] == "Edits from Obsidian"
        assert set(newest["paths"]) == {sara, "ideas/zebra-crossing.md"}

        undone = await brain(bot, tmp_path, "undo")
        assert undone.code == 0, undone.err
        assert not (bot.vault / "ideas" / "zebra-crossing.md").exists()
        assert (bot.vault / sara).read_bytes() == before
        await git.ok("pull", "--no-rebase", cwd=work)
        assert files_of(work) == files_of(bot.vault)
        subject = (await git.ok("log", "-1", "--format=%s", cwd=work)).strip()
        assert subject == f"undo: git push by {USER}: Edits from Obsidian"


async def test_a_push_behind_the_bots_capture_is_refused_then_merged_after_a_pull(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    async with served(tmp_path, **vault_store) as bot:
        await dm(bot, "Call Sara about the Q3 budget next week", 1)
        link = await linked(bot, tmp_path)
        git = GitClient(tmp_path, link["token"])
        await git.ok("clone", link["url"], "my-brain")
        work = tmp_path / "my-brain"
        sara = next(iter(files_of(work)))
        (work / sara).write_text((work / sara).read_text() + "\nShe prefers mornings.\n")
        await git.ok("commit", "-am", "A line about Sara", cwd=work)

        await dm(bot, "Renew the car insurance before the 20th", 2)  # the bot moves on
        kept = files_of(bot.vault)
        refused = await git("push", cwd=work)
        assert not refused.ok and "rejected" in refused.err and "fetch first" in refused.err
        assert files_of(bot.vault) == kept

        await git.ok("pull", "--no-rebase", "--no-edit", cwd=work)
        pushed = await git("push", cwd=work)
        assert pushed.ok, pushed.err
        vault = files_of(bot.vault)
        assert b"She prefers mornings." in vault[sara]
        assert any(b"car insurance" in data for path, data in vault.items() if path != sara)
        await git.ok("pull", "--no-rebase", cwd=work)
        assert files_of(work) == vault
        newest = history(await brain(bot, tmp_path, "history", "--json"))
        assert [c["summary"] for c in newest if c["action"] == f"git push by {USER}"] == \
            ["A line about Sara"]


def basic(user: str, password: str) -> dict[str, str]:
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


async def http_status(url: str, auth: dict[str, str] | None) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(
            f"{url}/info/refs?service=git-upload-pack", headers=auth or {}) as r:
        return r.status, r.headers.get("WWW-Authenticate", ""), await r.text()


async def test_no_token_a_wrong_one_and_anothers_remote_are_refused(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    async with served(tmp_path, **vault_store) as bot:
        await dm(bot, "Call Sara about the Q3 budget next week", 1)
        await dm(bot, "Their own thought about kayaks", 2, user=OTHER_USER)
        link = await linked(bot, tmp_path)
        mine = link["url"]

        status, challenge, _ = await http_status(mine, None)
        assert status == 401 and challenge.startswith("Basic ")
        wrong = basic("obsidian", "bsk_" + "x" * 43)
        assert (await http_status(mine, wrong))[0] == 401
        good = basic("anyone at all", link["token"])
        assert (await http_status(mine, good))[0] == 200
        theirs = await http_status(f"{bot.url}/git/{OTHER_USER}.git", good)
        nobody = await http_status(f"{bot.url}/git/U0NOBODY.git", good)
        assert theirs[0] == 404 and theirs == nobody  # the same answer: no one is revealed

        for token, dest in ((None, "a"), ("bsk_" + "y" * 43, "b")):
            ran = await GitClient(tmp_path / dest, token)("clone", mine, "clone")
            assert not ran.ok and not (tmp_path / dest / "clone" / ".git").exists()
        stolen = await GitClient(tmp_path / "c", link["token"])(
            "clone", f"{bot.url}/git/{OTHER_USER}.git", "clone")
        assert not stolen.ok and "not found" in stolen.err.lower(), stolen.err

        revoked = await brain(bot, tmp_path, "sync", "url", "--revoke", link["token"][:10])
        assert revoked.code == 0, revoked.err
        assert (await http_status(mine, good))[0] == 401


def tree_line(mode: str, kind: str, sha: str, name: str) -> str:
    return f"{mode} {kind} {sha}\t{name}\n"


async def crafted_push(git: GitClient, work: Path, extra: str, message: str) -> str:
    """A commit whose root tree is the clone's plus `extra` entries (git's plumbing makes
    trees git's porcelain never would), pushed to main; git's stderr."""
    entries = await git.ok("ls-tree", "HEAD", cwd=work)
    root = await _mktree(git, work, entries + extra)
    commit = (await git.ok("commit-tree", root, "-p", "HEAD", "-m", message, cwd=work)).strip()
    ran = await git("push", "origin", f"{commit}:refs/heads/main", cwd=work)
    assert not ran.ok, f"{message}: pushed"
    return ran.err


async def _mktree(git: GitClient, work: Path, text: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "git", "mktree", cwd=str(work), env=git.env(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate(text.encode())
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


async def test_a_push_with_a_symlink_or_a_path_out_of_the_vault_changes_nothing(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    async with served(tmp_path, BRAIN_MAX_FILE_MB="0.01", **vault_store) as bot:
        await dm(bot, "Call Sara about the Q3 budget next week", 1)
        link = await linked(bot, tmp_path)
        git = GitClient(tmp_path, link["token"])
        await git.ok("clone", link["url"], "my-brain")
        work = tmp_path / "my-brain"
        kept = files_of(bot.vault)
        changes = len(history(await brain(bot, tmp_path, "history", "--json")))

        (work / "leak.md").symlink_to("/etc/passwd")
        (work / "fine.md").write_text("A note that would be fine alone.\n")
        await git.ok("add", "-A", cwd=work)
        await git.ok("commit", "-m", "A link out", cwd=work)
        refused = await git("push", cwd=work)
        assert "remote rejected" in refused.err and "leak.md is a symbolic link" in refused.err
        await git.ok("reset", "--hard", "HEAD~1", cwd=work)

        secret = await _blob(git, work, b"secret\n")
        inner = await _mktree(git, work, tree_line("100644", "blob", secret, "evil.md"))
        said = await crafted_push(git, work, tree_line("040000", "tree", inner, ".."), "Out")
        assert "leads outside the vault" in said, said
        said = await crafted_push(git, work, tree_line("040000", "tree", inner, ".git"), "Git")
        assert "into a .git folder" in said, said
        bomb = await _blob(git, work, b"---\na: &a [x, x]\nb: *a\n---\nBody\n")
        said = await crafted_push(git, work, tree_line("100644", "blob", bomb, "bomb.md"), "B")
        assert "would not read its frontmatter" in said, said
        big = await _blob(git, work, b"x" * 20_000)
        said = await crafted_push(git, work, tree_line("100644", "blob", big, "big.bin"), "Big")
        assert "over BRAIN_MAX_FILE_MB" in said, said

        assert files_of(bot.vault) == kept
        assert not (bot.vault.parent / "evil.md").exists()
        assert len(history(await brain(bot, tmp_path, "history", "--json"))) == changes
        assert (await git("pull", "--no-rebase", cwd=work)).ok  # nothing new to bring
        assert json.loads((await brain(bot, tmp_path, "list", "--json")).out)["total"] == 1


async def _blob(git: GitClient, work: Path, data: bytes) -> str:
    proc = await asyncio.create_subprocess_exec(
        "git", "hash-object", "-w", "--stdin", cwd=str(work), env=git.env(),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate(data)
    return out.decode().strip()


async def test_a_long_history_clones_small_and_whole(slack: Harness, tmp_path: Path) -> None:
    """Past a thousand objects a clone's pack carries each changed tree and note as a delta
    against its earlier version (storage/sync/deltas.py): git takes it, `git fsck` finds
    every object whole, and the clone is the vault with every change in its log."""
    store = slack.brain.store_for(USER)
    for n in range(60):
        await store.create("ideas", f"Idea number {n}", {}, f"The text of idea {n}.\n")
    for n in range(240):
        await store.update(f"ideas/idea-number-{n % 60}.md", {}, append_body=f"Line {n}.")
    link = await slack.brain.remotes.link(USER)
    git = GitClient(tmp_path, link.token)
    url = f"{slack.send.base_url}/git/{USER}.git"
    await git.ok("clone", url, "my-brain")
    work = tmp_path / "my-brain"
    assert files_of(work) == files_of(slack.vault)
    assert (await git("fsck", "--full", "--strict", cwd=work)).ok
    count = int((await git.ok("rev-list", "--count", "HEAD", cwd=work)).strip())
    assert count == len(await store.changes(limit=1000)) == 301
    packed = sum(p.stat().st_size for p in (work / ".git" / "objects").rglob("*.pack"))
    whole = sum(len(data) for data in files_of(work).values()) * 240  # trees alone exceed it
    assert packed < whole // 10, (packed, whole)


async def test_a_shallow_clone_pulls_and_pushes(slack: Harness, tmp_path: Path) -> None:
    """`git clone --depth 1` (a big vault's quick start; obsidian-git on a phone may do it):
    the files without the history's past, and pushes and pulls as a full clone does."""
    store = slack.brain.store_for(USER)
    for n in range(5):
        await store.create("ideas", f"Idea {n}", {}, f"Text {n}.\n")
    link = await slack.brain.remotes.link(USER)
    git = GitClient(tmp_path, link.token)
    await git.ok("clone", "--depth", "1", f"{slack.send.base_url}/git/{USER}.git", "shallow")
    work = tmp_path / "shallow"
    assert files_of(work) == files_of(slack.vault)
    assert (await git.ok("rev-list", "--count", "HEAD", cwd=work)).strip() == "1"
    (work / "ideas" / "from-the-phone.md").write_text("Written on the phone.\n")
    await git.ok("add", "-A", cwd=work)
    await git.ok("commit", "-m", "From the phone", cwd=work)
    await git.ok("push", cwd=work)
    assert (slack.vault / "ideas" / "from-the-phone.md").read_text() == "Written on the phone.\n"
    await store.create("ideas", "Idea from the bot", {}, "Filed after.\n")
    await git.ok("pull", "--no-rebase", cwd=work)
    assert files_of(work) == files_of(slack.vault)
