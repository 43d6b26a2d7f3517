"""The answer without a model: from the notes that best match the question, the one to three
sentences that best answer it, each quoted from its note.

Notes come from the Store's fused search (words, names, meaning); their sentences are scored
by the question's words (weighted by how rare each is among the candidates) and, when the
embedding model is there, by meaning. Below a floor the answer is "nothing found", with the
closest notes offered. A question that is a filter ("what's due this week?", "which projects
are blocked?") lists the notes that pass it, each with the line that shows why.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

from storage.errors import StorageError
from storage.types import Entry, EntrySummary
from storage.vault.store import Store
from tools.answers.model import Answer, Source, closest, nothing_found
from tools.answers.question import Question
from tools.answers.sentences import Sentence, sentences, words

CANDIDATE_NOTES = 8  # notes whose sentences are read
MEANING_SENTENCES = 32  # sentences embedded per question (the best by words, then the rest)
MAX_SENTENCES = 3
# Found when the best sentence has this share of the question's word weight, or this cosine
# (all-MiniLM-L6-v2: unrelated text ~0.1-0.3). bench/bench_answers.py measures both.
WORD_FLOOR = 0.5
MEANING_FLOOR = 0.45
# ... or some of both: a word of the question (a name) and a meaning near the floor.
BOTH_FLOOR = (0.15, 0.38)
PER_NOTE = 2  # sentences quoted from one note, so the next best note gets a say
FILTER_LIMIT = 10


@dataclass
class _Scored:
    entry: Entry
    sentence: Sentence
    rank: int  # the note's rank in the search
    prior: float = 0.0  # what the note itself says: its name is in the question, ...
    words: float = 0.0  # share of the question's word weight in the sentence (0..1)
    meaning: float = 0.0  # cosine to the question (0 without the model)

    @property
    def score(self) -> float:
        prior = self.prior + 0.15 / (1 + self.rank) + 0.02 / (1 + self.sentence.position)
        return max(self.words, self.meaning * 1.2) + 0.5 * min(self.words, self.meaning) + prior

    @property
    def found(self) -> bool:
        return self.words >= WORD_FLOOR or self.meaning >= MEANING_FLOOR or (
            self.words >= BOTH_FLOOR[0] and self.meaning >= BOTH_FLOOR[1])


async def extractive(store: Store, question: Question) -> Answer:
    if question.filtered:
        answer = await _by_filter(store, question)
        if answer.found:
            return answer
        # Nothing passes the filter: the words may still be about something ("how do I list
        # the tasks due this week?" in a vault of documentation).
    query = question.query or question.text
    # A category read from a filter phrase is not a category of content: search them all.
    category = None if question.filtered else question.category
    result = await store.search(query, category=category, limit=CANDIDATE_NOTES + 2)
    hits = result.entries
    if not hits:
        return nothing_found(question.text, [])
    entries = await _read(store, hits[:CANDIDATE_NOTES])
    scored = _score_words(entries, query)
    _note_priors(scored, hits, query)
    await _score_meaning(store, scored, question.text)
    best = sorted(scored, key=lambda s: -s.score)
    if not best or not best[0].found:
        return nothing_found(question.text, closest(hits))
    chosen: list[_Scored] = []
    for s in best:
        if len(chosen) == MAX_SENTENCES or s.score < best[0].score * 0.75 or not s.found:
            break
        same_note = [c for c in chosen if c.entry.path == s.entry.path]
        if len(same_note) >= PER_NOTE or any(c.sentence.quote == s.sentence.quote
                                             for c in same_note):
            continue
        chosen.append(s)
    chosen.sort(key=lambda s: (s.rank, s.sentence.position))
    sources = [Source.of(s.entry, s.sentence.quote) for s in chosen]
    lines = [f"“{s.sentence.quote}” ({s.entry.name})" for s in chosen]
    return Answer(question=question.text, text="From your notes:\n" + "\n".join(lines),
                  found=True, sources=sources)


async def _read(store: Store, hits: list[EntrySummary]) -> list[tuple[int, Entry]]:
    out = []
    for rank, hit in enumerate(hits):
        try:
            out.append((rank, await store.get(hit.path)))
        except StorageError:  # gone since the search: not a source
            continue
    return out


def _score_words(entries: list[tuple[int, Entry]], query: str) -> list[_Scored]:
    wanted = set(words(query))
    scored = [_Scored(entry, s, rank) for rank, entry in entries for s in sentences(entry)]
    if not wanted or not scored:
        return scored
    # A word in few of the candidate sentences says more than one in many.
    docs = [set(words(s.sentence.quote + " " + s.sentence.heading + " " + s.entry.name))
            for s in scored]
    weight = {w: math.log(1 + len(docs) / (1 + sum(w in d for d in docs))) for w in wanted}
    total = sum(weight.values()) or 1.0
    for s, have in zip(scored, docs, strict=True):
        s.words = sum(weight[w] for w in wanted if w in have) / total
    return scored


def _note_priors(scored: list[_Scored], hits: list[EntrySummary], query: str) -> None:
    """A note whose whole name is in the question ("how do I set the priority" -> Priority),
    or that is the nearest by meaning, is likelier the one asked about."""
    wanted = set(words(query))
    nearest = {h.path for h in hits if (h.signals or {}).get("meaning") == 1}
    for s in scored:
        name = set(words(s.entry.name))
        if name and name <= wanted:
            s.prior += 0.25
        if s.entry.path in nearest:
            s.prior += 0.1


async def _score_meaning(store: Store, scored: list[_Scored], query: str) -> None:
    meaning = store.meaning
    if not scored or not await meaning.ready():
        return
    # Each candidate note's best sentences by words (its first ones when none match), so a
    # note the words miss can still be found by meaning.
    by_note: dict[str, list[_Scored]] = {}
    for s in sorted(scored, key=lambda s: (-s.words, s.sentence.position)):
        by_note.setdefault(s.entry.path, []).append(s)
    per_note = max(2, MEANING_SENTENCES // max(1, len(by_note)))
    picked = [s for group in by_note.values() for s in group[:per_note]][:MEANING_SENTENCES * 2]
    texts = [f"{s.entry.name}. {s.sentence.quote}" for s in picked]
    try:
        vectors = await asyncio.to_thread(meaning.embed_texts, [query, *texts])
    except Exception:  # meaning is a help, never a reason the answer fails
        return
    q = vectors[0]
    for s, v in zip(picked, vectors[1:], strict=True):
        s.meaning = float(q @ v)


async def _by_filter(store: Store, question: Question) -> Answer:
    after = question.due_after.isoformat() if question.due_after else None
    until = question.due_until.isoformat() if question.due_until else None
    if after is None and until is None:
        listed = await store.list(category=question.category, status=question.status,
                                  limit=FILTER_LIMIT)
    else:
        listed = await store.due(after=after, until=until, category=question.category,
                                 status=question.status, limit=FILTER_LIMIT)
    entries = [e for _, e in await _read(store, listed.entries)]
    if question.query:
        wanted = set(words(question.query))
        entries = [e for e in entries
                   if wanted & set(words(e.name + " " + " ".join(str(v) for v in
                                                               e.fields.values())
                                         + " " + e.body))] or entries
    if not entries:
        return nothing_found(question.text, [], what=f"No {question.describe()} in your notes.")
    sources, lines = [], []
    for entry in entries:
        due = str(entry.fields.get("due_date") or "")[:10]
        quote = f"due_date: {due}" if due and (after or until) else \
            f"status: {entry.status}" if entry.status else entry.name
        sources.append(Source.of(entry, quote))
        lines.append(f"{entry.name}" + (f" (due {due})" if due else "")
                     + (f" [{entry.status}]" if entry.status else ""))
    more = listed.total - len(entries)
    head = f"{question.describe().capitalize()}: {len(entries)} note(s)"
    tail = f"\n…and {more} more" if more > 0 else ""
    return Answer(question=question.text, text=head + "\n" + "\n".join(lines) + tail,
                  found=True, sources=sources)
