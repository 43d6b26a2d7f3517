"""Pushes under faults (issue 35; docs/reliability.md): real `brain serve --http` processes,
Debian's git, the test's database.

- A push and the bot's write to the same note, at the same moment, many times: each takes
  the vault's lock, so either the push lands first and the write goes on top of it, or the
  write lands first and the push is refused (fetch first) until a pull merges them; a note
  never holds half of one and half of the other, and nothing either wrote is lost.
- `kill -9` of the server while a push's files are being written: the push's plan waits in
  the history's list of late changes, and the next writer of the vault (here `brain
  history`) puts the rest and records it as the push's change; every pushed note is whole
  and present, and a pull and push from the client end with the clone and the vault alike.
  On both stores (`vault_store`): on the database store, another machine's mirror then holds
  every pushed note too (the push's files were marked as written before they were put).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from storage.vault.atomic import TEMP_NAME
from tests.brain_cli import Result, run_process
from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.git_client import GitClient, files_of, needs_git
from tests.e2e.slack_harness import SECRET, USER, SlackSender, message_event
from tests.e2e.test_slack_serve import brain, clean_env, free_port, idle, stop, wait_healthy
from tests.shared import patience

pytestmark = [needs_git, pytest.mark.slow]

NOTE_TEXT = ("---\ncategory: ideas\nname: Garden plan\n---\n# Garden plan\n\n## From Obsidian\n"
             "nothing yet\n\n## Notes\nPlant tomatoes in May.\n\nWater them twice a week.\n\n"
             "Compost in the autumn.\n")


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, fake: FakeSlack,
                  **extra: str) -> AsyncIterator[tuple[Any, str, dict]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_PUBLIC_URL=url, **{**database_env(tmp_path), **extra})
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port), env=env,
                       cwd=tmp_path)
    try:
        await wait_healthy(url, proc, timeout=60)
        yield proc, url, env
    finally:
        if proc.returncode is None:
            await stop(proc)


def cli(tmp_path: Path, env: dict[str, str], *argv: str) -> Result:
    return run_process(tmp_path, *argv, "--user", USER, env=env)


async def cloned(tmp_path: Path, env: dict[str, str]) -> tuple[GitClient, Path]:
    link = (await asyncio.to_thread(cli, tmp_path, env, "sync", "url", "--json")).json()
    git = GitClient(tmp_path, link["token"])
    await git.ok("clone", link["url"], "my-brain")
    return git, tmp_path / "my-brain"


async def test_a_push_and_the_bots_write_to_one_note_never_interleave(tmp_path: Path) -> None:
    fake = await FakeSlack().start()
    try:
        async with serving(tmp_path, fake) as (_proc, url, env):
            vault = tmp_path / "data" / "vaults" / USER
            (vault / "ideas").mkdir(parents=True)
            (vault / "ideas" / "garden-plan.md").write_text(NOTE_TEXT)  # written by hand
            assert (await asyncio.to_thread(cli, tmp_path, env, "history")).code == 0
            git, work = await cloned(tmp_path, env)
            note = work / "ideas" / "garden-plan.md"
            outcomes = []
            for n, delay in enumerate((0.0, 0.5, 1.0, 2.0, 3.0, 6.0)):
                text = note.read_text()
                note.write_text(text.replace("## From Obsidian\n", f"## From Obsidian\nRound "
                                             f"{n} from Obsidian\n", 1))
                await git.ok("commit", "-am", f"Round {n}", cwd=work)
                writing = asyncio.ensure_future(asyncio.to_thread(
                    cli, tmp_path, env, "update", "ideas/garden-plan.md", "--append",
                    f"Round {n} from the bot"))
                # The CLI takes a second or more to start: early pushes come first, late ones
                # find its write there (the lock decides in between).
                await asyncio.sleep(patience(delay))
                pushed, wrote = await git("push", cwd=work), await writing
                assert wrote.code == 0, wrote.err
                now = (vault / "ideas" / "garden-plan.md").read_text()
                assert now.count(f"Round {n} from the bot") == 1 and now.startswith("---\n")
                if pushed.ok:  # the push first, the bot's write on top of it
                    assert f"Round {n} from Obsidian" in now
                else:  # the bot's write first: the push refused, nothing of it applied
                    assert "fetch first" in pushed.err, pushed.err
                    assert f"Round {n} from Obsidian" not in now
                outcomes.append(pushed.ok)
                await git.ok("pull", "--no-rebase", "--no-edit", cwd=work)
                await git.ok("push", cwd=work)
                now = (vault / "ideas" / "garden-plan.md").read_text()
                for k in range(n + 1):  # nothing either side wrote is lost
                    assert f"Round {k} from Obsidian" in now and f"Round {k} from the bot" in now
            print("pushed first:", outcomes)
            assert True in outcomes and False in outcomes  # both orders were met
            fresh = GitClient(tmp_path / "fresh", git.token)
            await fresh.ok("clone", f"{url}/git/{USER}.git", "again")
            assert files_of(tmp_path / "fresh" / "again") == files_of(vault)
    finally:
        await fake.stop()


async def test_a_push_killed_half_way_is_made_whole_by_the_next_writer(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    fake = await FakeSlack().start()
    try:
        async with serving(tmp_path, fake, **vault_store) as (proc, url, env):
            send = SlackSender(url)
            await send.event(message_event("Call Sara about the Q3 budget next week",
                                           ts="1767261700.000100", event_id="EvKill1"))
            await fake.wait_for("chat.postMessage", timeout=60)
            await idle(send)
            await send.close()
            git, work = await cloned(tmp_path, env)
            (work / "imported").mkdir()
            many = 400
            for i in range(many):
                (work / "imported" / f"note {i:03d}.md").write_text(
                    f"# Imported note {i}\nText of an imported note number {i}.\n")
            await git.ok("add", "-A", cwd=work)
            await git.ok("commit", "-m", "Import my old notes", cwd=work)
            pushing = asyncio.ensure_future(git("push", cwd=work))
            landed = tmp_path / "data" / "vaults" / USER / "imported"
            deadline = asyncio.get_running_loop().time() + patience(60)
            while not (landed.is_dir() and len(list(landed.glob("*.md"))) >= 20):
                assert not pushing.done(), (await pushing).err
                assert asyncio.get_running_loop().time() < deadline, "no file was written"
                await asyncio.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            assert not (await pushing).ok
            seen = len([p for p in landed.iterdir() if p.suffix == ".md"])
            print(f"{seen} of {many} notes were written when the server was killed")

        listed = (await asyncio.to_thread(cli, tmp_path, env, "history", "--json")).json()
        vault = tmp_path / "data" / "vaults" / USER
        written = {p.name: p.read_text() for p in (vault / "imported").iterdir()
                   if not p.name.startswith(".")}  # (a killed write's hidden temp file is ours:
        assert all(TEMP_NAME.match(p.name) for p in (vault / "imported").iterdir()  # cleaned
                   if p.name.startswith("."))  # by the indexer or `brain doctor`)
        assert written == {f"note {i:03d}.md": f"# Imported note {i}\nText of an imported "
                           f"note number {i}.\n" for i in range(many)}
        push = listed[0]
        assert push["action"] == f"git push by {USER}"
        assert push["summary"].startswith("Import my old notes")
        assert len(push["paths"]) == many
        if vault_store["BRAIN_STORE"] == "database":  # the next writer sent them: elsewhere too
            elsewhere = {**env, "BRAIN_DATA_DIR": str(tmp_path / "elsewhere")}
            assert cli(tmp_path, elsewhere, "history", "--json").json() == listed
            assert files_of(tmp_path / "elsewhere" / "vaults" / USER) == files_of(vault)

        async with serving(tmp_path, fake, **vault_store) as (_proc, url, env):
            link = (await asyncio.to_thread(cli, tmp_path, env, "sync", "url", "--json")).json()
            git.token = link["token"]
            await git.ok("remote", "set-url", "origin", link["url"], cwd=work)
            await git.ok("pull", "--no-rebase", "--no-edit", cwd=work)
            await git.ok("push", cwd=work)
            assert files_of(work) == files_of(vault)
    finally:
        await fake.stop()
