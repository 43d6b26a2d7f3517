"""What of a note gets a sentence vector: its title plus the start of its body, in windows.

Pure functions, no model. The embedder reads at most 256 tokens per text, and the cost of
indexing grows with the number of texts, so a note gets its title + the first `window_words`
words, plus (when `windows` > 1) more title-prefixed windows of the body. The measured trade-off
between recall and notes per second is in docs/performance.md ("Search by meaning").

Markdown that carries no meaning for the model (link targets, URLs, comments, emphasis marks,
table rules) is reduced to its words first, so a window holds words rather than punctuation.
"""

from __future__ import annotations

import hashlib
import re

WINDOW_WORDS = 120  # ~160-200 WordPiece tokens of English prose: fits the 256-token limit
DEFAULT_WINDOWS = 1

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_OBSIDIAN_COMMENT = re.compile(r"%%.*?%%", re.S)
_EMBED = re.compile(r"!\[\[[^\]]*\]\]|!\[[^\]]*\]\([^)]*\)")
_WIKILINK = re.compile(r"\[\[([^\]|#^]*)(?:#\^?([^\]|]*))?(?:\|([^\]]*))?\]\]")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_BLOCK_ID = re.compile(r"(?<!\S)\^[A-Za-z0-9-]+$", re.M)
_MARKUP = re.compile(r"[*_`~=|>#]+|^\s*[-+]\s+\[.\]\s+|^\s*(?:[-+]|\d+\.)\s+|-{3,}", re.M)
_SPACE = re.compile(r"\s+")


def _link_text(match: re.Match[str]) -> str:
    target, heading, alias = match.group(1), match.group(2), match.group(3)
    if alias:
        return alias
    target = target.rsplit("/", 1)[-1]
    return f"{target} {heading}" if heading else target


def plain_words(markdown: str) -> list[str]:
    """The words of a markdown body, with link targets, URLs and markup reduced or removed."""
    text = _HTML_COMMENT.sub(" ", markdown)
    text = _OBSIDIAN_COMMENT.sub(" ", text)
    text = _EMBED.sub(" ", text)
    text = _WIKILINK.sub(_link_text, text)
    text = _MD_LINK.sub(r"\1", text)
    text = _URL.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _BLOCK_ID.sub(" ", text)
    text = _MARKUP.sub(" ", text)
    return _SPACE.sub(" ", text).split()


def note_text_for_embedding(name: str, body: str, *, windows: int = DEFAULT_WINDOWS,
                            window_words: int = WINDOW_WORDS, extra: str = "",
                            title_alone: bool = True) -> list[str]:
    """The texts to embed for one note: always at least one, never two the same.

    With `title_alone`, the bare title comes first: short (cheap to embed), it matches
    questions that name the note's subject, typos included, better than a long window does.
    Each window text is the title, then `extra` on the first window only (e.g. a one-liner or
    next action, which say what the note is about), then the window's body words. Windows do
    not overlap; a body shorter than `windows` windows gives fewer texts.
    """
    if windows < 1 or window_words < 1:
        raise ValueError("windows and window_words must be at least 1")
    title = _SPACE.sub(" ", name).strip()
    words = plain_words(body)
    texts: list[str] = [title] if title_alone and title else []
    for i in range(windows):
        chunk = words[i * window_words:(i + 1) * window_words]
        if i > 0 and not chunk:
            break
        lead = title
        if i == 0 and extra.strip():
            lead = f"{title}. {_SPACE.sub(' ', extra).strip()}" if title else extra.strip()
        text = f"{lead}\n{' '.join(chunk)}".strip()
        if text not in texts:
            texts.append(text)
    return texts or [""]


# What of a note gets vectors (measured in docs/performance.md, "Search by meaning"): one
# vector per note, "title. one-liner / next action / context" + the first 120 words. A
# second window or the bare title as a vector of its own did not find more notes in the
# eval, and one vector per note halves the memory and the time of a search at 50k notes.
# Part of the model id stored with the vectors: changing it re-embeds every note.
RECIPE = "1x120"
EXTRA_FIELDS = ("one_liner", "next_action", "context")
_BODY_CHARS = 40 * WINDOW_WORDS * 4  # room for 120 words between much markup


def note_extra(fields: dict[str, object]) -> str:
    """The short fields that say what a note is about, as one line."""
    return " ".join(str(fields[f]).strip() for f in EXTRA_FIELDS
                    if isinstance(fields.get(f), str) and str(fields[f]).strip())


def texts_for_note(name: str, body: str, extra: str = "") -> list[str]:
    """The texts embedded for one note under RECIPE."""
    # Only the start of the body is embedded: no need to clean a 1 MB paste to find it.
    return note_text_for_embedding(name, body[:_BODY_CHARS], windows=1,
                                   window_words=WINDOW_WORDS, extra=extra, title_alone=False)


def embed_key(texts: list[str]) -> str:
    """Names what a note's vectors are made from (RECIPE + its texts): equal keys, equal
    vectors, so a note that is moved or whose status changes keeps its vectors."""
    data = "\x00".join((RECIPE, *texts)).encode("utf-8", "replace")
    return hashlib.sha256(data).hexdigest()[:32]
