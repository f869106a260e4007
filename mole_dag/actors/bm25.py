"""Okapi BM25 over a small in-memory collection.

Hand-written rather than a dependency because it is thirty lines and the collection (a user's
folder) fits in memory; DuckDB's FTS extension would be the alternative but it is downloaded at
run time, which an offline default cannot do."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# The textbook defaults (Robertson & Zaragoza); nothing here has been tuned against this corpus.
K1 = 1.5
B = 0.75


@dataclass
class BM25:
    doc_freqs: list[dict[str, int]]
    doc_lens: list[int]
    df: dict[str, int]

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]]) -> BM25:
        freqs = [dict(Counter(d)) for d in docs]
        df: Counter[str] = Counter()
        for f in freqs:
            df.update(f.keys())
        return cls(freqs, [len(d) for d in docs], dict(df))

    @property
    def n(self) -> int:
        return len(self.doc_lens)

    def idf(self, term: str) -> float:
        n_t = self.df.get(term, 0)
        return math.log(1 + (self.n - n_t + 0.5) / (n_t + 0.5))

    def scores(self, query: Sequence[str]) -> list[float]:
        if not self.n:
            return []
        avgdl = sum(self.doc_lens) / self.n or 1.0
        out = [0.0] * self.n
        for term in set(query):
            if term not in self.df:
                continue
            idf = self.idf(term)
            for i, f in enumerate(self.doc_freqs):
                tf = f.get(term)
                if tf:
                    norm = K1 * (1 - B + B * self.doc_lens[i] / avgdl)
                    out[i] += idf * tf * (K1 + 1) / (tf + norm)
        return out

    def top(self, query: Sequence[str], k: int) -> list[tuple[int, float]]:
        ranked = sorted(
            ((i, s) for i, s in enumerate(self.scores(query)) if s > 0),
            key=lambda p: (-p[1], p[0]),
        )
        return ranked[:k]
