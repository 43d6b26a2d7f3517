"""Fault benchmark: every way a thought could be lost, duplicated, leaked or refused, tried from
outside, counted. One line per fault class: tried, lost, duplicated, 5xx, leaks, unreadable
notes, lost updates. The promise (docs/reliability.md) is zeros everywhere but `tried`.

    .venv/bin/python -m bench.bench_faults            # everything, ~3 minutes on 2 cores
    .venv/bin/python -m bench.bench_faults --quick    # fewer repetitions
    .venv/bin/python -m bench.bench_faults --json
    .venv/bin/python -m bench.bench_faults --classes  # only issue 22's classes, by their tests

Real parts throughout: `brain serve --http` subprocesses, the real OpenAI and Anthropic SDKs
against a local server speaking their wire formats (tests/bot/fake_llm_server.py), a fake Slack
Web API (tests/e2e/fake_slack.py), SQLite, real vault files, SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fault_rigs import Served, clean_env, free_port, sign, spawn_serve  # noqa: E402
from tests.bot.fake_llm_server import FakeLLMServer, openai_text  # noqa: E402
from tests.bot.llm_faults import FAULTS, THOUGHT, WORD, script_for, settings_env  # noqa: E402
from tests.e2e.fake_slack import FakeSlack  # noqa: E402
from tests.e2e.slack_harness import CHANNEL, OTHER_USER, USER, message_event  # noqa: E402


@dataclass
class Line:
    fault: str
    tried: int = 0
    lost: int = 0
    duplicated: int = 0
    http_5xx: int = 0
    leaks: int = 0
    unreadable: int = 0
    lost_updates: int = 0

    def text(self) -> str:
        return (f"{self.fault:<38} tried {self.tried:>5}  lost {self.lost}  dup {self.duplicated}"
                f"  5xx {self.http_5xx}  leaks {self.leaks}  unreadable {self.unreadable}"
                f"  lost-updates {self.lost_updates}")


# -- the model misbehaves ------------------------------------------------------------------------


async def model_faults(tmp: Path) -> Line:
    from bot.brain import Brain
    from bot.config import Settings

    line = Line("malformed model replies (2 SDKs)")
    with FakeLLMServer(validate=False) as srv:
        for provider in ("openai", "anthropic"):
            base = srv.openai_base_url if provider == "openai" else srv.anthropic_base_url
            for fault in FAULTS:
                data = tmp / f"m-{provider}-{uuid.uuid4().hex[:6]}"
                settings = Settings(BRAIN_DATA_DIR=data, **settings_env(provider, base))  # type: ignore[call-arg]
                brain = await Brain.start(settings)
                srv._script.clear()
                srv.script(script_for(fault, provider))
                try:
                    result = await brain.turns.handle(conversation_key="cli:u:f", user_id="u",
                                                text=THOUGHT)
                    store = brain.store_for("u")
                    notes = [p for p in store.vault.root.rglob("*.md")
                             if THOUGHT in p.read_text(encoding="utf-8")]
                    found = (await store.search(WORD)).entries
                    line.tried += 1
                    line.lost += not notes or not found
                    line.duplicated += max(len(notes) - 1, 0)
                    honest = "inbox" in result.text or "Filed" in result.text
                    line.leaks += not honest  # a reply that claims more than happened
                finally:
                    await brain.close()
    return line


# -- the process dies --------------------------------------------------------------------------


async def crash_burst(tmp: Path, dms: int, rounds: int) -> Line:
    line = Line("kill -9 of brain serve during a DM burst")
    for r in range(rounds):
        fake = await FakeSlack().start()
        llm = FakeLLMServer().start()
        llm.delay = 0.5
        data = tmp / f"crash-{r}"
        env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="bench-secret",
                        SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(data), BRAIN_LLM="openai",
                        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm.openai_base_url,
                        BRAIN_LLM_MAX_RETRIES="0", BRAIN_JOB_LEASE_SECONDS="2",
                        BRAIN_LOG_LEVEL="ERROR",
                        # one person's burst stands for many people's: no share holds it
                        BRAIN_USER_RUNNING="0", BRAIN_USER_RATE="0")
        texts = [f"Remember to call supplier {r}-{i:03d} about the late invoice"
                 for i in range(dms)]
        try:
            first = await Served.start(env, tmp)
            acked = []
            for i, text in enumerate(texts):
                event = message_event(text, ts=f"1768{r:02d}{i:04d}.000100", event_id=f"E{r}-{i}")
                if await first.post_event(event) == 200:
                    acked.append(i)
                await asyncio.sleep(0.02)
            first.kill()
            second = await Served.start(env, tmp)
            await second.idle(timeout=120)
            await second.stop()
            vault = data / "vaults" / USER
            notes = [p.read_text(encoding="utf-8") for p in vault.rglob("*.md")]
            replies = Counter(c.body.get("thread_ts") for c in fake.calls_to("chat.postMessage"))
            for i in acked:
                filed = sum(texts[i] in n for n in notes)
                answered = replies[f"1768{r:02d}{i:04d}.000100"]
                line.tried += 1
                line.lost += filed == 0 or answered == 0
                line.duplicated += max(filed - 1, 0) + max(answered - 1, 0)
        finally:
            llm.stop()
            await fake.stop()
    return line


WRITER = """
import sys
from storage.vault.files import Vault
vault = Vault(sys.argv[1])
body = "paragraph of a long note. " * 4000
i = 0
while True:
    vault.create("ideas", f"Idea {i}", {"tags": ["a"]}, body)
    i += 1
"""


def killed_writer(tmp: Path, kills: int) -> Line:
    from storage.vault.files import Vault
    from storage.vault.note_text import parse_note

    line = Line("kill -9 while writing notes")
    root = tmp / "killed-writer"
    rng = random.Random(3)
    for _ in range(kills):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root)], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.12 + rng.random() * 0.25)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        line.tried += 1
    for path in root.rglob("*.md"):
        text = path.read_bytes().decode("utf-8", errors="replace")
        whole = bool(parse_note(text).frontmatter.get("id")) and text.rstrip().endswith("note.")
        line.unreadable += not whole
    Vault(root).clean_temp(max_age=0)
    line.leaks += len(list(root.rglob(".*.tmp")))  # temp files left after the clean-up
    return line


RACER = """
import asyncio, sys
from storage.db import Database
from storage.vault.store import Store
from storage.vault.files import Vault

async def main(role, root, url, ref, n):
    db = await Database.open(url)
    store = Store(Vault(root), db)
    for i in range(n):
        if role == "cli":
            await store.update(ref, {}, append_body=f"line {i} from the cli")
        else:
            await store.move(ref, ("projects", "ideas")[i % 2])
    await db.close()

asyncio.run(main(*sys.argv[1:5], int(sys.argv[5])))
"""


async def cli_bot_race(tmp: Path, rounds: int, n: int) -> Line:
    from storage.db import Database
    from storage.urls import default_url
    from storage.vault.files import Vault
    from storage.vault.store import Store

    line = Line("CLI update racing the bot's move")
    for r in range(rounds):
        root, data = tmp / f"race-{r}", tmp / f"race-db-{r}"
        url = default_url(data)
        db = await Database.open(url)
        entry = await Store(Vault(root), db).create("ideas", "Shared", {}, "start\n")
        await db.close()
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-c", RACER, role, str(root), url, entry.id or "", str(n), cwd=ROOT)
            for role in ("cli", "bot")]
        await asyncio.gather(*(p.wait() for p in procs))
        notes = list(root.rglob("*.md"))
        text = "".join(p.read_text(encoding="utf-8") for p in notes)
        line.tried += n
        line.lost_updates += sum(f"line {i} from the cli" not in text for i in range(n))
        line.duplicated += max(len(notes) - 1, 0)
    return line


# -- hostile input ------------------------------------------------------------------------------


async def hostile_http(served: Served, examples: int) -> Line:
    line = Line("malformed requests to /slack/events")
    rng = random.Random(11)
    bodies = [b"{not json", b"[1]", b"null", b"", b"\xff\xfe", b'{"type": "event_callback", '
              b'"event": null}', b'{"type": 7}', b"payload=%7Bnot", b"payload=%5B%5D"]
    for _ in range(examples):
        n = rng.randrange(0, 200)
        bodies.append(bytes(rng.randrange(256) for _ in range(n)))
        bodies.append(json.dumps({"type": "event_callback", "event": {
            "type": rng.choice(["message", "app_mention", "x"]), "user": rng.choice([None, 5, "U"]),
            "text": rng.choice([None, 7, "hi"]), "channel": rng.choice([None, "D1"]),
            "ts": rng.choice([None, "1.2", 3])}}).encode())
    for raw in bodies:
        for content_type in ("application/json", "application/x-www-form-urlencoded"):
            for headers in ({"Content-Type": content_type}, sign(raw, content_type),
                            sign(raw, content_type, timestamp="abc")):
                status = await served.post(raw, headers)
                line.tried += 1
                line.http_5xx += status >= 500
    return line


async def shared_thread(tmp: Path) -> Line:
    line = Line("another user in the owner's thread")
    fake = await FakeSlack().start()
    llm = FakeLLMServer().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="bench-secret",
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp / "shared"),
                    BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                    OPENAI_BASE_URL=llm.openai_base_url, BRAIN_LOG_LEVEL="ERROR")
    served = await Served.start(env, tmp)
    try:
        root = "1769000000.000100"
        # the owner starts the thread with a mention (the bot is then part of it)
        mention = message_event("<@U0SBBOT01> Q3 planning doc lives in the team drive", ts=root,
                                event_id="S1", channel=CHANNEL, channel_type="channel")
        mention["event"]["type"] = "app_mention"
        await served.post_event(mention)
        await served.idle()
        owner_files = {p: p.read_text() for p in (tmp / "shared" / "vaults" / USER).rglob("*.md")}
        line.lost += not owner_files  # the owner's note must exist, or nothing was tested
        secrets = [f"secret phrase number {i} zebra" for i in range(5)]
        for i, text in enumerate(["fix: ideas", *secrets]):
            await served.post_event(message_event(text, ts=f"1769000001.00010{i}",
                                                  event_id=f"S2{i}", user=OTHER_USER,
                                                  channel=CHANNEL, channel_type="channel",
                                                  thread_ts=root))
        await served.idle()
        before = len(llm.requests)
        await served.post_event(message_event("and book the room", ts="1769000002.000100",
                                              event_id="S3", channel=CHANNEL,
                                              channel_type="channel", thread_ts=root))
        await served.idle()
        owner_prompts = json.dumps([r.body for r in llm.requests[before:]])
        line.tried = len(secrets) + 1
        line.leaks += sum(s in owner_prompts for s in secrets) + ("fix: ideas" in owner_prompts)
        changed = any(not p.exists() or p.read_text() != t for p, t in owner_files.items())
        line.leaks += changed
        ids = [t.split("id: ", 1)[1].split("\n", 1)[0] for t in owner_files.values()]
        other_replies = [json.dumps(c.body) for c in fake.calls_to("chat.postMessage")[1:-1]]
        line.leaks += sum(any(i in r for i in ids) for r in other_replies)
    finally:
        await served.stop()
        llm.stop()
        await fake.stop()
    return line


async def pings(tmp: Path) -> Line:
    line = Line("model text trying to ping or forge links")
    fake = await FakeSlack().start()
    llm = FakeLLMServer().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="bench-secret",
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp / "pings"),
                    BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                    OPENAI_BASE_URL=llm.openai_base_url, BRAIN_LOG_LEVEL="ERROR")
    attacks = ["<!channel>", "<!here>", "<!everyone>", "<!subteam^S123>", "<@U999>",
               "<https://evil.example|your bank>", "<#C123>"]
    llm.script([openai_text(f"Sure {a} done") for a in attacks])
    served = await Served.start(env, tmp)
    try:
        for i, _ in enumerate(attacks):
            await served.post_event(message_event("what is new?", ts=f"1769100000.00{i:04d}",
                                                  event_id=f"P{i}"))
        await served.idle()
        posted = [json.dumps(c.body) for c in fake.calls_to("chat.postMessage")]
        line.tried = len(attacks)
        line.lost = len(attacks) - len(posted)  # every attack must have been answered
        line.leaks = sum(a in p for a in attacks for p in posted)
    finally:
        await served.stop()
        llm.stop()
        await fake.stop()
    return line


def fuzzed_tools(tmp: Path, examples: int) -> Line:
    """Random arguments (any unicode, wrong types) through every tool; notes must parse."""
    from bench.fault_rigs import fuzz_tools

    line = Line("fuzzed tool arguments")
    tried, unreadable, outside = asyncio.run(fuzz_tools(tmp / "fuzz", examples))
    line.tried, line.unreadable, line.leaks = tried, unreadable, outside
    return line


async def debug_logs(tmp: Path) -> Line:
    line = Line("message text in DEBUG logs")
    fake = await FakeSlack().start()
    log_file = tmp / "debug.log"
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="bench-secret",
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp / "logs"),
                    BRAIN_LLM="offline", BRAIN_LOG_LEVEL="DEBUG")
    served = await Served.start(env, tmp, log_file=log_file)
    words = [f"Ask Quentin{i} about the xylophone{i} budget" for i in range(5)]
    try:
        for i, text in enumerate(words):
            await served.post_event(message_event(text, ts=f"1769200000.00{i:04d}",
                                                  event_id=f"L{i}"))
        await served.idle()
    finally:
        await served.stop()
        await fake.stop()
    logs = log_file.read_text(encoding="utf-8", errors="replace")
    line.tried = len(words)
    line.leaks = sum(f"xylophone{i}" in logs or f"Quentin{i}" in logs for i in range(5))
    return line


async def bad_token(tmp: Path) -> Line:
    line = Line("Socket Mode with a refused token")
    fake = await FakeSlack().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_APP_TOKEN="xapp-invalid",
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp / "tok"),
                    BRAIN_LLM="offline", PORT=str(free_port()))
    try:
        proc = await spawn_serve([], env, tmp)
        _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        line.tried = 1
        text = err.decode()
        line.lost = int(proc.returncode == 0 or "Traceback" in text
                        or len(text.strip().splitlines()) != 1)
    finally:
        await fake.stop()
    return line


# -- the fault classes of issue 22, as their tests try them ---------------------------------------

# (test module, words of a test's name, the class's line, what a failure there means)
CLASS_TESTS: list[tuple[str, str, str, str]] = [
    ("tests/e2e/test_slack_faults.py", "renamed_on_disk", "note renamed on disk, then button",
     "lost"),
    ("tests/e2e/test_slack_faults.py", "deleted_note", "note deleted on disk, then button/fix",
     "duplicated"),
    ("tests/e2e/test_slack_faults.py", "instructions", "saved message carrying orders",
     "lost_updates"),
    ("tests/e2e/test_slack_faults.py", "refused_reply", "Slack refuses the reply", "lost"),
    ("tests/e2e/test_slack_faults.py", "ten_notes", "one message asking many changes",
     "lost_updates"),
    ("tests/e2e/test_slack_faults.py", "write_lock", "write lock held 20 s", "lost"),
    ("tests/e2e/test_slack_faults.py", "forget", "forget leaves no trace", "leaks"),
    ("tests/test_hostile_notes.py", "", "alias bomb, 20 MB, binary, links out", "leaks"),
    ("tests/test_vault_folders.py", "", "symlinked vault folder", "leaks"),
]


def fault_classes(tmp: Path) -> list[Line]:
    """Each class's tests, run by pytest in a process of their own (they start served bots,
    CLI processes and MCP servers): tried = tests run, a failing test counts as what it
    guards against."""
    import xml.etree.ElementTree as ET

    report = tmp / "classes.xml"
    modules = sorted({m for m, *_ in CLASS_TESTS})
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={report}", *modules], cwd=ROOT, env=clean_env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    cases = [(c.get("classname", ""), c.get("name", ""),
              any(x.tag in ("failure", "error") for x in c))
             for c in ET.parse(report).getroot().iter("testcase")]
    lines = {fault: Line(fault) for _, _, fault, _ in CLASS_TESTS}
    for classname, name, failed in cases:
        for module, words, fault, means in CLASS_TESTS:  # the first class that names it
            if classname == module.removesuffix(".py").replace("/", ".") and words in name:
                lines[fault].tried += 1
                if failed:
                    setattr(lines[fault], means, getattr(lines[fault], means) + 1)
                break
    return list(lines.values())


async def main_async(args: argparse.Namespace) -> list[Line]:
    lines: list[Line] = []
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp_name:
        tmp = Path(tmp_name)
        quick = args.quick
        steps: list[Any] = [
            lambda: model_faults(tmp),
            lambda: crash_burst(tmp, dms=20 if quick else 40, rounds=1 if quick else 3),
            lambda: asyncio.to_thread(killed_writer, tmp, 10 if quick else 40),
            lambda: cli_bot_race(tmp, rounds=1 if quick else 3, n=40),
            lambda: _with_served(tmp, lambda s: hostile_http(s, 20 if quick else 100)),
            lambda: shared_thread(tmp),
            lambda: pings(tmp),
            lambda: asyncio.to_thread(fuzzed_tools, tmp, args.fuzz or (300 if quick else 2000)),
            lambda: debug_logs(tmp),
            lambda: bad_token(tmp),
        ]
        for line in await asyncio.to_thread(fault_classes, tmp):
            lines.append(line)
            print(line.text(), flush=True)
        if args.classes:
            steps = []
        for step in steps:
            started = time.perf_counter()
            line = await step()
            lines.append(line)
            print(line.text() + f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    return lines


async def _with_served(tmp: Path, run: Any) -> Line:
    fake = await FakeSlack().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="bench-secret",
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp / "http"),
                    BRAIN_LLM="offline", BRAIN_LOG_LEVEL="ERROR")
    served = await Served.start(env, tmp)
    try:
        line: Line = await run(served)
        return line
    finally:
        await served.stop()
        await fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json", action="store_true", help="print the lines as JSON at the end")
    parser.add_argument("--classes", action="store_true",
                        help="only the fault classes of issue 22 (their tests, ~2 minutes)")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N",
                        help="tool-argument sets to fuzz (default 2000, --quick 300)")
    args = parser.parse_args()
    os.environ.pop("BRAIN_TEST_DB", None)
    import logging

    logging.basicConfig(level=logging.ERROR)  # the faults make the bot log; the lines say it
    lines = asyncio.run(main_async(args))
    bad = sum(x.lost + x.duplicated + x.http_5xx + x.leaks + x.unreadable + x.lost_updates
              for x in lines)
    if args.json:
        print(json.dumps([asdict(x) for x in lines], indent=2))
    print(f"\n{'all zero' if bad == 0 else f'{bad} failure(s)'} over "
          f"{sum(x.tried for x in lines)} tries")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
