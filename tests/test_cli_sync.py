"""`brain sync url` as an operator runs it (in this process, the test's database): the address
(BRAIN_PUBLIC_URL, else `brain serve`'s host and port) and a new token each time; `--list`
shows tokens by their first characters only; `--revoke` ends one or all; bad input is said
with exit 2 or 1, nothing changed; `brain forget` takes the person's tokens too."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.brain_cli import BrainCLI

USER = "U0SBUSR01"


@pytest.fixture
def brain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> BrainCLI:
    return BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data"),
                                       "BRAIN_LLM": "offline"})


def test_a_new_token_each_time_listed_by_its_start_and_revoked(brain: BrainCLI) -> None:
    first = brain("sync", "url", "--user", USER, "--create", "--json",
                  BRAIN_PUBLIC_URL="https://brain.example.com/").json()
    assert first["url"] == f"https://brain.example.com/git/{USER}.git"
    assert set(first) == {"url", "token"}
    second = brain("sync", "url", "--user", USER, BRAIN_PUBLIC_URL="https://brain.example.com")
    assert second.code == 0 and f"url:   https://brain.example.com/git/{USER}.git" in second.out
    token = next(line.split()[1] for line in second.out.splitlines()
                 if line.startswith("token:"))
    assert token != first["token"] and "any" in second.out  # the user name git asks for

    listed = brain("sync", "url", "--user", USER, "--list", "--json").json()
    assert [t["token"] for t in listed] == [token[:12] + "…", first["token"][:12] + "…"]
    shown = brain("sync", "url", "--user", USER, "--list")
    assert token not in shown.out and first["token"] not in shown.out
    assert token[:12] in shown.out and "last used never" in shown.out

    assert brain("sync", "url", "--user", USER, "--revoke", first["token"][:10],
                 "--json").json() == {"revoked": 1}
    gone = brain("sync", "url", "--user", USER, "--revoke", "bsk_nothing")
    assert gone.code == 1 and "no token of" in gone.err
    assert brain("sync", "url", "--user", USER, "--revoke", "all").out.startswith("revoked 1")
    assert brain("sync", "url", "--user", USER, "--list", "--json").json() == []


def test_the_default_address_is_brain_serves(brain: BrainCLI) -> None:
    found = brain("sync", "url", "--user", USER, "--create", "--json", BRAIN_HOST="0.0.0.0",
                  PORT="8080").json()
    assert found["url"] == f"http://{socket.gethostname()}:8080/git/{USER}.git"
    found = brain("sync", "url", "--user", USER, "--json", BRAIN_HOST="10.0.0.5").json()
    assert found["url"] == f"http://10.0.0.5:3000/git/{USER}.git"


def test_bad_input_is_said_and_changes_nothing(brain: BrainCLI, tmp_path: Path) -> None:
    assert brain("sync", "url", "--user", "nobody").code == 1  # no vault: a typo
    assert brain("sync", "url", "--user", "../etc").code == 2
    assert brain("sync", "url", "--vault", str(tmp_path)).code == 2
    assert brain("sync", "url", "--user", USER, "--list", "--revoke", "all").code == 2
    assert brain("sync").code == 2
    refused = brain("sync", "url", "--user", USER, "--create", BRAIN_PUBLIC_URL="ftp://x")
    assert refused.code != 0 and "BRAIN_PUBLIC_URL" in refused.err
    assert "Traceback" not in refused.err


def test_forget_takes_the_persons_tokens(brain: BrainCLI) -> None:
    brain("sync", "url", "--user", USER, "--create", "--json").json()
    assert brain("forget", "--user", USER, "--yes").code == 0
    assert json.loads(brain("sync", "url", "--user", USER, "--create", "--list",
                            "--json").out) == []
