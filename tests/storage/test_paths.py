"""Vault paths never leave the vault; slugs are always usable file names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.errors import UnsafePath
from storage.vault.paths import MAX_SLUG, resolve_in_vault, slugify


@pytest.fixture
def root(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    (vault / "projects").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("secret")
    os.symlink(tmp_path / "outside", vault / "link-out")
    os.symlink(tmp_path / "outside" / "secret.md", vault / "secret.md")
    os.symlink(vault / "projects", vault / "link-in")
    return vault


def test_plain_paths_resolve_inside(root: Path) -> None:
    assert resolve_in_vault(root, "projects/q3.md") == root.resolve() / "projects" / "q3.md"
    assert resolve_in_vault(root, "./projects//q3.md") == root.resolve() / "projects" / "q3.md"
    assert resolve_in_vault(root, "link-in/x.md") == root.resolve() / "link-in" / "x.md"


@pytest.mark.parametrize("rel, why", [
    ("", "empty"), ("   ", "empty"), (".", "vault itself"),
    ("/etc/passwd", "absolute"), ("../x.md", "'..'"), ("projects/../../x", "'..'"),
    ("a/..", "'..'"), ("a\x00b", "NUL"), ("C:/x.md", "drive"), ("c:x.md", "drive"),
    ("..\\x.md", "backslash"), ("projects\\x.md", "backslash"),
    ("link-out/secret.md", "outside"), ("secret.md", "outside"), ("link-out", "outside"),
])
def test_unsafe_paths_are_refused_with_a_reason(root: Path, rel: str, why: str) -> None:
    with pytest.raises(UnsafePath, match=why):
        resolve_in_vault(root, rel)


def test_symlink_loop_is_refused(root: Path) -> None:
    os.symlink(root / "loop", root / "loop")
    with pytest.raises(UnsafePath):
        resolve_in_vault(root, "loop/x.md")


path_text = st.lists(
    st.one_of(st.sampled_from(["..", ".", "/", "\\", "\x00", "C:", "link-out", "secret.md",
                               "link-in", "projects", "~", "%2e%2e", "\u2025", "．．"]),
              st.text(max_size=6)),
    max_size=6,
).map("".join)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rel=path_text)
def test_no_generated_path_leaves_the_vault(root: Path, rel: str) -> None:
    try:
        path = resolve_in_vault(root, rel)
    except UnsafePath:
        return
    except (OSError, ValueError):  # e.g. a name too long for the OS: refused elsewhere
        return
    base = root.resolve()
    assert path.is_relative_to(base)
    assert path.resolve().is_relative_to(base)


@pytest.mark.parametrize("name, slug", [
    ("Q3 Budget!", "q3-budget"), ("Café déjà vu", "cafe-deja-vu"), ("東京 trip", "東京-trip"),
    ("Łódź", "łodz"), ("../../etc/passwd", "etc-passwd"), ("", "note"), ("...", "note"),
    ("!!!", "note"), ("snake_case name", "snake-case-name"), ("CON", "con-note"),
])
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


@given(st.text())
def test_slug_is_always_a_safe_file_name(name: str) -> None:
    slug = slugify(name)
    assert slug and slug not in (".", "..")
    assert len(slug) <= MAX_SLUG
    assert "/" not in slug and "\\" not in slug and "\x00" not in slug
    assert not slug.startswith(".") and slug == slug.lower()
