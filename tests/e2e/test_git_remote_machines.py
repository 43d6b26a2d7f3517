"""One person's git remote served by two machines that share nothing but PostgreSQL (the
database store, BRAIN_STORE=database): two `brain serve --http` processes, each with its own
data directory, vault root and temp directory. A push to one is what a clone or pull from
the other brings (the same commits, not a copy of them); a capture made through the other is
on the next pull from the first; a push to the first behind the other's capture is refused
until pulled. Debian's real git, real processes, one real PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.databases import postgres_url
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.git_client import GitClient, files_of, needs_git
from tests.e2e.served import Served, served
from tests.e2e.slack_harness import USER
from tests.e2e.test_git_remote import brain, dm, history, linked

pytestmark = [needs_git, pytest.mark.postgres_only]


@contextlib.asynccontextmanager
async def machine(base: Path, url: str, slack: FakeSlack) -> AsyncIterator[Served]:
    """`brain serve --http` on a machine of its own: its data (and so its vaults' mirrors and
    histories) and temp directories under `base`, the shared database at `url`, the one
    Slack (a DM one machine takes in, another may answer: their workers share the work)."""
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    async with served(base, slack, BRAIN_STORE="database", DATABASE_URL=url,
                      TMPDIR=str(base / "tmp")) as bot:
        yield bot


async def head(git: GitClient, work: Path) -> str:
    return (await git.ok("rev-parse", "HEAD", cwd=work)).strip()


async def test_a_push_to_one_machine_is_pulled_from_the_other_and_back(tmp_path: Path) -> None:
    url = postgres_url(tmp_path)
    slack = await FakeSlack().start()
    try:
        async with machine(tmp_path / "a", url, slack) as a, \
                machine(tmp_path / "b", url, slack) as b:
            await dm(a, "Call Sara about the Q3 budget next week", 1)
            link = await linked(a, tmp_path / "a")
            git = GitClient(tmp_path, link["token"])  # one token: the database has it
            await git.ok("clone", link["url"], "laptop")
            laptop = tmp_path / "laptop"
            assert files_of(laptop) == files_of(a.vault) and len(files_of(laptop)) == 1

            sara = next(iter(files_of(laptop)))
            (laptop / sara).write_text((laptop / sara).read_text() + "\nShe prefers mornings.\n")
            (laptop / "ideas").mkdir(exist_ok=True)
            (laptop / "ideas" / "zebra-crossing.md").write_text(
                "# Zebra crossings\nPaint zebra crossings near the primary school.\n")
            await git.ok("add", "-A", cwd=laptop)
            await git.ok("commit", "-m", "Edits from the laptop", cwd=laptop)
            await git.ok("push", cwd=laptop)

            # machine B: the same commits (the pushed one itself), the same files
            await git.ok("clone", f"{b.url}/git/{USER}.git", "phone")
            phone = tmp_path / "phone"
            assert files_of(phone) == files_of(laptop)
            assert await head(git, phone) == await head(git, laptop)
            found = (await brain(b, tmp_path / "b", "search", "zebra crossings", "--json")).json()
            assert "ideas/zebra-crossing.md" in [e["path"] for e in found["entries"]], found

            # a capture through B: on the next pull from A; a push to A behind it is refused first
            await dm(b, "Renew the car insurance before the 20th", 2, key=2)  # the 2nd reply
            (laptop / "ideas" / "zebra-crossing.md").write_text(
                "# Zebra crossings\nPaint zebra crossings near both schools.\n")
            await git.ok("commit", "-am", "Both schools", cwd=laptop)
            refused = await git("push", cwd=laptop)
            assert not refused.ok and "fetch first" in refused.err, refused.err
            await git.ok("pull", "--no-rebase", "--no-edit", cwd=laptop)
            assert any(b"car insurance" in data for data in files_of(laptop).values())
            await git.ok("push", cwd=laptop)
            assert files_of(laptop) == files_of(a.vault)

            # and back: B's clone pulls A's push, pushes its own, and A's clone pulls it as is
            await git.ok("pull", "--ff-only", cwd=phone)
            assert files_of(phone) == files_of(laptop)
            (phone / "ideas" / "from-the-phone.md").write_text("Written on the phone.\n")
            await git.ok("add", "-A", cwd=phone)
            await git.ok("commit", "-m", "From the phone", cwd=phone)
            await git.ok("push", cwd=phone)
            await git.ok("pull", "--ff-only", cwd=laptop)
            assert await head(git, laptop) == await head(git, phone)
            assert files_of(laptop) == files_of(phone) == files_of(b.vault) == files_of(a.vault)

            pushes = [c["summary"] for c in history(await brain(a, tmp_path / "a", "history",
                                                                "--json"))
                      if c["action"] == f"git push by {USER}"]
            assert pushes == ["From the phone", "Both schools", "Edits from the laptop"], pushes
    finally:
        await slack.stop()
