"""A push read and checked before anything is applied (storage/sync/push.py): no pushed path
the checks let through leaves the vault or reaches a `.git`; each kind of hostile file is
refused with the file named; the pushed commits come parents first."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Commit
from hypothesis import given
from hypothesis import strategies as st

from storage.errors import UnsafePath
from storage.sync.push import PushLimits, PushRefused, check, descends, new_commits, path_problem
from storage.vault.paths import resolve_in_vault
from tests.storage.sync_client import commit_of, on_top, tree_of

LIMITS = PushLimits(max_files=5, max_file_bytes=1000, max_push_bytes=100_000)
PARTS = st.one_of(st.sampled_from(["..", ".", "", ".git", ".GIT", ".git.", ".git ", "git~1",
                                   "a\\..", "C:", "notes", "ideas", ".trash", "x.md",
                                   ".x.md.abc123.tmp"]),
                  st.text(min_size=1, max_size=12))


@given(st.lists(PARTS, min_size=1, max_size=5))
def test_no_path_let_through_leaves_the_vault_or_reaches_git(parts: list[str]) -> None:
    path = "/".join(parts)
    if "\x00" in path or path_problem(path) is not None:
        return
    root = Path("/srv/vaults/U1")
    assert all(p.rstrip(". ").lower() != ".git" for p in parts)
    try:
        inside = resolve_in_vault(root, path)
    except UnsafePath:  # (resolve_in_vault is stricter still: never looser)
        return
    assert inside.is_relative_to(root)


@pytest.mark.parametrize(("path", "said"), [
    ("../evil.md", "leads outside the vault"), ("a/./b.md", "leads outside"),
    ("a//b.md", "leads outside"), (".git/config", "into a .git folder"),
    ("notes/.GIT/hooks/post-merge", "into a .git folder"), ("C:/x.md", "names a drive"),
    ("a\\b.md", "backslash"), ("ideas/.x.md.abc123.tmp", "temp files"),
    ("n/" + "x" * 256, "longer than 255 bytes"),
])
def test_hostile_paths_are_named(path: str, said: str) -> None:
    problem = path_problem(path)
    assert problem is not None and said in problem


def pushed(files: dict[str, bytes | tuple[int, bytes]]) -> tuple[MemoryObjectStore, Commit]:
    store = MemoryObjectStore()
    base = commit_of(store, tree_of(store, {"ok.md": b"fine\n"}), [], "base")
    tip = commit_of(store, tree_of(store, {"ok.md": b"fine\n", **files}), [base], "push")
    found = store[tip]
    assert isinstance(found, Commit)
    return store, found


@pytest.mark.parametrize(("files", "said"), [
    ({"link.md": (0o120000, b"/etc/passwd")}, "link.md is a symbolic link"),
    ({"sub": (0o160000, b"")}, "not a plain file"),
    ({"big.bin": b"x" * 1001}, "over BRAIN_MAX_FILE_MB"),
    ({"bomb.md": b"---\na: &a [1]\nb: *a\n---\nx\n"}, "bomb.md: the app would not read"),
    ({"huge.md": b"---\nk: '" + b"v" * 600_000 + b"'\n---\n"}, "over BRAIN_MAX_FILE_MB"),
    ({"latin1.md": "caf\u00e9\n".encode("latin-1")}, "latin1.md is not UTF-8 text"),
    ({f"n{i}.md": b"x\n" for i in range(6)}, "more than 5 files"),
])
def test_each_hostile_file_refuses_the_whole_push(files: dict[str, bytes | tuple[int, bytes]],
                                                  said: str) -> None:
    store, tip = pushed(files)
    with pytest.raises(PushRefused, match=said.replace(".", r"\.")):
        check(store, [tip], LIMITS)


def test_frontmatter_too_big_to_read_is_refused() -> None:
    limits = PushLimits(max_files=5, max_file_bytes=10_000_000, max_push_bytes=1)
    store, tip = pushed({"huge.md": b"---\nk: '" + b"v" * 600_000 + b"'\n---\nbody\n"})
    with pytest.raises(PushRefused, match="huge.md: the app would not read its frontmatter"):
        check(store, [tip], limits)


def test_a_fine_push_names_every_path_it_changes() -> None:
    store, tip = pushed({"ideas/new.md": b"---\ntags: [a]\n---\nA new note.\n",
                         "attachments/pic.png": b"\x89PNG..."})
    assert check(store, [tip], LIMITS).paths == {"ideas/new.md", "attachments/pic.png"}


def test_the_pushed_commits_come_parents_first_and_known_ones_are_left_out() -> None:
    store = MemoryObjectStore()
    root = commit_of(store, tree_of(store, {"a.md": b"a\n"}), [], "root")
    left = on_top(store, root, {"b.md": b"b\n"}, "left")
    right = on_top(store, root, {"c.md": b"c\n"}, "right")
    top = on_top(store, left, {"d.md": b"d\n"}, "top")
    merge = commit_of(store, tree_of(store, {"a.md": b"a\n", "b.md": b"b\n", "c.md": b"c\n",
                                             "d.md": b"d\n"}), [top, right], "merge")
    order = [c.id for c in new_commits(store, merge, lambda sha: sha == root, limit=10)]
    assert order[-1] == merge and len(order) == 4
    for commit_id in order:
        commit = store[commit_id]
        assert isinstance(commit, Commit)
        assert all(p == root or order.index(p) < order.index(commit_id)
                   for p in commit.parents)
    assert descends(store, merge, root) and descends(store, merge, right)
    assert not descends(store, left, right)
    with pytest.raises(PushRefused, match="more than 2 commits"):
        new_commits(store, merge, lambda sha: sha == root, limit=2)
