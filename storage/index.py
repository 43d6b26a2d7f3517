"""The search index of one vault: FTS5 + rapidfuzz search, list, lookup, backlinks, summary.

Rows live in the shared database (tables of migration 0002), keyed by the vault root, so one
database serves many users' vaults. The files stay the source of truth: `refresh` compares them
with the rows by (mtime, size), then by sha256, and never writes to the vault. The caller owns
the transaction (commit after `refresh`/`refresh_paths`).
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import hashlib
import json
import math
import re
import time
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml
from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import StorageError
from storage.links import extract_links, link_key
from storage.notes import ParsedNote, _find_block, normalise_scalar, parse_note
from storage.types import (
    CATEGORIES,
    Backlink,
    BacklinkList,
    EntryList,
    EntrySummary,
    RefreshStats,
    VaultSummary,
)
from storage.vault import Vault

# bm25 column weights: name, one_liner, context, next_action, body, meta (filter tokens only).
BM25_WEIGHTS = (10.0, 5.0, 3.0, 3.0, 1.0, 0.0)
TEXT_COLUMNS = "{name one_liner context next_action body}"
FIELD_COLUMNS = "{name one_liner context next_action}"
# bm25 costs ~2 us per matching note; a word in more notes than this (a stopword, in effect)
# ranks the notes that have it in a field, then the newest others, so 50k notes stay fast.
RANK_ALL_LIMIT = 2500
# Too common to carry a query on their own; dropped from OR retries and from name matching.
_STOPWORDS_TEXT = """a an and are as at be but by de der die for from has have i in is it of on
or so that the this to was we were what when where which who will with you"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
RRF_K = 60
FUZZY_CUTOFF = 80.0
FUZZY_MIN_TOKEN = 3  # shorter words are all "similar" to something; FTS handles them
FUZZY_MAX_MATCHES = 200
MAX_QUERY_TOKENS = 16  # a pasted essay is still a query, just a shorter one
MAX_TOKEN_CHARS = 64
MAX_LIMIT = 200
SNIPPET_CHARS = 140
_WORD_RE = re.compile(r"[^\W_]+")

_NOTE_COLUMNS = (
    "nid", "vault", "path", "id", "name", "name_key", "stem_key", "category", "status",
    "one_liner", "context", "next_action", "due_date", "tags", "body", "frontmatter", "created",
    "updated", "updated_ts", "mtime_ns", "size", "hash",
)
_INSERT_NOTE = text(
    f"INSERT INTO index_notes ({', '.join(_NOTE_COLUMNS)}) "
    f"VALUES ({', '.join(':' + c for c in _NOTE_COLUMNS)})"
)
_INSERT_FTS = text(
    "INSERT INTO index_fts (rowid, name, one_liner, context, next_action, body, meta) "
    "VALUES (:nid, :name, :one_liner, :context, :next_action, :body, :meta)"
)
_INSERT_LINK = text(
    "INSERT INTO index_links (vault, source_path, target, target_key, target_base, heading, "
    "alias, line) VALUES (:vault, :source_path, :target, :target_key, :target_base, :heading, "
    ":alias, :line)"
)
_SUMMARY_COLUMNS = (
    "n.nid, n.path, n.id, n.name, n.category, n.status, n.one_liner, n.next_action, "
    "n.context, substr(n.body, 1, 400), n.updated"
)


def text_key(value: str) -> str:
    """Case- and form-insensitive key for names and stems (matches links.link_key)."""
    return unicodedata.normalize("NFC", value).strip().casefold()


def meta_token(kind: str, value: str | None) -> str:
    """One FTS5 token standing for a vault, category or status, so filters run inside FTS5."""
    digest = hashlib.sha1((value or "").encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{kind}{digest[:16]}"


def query_tokens(query: str) -> list[str]:
    """The words of a user's query: letters and digits only, so no text is FTS5 syntax."""
    return [t[:MAX_TOKEN_CHARS] for t in _WORD_RE.findall(query or "")][:MAX_QUERY_TOKENS]


def fts_terms(tokens: Sequence[str]) -> list[str]:
    """Each word as an FTS5 string; the last one also as a prefix (the user may still type)."""
    parts = [f'"{t}"' for t in tokens]
    if parts and len(tokens[-1]) >= FUZZY_MIN_TOKEN:
        parts[-1] += "*"
    return parts


def fts_expression(tokens: Sequence[str], operator: str = "AND") -> str:
    return f" {operator} ".join(fts_terms(tokens))


# --- extraction --------------------------------------------------------------------------------


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        joined = ", ".join(str(v) for v in value if v is not None)
        return joined or None
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    out = str(value).strip()
    return out or None


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        return []
    tags = [str(t).strip().lstrip("#").strip() for t in items if t is not None]
    return [t for t in tags if t]


def _timestamp(value: str | None) -> float | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def _frontmatter_strings(fields: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(key, string) pairs of a frontmatter, nested lists and mappings included."""
    stack: list[tuple[str, Any]] = list(fields.items())
    while stack:
        key, value = stack.pop()
        if isinstance(value, str):
            yield key, value
        elif isinstance(value, list):
            stack.extend((key, v) for v in value)
        elif isinstance(value, dict):
            stack.extend((key, v) for v in value.values())


_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def read_note(text: str) -> ParsedNote:
    """parse_note's result, with libyaml when available (about 7x faster on a full index).

    Same block rules (notes._find_block) and the same JSON-safe normalisation; anything libyaml
    does not load as a mapping goes to parse_note, which also words the error.
    """
    block = _find_block(text) if _FAST_LOADER is not None else None
    if block is None:
        return parse_note(text)
    try:
        data = yaml.load(text[block.yaml_start:block.yaml_end], Loader=_FAST_LOADER)  # noqa: S506
    except Exception:  # any libyaml refusal: the reference parser decides
        return parse_note(text)
    if data is not None and not isinstance(data, dict):
        return parse_note(text)
    frontmatter = normalise_scalar(data) if data else {}
    return ParsedNote(text, True, frontmatter, None, text[block.end:])


@dataclass
class IndexedNote:
    """One note as the index stores it (a row, its FTS text and its links)."""

    row: dict[str, Any]
    links: list[dict[str, Any]] = field(default_factory=list)


def extract_note(vault_key: str, rel: str, data: bytes, mtime_ns: int, size: int) -> IndexedNote:
    """Parse a note's bytes into its index row and links (pure: no I/O)."""
    parsed = read_note(data.decode("utf-8", errors="replace"))
    fm = parsed.frontmatter
    raw_id = fm.get("id")
    note_id = str(raw_id) if isinstance(raw_id, str | int) and str(raw_id) else None
    stem = PurePosixPath(rel).stem
    name = fm.get("name") or fm.get("title")
    name = name.strip() if isinstance(name, str) and name.strip() else stem
    category = fm.get("category")
    if category not in CATEGORIES:
        top = rel.split("/", 1)[0] if "/" in rel else None
        category = top if top in CATEGORIES else None
    raw_status = fm.get("status")
    status = raw_status.strip() if isinstance(raw_status, str) and raw_status.strip() else None
    mtime_iso = dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.UTC).isoformat(timespec="seconds")
    updated = _as_text(fm.get("updated")) or mtime_iso
    updated_ts = _timestamp(updated)
    if updated_ts is None or not math.isfinite(updated_ts):
        updated_ts = mtime_ns / 1e9
    row = {
        "vault": vault_key, "path": rel, "id": note_id, "name": name,
        "name_key": text_key(name), "stem_key": link_key(stem),
        "category": category,
        "status": status,
        "one_liner": _as_text(fm.get("one_liner")),
        "context": _as_text(fm.get("context")),
        "next_action": _as_text(fm.get("next_action")),
        "due_date": _as_text(fm.get("due_date")),
        "tags": json.dumps(_tags(fm.get("tags")), ensure_ascii=False),
        "body": parsed.body,
        "frontmatter": json.dumps(fm, ensure_ascii=False, default=str),
        "created": _as_text(fm.get("created")),
        "updated": updated, "updated_ts": updated_ts,
        "mtime_ns": mtime_ns, "size": size, "hash": hashlib.sha256(data).hexdigest(),
    }
    row["meta"] = " ".join((meta_token("v", vault_key), meta_token("c", category),
                            meta_token("s", status)))
    note = IndexedNote(row)
    found = list(extract_links(parsed.body))
    for key, value in _frontmatter_strings(fm):
        if "[[" in value:  # e.g. `related: "[[Sara]]"`
            found.extend(extract_links(f"{key}: {value}"))
    for link in found:
        target_key = link_key(link.target)
        if not target_key:
            continue  # `[[#heading]]`: a link inside the same note
        note.links.append({
            "vault": vault_key, "source_path": rel, "target": link.target,
            "target_key": target_key, "target_base": target_key.rsplit("/", 1)[-1],
            "heading": link.heading, "alias": link.alias, "line": link.line,
        })
    return note


def _has_fts(session: AsyncSession) -> bool:
    """FTS5 exists on SQLite only (migration 0002); elsewhere search falls back to LIKE."""
    return session.get_bind().dialect.name == "sqlite"


def _indexable(rel: str) -> bool:
    """What Vault.scan yields: *.md outside dot-folders."""
    parts = rel.split("/")
    return rel.lower().endswith(".md") and not any(p.startswith(".") for p in parts)


def resolve_link(target_key: str, note_keys: Mapping[str, str]) -> str | None:
    """Obsidian's rule: exact path, else the shortest path ending with the target.

    `note_keys` maps link_key(path) -> path for the candidate notes (same basename).
    """
    exact = note_keys.get(target_key)
    if exact is not None:
        return exact
    suffix = "/" + target_key
    matches = [path for key, path in note_keys.items() if key.endswith(suffix)]
    if not matches:
        return None
    return min(matches, key=lambda p: (p.count("/"), len(p), p))


# --- fuzzy names ---------------------------------------------------------------------------------


@dataclass
class _NameCache:
    """The words of every name in a vault, for typo-tolerant name matching."""

    generation: int
    meta: dict[int, tuple[str | None, str | None]]  # nid -> (category, status)
    by_length: dict[int, list[str]]  # vocabulary by word length
    word_nids: dict[str, list[int]]

    @classmethod
    def build(cls, generation: int, rows: Iterable[Sequence[Any]]) -> _NameCache:
        meta: dict[int, tuple[str | None, str | None]] = {}
        word_nids: dict[str, list[int]] = {}
        for nid, name, category, status in rows:
            meta[nid] = (category, status)
            words = list(dict.fromkeys(default_process(name).split()))
            for word in words:
                word_nids.setdefault(word, []).append(nid)
        by_length: dict[int, list[str]] = {}
        for word in word_nids:
            by_length.setdefault(len(word), []).append(word)
        return cls(generation, meta, by_length, word_nids)

    def match(self, query: str, category: str | None, status: str | None) -> dict[int, float]:
        """nid -> score (>= FUZZY_CUTOFF) of names whose words match the query's words.

        Each query word scores its best WRatio against the name's words; a name's score is the
        mean over the query words, so every word must be close for a name to count.
        """
        tokens = [t for t in dict.fromkeys(default_process(query).split())
                  if len(t) >= FUZZY_MIN_TOKEN and t not in STOPWORDS][:MAX_QUERY_TOKENS]
        if not tokens:
            return {}
        totals: dict[int, float] = {}
        for token in tokens:
            # A score >= 80 needs lengths within 2/3..3/2 of each other; WRatio would score a
            # longer word by partial match (substring), which is the FTS prefix's job.
            low, high = math.ceil(len(token) * 2 / 3), len(token) * 3 // 2
            words = [w for n in range(low, high + 1) for w in self.by_length.get(n, ())]
            hits = process.extract(token, words, scorer=fuzz.WRatio, processor=None,
                                   score_cutoff=FUZZY_CUTOFF, limit=None)
            best: dict[int, float] = {}
            for word, score, _ in hits:
                for nid in self.word_nids[word]:
                    if score > best.get(nid, 0.0):
                        best[nid] = score
            for nid, score in best.items():
                totals[nid] = totals.get(nid, 0.0) + score
        out: dict[int, float] = {}
        needed = FUZZY_CUTOFF * len(tokens)
        for nid, total in totals.items():
            if total < needed:
                continue
            cat, stat = self.meta[nid]
            if (category is None or cat == category) and (status is None or stat == status):
                out[nid] = total / len(tokens)
        return out


# Caches are only caches: a generation number in the database says when they are stale, so
# several processes (or replicas) may share one database safely.
_NAME_CACHES: dict[str, _NameCache] = {}


# --- the index -------------------------------------------------------------------------------


@dataclass
class _Plan:
    """What a refresh will write, worked out away from the event loop."""

    add: list[IndexedNote] = field(default_factory=list)
    replace: list[tuple[int, IndexedNote]] = field(default_factory=list)  # (old nid, new)
    touch: list[dict[str, Any]] = field(default_factory=list)  # hash unchanged, new mtime/size
    remove: list[tuple[int, str]] = field(default_factory=list)  # (nid, path)
    unchanged: int = 0

    @property
    def changes(self) -> bool:
        return bool(self.add or self.replace or self.remove)


class SearchIndex:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.key = str(vault.root)

    # --- refreshing ---------------------------------------------------------------------------

    async def _known(self, session: AsyncSession,
                     paths: Sequence[str] | None = None) -> dict[str, tuple[int, int, int, str]]:
        """path -> (mtime_ns, size, nid, hash) of the indexed notes (one query)."""
        sql = "SELECT path, mtime_ns, size, nid, hash FROM index_notes WHERE vault = :v"
        params: dict[str, Any] = {"v": self.key}
        if paths is not None:
            if not paths:
                return {}
            names = [f"p{i}" for i in range(len(paths))]
            sql += f" AND path IN ({', '.join(':' + n for n in names)})"
            params.update(zip(names, paths, strict=True))
        result = await session.execute(text(sql), params)
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in result}

    def _plan(self, known: dict[str, tuple[int, int, int, str]],
              files: Iterable[tuple[str, int, int]], full: bool) -> _Plan:
        """`files` come from Vault.scan or were checked by Vault.resolve already."""
        plan = _Plan()
        seen: set[str] = set()
        for rel, mtime_ns, size in files:
            seen.add(rel)
            old = known.get(rel)
            if old is not None and old[0] == mtime_ns and old[1] == size:
                plan.unchanged += 1
                continue
            try:
                data = (self.vault.root / rel).read_bytes()
            except OSError:
                continue  # vanished or unreadable since the scan; the next refresh sees it
            if old is not None and hashlib.sha256(data).hexdigest() == old[3]:
                plan.touch.append({"nid": old[2], "mtime_ns": mtime_ns, "size": size})
                continue
            note = extract_note(self.key, rel, data, mtime_ns, size)
            if old is None:
                plan.add.append(note)
            else:
                plan.replace.append((old[2], note))
        if full:
            plan.remove = [(v[2], p) for p, v in known.items() if p not in seen]
        return plan

    def _stat_paths(self, rels: Sequence[str]) -> list[tuple[str, int, int]]:
        files = []
        for rel in rels:
            try:
                info = self.vault.resolve(rel).stat()
            except (OSError, StorageError):
                continue  # gone, or a path that is not ours: nothing to index
            files.append((rel, info.st_mtime_ns, info.st_size))
        return files

    async def _apply(self, session: AsyncSession, plan: _Plan) -> None:
        if plan.changes:
            # Bump first: this takes the write lock before we read max(nid).
            await session.execute(
                text("INSERT INTO index_vaults (vault, generation) VALUES (:v, 1) "
                     "ON CONFLICT (vault) DO UPDATE SET generation = index_vaults.generation + 1"),
                {"v": self.key})
            gone = [(nid, path) for nid, path in plan.remove]
            gone += [(nid, note.row["path"]) for nid, note in plan.replace]
            if gone:
                nids = [{"nid": nid} for nid, _ in gone]
                if _has_fts(session):
                    await session.execute(text("DELETE FROM index_fts WHERE rowid = :nid"), nids)
                await session.execute(text("DELETE FROM index_notes WHERE nid = :nid"), nids)
                await session.execute(
                    text("DELETE FROM index_links WHERE vault = :v AND source_path = :p"),
                    [{"v": self.key, "p": path} for _, path in gone])
            fresh = plan.add + [note for _, note in plan.replace]
            if fresh:
                await self._insert(session, fresh)
        if plan.touch:
            await session.execute(
                text("UPDATE index_notes SET mtime_ns = :mtime_ns, size = :size WHERE nid = :nid"),
                plan.touch)

    async def _insert(self, session: AsyncSession, notes: list[IndexedNote]) -> None:
        top = (await session.execute(text("SELECT max(nid) FROM index_notes"))).scalar()
        base = int(top or 0)
        rows = []
        for offset, note in enumerate(notes, start=1):
            note.row["nid"] = base + offset
            rows.append(note.row)
        await session.execute(_INSERT_NOTE, rows)
        if _has_fts(session):
            await session.execute(_INSERT_FTS, rows)
        links = [link for note in notes for link in note.links]
        if links:
            await session.execute(_INSERT_LINK, links)

    async def refresh(self, session: AsyncSession) -> RefreshStats:
        """Bring the rows in line with the files: add, update (by hash), remove."""
        started = time.perf_counter()
        known = await self._known(session)

        def work() -> _Plan:
            return self._plan(known, self.vault.scan(), full=True)

        plan = await asyncio.to_thread(work)  # file I/O and parsing off the event loop
        await self._apply(session, plan)
        return RefreshStats(added=len(plan.add), updated=len(plan.replace),
                            removed=len(plan.remove), unchanged=plan.unchanged,
                            seconds=time.perf_counter() - started)

    async def refresh_paths(self, session: AsyncSession, rels: list[str]) -> None:
        """Re-index just these paths (after our own writes): present -> indexed, gone -> removed."""
        wanted = list(dict.fromkeys(r for r in rels if _indexable(r)))
        known = await self._known(session, wanted)

        def work() -> _Plan:
            files = self._stat_paths(wanted)
            plan = self._plan(known, files, full=False)
            present = {f[0] for f in files}
            plan.remove = [(v[2], p) for p, v in known.items() if p not in present]
            return plan

        await self._apply(session, await asyncio.to_thread(work))

    # --- reading ------------------------------------------------------------------------------

    async def _vaults(self, session: AsyncSession) -> tuple[int, bool]:
        """This vault's generation, and whether it is the only vault in the index."""
        rows = (await session.execute(text("SELECT vault, generation FROM index_vaults"))).all()
        mine = [int(g) for v, g in rows if v == self.key]
        return (mine[0] if mine else 0), len(rows) == len(mine)

    async def _names(self, session: AsyncSession, generation: int) -> _NameCache:
        cache = _NAME_CACHES.get(self.key)
        if cache is None or cache.generation != generation:
            result = await session.execute(
                text("SELECT nid, name, category, status FROM index_notes WHERE vault = :v"),
                {"v": self.key})
            cache = _NameCache.build(generation, result.all())
            _NAME_CACHES[self.key] = cache
        return cache

    def _filters(self, category: str | None, status: str | None,
                 params: dict[str, Any]) -> str:
        sql = ""
        if category is not None:
            sql += " AND n.category = :category"
            params["category"] = category
        if status is not None:
            sql += " AND n.status = :status"
            params["status"] = status
        return sql

    def _match(self, core: str, category: str | None, status: str | None,
               columns: str = TEXT_COLUMNS, *, alone: bool = False) -> str:
        """An FTS5 expression: the user's words in `columns`, within this vault and filters.

        `alone`: no other vault has rows, so the vault term (a costly intersection with every
        note) can go.
        """
        parts = [] if alone else [f'meta : "{meta_token("v", self.key)}"']
        if category is not None:
            parts.append(f'meta : "{meta_token("c", category)}"')
        if status is not None:
            parts.append(f'meta : "{meta_token("s", status)}"')
        parts.append(f"{columns} : ({core})")
        return " AND ".join(parts)

    async def _count(self, session: AsyncSession, expression: str) -> int:
        result = await session.execute(
            text("SELECT count(*) FROM index_fts WHERE index_fts MATCH :q"), {"q": expression})
        return int(result.scalar() or 0)

    async def _ranked(self, session: AsyncSession, expression: str, depth: int) -> list[int]:
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        result = await session.execute(text(
            f"SELECT rowid FROM index_fts WHERE index_fts MATCH :q "
            f"ORDER BY bm25(index_fts, {weights}), rowid LIMIT :k"),
            {"q": expression, "k": depth})
        return [r[0] for r in result]

    async def _fts(self, session: AsyncSession, tokens: Sequence[str], category: str | None,
                   status: str | None, depth: int, alone: bool) -> tuple[list[int], int, str]:
        """The best `depth` nids, how many notes match in all, and the expression used.

        All words must match; when no note has them all, any word may (stopwords aside).
        Words in very many notes rank by the fields, then the name, then newest first, so
        bm25 never scores more than RANK_ALL_LIMIT notes.
        """
        core = fts_expression(tokens)
        expression = self._match(core, category, status, alone=alone)
        total = await self._count(session, expression)
        terms: list[str] = []
        if total == 0 and len(tokens) > 1:
            terms = fts_terms(tokens)
            terms = [t for t, w in zip(terms, tokens, strict=True)
                     if w.lower() not in STOPWORDS] or terms
            core = " OR ".join(terms)
            expression = self._match(core, category, status, alone=alone)
            total = await self._count(session, expression)
        if total == 0:
            return [], 0, expression
        if total <= RANK_ALL_LIMIT:
            return await self._ranked(session, expression, depth), total, expression
        narrowings = [(core, FIELD_COLUMNS), (core, "name")]
        if len(terms) > 1:
            # Rank by the rarer words first (what bm25 would weigh most anyway).
            counts = [(await self._count(session, self._match(t, category, status,
                                                              alone=alone)), t) for t in terms]
            rare: list[str] = []
            seen_count = 0
            for count, term in sorted(counts):
                if seen_count + count > RANK_ALL_LIMIT:
                    break
                rare.append(term)
                seen_count += count
            if rare:
                narrowings.insert(0, (" OR ".join(rare), TEXT_COLUMNS))
        ranked: list[int] = []
        for narrow_core, columns in narrowings:
            narrow = self._match(narrow_core, category, status, columns, alone=alone)
            if await self._count(session, narrow) <= RANK_ALL_LIMIT:
                ranked = await self._ranked(session, narrow, depth)
                break
        if len(ranked) < depth:
            newest = await session.execute(text(
                "SELECT rowid FROM index_fts WHERE index_fts MATCH :q ORDER BY rowid DESC "
                "LIMIT :k"), {"q": expression, "k": depth + len(ranked)})
            seen = set(ranked)
            ranked += [r[0] for r in newest if r[0] not in seen][:depth - len(ranked)]
        return ranked, total, expression

    async def _fts_members(self, session: AsyncSession, expression: str,
                           nids: Iterable[int]) -> set[int]:
        """Which of `nids` the expression matches (one rowid-range scan: FTS5 seeks ranges,
        while `rowid IN (...)` would re-run the match per id)."""
        ids = set(nids)
        if not ids:
            return set()
        result = await session.execute(text(
            "SELECT rowid FROM index_fts WHERE index_fts MATCH :q "
            "AND rowid >= :low AND rowid <= :high"),
            {"q": expression, "low": min(ids), "high": max(ids)})
        return {r[0] for r in result} & ids

    async def _like(self, session: AsyncSession, tokens: Sequence[str], category: str | None,
                    status: str | None, depth: int) -> tuple[list[int], int]:
        """Plain LIKE search for databases without FTS5 (basic, unranked)."""
        params: dict[str, Any] = {"v": self.key, "k": depth}
        where = "n.vault = :v" + self._filters(category, status, params)
        for i, token in enumerate(tokens):
            params[f"t{i}"] = f"%{token.lower()}%"
            where += (f" AND (lower(n.name) LIKE :t{i} OR lower(n.body) LIKE :t{i}"
                      f" OR lower(coalesce(n.one_liner, '')) LIKE :t{i})")
        ranked = await session.execute(text(
            f"SELECT n.nid FROM index_notes n WHERE {where} ORDER BY n.updated_ts DESC "
            f"LIMIT :k"), params)
        total = await session.execute(text(f"SELECT count(*) FROM index_notes n WHERE {where}"),
                                      params)
        return [r[0] for r in ranked], int(total.scalar() or 0)

    async def _summaries(self, session: AsyncSession, nids: Sequence[int],
                         scores: Mapping[int, float] | None = None) -> list[EntrySummary]:
        if not nids:
            return []
        result = await session.execute(text(
            f"SELECT {_SUMMARY_COLUMNS} FROM index_notes n "
            f"WHERE n.nid IN ({', '.join(str(int(i)) for i in nids)})"))
        rows = {r[0]: r for r in result}
        out = []
        for nid in nids:
            r = rows.get(nid)
            if r is None:
                continue
            snippet = r[6] or r[7] or r[8] or " ".join((r[9] or "").split())[:SNIPPET_CHARS]
            out.append(EntrySummary(path=r[1], id=r[2], name=r[3], category=r[4], status=r[5],
                                    snippet=snippet or None, updated=r[10],
                                    score=None if scores is None else scores.get(nid)))
        return out

    async def search(self, session: AsyncSession, query: str, *, category: str | None = None,
                     status: str | None = None, limit: int = 10) -> EntryList:
        """Words (FTS5, bm25) fused with typo-tolerant names (rapidfuzz) by reciprocal rank."""
        limit = max(0, min(int(limit), MAX_LIMIT))
        tokens = query_tokens(query if isinstance(query, str) else "")
        if not tokens:
            return EntryList([], 0)
        depth = max(limit * 3, 30)
        sqlite = _has_fts(session)
        expression = ""
        generation, alone = await self._vaults(session)
        if sqlite:
            ranked, total, expression = await self._fts(session, tokens, category, status, depth,
                                                        alone)
        else:
            ranked, total = await self._like(session, tokens, category, status, depth)
        names = await self._names(session, generation)
        fuzzy = names.match(" ".join(tokens), category, status)
        fuzzy_ranked = sorted(fuzzy, key=lambda n: -fuzzy[n])[:FUZZY_MAX_MATCHES]
        # Count fuzzy-only notes once: those the word query did not already match. Exact when
        # the word matches are few; above that, a name with every word exact counts as one of
        # them (checking thousands of ids would cost more than the search).
        outside = set(fuzzy_ranked) - set(ranked)
        if outside and sqlite and total > len(ranked):
            if total <= RANK_ALL_LIMIT:
                outside -= await self._fts_members(session, expression, outside)
            else:
                outside = {nid for nid in outside if fuzzy[nid] < 100.0}
        total += len(outside)
        scores: dict[int, float] = {}
        for ranking in (ranked, fuzzy_ranked):
            for rank, nid in enumerate(ranking, start=1):
                scores[nid] = scores.get(nid, 0.0) + 1.0 / (RRF_K + rank)
        # A note whose name is exactly the query is what the user means: it goes first.
        # Filtered here, not in SQL: with a category in the WHERE, SQLite prefers the category
        # index and scans thousands of rows; by name it is one index probe.
        named = await session.execute(text(
            "SELECT nid, category, status FROM index_notes WHERE vault = :v AND name_key = :q"),
            {"v": self.key, "q": text_key(query)})
        for nid, note_category, note_status in named:
            if (category is not None and note_category != category) or \
                    (status is not None and note_status != status):
                continue
            if nid not in scores:
                total += 1
            scores[nid] = scores.get(nid, 0.0) + 1.0
        fts_rank = {nid: i for i, nid in enumerate(ranked)}
        order = sorted(scores, key=lambda n: (-scores[n], fts_rank.get(n, depth), -fuzzy.get(n, 0)))
        entries = await self._summaries(session, order[:limit], scores)
        return EntryList(entries, max(total, len(entries)))

    async def list(self, session: AsyncSession, *, category: str | None = None,
                   status: str | None = None, limit: int = 10) -> EntryList:
        """Newest `updated` first."""
        limit = max(0, min(int(limit), MAX_LIMIT))
        params: dict[str, Any] = {"v": self.key, "k": limit}
        where = "n.vault = :v" + self._filters(category, status, params)
        result = await session.execute(text(
            f"SELECT n.nid FROM index_notes n WHERE {where} "
            f"ORDER BY n.updated_ts DESC, n.path LIMIT :k"), params)
        nids = [r[0] for r in result]
        total = await session.execute(text(f"SELECT count(*) FROM index_notes n WHERE {where}"),
                                      params)
        return EntryList(await self._summaries(session, nids), int(total.scalar() or 0))

    async def lookup(self, session: AsyncSession, ref: str) -> builtins.list[EntrySummary]:
        """Every note `ref` names exactly: id, path (.md optional), name or file stem."""
        ref = ref.strip() if isinstance(ref, str) else ""
        while ref.startswith("./"):
            ref = ref[2:]
        if not ref:
            return []
        bare = ref[:-3] if ref.lower().endswith(".md") else ref
        params = {"v": self.key, "ref": ref, "p1": ref, "p2": ref + ".md",
                  "name": text_key(ref), "stem": link_key(bare)}
        result = await session.execute(text(
            "SELECT nid, CASE WHEN id = :ref THEN 0 WHEN path IN (:p1, :p2) THEN 1 "
            "WHEN name_key = :name THEN 2 ELSE 3 END AS how FROM index_notes "
            "WHERE vault = :v AND (id = :ref OR path IN (:p1, :p2) OR name_key = :name "
            "OR stem_key = :stem) ORDER BY how, path"), params)
        rows = result.all()
        if any(how <= 1 for _, how in rows):  # an id or a path is exact; names only guess
            rows = [r for r in rows if r[1] == min(how for _, how in rows)]
        return await self._summaries(session, [nid for nid, _ in rows])

    async def backlinks(self, session: AsyncSession, rel: str) -> BacklinkList:
        """Notes linking to `rel`, links resolved now (Obsidian's rule), with the line."""
        key = link_key(rel)
        base = key.rsplit("/", 1)[-1]
        notes = await session.execute(
            text("SELECT path FROM index_notes WHERE vault = :v AND stem_key = :s"),
            {"v": self.key, "s": base})
        note_keys = {link_key(path): path for (path,) in notes}
        links = await session.execute(text(
            "SELECT l.source_path, l.target_key, l.line, n.name FROM index_links l "
            "JOIN index_notes n ON n.vault = l.vault AND n.path = l.source_path "
            "WHERE l.vault = :v AND l.target_base = :b ORDER BY l.source_path"),
            {"v": self.key, "b": base})
        rows = [*links, *await self._links_by_name(session, rel, base)]
        out: list[Backlink] = []
        seen: set[tuple[str, str]] = set()
        for source, target_key, line, name in rows:
            if source == rel or (target_key is not None
                                 and resolve_link(target_key, note_keys) != rel):
                continue
            if (source, line) not in seen:
                seen.add((source, line))
                out.append(Backlink(path=source, name=name, context=line))
        return BacklinkList(target=rel, backlinks=out)

    async def _links_by_name(self, session: AsyncSession, rel: str,
                             base: str) -> Sequence[tuple[str, None, str, str]]:
        """`[[Sara Lee]]` for the bot's `people/sara-lee.md` (name: Sara Lee): file names are
        slugs, so a link by the note's display name counts when no file has that name."""
        found = await session.execute(text(
            "SELECT name_key FROM index_notes WHERE vault = :v AND path = :p"),
            {"v": self.key, "p": rel})
        name_key = found.scalar()
        if not name_key or name_key == base:
            return []
        taken = await session.execute(text(
            "SELECT 1 FROM index_notes WHERE vault = :v AND stem_key = :k LIMIT 1"),
            {"v": self.key, "k": name_key})
        if taken.first() is not None:
            return []  # Obsidian would resolve the link to that file
        links = await session.execute(text(
            "SELECT l.source_path, l.line, n.name FROM index_links l "
            "JOIN index_notes n ON n.vault = l.vault AND n.path = l.source_path "
            "WHERE l.vault = :v AND l.target_base = :k AND l.target_key = :k "
            "ORDER BY l.source_path"),
            {"v": self.key, "k": name_key})
        return [(source, None, line, name) for source, line, name in links]

    async def summary(self, session: AsyncSession, *, max_names: int = 5) -> VaultSummary:
        """Counts per category (+ "other"), a few active projects, the inbox size."""
        result = await session.execute(text(
            "SELECT category, count(*) FROM index_notes WHERE vault = :v GROUP BY category"),
            {"v": self.key})
        counts = {c: 0 for c in CATEGORIES}
        counts["other"] = 0
        for category, count in result:
            counts[category if category in CATEGORIES else "other"] += int(count)
        active = await session.execute(text(
            "SELECT name FROM index_notes WHERE vault = :v AND category = 'projects' "
            "AND status = 'active' ORDER BY updated_ts DESC, path LIMIT :k"),
            {"v": self.key, "k": max(0, max_names)})
        return VaultSummary(counts=counts, total=sum(counts.values()),
                            active_projects=[r[0] for r in active],
                            inbox_waiting=counts["inbox"])
