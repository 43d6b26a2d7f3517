"""A vault as its person's git remote (issue 35): clone and pull times with Debian's git.

    python bench/bench_git_remote.py [--notes 10000] [--changes 10000] [--url URL]

Makes a synthetic vault (bench/gen_vault.py) and a history of `--changes` commits (edits
committed directly, as bench/bench_history.py --direct does), then serves `/git/<person>.git`
from this process (bot/sync/http.py's routes on aiohttp, the Brain's remotes: the code `brain
serve` runs) and times the real git client:
- the first clone (the history's commits mirrored as the remote's, once), a second one, and a
  shallow one (`--depth 1`);
- a pull after one change made through the Store (the mirror of one commit, one pack);
- a pull with nothing new, a push of one edited note (applied as the vault's change), and a
  push of 1,000 new notes (BRAIN_SYNC_MAX_FILES' default: the longest a push holds the lock).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web  # noqa: E402

from bench.gen_vault import generate  # noqa: E402
from bot.brain import Brain  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.sync.http import GitRoutes  # noqa: E402

USER = "U0BENCH01"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def git_env(work: Path, token: str) -> dict[str, str]:
    askpass = work / "askpass.sh"
    askpass.write_text(f'#!/bin/sh\ncase "$1" in Username*) echo me ;; *) echo {token} ;; '
                       "esac\n")
    askpass.chmod(0o700)
    home = work / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": str(askpass), "LANG": "C",
            "GIT_AUTHOR_NAME": "Me", "GIT_AUTHOR_EMAIL": "me@example.com",
            "GIT_COMMITTER_NAME": "Me", "GIT_COMMITTER_EMAIL": "me@example.com"}


async def git(env: dict[str, str], cwd: Path, *args: str) -> float:
    started = time.perf_counter()
    done = await asyncio.to_thread(subprocess.run, ["git", *args], cwd=cwd, env=env,
                                   capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr}")
    return time.perf_counter() - started


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


async def build(brain: Brain, notes: int, changes: int) -> list[str]:
    store = brain.store_for(USER)
    generated = generate(store.vault.root, notes)
    paths = [n.path for n in generated if n.path.split("/")[0] in
             ("people", "projects", "ideas", "admin")][:200]
    started = time.perf_counter()
    await store.refresh()
    history = store.history
    assert history is not None
    await asyncio.to_thread(history.ensure)
    for i in range(max(0, changes - 1)):
        path = store.vault.root / paths[i % len(paths)]
        path.write_bytes(path.read_bytes() + f"\nline {i}".encode())
        history.record("update", f"bench {i}", [paths[i % len(paths)]])
    print(f"vault of {notes:,} notes with {len(history.changes()):,} changes made in "
          f"{time.perf_counter() - started:.0f} s")
    return paths


async def main(notes: int, changes: int, url: str | None) -> None:
    if shutil.which("git") is None:
        raise SystemExit("Debian's git is needed (apt-get install git)")
    work = Path(tempfile.mkdtemp(prefix="bench-git-remote-"))
    values = {"BRAIN_DATA_DIR": str(work / "data"), "BRAIN_LLM": "offline"}
    if url:
        values["DATABASE_URL"] = url
    brain = await Brain.start(Settings(_env_file=None, **values),  # type: ignore[call-arg]
                              with_llm=False)
    paths = await build(brain, notes, changes)
    port = free_port()
    brain.remotes.serving_at("127.0.0.1", port)
    link = await brain.remotes.link(USER)
    routes = GitRoutes(brain)
    app = web.Application()
    app.add_routes(routes.routes())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    env = git_env(work, link.token)
    try:
        first = await git(env, work, "clone", "-q", link.url, "one")
        print(f"first clone (the history mirrored once): {first:.2f} s, "
              f"{size_mb(work / 'one' / '.git'):.0f} MB of .git")
        second = await git(env, work, "clone", "-q", link.url, "two")
        print(f"clone: {second:.2f} s")
        shallow = await git(env, work, "clone", "-q", "--depth", "1", link.url, "three")
        print(f"clone --depth 1 (the notes, the last change): {shallow:.2f} s, "
              f"{size_mb(work / 'three' / '.git'):.0f} MB of .git")
        store = brain.store_for(USER)
        await store.update(paths[0], {}, append_body="One more line, from the bot.")
        pulled = await git(env, work / "one", "pull", "-q", "--no-rebase")
        print(f"pull after one change: {pulled:.2f} s")
        idle = await git(env, work / "one", "pull", "-q", "--no-rebase")
        print(f"pull with nothing new: {idle:.2f} s")
        edited = work / "one" / paths[1]
        edited.write_text(edited.read_text() + "\nAn edit from Obsidian.\n")
        await git(env, work / "one", "commit", "-qam", "An edit")
        pushed = await git(env, work / "one", "push", "-q")
        print(f"push of one edited note: {pushed:.2f} s")
        many = work / "one" / "imported"
        many.mkdir()
        for i in range(1000):  # BRAIN_SYNC_MAX_FILES: the most one push may hold
            (many / f"old note {i:04d}.md").write_text(f"# Old note {i}\nImported.\n")
        await git(env, work / "one", "add", "-A")
        await git(env, work / "one", "commit", "-qm", "Import")
        pushed = await git(env, work / "one", "push", "-q")
        print(f"push of 1,000 new notes in one commit (the vault's lock held most of it): "
              f"{pushed:.2f} s")
    finally:
        await runner.cleanup()
        routes.close()
        await brain.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--url", help="a database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    asyncio.run(main(args.notes, args.changes, args.url))
