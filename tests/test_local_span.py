"""The audit's arithmetic (mole_dag/local_data/span.py) against a brute force: after every set
added, `discloses()` must say exactly whether some non-zero rational combination of the sets
rests on fewer than five rows, which the brute force decides by checking every set T of 1..4 rows
(a vector of the span lies within T iff deleting T's columns lowers the rank, in exact
fractions)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.local_data.span import Added, P, Span, _light, _ratrec

K = 5


def _rank(rows: list[list[int]]) -> int:
    m = [[Fraction(v) for v in r] for r in rows]
    rank, cols = 0, len(m[0]) if m else 0
    for c in range(cols):
        pivot = next((i for i in range(rank, len(m)) if m[i][c] != 0), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        for i in range(len(m)):
            if i != rank and m[i][c] != 0:
                f = m[i][c] / m[rank][c]
                m[i] = [a - f * b for a, b in zip(m[i], m[rank], strict=True)]
        rank += 1
    return rank


def brute_discloses(sets: list[np.ndarray], n: int, k: int = K) -> bool:
    rows = [[int(v) for v in s] for s in sets]
    if not rows:
        return False
    full = _rank(rows)
    for size in range(1, k):
        for t in itertools.combinations(range(n), size):
            rest = [[r[c] for c in range(n) if c not in t] for r in rows]
            if _rank(rest) < full:
                return True
    return False


def _masks(n: int, members: list[set[int]]) -> list[np.ndarray]:
    out = []
    for m in members:
        mask = np.zeros(n, dtype=bool)
        mask[list(m)] = True
        out.append(mask)
    return out


def test_the_three_query_attack_is_a_row_in_the_span() -> None:
    # target = row 0; A = rows 1..6, B = rows 7..15: (t+A) + (t+B) - (t+A+B) = t
    n = 30
    t, a, b = {0}, set(range(1, 7)), set(range(7, 16))
    span = Span(n, K)
    assert span.add(_masks(n, [set(range(n))])[0]) is Added.NEW
    for i, members in enumerate([t | a, t | b, t | a | b]):
        span.add(_masks(n, [members])[0])
        assert span.discloses() is (i == 2)


def test_a_pair_five_rows_apart_is_no_disclosure_but_four_is() -> None:
    n = 40
    base = set(range(20))
    span = Span(n, K)
    span.add(_masks(n, [base])[0])
    far = span.copy()
    far.add(_masks(n, [base | set(range(20, 25))])[0])
    assert not far.discloses()
    near = span.copy()
    near.add(_masks(n, [base | set(range(20, 24))])[0])
    assert near.discloses()


def test_cells_adding_up_to_a_total_with_a_small_remainder_disclose() -> None:
    n = 30
    span = Span(n, K)
    span.add(np.ones(n, dtype=bool))  # the total (the profile tells it)
    span.add(_masks(n, [set(range(0, 14))])[0])
    assert not span.discloses()
    span.add(_masks(n, [set(range(14, 27))])[0])  # leaves rows 27..29 (3) as the remainder
    assert span.discloses()


def test_two_crossed_group_bys_without_small_cuts_are_safe() -> None:
    """A 2-way table's margins: the span is every row-sum plus column-sum pattern; with every
    row and column of the table reaching five rows across several cells, nothing small lies in
    it (the smallest vector is a margin)."""
    rng = random.Random(1)
    n = 200
    age = [rng.randrange(8) for _ in range(n)]
    inc = [rng.randrange(5) for _ in range(n)]
    span = Span(n, K)
    for g in range(8):
        span.add(np.array([a == g for a in age]))
    for g in range(5):
        span.add(np.array([i == g for i in inc]))
    assert span.rank == 12  # the two margins share the total
    assert not span.discloses()


def test_a_known_set_is_verified_over_the_rationals() -> None:
    n = 20
    span = Span(n, K)
    a, b = _masks(n, [set(range(10)), set(range(10, 20))])
    span.add(a)
    span.add(b)
    assert span.add(a | b) is Added.KNOWN
    assert span.rank == 2


def test_a_dependency_that_holds_only_mod_p_is_not_taken_as_known() -> None:
    """Forge the field state: if P divided a minor, a set could look dependent mod P without
    being so over the rationals; the exact check then refuses to account for it."""
    n = 12
    span = Span(n, K)
    a, b, c = _masks(n, [set(range(6)), set(range(3, 9)), set(range(6, 12))])
    span.add(a)
    span.add(b)
    # Pretend the field said c = 2^-1 * (a + b) (it is not): trans gives that combination.
    x, _ = span._split(c)
    span.trans[:] = np.eye(span.rank, dtype=np.int64) * pow(2, P - 2, P) % P
    assert span._dependent(x, np.ones(span.rank, dtype=bool)) is False
    # A true combination (a itself, coefficient 1) is verified and taken as known.
    span2 = Span(n, K)
    span2.add(a)
    span2.add(b)
    assert span2.add(a.copy()) is Added.KNOWN


@pytest.mark.parametrize("u", [0, 1, P - 1, 3 * pow(7, P - 2, P) % P])
def test_rational_reconstruction(u: int) -> None:
    got = _ratrec(u)
    assert got is not None
    a, b = got
    assert (a - b * u) % P == 0


@settings(max_examples=120, deadline=None)
@given(
    st.integers(min_value=6, max_value=11),
    st.lists(st.integers(min_value=0, max_value=2**11 - 1), min_size=1, max_size=6),
)
def test_discloses_matches_the_brute_force(n: int, codes: list[int]) -> None:
    sets = [np.array([(c >> i) & 1 == 1 for i in range(n)]) for c in codes]
    span = Span(n, K)
    added: list[np.ndarray] = []
    for s in sets:
        span.add(s)
        added.append(s)
        assert span.discloses() is brute_discloses(added, n), [list(map(int, a)) for a in added]


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_discloses_matches_the_brute_force_on_structured_sets(seed: int) -> None:
    """Unions of blocks and near-copies: the shapes differencing attacks use."""
    rng = random.Random(seed)
    n = 14
    blocks = [set(rng.sample(range(n), rng.randrange(1, 5))) for _ in range(4)]
    sets: list[np.ndarray] = []
    span = Span(n, K)
    for _ in range(5):
        members: set[int] = set()
        for blk in blocks:
            if rng.random() < 0.5:
                members |= blk
        if rng.random() < 0.5:
            members ^= {rng.randrange(n)}
        mask = _masks(n, [members])[0]
        span.add(mask)
        sets.append(mask)
        assert span.discloses() is brute_discloses(sets, n)


def _brute_light(b: np.ndarray, w: list[int], bound: int) -> bool:
    rows = [[int(v) for v in r] for r in b]
    full = _rank(rows)
    for size in range(1, bound + 1):
        for t in itertools.combinations(range(len(w)), size):
            if sum(w[i] for i in t) > bound:
                continue
            if _rank([[r[c] for c in range(len(w)) if c not in t] for r in rows]) < full:
                return True
    return False


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_the_search_matches_the_brute_force_on_any_subspace(seed: int) -> None:
    """Random small integer bases and weights (not only spans of row sets): every case of the
    search, (a) to (d), is reached."""
    rng = random.Random(seed)
    d, a = rng.randrange(2, 7), 0
    a = rng.randrange(d + 1, 12)
    density = rng.choice([0.3, 0.5, 0.7])
    b = np.array(
        [
            [rng.choice([-1, 1, 2]) if rng.random() < density else 0 for _ in range(a)]
            for _ in range(d)
        ],
        dtype=np.int64,
    )
    w = [rng.choice([1, 1, 1, 2, 3, 5]) for _ in range(a)]
    assert _light(b % P, np.array(w), 4) is _brute_light(b, w, 4)


# Reduced bases (pivots: the first columns) on which exactly one case of the search finds the
# light vector: (b) two rows whose shared atoms cancel, leaving two (no coloop: (d) cannot);
# (c) three rows whose non-pivot parts add up to zero; (d) three rows whose non-pivot parts add
# up to one coloop atom.
CASE_B = [[1, 0, 1, 1, 1, 1, 0], [0, 1, 1, 1, 1, 0, 1]]
CASE_C = [
    [1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0],
    [0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1],
    [0, 0, 1, -1, -1, -1, -1, -1, -1, -1, -1],
]
CASE_D = [
    [1, 0, 0, 0, 1, 1, 1, 1, 0, 0],
    [0, 1, 0, 0, -1, -1, 0, 0, 1, 1],
    [0, 0, 1, 1, 0, 0, -1, -1, -1, -1],
]


@pytest.mark.parametrize("rows", [CASE_B, CASE_C, CASE_D], ids=["pair", "null", "coloop"])
def test_each_case_of_the_search(rows: list[list[int]]) -> None:
    b = np.array(rows, dtype=np.int64) % P
    w = np.ones(b.shape[1], dtype=np.int64)
    assert _brute_light(np.array(rows), list(w), 4)
    assert _light(b, w, 4, np.arange(b.shape[0]))
    # One more row's weight on the atoms that combination keeps, and it is no longer light.
    heavier = w.copy()
    heavier[: b.shape[0]] = 2
    assert not _brute_light(np.array(rows), list(heavier), 4)
    assert not _light(b, heavier, 4, np.arange(b.shape[0]))


def test_the_search_on_weighted_coordinates() -> None:
    # One vector over coordinates weighing 2 and 2: weight 4, light under a bound of 4.
    b = np.array([[1, 1, 0], [0, 0, 1]], dtype=np.int64)
    assert _light(b, np.array([2, 2, 9]), 4)
    assert not _light(b, np.array([3, 2, 9]), 4)
