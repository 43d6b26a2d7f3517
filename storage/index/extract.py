"""A note's bytes -> the row, FTS text and links the index stores (pure: no I/O, no SQL)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from storage.meaning.texts import embed_key, note_extra, texts_for_note
from storage.text import clean_values, name_text
from storage.types import ATTACHMENTS, CATEGORIES
from storage.vault.links import extract_links, link_key
from storage.vault.note_text import ParsedNote, find_block, load_yaml, normalise_scalar, parse_note


def text_key(value: str) -> str:
    """Case- and form-insensitive key for names and stems (matches links.link_key)."""
    return unicodedata.normalize("NFC", value).strip().casefold()


def meta_token(kind: str, value: str | None) -> str:
    """One FTS5 token standing for a vault, category or status, so filters run inside FTS5."""
    digest = hashlib.sha1((value or "").encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{kind}{digest[:16]}"


def indexable(rel: str) -> bool:
    """What Vault.scan yields: *.md outside dot-folders and `attachments/`."""
    parts = rel.split("/")
    return rel.lower().endswith(".md") and not any(p.startswith(".") for p in parts) \
        and parts[0] != ATTACHMENTS


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

    Same block rules (storage/vault/note_text.py `find_block`) and the same JSON-safe normalisation; anything libyaml
    does not load as a mapping goes to parse_note, which also words the error.
    """
    block = find_block(text) if _FAST_LOADER is not None else None
    if block is None:
        return parse_note(text)
    try:
        data = load_yaml(text[block.yaml_start:block.yaml_end])
    except Exception:  # any refusal: the reference parser decides and words the error
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
    name = name_text(name) if isinstance(name, str) else ""  # as Vault reads it
    name = name or name_text(stem) or stem
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
    row = clean_values(row)  # NUL and lone surrogates: no database stores them
    row["embed_key"] = embed_key(texts_for_note(row["name"], row["body"], note_extra(row)))
    row["meta"] = " ".join((meta_token("v", vault_key), meta_token("c", row["category"]),
                            meta_token("s", row["status"])))
    note = IndexedNote(row)
    found = list(extract_links(parsed.body))
    for key, value in _frontmatter_strings(fm):
        if "[[" in value:  # e.g. `related: "[[Sara]]"`
            found.extend(extract_links(f"{key}: {value}"))
    for link in found:
        target_key = link_key(link.target)
        if not target_key:
            continue  # `[[#heading]]`: a link inside the same note
        note.links.append(clean_values({
            "vault": vault_key, "source_path": rel, "target": link.target,
            "target_key": target_key, "target_base": target_key.rsplit("/", 1)[-1],
            "heading": link.heading, "alias": link.alias, "line": link.line,
        }))
    return note
