"""Candidate pairs: which claims are worth comparing. A cheap filter in front of an expensive
judgement, so recall matters and precision barely does: a spurious candidate costs one
adjudication, a missed one is a contradiction nobody sees.

IDF is computed over the session's own claims. Every claim in a session about coffee says
"coffee", so that word carries almost no information about which claims relate; "bladder",
"carcinogen" and "30" carry most of it. Cosine rather than raw overlap, because a long claim
shares more words with everything by accident."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mole_dag.text import terms

# The cap, not a similarity threshold, bounds cost: a threshold would need a number nobody can
# justify and silently drops real edges when wrong; the cap costs at most this many calls per
# claim and is honest about being arbitrary.
DEFAULT_MAX_CANDIDATES = 8


@dataclass(frozen=True)
class ClaimText:
    id: str
    text: str


@dataclass(frozen=True, order=True)
class Pair:
    """Two claims in canonical order (a < b), so a pair reached from both ends is one pair."""

    a: str
    b: str

    @staticmethod
    def of(x: str, y: str) -> Pair:
        return Pair(x, y) if x < y else Pair(y, x)


class LexicalRetriever:
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
        # Ties by position in the pool (the caller's content order), not by id: ids hash the
        # session id, so an id tie-break picks different candidates in identical runs.
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:k]


def candidate_pairs(
    pool: Sequence[ClaimText],
    target_ids: set[str],
    judged: set[Pair],
    k: int = DEFAULT_MAX_CANDIDATES,
) -> list[Pair]:
    """Pairs to settle this pass: up to k per target claim, against the whole session's claims,
    canonical, deduplicated, and never one already judged."""
    retriever = LexicalRetriever(pool)
    out: dict[Pair, None] = {}
    for i, claim in enumerate(retriever.pool):
        if claim.id not in target_ids:
            continue
        for j, _ in retriever.candidates(i, k):
            pair = Pair.of(claim.id, retriever.pool[j].id)
            if pair not in judged:
                out[pair] = None
    # In retrieval order (pool order, then similarity), which is content order: sorting by id
    # would order the judge's batches by hashes of the session id.
    return list(out)
