"""The git endpoint's own bad input (issue 35): whatever a client sends to `/git/...` gets a
4xx and one log line, never a 5xx, and changes nothing: other auth schemes, undecodable
credentials, the dumb protocol, unknown services, bodies that are not git's protocol (any
bytes, hypothesis), a push larger than BRAIN_SYNC_MAX_PUSH_MB. Against the served bot (real
aiohttp, the fake Slack) on the test's database; the posted bytes on both stores
(`vault_store`)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import aiohttp
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.e2e.bot_harness import Harness, running_bot
from tests.e2e.slack_harness import USER


def basic(password: str, user: str = "obsidian") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def token_for(slack: Harness) -> str:
    link = await slack.brain.remotes.link(USER)
    return link.token


async def status(session: aiohttp.ClientSession, method: str, url: str,
                 **kwargs: object) -> int:
    async with session.request(method, url, **kwargs) as r:  # type: ignore[arg-type]
        await r.read()
        return r.status


async def test_requests_git_does_not_make_get_a_clear_4xx(slack: Harness) -> None:
    token = await token_for(slack)
    base = f"{slack.send.base_url}/git/{USER}.git"
    good = basic(token)
    async with aiohttp.ClientSession() as session:
        for headers in ({"Authorization": f"Bearer {token}"},
                        {"Authorization": "Basic %%%not-base64"},
                        {"Authorization": "Basic " + base64.b64encode(b"\xff\xfe:x").decode()},
                        basic(""), basic(token + "x")):
            assert await status(session, "GET", f"{base}/info/refs?service=git-upload-pack",
                                headers=headers) == 401
        assert await status(session, "GET", f"{base}/info/refs", headers=good) == 403  # dumb
        assert await status(session, "GET", f"{base}/info/refs?service=git-archive",
                            headers=good) == 403
        assert await status(session, "GET", f"{base}/HEAD", headers=good) == 404
        assert await status(session, "GET", f"{base}/objects/info/packs", headers=good) == 404
        assert await status(session, "POST", f"{base}/git-cat-file", headers=good) == 404
        assert await status(session, "GET", f"{slack.send.base_url}/git/", headers=good) == 404
        assert await status(session, "GET",
                            f"{slack.send.base_url}/git/..%2F..%2Fetc.git/info/refs"
                            "?service=git-upload-pack", headers=good) == 404


async def test_any_bytes_posted_get_no_5xx_and_nothing_changes_and_a_big_push_413(
        tmp_path: Path, vault_store: dict[str, str]) -> None:
    async with running_bot(tmp_path, BRAIN_SYNC_MAX_PUSH_MB="0.001", **vault_store) as slack:
        await slack.file_dm("Call Sara about the Q3 budget next week")
        token = await token_for(slack)
        before = {p: p.read_bytes() for p in slack.vault.rglob("*") if p.is_file()}
        loop = asyncio.get_running_loop()
        base = f"{slack.send.base_url}/git/{USER}.git"
        async with aiohttp.ClientSession() as session:

            @settings(max_examples=40, deadline=None, database=None)
            @given(body=st.binary(max_size=900),
                   service=st.sampled_from(["git-upload-pack", "git-receive-pack"]))
            def post(body: bytes, service: str) -> None:  # (in a thread: the loop serves)
                got = asyncio.run_coroutine_threadsafe(status(
                    session, "POST", f"{base}/{service}", data=body,
                    headers={**basic(token), "Content-Type": f"application/x-{service}-request"}),
                    loop).result()
                assert got < 500, (got, body)

            await asyncio.to_thread(post)
            assert await status(session, "POST", f"{base}/git-receive-pack",
                                data=b"0" * 1_000_000, headers=basic(token)) == 413
        assert {p: p.read_bytes() for p in slack.vault.rglob("*") if p.is_file()} == before
