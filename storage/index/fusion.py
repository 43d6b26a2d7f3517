"""One order from several signals: word stems, exact words, names and meaning, fused by score.

Each signal scores the notes it found; each is brought to 0..1 within the query (words and
names by their best, meaning between the nearest and the farthest of its list) and the fused
score is a weighted sum. A strong word match and a strong meaning match both count: unlike a
fusion by rank, a note that only one signal finds keeps what that signal says of it, and a
signal that found nothing clear (a paraphrase's words, scattered over many notes) cannot push
a note up by rank alone. The weights were chosen by measuring each signal alone and fused on
the long-note set and the real vault's sets (docs/performance.md, "Recall on long notes:
after"), not on any one query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

# A note's words: its stems' bm25 (any word) plus EXACT_SHARE of its exact words' (all of
# them when a note has them all), then brought to 0..1.
EXACT_SHARE = 0.5
# A note only the stems found must score this share of the best stems' score to be shown.
STEMS_ALONE = 0.5
WORDS = 0.5
MEANING = 0.75  # its best passage
SECOND = 0.5  # its second best passage: a note that says it twice
NAMES = 0.5
# all-MiniLM-L6-v2's cosines: a passage this near a question is about it (the scale's top at
# least), one this far is not (its bottom at most).
NEAR = 0.5
FAR = 0.25
# A note of the time the query names ("in May", "last week"): above a note of another time
# that matches as well.
IN_TIME = 0.5
# A note whose name is exactly the query is what the user means: above any fused score.
EXACT_NAME_BOOST = 10.0


def by_best(scores: Mapping[int, float]) -> dict[int, float]:
    """Scores divided by the best (0..1); nothing when no score is above 0."""
    best = max(scores.values(), default=0.0)
    return {nid: max(0.0, s) / best for nid, s in scores.items()} if best > 0 else {}


def weak(stems: Mapping[int, float], found: set[int]) -> set[int]:
    """The notes only the stems found (no exact word, name or meaning) that score below
    STEMS_ALONE of the best: one common word of the query, not what it asks for."""
    s = by_best(stems)
    return {nid for nid, score in s.items() if nid not in found and score < STEMS_ALONE}


def words(stems: Mapping[int, float], exact: Mapping[int, float],
          leave: AbstractSet[int] = frozenset()) -> dict[int, float]:
    """One word score per note from the stems' and the exact words' bm25 (`leave`: notes
    left out)."""
    s, e = by_best(stems), by_best(exact)
    return by_best({nid: s.get(nid, 0.0) + EXACT_SHARE * e.get(nid, 0.0)
                    for nid in (set(s) | set(e)) - leave})


def meaning(best: Mapping[int, float], second: Mapping[int, float]) -> dict[int, float]:
    """Each note's best and second passage by cosine, on a scale from the farthest of the
    list (0) to its nearest (1), weighted and summed. The scale's ends are held to at least
    NEAR and at most FAR: when even the nearest passage is only somewhat close, meaning
    speaks softly, and a lone note found by meaning is not made a perfect match."""
    if not best:
        return {}
    high = max(max(best.values()), NEAR)
    low = min(min(best.values()), FAR)
    if high <= low:
        return {nid: MEANING for nid in best}

    def scaled(cosine: float) -> float:
        return max(0.0, (cosine - low) / (high - low))

    return {nid: MEANING * scaled(best[nid]) + SECOND * scaled(second.get(nid, low))
            for nid in best}


def fuse(word_scores: Mapping[int, float], name_scores: Mapping[int, float],
         meaning_scores: Mapping[int, float]) -> dict[int, float]:
    """nid -> fused score (words and names weighted here; meaning already is)."""
    names = by_best(name_scores)
    out: dict[int, float] = {}
    for nid in set(word_scores) | set(names) | set(meaning_scores):
        out[nid] = (WORDS * word_scores.get(nid, 0.0) + NAMES * names.get(nid, 0.0)
                    + meaning_scores.get(nid, 0.0))
    return out


def boost(scores: dict[int, float], nids: Iterable[int],
          amount: float = EXACT_NAME_BOOST) -> None:
    """Raise these notes' scores (adding them when absent)."""
    for nid in nids:
        scores[nid] = scores.get(nid, 0.0) + amount


def order(scores: Mapping[int, float], words: Sequence[int],
          names: Mapping[int, float]) -> list[int]:
    """Best score first; ties by the word ranking, then by the name score."""
    word_rank = {nid: i for i, nid in enumerate(words)}
    last = len(words)
    return sorted(scores, key=lambda n: (-scores[n], word_rank.get(n, last), -names.get(n, 0)))


def signals(order: Sequence[int], lists: Mapping[str, Sequence[int]],
            exact: Iterable[int]) -> dict[int, dict[str, int]]:
    """nid -> {signal: rank in that signal's list (1 = best)} for the notes in `order`."""
    wanted = set(order)
    out: dict[int, dict[str, int]] = {nid: {} for nid in order}
    for name, ranked in lists.items():
        for rank, nid in enumerate(ranked, start=1):
            if nid in wanted and name not in out[nid]:
                out[nid][name] = rank
    for nid in exact:
        if nid in wanted:
            out[nid]["exact"] = 1
    return out
