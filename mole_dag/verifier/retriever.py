"""Candidate pairs: which claims are worth comparing. A cheap filter in front of an expensive
judgement, so recall matters and precision barely does: a spurious candidate costs one
adjudication, a missed one is a contradiction nobody sees.

IDF is computed over the session's own claims. Every claim in a session about coffee says
"coffee", so that word carries almost no information about which claims relate; "bladder",
"carcinogen" and "30" carry most of it. Cosine rather than raw overlap, because a long claim
shares more words with everything by accident."""

from __future__ import annotations

import heapq
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import mul

from mole_dag.text import terms

# The cap, not a similarity threshold, bounds cost: a threshold would need a number nobody can
# justify and silently drops real edges when wrong; the cap costs at most this many calls per
# claim and is honest about being arbitrary.
DEFAULT_MAX_CANDIDATES = 8
# Slack on every bound comparison in `LexicalRetriever.candidates`: bounds and partial sums are
# added in another order than `similarity` adds, so they can be off by a few units in the last
# place (about 1e-15 relative for a claim's few dozen terms). 1e-6 is far above that and far
# below any difference that could matter, and it only ever keeps a claim for an exact check.
_MARGIN = 1.0 + 1e-6
# Leaving the rest of a target's postings unvisited trades each skipped posting (one Python
# multiply-add, ~60 ns) for an exact similarity (~2 us) of every touched claim that might still
# make the top k. Measured on the bench's real claims and on topical pools, stopping pays only
# when the skipped postings outnumber those claims about this many times over.
_EXACT_COST = 30
# Below this many postings per claim of the pool, a target's postings are all accumulated at
# once in C (numpy), which costs less than deciding whether to stop: the bench's real claims
# never reach it (their MaxScore bounds never allowed a stop), a one-topic pool does. A guess
# from those two, flagged as one.
_PRUNE_FROM = 0.5


@dataclass(frozen=True)
class ClaimText:
    id: str
    text: str


@dataclass(frozen=True, order=True)
class Pair:
    """Two claims. `Pair.of` puts them in canonical order (a < b), so a pair reached from both
    ends is one pair; candidate_pairs puts them in the session's content order, the order the
    judge is shown them in."""

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
        # Each vector's terms and weights as lists, in the dict's own order, for `similarity`.
        self._terms = [list(v) for v in self.vectors]
        self._values = [list(v.values()) for v in self.vectors]
        # The inverted index: for each term, the claims that hold it and their weights. A claim
        # sharing no term with the target scores exactly 0 and is never a candidate, so only
        # these postings need visiting (issue 14: scoring every claim against every claim made
        # the verifier quadratic).
        self._claims: dict[str, list[int]] = {}
        self._weights: dict[str, list[float]] = {}
        for j, vec in enumerate(self.vectors):
            for t, w in vec.items():
                self._claims.setdefault(t, []).append(j)
                self._weights.setdefault(t, []).append(w)
        # Each term's largest weight in any claim: `v * _max_weight[t]` bounds what term t can
        # add to any claim's similarity with a target weighing it v (MaxScore's upper bound).
        self._max_weight = {t: max(ws) for t, ws in self._weights.items()}
        # The same postings as arrays, for accumulating a target's in one C pass. numpy is
        # imported here, not with the module: the CLI and the pipeline import no heavy package
        # before they use it (tests/test_import_cost.py).
        import numpy as np

        self._np = np
        self._claims_np: dict[str, np.ndarray] = {
            t: np.asarray(c, dtype=np.intp) for t, c in self._claims.items()
        }
        self._weights_np: dict[str, np.ndarray] = {
            t: np.asarray(w, dtype=np.float64) for t, w in self._weights.items()
        }
        # Work done by `candidates`, observable by tests without timing anything: postings
        # visited, and exact similarities computed.
        self.postings_visited = 0
        self.pairs_scored = 0

    def _vector(self, bag: Counter[str]) -> dict[str, float]:
        vec = {t: (1 + math.log(tf)) * self.idf.get(t, 1.0) for t, tf in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}

    def similarity(self, i: int, j: int) -> float:
        """Cosine of two claims' vectors: the products over the shorter vector's terms, in its
        order, added by the built-in sum. The arithmetic is exactly what it was before issue 14
        (only the loop moved into C): cassette tests key recorded answers on prompts built from
        these candidates, so a last-bit difference that reorders a tie would be a regression."""
        if len(self._terms[i]) > len(self._terms[j]):
            i, j = j, i
        other = self.vectors[j]
        return sum(map(mul, self._values[i], map(other.get, self._terms[i], repeat(0.0))))

    def candidates(
        self, target_index: int, k: int = DEFAULT_MAX_CANDIDATES
    ) -> list[tuple[int, float]]:
        """The k most similar claims, by similarity then pool position: exactly the all-pairs
        answer (tests/retriever_reference.py keeps that version), from the postings of the
        target's terms only.

        Similarities are first accumulated term by term, one multiply-add per posting: the same
        products as `similarity` adds, in another order, so equal to it only up to rounding.
        Those sums pick the claims that can be in the top k (every claim within a rounding
        margin of the k-th best sum, so a tie is never lost); their exact similarities decide.
        Terms go in MaxScore order, and once the terms left can add less than the k-th best sum
        so far (with the margin), their postings are skipped: see `_pays_to_stop`."""
        if k < 0:
            raise ValueError("k must be at least 0")
        vec = self.vectors[target_index]
        if not vec or k == 0:
            return []
        ahead = sum(len(self._claims[t]) for t in vec)
        # Deciding whether to stop costs a pass over the touched claims and a sort, so only
        # where a stop could pay: many postings still ahead, at least as many as visited, and
        # more than a C pass over all of them would cost (see `_PRUNE_FROM`).
        if ahead < _EXACT_COST * k or ahead < _PRUNE_FROM * len(self.pool):
            return self._all_postings(target_index, k)
        # A fresh zeroed accumulator per target: a C fill of n slots (about 1 us at 2000 claims,
        # measured), cheaper than resetting the touched slots in a Python loop up to several
        # thousand claims.
        acc = [0.0] * len(self.pool)
        # MaxScore (exact dynamic pruning): terms by upper bound, largest first, so common
        # terms, whose low IDF makes their bounds small and whose postings are the longest,
        # come last and are the ones left unvisited once they cannot change the top k.
        order = sorted(vec, key=lambda t: vec[t] * self._max_weight[t], reverse=True)
        bounds = [vec[t] * self._max_weight[t] for t in order]
        lists: list[list[int]] = []
        visited = 0
        rest: float | None = None  # what the unvisited terms can add to a claim, if any were left
        for x, t in enumerate(order):
            if ahead >= max(_EXACT_COST * k, visited) and self._pays_to_stop(
                target_index, k, acc, lists, bounds, x, ahead
            ):
                # Summed afresh, not as a running difference: a small remainder of a large
                # total would carry the total's rounding error.
                rest = sum(bounds[x:])
                break
            v = vec[t]
            claims = self._claims[t]
            for j, w in zip(claims, self._weights[t], strict=True):
                acc[j] += v * w
            lists.append(claims)
            visited += len(claims)
            ahead -= len(claims)
        self.postings_visited += visited
        seen = set().union(*lists)
        seen.discard(target_index)
        touched = list(seen)
        if rest is not None:
            scored = self._best_by_bound(target_index, k, acc, touched, rest)
        elif len(touched) > k:
            sums = list(map(acc.__getitem__, touched))
            # The k-th best sum less the margin: a claim below it has k claims whose sums exceed
            # its own by more than rounding could account for, so it cannot be in the top k,
            # not even by a tie. (A C sort is cheaper here than heapq.nlargest's Python loop.)
            floor = sorted(sums, reverse=True)[k - 1] / _MARGIN
            keep = list(compress(touched, map(floor.__le__, sums)))
            self.pairs_scored += len(keep)
            scored = [(j, self.similarity(target_index, j)) for j in keep]
        else:
            self.pairs_scored += len(touched)
            scored = [(j, self.similarity(target_index, j)) for j in touched]
        # Ties by position in the pool (the caller's content order), not by id: ids hash the
        # session id, so an id tie-break picks different candidates in identical runs.
        scored.sort(key=lambda p: (-p[1], p[0]))
        return [p for p in scored if p[1] > 0][:k]

    def _all_postings(self, target_index: int, k: int) -> list[tuple[int, float]]:
        """`candidates` from every posting of the target's terms, accumulated in one C pass
        (issue 14: per target, the touched claims grow with the pool, so a Python pass over
        them made retrieval grow 2.4-2.9x per doubling). The sums are the same products added
        in another order; the margin and the exact similarities make the answer the same."""
        np = self._np
        vec = self.vectors[target_index]
        idx = np.concatenate([self._claims_np[t] for t in vec])
        contrib = np.concatenate([self._weights_np[t] * vec[t] for t in vec])
        self.postings_visited += len(idx)
        acc = np.bincount(idx, weights=contrib, minlength=len(self.pool))
        touched = np.unique(idx)
        touched = touched[touched != target_index]
        if len(touched) > k:
            sums = acc[touched]
            # The k-th best sum less the margin: a claim below it has k claims whose sums
            # exceed its own by more than rounding could account for, so it cannot be in the
            # top k, not even by a tie.
            floor = np.partition(sums, len(sums) - k)[len(sums) - k] / _MARGIN
            keep = touched[sums >= floor].tolist()
        else:
            keep = touched.tolist()
        self.pairs_scored += len(keep)
        scored = [(j, self.similarity(target_index, j)) for j in keep]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return [p for p in scored if p[1] > 0][:k]

    def _pays_to_stop(
        self,
        target_index: int,
        k: int,
        acc: list[float],
        lists: list[list[int]],
        bounds: list[float],
        x: int,
        ahead: int,
    ) -> bool:
        """Whether the terms from `x` on can be left unvisited, and should be.

        Can: all weights are positive, so a touched claim's sum so far is a lower bound of its
        full sum, and the k-th best of them one of the k-th best full sum. If the terms left
        can add less than that (with the margin), a claim none of the visited terms reached
        scores below k others, not even tying them. Should: the touched claims that might
        still reach the top k each need an exact similarity instead, so only when the skipped
        postings outnumber them `_EXACT_COST` times over."""
        rest = sum(bounds[x:])
        # Cheap first: no sum so far exceeds what the visited terms could add at most.
        if not lists or sum(bounds[:x]) <= rest * _MARGIN:
            return False
        touched = set().union(*lists)
        touched.discard(target_index)
        if len(touched) < k:
            return False
        sums = list(map(acc.__getitem__, touched))
        kth = sorted(sums, reverse=True)[k - 1]
        if rest * _MARGIN >= kth:
            return False
        # The touched claims `_best_by_bound` may have to score: those whose bound reaches kth.
        open_ = sum(1 for s in sums if (s + rest) * _MARGIN >= kth)
        return ahead > _EXACT_COST * open_

    def _best_by_bound(
        self, target_index: int, k: int, acc: list[float], touched: list[int], rest: float
    ) -> list[tuple[int, float]]:
        """Exact similarities of the touched claims that can be in the top k when the terms'
        postings were visited only in part: in order of their bound (sum so far plus `rest`,
        what the unvisited terms can add), until the next bound, with the margin, is below the
        k-th best exact similarity: every claim after it scores strictly less, so no tie is
        lost. (Untouched claims cannot reach the top k: `_pays_to_stop` checked.)"""
        ranked = sorted(((acc[j] + rest, j) for j in touched), reverse=True)
        best: list[float] = []  # a min-heap of the k best exact similarities so far
        scored = []
        for bound, j in ranked:
            if len(best) >= k and bound * _MARGIN < best[0]:
                break
            s = self.similarity(target_index, j)
            scored.append((j, s))
            if len(best) < k:
                heapq.heappush(best, s)
            elif s > best[0]:
                heapq.heapreplace(best, s)
        self.pairs_scored += len(scored)
        return scored


def candidate_pairs(
    pool: Sequence[ClaimText],
    target_ids: set[str],
    judged: set[Pair],
    k: int = DEFAULT_MAX_CANDIDATES,
) -> list[Pair]:
    """Pairs to settle this pass: up to k per target claim, against the whole session's claims,
    canonical, deduplicated, and never one already judged."""
    retriever = LexicalRetriever(pool)
    done = {Pair.of(p.a, p.b) for p in judged}
    out: dict[Pair, Pair] = {}
    for i, claim in enumerate(retriever.pool):
        if claim.id not in target_ids:
            continue
        for j, _ in retriever.candidates(i, k):
            key = Pair.of(claim.id, retriever.pool[j].id)
            if key in done or key in out:
                continue
            # Shown to the judge in pool (content) order, not id order: ids hash the session
            # id, so the same claims in another session (another --parallel, a rerun) were
            # shown the other way round and judged at another cost (issue 33).
            out[key] = (
                Pair(claim.id, retriever.pool[j].id)
                if i < j
                else Pair(retriever.pool[j].id, claim.id)
            )
    # In retrieval order (pool order, then similarity), which is content order: sorting by id
    # would order the judge's batches by hashes of the session id.
    return list(out.values())


# Issue 31: how candidate pairs are chosen. "words" (the default) ranks a claim's candidates by
# the cosine of their IDF-weighted words; "meaning" by the cosine of their sentence vectors
# (mole_dag.meaning), so two claims about the same thing in other words ("The polar bear
# population has been growing" / "... subpopulations, one is in decline, two are increasing")
# meet, and two that only share a figure's shape or a citation's words need not. The cap per
# claim, the batching and the budget are the same either way. Off by default until measured on
# sessions: the model costs an embedding of every claim, and the cassette tests key recorded
# answers on the words' pairs.
PAIRING_ENV = "MOLE_PAIRING"
PAIRINGS = ("words", "meaning")


def pairing() -> str:
    """The pairing this process uses: MOLE_PAIRING=meaning, else words."""
    got = os.environ.get(PAIRING_ENV, "").strip().lower()
    return got if got in PAIRINGS else "words"


def meaning_candidate_pairs(
    pool: Sequence[ClaimText],
    target_ids: set[str],
    judged: set[Pair],
    k: int = DEFAULT_MAX_CANDIDATES,
) -> list[Pair]:
    """`candidate_pairs` by meaning: up to k per target claim, chosen by meaning and words
    together (below), canonical, deduplicated, never one already judged, in retrieval order."""
    if k < 0:
        raise ValueError("k must be at least 0")
    targets = [i for i, c in enumerate(pool) if c.id in target_ids]
    if not targets or k == 0 or len(pool) < 2:
        return []
    # Imported here: numpy and onnxruntime load only when a session pairs by meaning.
    import numpy as np

    from mole_dag.meaning import embedder

    vectors = embedder().embed([c.text for c in pool])
    words = LexicalRetriever(pool)
    done = {Pair.of(p.a, p.b) for p in judged}
    out: dict[Pair, Pair] = {}
    for i in targets:
        sims = vectors @ vectors[i]
        sims[i] = -np.inf
        # Who may be a candidate: the k nearest in meaning and the k nearest in words. Among
        # them the sum of both cosines decides, so a pair close in meaning and in words comes
        # first, one close in meaning alone (a refutation worded apart) can still take a slot
        # from one close in words alone (a shared figure's shape), and the cap stays k.
        # The claim itself sorts last (-inf); a pool smaller than k would reach it.
        near = [j for j in np.argsort(-sims, kind="stable")[:k].tolist() if j != i]
        near += [j for j, _ in words.candidates(i, k) if j not in near]
        scored = [(float(sims[j]) + words.similarity(i, j), j) for j in near]
        # Ties by pool position: the caller's content order, not ids that hash the session.
        scored.sort(key=lambda x: (-x[0], x[1]))
        for _, j in scored[:k]:
            key = Pair.of(pool[i].id, pool[j].id)
            if key in done or key in out:
                continue
            # Shown in pool (content) order, as candidate_pairs does (issue 33).
            out[key] = Pair(pool[i].id, pool[j].id) if i < j else Pair(pool[j].id, pool[i].id)
    return list(out.values())
