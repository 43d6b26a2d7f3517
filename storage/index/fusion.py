"""One order from several ranked lists (words, names, ...): reciprocal-rank fusion.

Each signal contributes a list of nids, best first; a note's score is the sum over the lists of
1 / (RRF_K + its rank there). Adding a signal (e.g. vectors) is one more list to `fuse`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

RRF_K = 60
# A note whose name is exactly the query is what the user means: above any fused score
# (the best possible from n lists is n / (RRF_K + 1)).
EXACT_NAME_BOOST = 1.0


def fuse(rankings: Iterable[Sequence[int]], k: int = RRF_K) -> dict[int, float]:
    """nid -> reciprocal-rank score summed over the ranked lists."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, nid in enumerate(ranking, start=1):
            scores[nid] = scores.get(nid, 0.0) + 1.0 / (k + rank)
    return scores


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
