"""The search index of the vaults: rows in the shared database, rebuilt from the files.

Rows live in the shared database (tables of migration 0002), keyed by the vault root, so one
database serves many users' vaults. The files stay the source of truth: a refresh compares them
with the rows by (mtime, size), then by sha256, and never writes to the vault. The caller owns
the transaction (commit after `refresh`/`refresh_paths`).

Modules: `extract` (a note's bytes -> its row, passages and links), `passages` (a body cut
into passages), `note_dates` (a note's day), `refresh` (bring the rows in line with the
files), `words` (the words of a query), `time_words` (the time a query names), `fts5` /
`tsvector` (words and stems on SQLite / PostgreSQL), `fuzzy_names` (typo-tolerant names,
rapidfuzz), `meaning_probe` (search by meaning), `fusion` (the signals fused by score),
`summaries` and `snippets` (a hit with its date and the passage that matched), `backlinks`,
and `search_index` (`SearchIndex`, the one class callers use).
"""

from storage.index.extract import extract_note, read_note, text_key
from storage.index.fts5 import fts_expression
from storage.index.search_index import SearchIndex
from storage.index.words import query_tokens

__all__ = ["SearchIndex", "extract_note", "fts_expression", "query_tokens", "read_note",
           "text_key"]
