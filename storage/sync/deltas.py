"""A clone's pack made small: each tree and file a commit changed is sent as a delta against
the same path in its parent commit, as git's own server packs it. dulwich sends every object
whole, and a history rewrites a folder's whole tree at each change (100 KB for a folder of
2,500 notes: 1 GB for 10,000 changes); the delta of one changed entry is a few dozen bytes.

Deltas are made by dulwich's Rust `create_delta` (~0.1 ms for 100 KB), offered to its pack
writer as "deltas to reuse" (storage/sync/served.py): it writes them, and every object
without one whole. A chain is cut every MAX_DEPTH versions, so a client never resolves a
long one.
"""

from __future__ import annotations

import stat
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID, hex_to_sha, parse_tree
from dulwich.pack import REF_DELTA, UnpackedObject

MAX_DEPTH = 50  # versions in one delta chain
KEEP = 256  # objects' bytes and trees' entries kept while walking (the next commit's bases)
SHA_BYTES = 20  # a binary object id in a tree entry (SHA-1)

Entries = dict[bytes, tuple[int, ObjectID]]

try:  # dulwich's Rust extension (its wheels ship it); else its Python one, slower
    from dulwich._pack import create_delta as _rust_delta

    def create_delta(base: bytes, target: bytes) -> bytes:
        return bytes(_rust_delta(base, target))
except ImportError:  # pragma: no cover
    from dulwich.pack import create_delta as _py_delta

    def create_delta(base: bytes, target: bytes) -> bytes:
        return b"".join(_py_delta(base, target))


class _Recent:
    """The bytes of the objects read last, and the entries of the trees parsed last."""

    def __init__(self, store: BaseObjectStore) -> None:
        self.store = store
        self.raw: OrderedDict[bytes, tuple[int, bytes]] = OrderedDict()
        self.trees: OrderedDict[bytes, Entries] = OrderedDict()

    def get(self, sha: ObjectID) -> tuple[int, bytes]:
        found = self.raw.get(sha)
        if found is None:
            found = self.store.get_raw(sha)
            self.raw[sha] = found
            if len(self.raw) > KEEP:
                self.raw.popitem(last=False)
        return found

    def entries(self, sha: ObjectID) -> Entries:
        found = self.trees.get(sha)
        if found is None:
            found = {name: (mode, ObjectID(hexsha)) for name, mode, hexsha
                     in parse_tree(self.get(sha)[1], SHA_BYTES)}
            self.trees[sha] = found
            if len(self.trees) > KEEP:
                self.trees.popitem(last=False)
        return found


def _changed(recent: _Recent, old: ObjectID, new: ObjectID) -> Iterator[tuple[ObjectID,
                                                                              ObjectID]]:
    """(earlier, later) of every tree and file at one path in two trees that differ."""
    yield old, new
    before = recent.entries(old)
    for name, (mode, sha) in recent.entries(new).items():
        prev = before.get(name)
        if prev is None or prev[1] == sha:
            continue
        if stat.S_ISDIR(mode) and stat.S_ISDIR(prev[0]):
            yield from _changed(recent, prev[1], sha)
        elif stat.S_ISREG(mode) and stat.S_ISREG(prev[0]):
            yield prev[1], sha


def oldest_first(parents: Callable[[ObjectID], Iterable[ObjectID]],
                 heads: Iterable[ObjectID], wanted: set[ObjectID]) -> list[ObjectID]:
    """The commits among `wanted` reachable from `heads`, each after its parents."""
    order: list[ObjectID] = []
    seen: set[ObjectID] = set()
    stack: list[tuple[ObjectID, bool]] = [(h, False) for h in heads if h in wanted]
    while stack:
        sha, expanded = stack.pop()
        if expanded:
            order.append(sha)
            continue
        if sha in seen:
            continue
        seen.add(sha)
        stack.append((sha, True))
        stack.extend((p, False) for p in parents(sha) if p in wanted and p not in seen)
    return order


def path_deltas(store: BaseObjectStore, commits: list[ObjectID],
                wanted: set[ObjectID]) -> Iterator[UnpackedObject]:
    """A delta for each tree and file of `commits` (oldest first) whose version at the same
    path in the commit's first parent is sent too; none where a delta would not pay."""
    recent = _Recent(store)
    depth: dict[bytes, int] = {}
    done: set[bytes] = set()
    for sha in commits:
        commit = store[sha]
        assert isinstance(commit, Commit)
        if not commit.parents or commit.parents[0] not in wanted:
            continue
        parent = store[commit.parents[0]]
        assert isinstance(parent, Commit)
        if parent.tree == commit.tree:
            continue
        for old, new in _changed(recent, parent.tree, commit.tree):
            level = depth.get(old, 0)
            if new in done or new not in wanted or old not in wanted or level >= MAX_DEPTH:
                continue
            kind, base = recent.get(old)
            new_kind, data = recent.get(new)
            delta = create_delta(base, data) if kind == new_kind else b""
            if not delta or len(delta) * 2 > len(data):
                continue
            done.add(new)
            depth[new] = level + 1
            yield UnpackedObject(REF_DELTA, delta_base=hex_to_sha(old), sha=hex_to_sha(new),
                                 decomp_chunks=[delta])
