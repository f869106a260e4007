"""Okapi BM25 over an in-memory collection, as postings lists in numpy arrays.

Each term's postings (the documents that contain it, with that term's whole BM25 contribution
to each) are computed once at build time, so a query reads only the postings of its own terms
and sums them with one `bincount`, then selects the top k without sorting every score.

Why our own postings lists rather than bm25s (issue 14): measured side by side on the same
10k documents and the same terms (bench/bm25_bench.py, BENCHMARKS.md), bm25s configured with
this formula gives the same rankings and about the same query time, while this builds in a
quarter to a half of its time and needs only numpy (bm25s imports scipy.sparse too, twice the
import cost in a session that searches a small folder). The top-k selection and the
query-term handling would be ours either way: bm25s's top-k does not keep the corpus-order
tie-break this ranking promises. DuckDB's FTS extension stays out because it is downloaded at
run time, which an offline default cannot do.

Scores are the numbers the earlier hand-written scan gave, bit for bit
(tests/test_bm25_local.py checks them against a transcription of it): the per-posting weights
are computed in the same order of operations, and idf with `math.log`, not numpy's vectorised
log, whose last bit may differ. One deliberate change: a query's terms are summed in the order
first mentioned; the scan used set order, which follows string hashing and so varied from one
process to the next in the last bit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# The textbook defaults (Robertson & Zaragoza); nothing here has been tuned against this corpus.
K1 = 1.5
B = 0.75


class BM25:
    """Build with `BM25.build(docs)`, each document a sequence of terms."""

    def __init__(
        self,
        n: int,
        vocab: dict[str, int],
        df: list[int],
        starts: npt.NDArray[np.int64],
        docs: npt.NDArray[np.int32],
        weights: npt.NDArray[np.float64],
    ) -> None:
        self._n = n
        self._vocab = vocab  # term -> its row in the postings
        self._df = df  # by term id: how many documents hold the term
        # The postings of term t are docs[starts[t]:starts[t + 1]] (ascending document index)
        # with their contributions weights[starts[t]:starts[t + 1]].
        self._starts = starts
        self._docs = docs
        self._weights = weights

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]]) -> BM25:
        # numpy loads here, not at import: a session with no local corpus must not pay for it
        # (tests/test_import_cost.py).
        import numpy as np

        n = len(docs)
        width = max(n, 1)
        # Term ids in order of first occurrence; dict.fromkeys and map run in C, a third of
        # the time of a setdefault per token in a generator. Two passes over the documents
        # rather than one flattened list, which would hold a pointer per token.
        vocab = {t: i for i, t in enumerate(dict.fromkeys(chain.from_iterable(docs)))}
        n_tokens = sum(map(len, docs))
        # One key per token, term-major (term id * n + document), sorted: each run of equal
        # keys is one posting and its length the term frequency, ordered by term then
        # document. Operations in place and temporaries freed early: building needs less than
        # the per-document Counters of the first version did (bench/bm25_bench.py, "build MB").
        keys = np.fromiter(
            map(vocab.__getitem__, chain.from_iterable(docs)), dtype=np.int64, count=n_tokens
        )
        lens = np.fromiter(map(len, docs), dtype=np.int64, count=n)
        keys *= width
        # int32 document numbers (a corpus of 2 billion documents is not this index's job):
        # half the size of the temporary the addition needs.
        keys += np.repeat(np.arange(n, dtype=np.int32), lens)
        keys.sort()
        run_starts = np.ones(keys.size, dtype=bool)
        np.not_equal(keys[1:], keys[:-1], out=run_starts[1:])
        posting_keys = keys[run_starts]
        del keys
        first = np.flatnonzero(run_starts)
        del run_starts
        tf = np.empty_like(first)
        np.subtract(first[1:], first[:-1], out=tf[:-1])
        if first.size:
            tf[-1] = n_tokens - first[-1]
        del first
        term = np.empty(posting_keys.size, dtype=np.int32)
        np.floor_divide(posting_keys, width, out=term)
        doc = np.empty(posting_keys.size, dtype=np.int32)
        np.remainder(posting_keys, width, out=doc)
        del posting_keys
        df_arr = np.bincount(term, minlength=len(vocab))
        starts = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df_arr, out=starts[1:])
        df = df_arr.tolist()
        # idf per term with math.log (see the module docstring), then each posting's whole
        # contribution, in the order of operations of the formula as first written:
        # idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)).
        idf = np.array([_idf(n, c) for c in df], dtype=np.float64)
        avgdl = float(lens.sum()) / n if n else 0.0
        avgdl = avgdl or 1.0
        norm = K1 * (1 - B + B * lens.astype(np.float64) / avgdl)
        weights = idf[term]
        del term
        weights *= tf
        weights *= K1 + 1
        denominator = norm[doc]
        denominator += tf
        del tf
        weights /= denominator
        return cls(n, vocab, df, starts, doc, weights)

    @property
    def n(self) -> int:
        return self._n

    def idf(self, term: str) -> float:
        t = self._vocab.get(term)
        return _idf(self._n, 0 if t is None else self._df[t])

    def _score_array(self, query: Sequence[str]) -> npt.NDArray[np.float64] | None:
        """Every document's score for QUERY, or None when no query term is in the index. Each
        distinct term counts once, in the order of first mention (a fixed order, so a score's
        last bit does not depend on string hashing)."""
        import numpy as np

        rows = [self._vocab[t] for t in dict.fromkeys(query) if t in self._vocab]
        if not rows:
            return None
        spans = [slice(self._starts[r], self._starts[r + 1]) for r in rows]
        summed = np.bincount(
            np.concatenate([self._docs[s] for s in spans]),
            weights=np.concatenate([self._weights[s] for s in spans]),
            minlength=self._n,
        )
        # Already float64 with weights; numpy's stubs type bincount as integer counts.
        return summed.astype(np.float64, copy=False)

    def scores(self, query: Sequence[str]) -> list[float]:
        got = self._score_array(query)
        return [0.0] * self._n if got is None else got.tolist()

    def top(self, query: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The k best documents with a positive score, as (index, score), best first; equal
        scores in corpus order."""
        if k <= 0:
            return []
        s = self._score_array(query)
        if s is None:
            return []
        import numpy as np

        hit = np.flatnonzero(s > 0)
        if hit.size > k:
            # Keep everything at least as good as the k-th best (ties included), so the
            # corpus-order tie-break below sees every candidate, then order only those.
            vals = s[hit]
            kth = np.partition(vals, hit.size - k)[hit.size - k]
            hit = hit[vals >= kth]
        order = np.lexsort((hit, -s[hit]))[:k]
        best = hit[order]
        return list(zip(best.tolist(), s[best].tolist(), strict=True))


def _idf(n: int, n_t: int) -> float:
    """Robertson & Zaragoza's idf with the +1 inside the log (Lucene's), so it stays positive."""
    return math.log(1 + (n - n_t + 0.5) / (n_t + 0.5))
