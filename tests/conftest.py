"""Suite-wide options: which database the tests run on (see tests/databases.py)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests import databases

# No test writes into the real user's platform folders (storage/places.py: the default data
# folder and the model cache): this test process's are temporary, inherited by every process
# a test starts; each test gets a data folder of its own (`_own_platform_data` below).
_PLATFORM = Path(tempfile.mkdtemp(prefix="brain-platform-"))
os.environ["XDG_DATA_HOME"] = str(_PLATFORM / "data")
os.environ["XDG_CACHE_HOME"] = str(_PLATFORM / "cache")
atexit.register(shutil.rmtree, _PLATFORM, True)

# Import the embedding tokenizer here, in the main thread: kitoken 0.11 first imported in a
# thread that then exits (a CLI verb run in a worker thread by a test) crashes the process
# when it is used later (storage.meaning.embedder.preload).
with contextlib.suppress(ImportError):
    import kitoken  # noqa: F401


# No property test is about time: Hypothesis's default 200 ms deadline per example failed
# `test_unfurls_of_any_event_shape_never_fail` once in a parallel run on a loaded machine.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--db", choices=databases.BACKENDS, default=None,
                     help="database the suite runs on (default: $BRAIN_TEST_DB or sqlite)")


def pytest_configure(config: pytest.Config) -> None:
    chosen = config.getoption("--db")
    if chosen:
        databases.set_backend(chosen)
    config.addinivalue_line("markers", "sqlite_only: SQLite behaviour (files, pragmas)")
    config.addinivalue_line("markers", "postgres_only: the database store (BRAIN_STORE=database: "
                                       "PostgreSQL only), run in the suite's PostgreSQL pass")
    config.addinivalue_line("markers", "files_store: the vault folder is the truth (a note "
                                       "written, renamed or damaged on disk by hand): not in "
                                       "the database store's pass, whose folders are mirrors")


def pytest_report_header(config: pytest.Config) -> str:
    return f"database: {databases.backend()}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not databases.on_postgres():
        later = pytest.mark.skip(reason="PostgreSQL only: run with BRAIN_TEST_DB=postgres")
        for item in items:
            if item.get_closest_marker("postgres_only"):
                item.add_marker(later)
        return
    skip = pytest.mark.skip(reason="SQLite only")
    mirrors = pytest.mark.skip(reason="the file store's own: in the database store a vault "
                                      "folder is a mirror, not edited by hand")
    for item in items:
        if item.get_closest_marker("sqlite_only"):
            item.add_marker(skip)
        elif databases.database_store() and item.get_closest_marker("files_store"):
            item.add_marker(mirrors)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object]) -> Iterator[object]:
    if fixturedef.scope == "function":
        return (yield)
    with databases.kept():
        return (yield)


@pytest.fixture(autouse=True)
def _own_platform_data(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that sets no BRAIN_DATA_DIR gets an empty default data folder of its own."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@pytest.fixture(autouse=True)
def _drop_test_databases() -> Iterator[None]:
    yield
    databases.drop_created()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh, migrated database for this test (SQLite file or PostgreSQL database)."""
    return databases.fresh_url(tmp_path)


@pytest.fixture
def db_env(tmp_path: Path) -> dict[str, str]:
    """What a `brain` subprocess needs in its environment to use the test's database."""
    return databases.database_env(tmp_path)
