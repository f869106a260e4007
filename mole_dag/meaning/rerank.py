"""Re-ranking by meaning over candidates another retriever chose (issue 30, item 4): each
candidate's best passage by cosine to the query, and the two orders fused by reciprocal rank.

The fusion is reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) with their k = 60:
no weight or constant here was fitted on this project's question sets. An order counts by rank
only, so BM25's scores and cosines, on different scales, need no calibration against each
other."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np

from mole_dag.meaning.store import VectorCache
from mole_dag.text import sentence_spans

# The published constant of reciprocal rank fusion; not tuned here.
RRF_K = 60
# Words in one passage: a few sentences, well under the model's 128 word pieces (about 0.75
# words a piece in English prose, fewer in papers), so nothing of a passage is cut off and a
# batch stays cheap. A guess, flagged as one.
PASSAGE_WORDS = 60

K = TypeVar("K", bound=Hashable)


def passages(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """TEXT cut into runs of whole sentences of at most WORDS words (a longer sentence is a
    passage alone), in order."""
    out: list[str] = []
    run: list[str] = []
    n = 0
    for a, b in sentence_spans(text):
        s = " ".join(text[a:b].split())
        if not s:
            continue
        k = len(s.split())
        if run and n + k > words:
            out.append(" ".join(run))
            run, n = [], 0
        run.append(s)
        n += k
    if run:
        out.append(" ".join(run))
    return out


def fuse(rankings: Sequence[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Reciprocal rank fusion: each item scores the sum of 1 / (k + rank) over the rankings
    that hold it (rank from 1), best first; ties in the order of the first ranking, then of
    the next."""
    score: dict[K, float] = {}
    order: dict[K, tuple[int, ...]] = {}
    big = sum(len(r) for r in rankings) + 1
    for i, ranking in enumerate(rankings):
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
            pos = order.setdefault(item, tuple(big for _ in rankings))
            order[item] = (*pos[:i], rank, *pos[i + 1 :])
    return sorted(score.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def best_similarity(
    query: str, candidates: Sequence[tuple[K, str]], cache: VectorCache
) -> dict[K, float]:
    """For each key, the best cosine of QUERY to its passages (CANDIDATES: (key, passage)
    pairs). The vectors come from CACHE, which embeds only texts it has not seen."""
    if not candidates:
        return {}
    vecs = cache.get_many([query, *(p for _, p in candidates)])
    cos = np.clip(vecs[1:] @ vecs[0], -1.0, 1.0)
    best: dict[K, float] = {}
    for (key, _), c in zip(candidates, cos.tolist(), strict=True):
        if key not in best or c > best[key]:
            best[key] = float(c)
    return best
