"""A plain textbook BM25 (Okapi), the anchor the product's search is measured against.

k1 = 1.2, b = 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5)) (never negative), over each
note's whole text as given, lowercased and split into words (`\\w+`): no stemming, no stopwords,
no fields. A query scores every note by its distinct words; notes scoring 0 are not returned.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    def __init__(self, docs: Sequence[tuple[str, str]], k1: float = 1.2,
                 b: float = 0.75) -> None:
        """docs: (key, text) pairs, e.g. (a note's path, its title and body)."""
        self.keys = [key for key, _ in docs]
        self.k1 = k1
        counts = [Counter(words(text)) for _, text in docs]
        lengths = [sum(c.values()) for c in counts]
        average = sum(lengths) / max(1, len(lengths))
        self.norm = [k1 * (1 - b + b * n / average) for n in lengths]
        self.postings: dict[str, list[tuple[int, int]]] = {}  # word -> (doc, frequency)
        for i, c in enumerate(counts):
            for word, f in c.items():
                self.postings.setdefault(word, []).append((i, f))
        n = len(docs)
        self.idf = {w: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5))
                    for w, p in self.postings.items()}

    def rank(self, query: str, k: int = 10) -> list[str]:
        """The keys of the k best notes for the query, best first (ties by key)."""
        scores: dict[int, float] = {}
        for word in set(words(query)):
            idf = self.idf.get(word, 0.0)
            for i, f in self.postings.get(word, ()):
                scores[i] = scores.get(i, 0.0) + idf * f * (self.k1 + 1) / (f + self.norm[i])
        best = sorted(scores, key=lambda i: (-scores[i], self.keys[i]))
        return [self.keys[i] for i in best[:k] if scores[i] > 0]
