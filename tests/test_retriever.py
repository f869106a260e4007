"""The indexed candidate retriever (issue 14) against the all-pairs reference it replaced: the
same candidates, the same similarity values to the last bit, the same order, ties included.
Cassette-replayed tests key recorded model answers on prompts built from these candidates, so
anything short of identical is a regression. And the work it does: only claims sharing a term
with the target are ever looked at."""

from __future__ import annotations

import random
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retriever_reference import ReferenceRetriever, reference_candidate_pairs

from mole_dag.chunk import chunk_text
from mole_dag.text import sentence_spans
from mole_dag.verifier import retriever as retriever_module
from mole_dag.verifier.retriever import ClaimText, LexicalRetriever, Pair, candidate_pairs

ROOT = Path(__file__).resolve().parent.parent

# A small vocabulary, so random claims share terms, repeat words (term frequency > 1), and
# often come out identical or with equal similarities: the ties a tie-break must get right.
_VOCAB = [
    "green",
    "tea",
    "coffee",
    "stroke",
    "risk",
    "sleep",
    "lowers",
    "raises",
    "bladder",
    "cancer",
    "cohort",
    "30",
    "2019",
    "adults",
    "the",
    "of",
    "not",
    "绿茶",
    "Zürich",
    "kaffee",
]
_claim = st.lists(st.sampled_from(_VOCAB), min_size=0, max_size=9).map(" ".join)


def _pool(texts: list[str]) -> list[ClaimText]:
    # Ids deliberately not in pool order, so a tie broken by id rather than position shows.
    return [ClaimText(f"c{(i * 7919) % 10007:05d}", t) for i, t in enumerate(texts)]


def _assert_identical(pool: list[ClaimText], k: int) -> None:
    new, ref = LexicalRetriever(pool), ReferenceRetriever(pool)
    for i in range(len(pool)):
        # Tuples of (index, float) compared with ==: the floats must be bit-identical.
        assert new.candidates(i, k) == ref.candidates(i, k), (i, pool[i].text)
    for i in range(len(pool)):
        for j in range(len(pool)):
            assert new.similarity(i, j) == ref.similarity(i, j)


@settings(max_examples=300, deadline=None)
@given(st.lists(_claim, min_size=0, max_size=40), st.integers(0, 10))
def test_candidates_are_the_all_pairs_answer(texts: list[str], k: int) -> None:
    _assert_identical(_pool(texts), k)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_claim, min_size=1, max_size=40),
    st.data(),
    st.integers(0, 10),
)
def test_candidate_pairs_match_the_reference(texts: list[str], data: st.DataObject, k: int) -> None:
    pool = _pool(texts)
    ids = [c.id for c in pool]
    targets = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    ref_all = reference_candidate_pairs(pool, set(ids), set(), k)
    judged = set(data.draw(st.lists(st.sampled_from(ref_all), unique=True))) if ref_all else set()
    assert candidate_pairs(pool, targets, judged, k) == reference_candidate_pairs(
        pool, targets, judged, k
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=60), min_size=0, max_size=25), st.integers(0, 9))
def test_candidates_match_on_arbitrary_text(texts: list[str], k: int) -> None:
    _assert_identical(_pool(texts), k)


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text) if b - a >= 20]


def _fixture_claims() -> list[str]:
    """Claim-sized sentences of the corpora the cassette and demo sessions run over, plus the
    extractive miner's claims from the demo corpus (what its session's verifier sees)."""
    from mole_dag.mining.extractive import mine_sentences
    from mole_dag.skills.protocol import MineRequest

    out: list[str] = []
    for folder in (ROOT / "tests" / "fixtures" / "model_corpus", ROOT / "examples" / "corpus"):
        for path in sorted(folder.iterdir()):
            text = path.read_text("utf-8")
            out.extend(_sentences(text))
            for span in chunk_text(text):
                req = MineRequest("What are the health effects of coffee?", "coffee", span.text)
                out.extend(d.text for d in mine_sentences(req))
    return out


def test_candidates_match_on_the_fixture_corpora() -> None:
    texts = _fixture_claims()
    assert len(texts) > 100
    pool = _pool(texts)
    _assert_identical(pool, 8)
    ids = {c.id for c in pool}
    assert candidate_pairs(pool, ids, set(), 8) == reference_candidate_pairs(pool, ids, set(), 8)


def test_ties_go_to_the_earlier_claim_in_pool_order() -> None:
    # Five identical neighbours: the first three by pool position, whatever their ids say.
    pool = [ClaimText("z", "green tea lowers stroke risk")] + [
        ClaimText(f"{chr(ord('y') - i)}", "green tea lowers stroke risk") for i in range(5)
    ]
    got = LexicalRetriever(pool).candidates(0, 3)
    assert [j for j, _ in got] == [1, 2, 3]
    # Each pair in pool order, as the judge is shown it, not in id order (issue 33).
    assert candidate_pairs(pool, {"z"}, set(), 3) == [
        Pair("z", "y"),
        Pair("z", "x"),
        Pair("z", "w"),
    ]


def test_a_last_bit_tie_is_decided_by_the_exact_similarity() -> None:
    # Found by search: for claim 2, claims 4 and 5 accumulate to the same sum term by term, but
    # `similarity` (another summation order) puts 5 one unit in the last place above 4. The
    # reference takes 5 as the second candidate; a retriever that ranked by its accumulated
    # sums would take 4 (the earlier position) and change the judge's prompt.
    texts = [
        "green cancer",
        "risk green kaffee risk tea",
        "risk bladder bladder bladder coffee cohort stroke",
        "sleep bladder tea lowers bladder bladder",
        "risk lowers coffee cohort",
        "risk stroke coffee lowers",
        "coffee bladder sleep raises cancer cancer coffee",
    ]
    pool = [ClaimText(str(i), t) for i, t in enumerate(texts)]
    ref = ReferenceRetriever(pool)
    assert ref.similarity(2, 5) > ref.similarity(2, 4)
    assert [j for j, _ in ref.candidates(2, 2)] == [3, 5]
    assert LexicalRetriever(pool).candidates(2, 2) == ref.candidates(2, 2)


def test_a_sum_one_unit_low_still_gets_its_exact_check() -> None:
    # Found by search: for claim 2, the accumulated sums rank claim 0 one unit in the last place
    # above claim 1, and the exact similarities the other way round. Only the margin on the
    # cut-off keeps claim 1 in the exact check; without it the single candidate would be 0.
    pool = [
        ClaimText("a", "raises bladder coffee lowers sleep"),
        ClaimText("b", "lowers kaffee green cohort raises"),
        ClaimText("c", "sleep risk cohort bladder raises kaffee"),
    ]
    ref = ReferenceRetriever(pool)
    assert ref.similarity(2, 1) > ref.similarity(2, 0)
    assert (
        LexicalRetriever(pool).candidates(2, 1)
        == ref.candidates(2, 1)
        == [(1, ref.similarity(2, 1))]
    )


def test_negative_k_is_refused() -> None:
    with pytest.raises(ValueError):
        LexicalRetriever([ClaimText("a", "green tea")]).candidates(0, -1)


def _disjoint_pool(groups: int, size: int = 4) -> list[ClaimText]:
    """`groups` topics of `size` claims each; no term is shared between topics."""
    out = []
    for g in range(groups):
        topic = [f"topic{g}word{w}" for w in range(6)]
        for m in range(size):
            out.append(ClaimText(f"g{g:04d}m{m}", " ".join(topic[m % 3 : m % 3 + 4])))
    return out


def test_work_grows_with_shared_terms_not_with_the_pool() -> None:
    # The all-pairs retriever scored n(n-1) pairs: 1.6 million here. The index looks only at
    # claims that share a term with the target, so on disjoint topics the work is linear.
    small, large = _disjoint_pool(50), _disjoint_pool(400)
    counts = []
    for pool in (small, large):
        r = LexicalRetriever(pool)
        for i in range(len(pool)):
            r.candidates(i)
        counts.append((r.postings_visited, r.pairs_scored))
        n = len(pool)
        assert r.pairs_scored <= 3 * n, (r.pairs_scored, n)
        assert r.postings_visited <= 20 * n, (r.postings_visited, n)
    # Eight times the claims, about eight times the work (not 64).
    assert counts[1][0] <= 8 * counts[0][0] and counts[1][1] <= 8 * counts[0][1]


def test_a_common_term_costs_postings_not_exact_scores() -> None:
    # Every claim says "coffee", so each target's postings reach every claim: that cost is the
    # shared term's, and real sessions have such terms. Here fewer than k claims share a rarer
    # word with a target, so "coffee" decides the top k and pruning cannot skip it. Exact
    # similarities, though, are computed only for the claims whose sums can make the top k.
    rng = random.Random(14)
    rare = [f"rare{w}" for w in range(3000)]
    pool = [
        ClaimText(f"c{i:04d}", "coffee " + " ".join(rng.sample(rare, rng.randrange(2, 7))))
        for i in range(400)
    ]
    r = LexicalRetriever(pool)
    for i in range(len(pool)):
        r.candidates(i, 8)
    assert r.postings_visited >= len(pool) * (len(pool) - 1)
    assert r.pairs_scored <= 2 * 8 * len(pool), r.pairs_scored


def _topical_pool(n: int, seed: int = 14) -> list[ClaimText]:
    """A one-topic session: every claim says "coffee", half say "health", and each takes three
    words of one of n/20 subtopics plus a few words of its own. Subtopics give every claim more
    than k neighbours through rarer terms, so the shared terms' postings (n long each) cannot
    change who the k best are."""
    rng = random.Random(seed)
    vocab = [f"w{x}" for x in range(2 * n)]
    topics = [rng.sample(vocab, 12) for _ in range(n // 20)]
    out = []
    for i in range(n):
        words = [
            "coffee",
            *rng.sample(rng.choice(topics), 3),
            *rng.sample(vocab, rng.randrange(2, 6)),
        ]
        if rng.random() < 0.5:
            words.append("health")
        out.append(ClaimText(f"c{i:05d}", " ".join(words)))
    return out


def test_terms_every_claim_shares_are_skipped_once_they_cannot_change_the_top_k() -> None:
    # MaxScore: each target's postings of "coffee" alone are as many as the claims, so visiting
    # them all makes retrieval quadratic. Once they can add less than the k-th best sum so far,
    # they are left unvisited, and the answer stays the all-pairs one.
    visited = []
    for n in (1000, 2000):
        pool = _topical_pool(n)
        r = LexicalRetriever(pool)
        got = [r.candidates(i, 8) for i in range(n)]
        full = sum(len(r._claims[t]) for v in r.vectors for t in v)
        assert r.postings_visited < full / 20, (r.postings_visited, full)
        assert r.pairs_scored <= 3 * 8 * n, r.pairs_scored
        visited.append(r.postings_visited)
        ref = ReferenceRetriever(pool)
        for i in random.Random(n).sample(range(n), 40):
            assert got[i] == ref.candidates(i, 8), i
    # Twice the claims, about twice the postings (4x would be quadratic).
    assert visited[1] <= 2.5 * visited[0], visited


# Heavy ties: few distinct words and many exact duplicate texts, so equal sums and equal
# similarities are the rule, and pools long enough that common terms' postings are worth skipping.
_tied_claim = st.lists(st.sampled_from(_VOCAB[:6]), min_size=1, max_size=5).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(_claim, _tied_claim), min_size=0, max_size=60).flatmap(
        lambda texts: (
            st.lists(st.sampled_from(texts), min_size=len(texts), max_size=90)
            if texts
            else st.just([])
        )
    ),
    st.integers(0, 10),
    st.sampled_from([0, 1, 30]),
)
def test_pruned_candidates_are_the_all_pairs_answer(texts: list[str], k: int, cost: int) -> None:
    # `_EXACT_COST` 0 stops at the first chance the bounds allow, so the pruned path runs on
    # small pools too, ties and duplicates included.
    with (
        mock.patch.object(retriever_module, "_EXACT_COST", cost),
        mock.patch.object(retriever_module, "_PRUNE_FROM", 0),
    ):
        _assert_identical(_pool(texts), k)


@settings(max_examples=100, deadline=None)
@given(st.lists(_claim, min_size=0, max_size=40), st.integers(0, 10))
def test_candidates_with_every_stop_taken_are_the_all_pairs_answer(
    texts: list[str], k: int
) -> None:
    with (
        mock.patch.object(retriever_module, "_EXACT_COST", 0),
        mock.patch.object(retriever_module, "_PRUNE_FROM", 0),
    ):
        _assert_identical(_pool(texts), k)


def test_the_pruned_path_is_taken_on_the_fixture_corpora() -> None:
    pool = _pool(_fixture_claims())
    with (
        mock.patch.object(retriever_module, "_EXACT_COST", 0),
        mock.patch.object(retriever_module, "_PRUNE_FROM", 0),
    ):
        r = LexicalRetriever(pool)
        ref = ReferenceRetriever(pool)
        full = sum(len(r._claims[t]) for v in r.vectors for t in v)
        for i in range(len(pool)):
            assert r.candidates(i, 8) == ref.candidates(i, 8), i
        assert r.postings_visited < full
