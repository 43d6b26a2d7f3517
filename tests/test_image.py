"""The image an operator ships: its lock file is in step with pyproject.toml, the Dockerfile
installs exactly that lock and runs as a numeric non-root user, compose.yaml wires the bot to
PostgreSQL. No container engine runs here: these check the files; hadolint lints the
Dockerfile in .ci/run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field

import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.shared import REPO

PROJECT = "second-brain-slack"
LOCK = REPO / "requirements.lock"
DOCKERFILE = (REPO / "Dockerfile").read_text(encoding="utf-8")
PINNED = re.compile(r"^[\w.-]+:[\w.-]+@sha256:[0-9a-f]{64}$")  # tag and digest


@dataclass
class Locked:
    name: str
    version: str
    hashes: int = 0
    via: list[str] = field(default_factory=list)


IMAGE_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.14"}


def parse_lock(text: str) -> dict[str, Locked]:
    """`uv pip compile --generate-hashes` output: name==version [; marker], hashes, via."""
    out: dict[str, Locked] = {}
    current: Locked | None = None
    in_via = False
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            spec, _, marker = line.rstrip(" \\").partition(";")
            name, _, version = spec.strip().partition("==")
            assert version, f"not pinned with ==: {line!r}"
            current = Locked(canonicalize_name(name), version.strip())
            in_via = False
            # A universal lock may pin a package per Python version: keep the image's one.
            if marker.strip() and not Marker(marker.strip()).evaluate(IMAGE_PYTHON):
                continue
            assert current.name not in out, f"{current.name} locked twice"
            out[current.name] = current
        elif current is not None and line.strip().startswith("--hash=sha256:"):
            current.hashes += 1
        elif current is not None and line.strip().startswith("# via"):
            rest = line.strip().removeprefix("# via").strip()
            in_via = not rest
            if rest:
                current.via.append(rest)
        elif current is not None and in_via and line.strip().startswith("#   "):
            current.via.append(line.strip().removeprefix("#").strip())
    return out


def _direct_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(r) for r in
            [*project["dependencies"], *project["optional-dependencies"]["postgres"],
             *project["optional-dependencies"]["media"]]]


def _via_project(entry: Locked) -> bool:
    return any(v.startswith(PROJECT) for v in entry.via)


# -- the lock file ----------------------------------------------------------------------------


def test_the_lock_pins_every_runtime_dependency_within_pyproject_bounds() -> None:
    locked = parse_lock(LOCK.read_text(encoding="utf-8"))
    for req in _direct_requirements():
        entry = locked.get(canonicalize_name(req.name))
        assert entry is not None, f"{req.name} is in pyproject.toml but not in requirements.lock"
        assert req.specifier.contains(entry.version, prereleases=True), (
            f"requirements.lock has {req.name}=={entry.version}, pyproject.toml wants "
            f"{req.specifier}: regenerate the lock (docs/operations.md)")
    direct = {canonicalize_name(r.name) for r in _direct_requirements()}
    from_project = {e.name for e in locked.values() if _via_project(e)}
    assert from_project == direct, "the lock's direct dependencies differ from pyproject.toml"


def test_the_lock_is_closed_and_hashed() -> None:
    locked = parse_lock(LOCK.read_text(encoding="utf-8"))
    assert len(locked) > 20
    for entry in locked.values():
        assert entry.hashes >= 1, f"{entry.name} has no hash (the image installs --require-hashes)"
        assert entry.via, f"{entry.name}: nothing needs it"
        for parent in entry.via:
            name = canonicalize_name(parent.split(" ")[0])
            assert parent.startswith(PROJECT) or name in locked, (
                f"{entry.name} is needed by {parent}, which is not in the lock")
    assert "sqlalchemy" in locked and "greenlet" in locked  # the asyncio extra came along


def test_the_lock_targets_the_images_python() -> None:
    header = LOCK.read_text(encoding="utf-8").split("\n", 3)[:3]
    version = re.search(r"--python-version (\d+\.\d+)", "\n".join(header))
    assert version, "the lock's header records the command that made it"
    base = re.search(r"ARG PYTHON_IMAGE=python:(\d+\.\d+)\.\d+", DOCKERFILE)
    assert base and base.group(1) == version.group(1)


def test_the_parser_reads_multi_line_via_and_markers() -> None:
    text = ("a==1.0 ; sys_platform != 'win32' \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n"
            "    # via\n    #   b\n    #   second-brain-slack (pyproject.toml)\nb==2 \\\n"
            "    --hash=sha256:cc\n    # via second-brain-slack (pyproject.toml)\n")
    locked = parse_lock(text)
    assert locked["a"].version == "1.0" and locked["a"].hashes == 2
    assert locked["a"].via == ["b", "second-brain-slack (pyproject.toml)"]
    assert _via_project(locked["b"]) and locked["b"].hashes == 1


# -- the Dockerfile -------------------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1])
            for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_every_base_image_is_pinned_by_tag_and_digest() -> None:
    steps = _instructions(DOCKERFILE)
    args = dict(a.split("=", 1) for k, a in steps if k == "ARG" and "=" in a)
    bases = [a.split()[0] for k, a in steps if k == "FROM"]
    assert len(bases) >= 2  # multi-stage
    for base in bases:
        image = args.get(base.strip("${}"), base)
        assert PINNED.match(image), f"{image} is not pinned by tag and digest"


def test_dependencies_come_from_the_lock_before_any_source_is_copied() -> None:
    steps = _instructions(DOCKERFILE)
    first_source = next(i for i, (k, a) in enumerate(steps)
                        if k == "COPY" and re.search(r"\b(bot|tools|storage|README\.md)\b", a))
    lock_install = next(i for i, (k, a) in enumerate(steps)
                        if k == "RUN" and "--require-hashes -r /tmp/requirements.lock" in a)
    assert lock_install < first_source


def test_the_image_runs_as_a_numeric_non_root_user_with_a_health_check() -> None:
    steps = _instructions(DOCKERFILE)
    user = [a for k, a in steps if k == "USER"][-1]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    health = " ".join(a for k, a in steps if k == "HEALTHCHECK")
    assert "/health" in health


def test_the_build_context_holds_exactly_what_the_dockerfile_copies() -> None:
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*", "start from nothing, so secrets (.env) and data stay out"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied: set[str] = set()
    for kind, args in _instructions(DOCKERFILE):
        if kind == "COPY" and "--from=" not in args:
            copied.update(p.rstrip("/").removeprefix("./") for p in args.split()[:-1])
    assert copied == allowed
    assert all((REPO / name).exists() for name in allowed)


# -- compose.yaml ---------------------------------------------------------------------------


def _compose() -> dict:
    data: dict = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
    return data


def test_compose_runs_the_bot_on_postgresql_with_volumes_and_health_checks() -> None:
    services = _compose()["services"]
    bot, db = services["bot"], services["db"]
    assert bot["build"] == "."
    assert bot["environment"]["DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert "@db:5432/" in bot["environment"]["DATABASE_URL"]
    assert bot["depends_on"]["db"]["condition"] == "service_healthy"
    assert any(v.endswith(":/data") for v in bot["volumes"])
    assert db["image"].startswith("postgres:") and PINNED.match(db["image"])
    # PostgreSQL 18+ images keep data under /var/lib/postgresql/<major>/.
    assert any(v.endswith(":/var/lib/postgresql") for v in db["volumes"])
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert "ports" not in db  # the database is reached on the compose network only
    assert set(_compose()["volumes"]) >= {"brain-data", "postgres-data"}


def _compose_v2() -> list[str] | None:
    for cmd in (["docker", "compose"], ["docker-compose"]):
        exe = shutil.which(cmd[0])
        if exe is None:
            continue
        proc = subprocess.run([exe, *cmd[1:], "version"], capture_output=True, text=True)
        if proc.returncode == 0 and "v2." in proc.stdout:
            return [exe, *cmd[1:]]
    return None


def test_docker_compose_accepts_the_file() -> None:
    cmd = _compose_v2()
    if cmd is None:
        pytest.skip("no Docker Compose v2 here (structure is checked above)")
    compose = ["-f", str(REPO / "compose.yaml"), "config", "--quiet"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POSTGRES_", "BRAIN_"))}
    ok = subprocess.run([*cmd, *compose], capture_output=True, text=True,
                        env={**env, "POSTGRES_PASSWORD": "x"}, cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    # Without a database password the file refuses to start, saying what to set.
    bad = subprocess.run([*cmd, *compose], capture_output=True, text=True, env=env, cwd=REPO)
    assert bad.returncode != 0 and "set POSTGRES_PASSWORD in .env" in bad.stderr
