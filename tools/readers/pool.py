"""Shared files read out of process (issue 31). A PDF, a DOCX, a page, an image or a clip is
read by a reader process (tools/readers/worker.py) under limits of CPU time, memory and
wall-clock time: a file that would cost more ends that process (another is started in its
place) and its reading says "too large to read safely". The serving process only waits, on a
thread of the pool's own that holds no lock and no GIL, so its event loop and its worker
threads keep serving everyone else.

Reader processes are reused (imports and models load once each), end when idle, and are of
two classes (documents; images and clips, which hold models), each with READERS processes at
most. Each person has PER_PERSON files read at a time and people take turns at free readers,
so one person's eight files never hold every reader."""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, OrderedDict, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from tools.readers.read import (
    BY_NAME,
    UNKNOWN,
    Budget,
    Limits,
    Reading,
    kind_of,
    noun,
    read,
    too_large,
)

log = logging.getLogger(__name__)

READERS = 2  # reader processes of each class, at most
PER_PERSON = 1  # one person's files read at once; their others wait for their turn
IDLE_SECONDS = 120.0  # a reader unused this long ends (one for clips holds a 300 MB model)


def budget(kind: str, limits: Limits) -> Budget:
    """Its kind's budget (tools/readers/read.py `KINDS`), unless `limits` set one. CPU time is
    the bound on work; the wall clock only ends a reader that is stuck or starved, so it is
    generous (a host busy with other work slows readers, it does not make them costly)."""
    base = BY_NAME[kind].budget if kind in BY_NAME else UNKNOWN.budget
    return Budget(limits.cpu_seconds or base.cpu, limits.memory_mb or base.memory_mb,
                  limits.wall_seconds or base.wall)


@dataclass
class _Ask:
    name: str
    data: bytes
    kind: str
    limits: Limits
    budget: Budget
    page: str | None  # a web page's address: its main text is read (tools/web/links.py)
    future: Future[Reading] = field(default_factory=Future)

    @property
    def family(self) -> str:
        return "media" if BY_NAME[self.kind].family == "media" else "documents"

    def header(self) -> bytes:
        return json.dumps({
            "name": self.name, "size": len(self.data), "page": self.page,
            "max_pages": self.limits.max_pages,
            "max_seconds": self.limits.max_seconds, "cache": str(self.limits.cache),
            "speech_model": str(self.limits.speech_model or ""),
            "budget": {"cpu": self.budget.cpu, "memory_mb": self.budget.memory_mb,
                       "wall": self.budget.wall}}).encode() + b"\n"


def _ended(ask: _Ask, code: int | None, *, timed_out: bool) -> Reading:
    """The reading of a file whose reader ended before it answered."""
    if timed_out or code == -signal.SIGALRM:
        why = f"reading it took over {ask.budget.wall:g} s"
    elif code == -signal.SIGXCPU:
        why = f"reading it took over {ask.budget.cpu:g} s of CPU"
    elif code == -signal.SIGKILL:  # not ours: the kernel's out-of-memory killer
        why = "it needed more memory than the machine had"
    else:
        stop = signal.Signals(-code).name if code is not None and code < 0 else f"exit {code}"
        return Reading(ask.name, ask.kind, "", f"{noun(ask.kind)} cannot be "
                                               f"read (the reader stopped: {stop})")
    log.warning("a reader was stopped (%s, %d KB): %s", ask.kind, len(ask.data) // 1024, why)
    return Reading(ask.name, ask.kind, "", too_large(ask.kind, why))


class _Reader:
    """One reader process, started on first use."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.proc: subprocess.Popen[bytes] | None = None
        self.idle_since = 0.0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # where `tools` is, installed or not
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        # -P: the working directory is not on the path (a folder there named `tools` would
        # be imported instead of ours).
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", "tools.readers.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        return self.proc

    def read(self, ask: _Ask) -> Reading:
        for attempt in (1, 2):  # a reader that ended while idle is replaced once
            proc = self.proc if self.alive() and self.proc else self._start()
            assert proc.stdin is not None
            try:
                proc.stdin.write(ask.header())
                proc.stdin.write(ask.data)
                proc.stdin.flush()
                break
            except OSError:
                self.end()
                if attempt == 2:
                    raise
        return self._answer(proc, ask)

    def _answer(self, proc: subprocess.Popen[bytes], ask: _Ask) -> Reading:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as wait:
            wait.register(proc.stdout, selectors.EVENT_READ)
            ready = wait.select(timeout=ask.budget.wall)
        if not ready:
            self.end(kill=True)
            return _ended(ask, None, timed_out=True)
        line = proc.stdout.readline()
        if not line.endswith(b"\n"):
            self.end()
            return _ended(ask, proc.returncode, timed_out=False)
        answer = json.loads(line)
        if answer["retire"]:
            self.end()
        log.debug("read a %s of %d KB; the reader's peak: %d MB", ask.kind,
                  len(ask.data) // 1024, answer["peak_mb"])
        return Reading(answer["name"], answer["kind"], answer["text"], answer["problem"],
                       answer["detail"])

    def end(self, *, kill: bool = False) -> None:
        """Input closed (it ends once its file is done); killed if asked or if it lingers."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ReaderPool:
    def __init__(self, readers: int = READERS, per_person: int = PER_PERSON,
                 idle: float = IDLE_SECONDS) -> None:
        self.readers, self.per_person, self.idle = readers, per_person, idle
        self._lock = threading.Lock()
        self._waiting: OrderedDict[str, deque[_Ask]] = OrderedDict()  # person -> files, in turn
        self._reading: Counter[str] = Counter()  # person -> files being read
        self._free: dict[str, list[_Reader]] = {"documents": [], "media": []}
        self._live: Counter[str] = Counter()  # family -> processes, busy or free
        self._busy: set[_Reader] = set()
        self._timer: threading.Timer | None = None

    def submit(self, name: str, data: bytes, limits: Limits,
               page: str | None = None) -> Future[Reading]:
        kind = "page" if page else kind_of(name, data)
        ask = _Ask(name, data, kind, limits, budget(kind, limits), page)
        with self._lock:
            self._waiting.setdefault(limits.person, deque()).append(ask)
            self._dispatch()
        return ask.future

    def _dispatch(self) -> None:
        """Each waiting person whose turn it is gets a free reader (holding the lock)."""
        started = True
        while started:  # until no one else can start
            started = False
            for person in list(self._waiting):
                asks = self._waiting[person]
                while asks and asks[0].future.cancelled():
                    asks.popleft()
                reader = (self._take(asks[0].family)
                          if asks and self._reading[person] < self.per_person else None)
                if reader is not None:
                    ask = asks.popleft()
                    self._waiting.move_to_end(person)  # the next free reader: someone else's
                    if ask.future.set_running_or_notify_cancel():
                        self._reading[person] += 1
                        self._busy.add(reader)
                        threading.Thread(target=self._run, args=(reader, ask, person),
                                         name="reader", daemon=True).start()
                        started = True
                    else:
                        self._free[reader.family].append(reader)
                    started = True
                if not asks:
                    del self._waiting[person]

    def _take(self, family: str) -> _Reader | None:
        if self._free[family]:
            return self._free[family].pop()
        if self._live[family] < self.readers:
            self._live[family] += 1
            return _Reader(family)
        return None

    def _run(self, reader: _Reader, ask: _Ask, person: str) -> None:
        try:
            reading = reader.read(ask)
        except Exception as exc:  # no process could be started (no memory, no fds)
            log.warning("no reader could be started: %r", exc)
            reader.end(kill=True)
            reading = Reading(ask.name, ask.kind, "", f"{noun(ask.kind)} "
                              f"cannot be read (no reader could start: {type(exc).__name__})")
        with self._lock:
            self._busy.discard(reader)
            self._reading[person] -= 1
            if not self._reading[person]:
                del self._reading[person]
            if reader.alive():
                reader.idle_since = time.monotonic()
                self._free[reader.family].append(reader)
                self._arm()
            else:
                self._live[reader.family] -= 1
            self._dispatch()
        ask.future.set_result(reading)

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self.idle, self._reap)
            self._timer.daemon = True
            self._timer.start()

    def _reap(self) -> None:
        """Readers idle for `idle` seconds end (their memory goes back to the machine)."""
        now = time.monotonic()
        with self._lock:
            self._timer = None
            old = [r for free in self._free.values() for r in free
                   if now - r.idle_since >= self.idle]
            for reader in old:
                self._free[reader.family].remove(reader)
                self._live[reader.family] -= 1
            if any(self._free.values()):
                self._arm()
        for reader in old:
            reader.end()

    def close(self) -> None:
        """Every reader ends: free ones when their input closes, busy ones killed."""
        with self._lock:
            free = [r for rs in self._free.values() for r in rs]
            busy = list(self._busy)
            for rs in self._free.values():
                rs.clear()
            self._live.clear()
        for reader in busy:
            reader.end(kill=True)
        for reader in free:
            reader.end()


_pool: tuple[int, ReaderPool] | None = None
_pool_lock = threading.Lock()


def pool() -> ReaderPool:
    """This process's pool (a forked child starts its own: pipes and threads are not shared)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ReaderPool())
            atexit.register(_pool[1].close)
        return _pool[1]


async def read_safely(name: str, data: bytes, limits: Limits | None = None, *,
                      page: str | None = None) -> Reading:
    """The text of one file, read in a reader process under its kind's budget (with `page`,
    the address it came from: a web page's main text). Never raises for the file's own
    faults; what it would cost too much to read says so."""
    limits = limits or Limits()
    if page is None and BY_NAME[kind_of(name, data)].family == "in_process":
        return read(name, data, limits)
    return await asyncio.wrap_future(pool().submit(name, data, limits, page))
