"""The lexical retriever as it was before issue 14: every target scored against every claim.

Kept as the straightforward reference the indexed retriever (mole_dag/verifier/retriever.py) must
agree with exactly: same candidates, same similarity values, same order, ties included. Cassette
tests key recorded model answers on prompts built from these candidates, so "nearly the same" is
a regression. Used by tests/test_retriever.py and, for before/after figures, by
bench/verifier_bench.py --reference."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from mole_dag.text import terms
from mole_dag.verifier.retriever import DEFAULT_MAX_CANDIDATES, ClaimText, Pair


class ReferenceRetriever:
    def __init__(self, pool: Sequence[ClaimText]) -> None:
        self.pool = list(pool)
        bags = [Counter(terms(c.text)) for c in self.pool]
        df: Counter[str] = Counter()
        for bag in bags:
            df.update(bag.keys())
        n = len(self.pool)
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
        self.vectors = [self._vector(b) for b in bags]

    def _vector(self, bag: Counter[str]) -> dict[str, float]:
        vec = {t: (1 + math.log(tf)) * self.idf.get(t, 1.0) for t, tf in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}

    def similarity(self, i: int, j: int) -> float:
        a, b = self.vectors[i], self.vectors[j]
        if len(a) > len(b):
            a, b = b, a
        return sum(v * b.get(t, 0.0) for t, v in a.items())

    def candidates(
        self, target_index: int, k: int = DEFAULT_MAX_CANDIDATES
    ) -> list[tuple[int, float]]:
        scored = []
        for j in range(len(self.pool)):
            if j == target_index:
                continue
            s = self.similarity(target_index, j)
            if s > 0:
                scored.append((j, s))
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:k]


def reference_candidate_pairs(
    pool: Sequence[ClaimText],
    target_ids: set[str],
    judged: set[Pair],
    k: int = DEFAULT_MAX_CANDIDATES,
) -> list[Pair]:
    retriever = ReferenceRetriever(pool)
    done = {Pair.of(p.a, p.b) for p in judged}
    out: dict[Pair, Pair] = {}
    for i, claim in enumerate(retriever.pool):
        if claim.id not in target_ids:
            continue
        for j, _ in retriever.candidates(i, k):
            key = Pair.of(claim.id, retriever.pool[j].id)
            if key not in done and key not in out:
                # In pool order, as the judge is shown it (issue 33).
                first, second = sorted((i, j))
                out[key] = Pair(retriever.pool[first].id, retriever.pool[second].id)
    return list(out.values())
