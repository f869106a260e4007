"""The span of answered row sets, and whether it holds a set of fewer than k rows.

Every figure that left the boundary is a sum over a set of rows (a count is a sum of ones; a mean
with its count gives the sum). Anyone holding the answers can add and subtract them, so what the
answers together tell is their linear span: if a vector whose non-zeros fall on fewer than k rows
lies in it, the values of those rows (one row, or a group under the floor) can be computed. This
is the classic audit for sum queries; this module decides it.

Atoms. Rows that every answered set either holds or does not hold are indistinguishable: every
vector of the span is constant on them. They form an atom, weighted by its row count, and the
span lives in atom coordinates (far fewer than rows). A vector whose support reaches an atom of
k rows or more rests on at least k rows, so only vectors on "small" atoms (1..k-1 rows) can
disclose anything: the subspace U of the span that is zero on every big atom.

Arithmetic. The span is kept as a reduced basis over GF(P), P = 2^31 - 1, exact in int64. Over a
prime field a dependency can appear that does not hold over the rationals (a minor divisible by P),
which would make the field's span smaller than the true one and the audit unsound. So each
answered set the field calls dependent is checked over the rationals: its coefficients are
recovered by rational reconstruction and the combination is verified exactly in integers. Only
then is it taken as known; otherwise the set is refused as one the audit cannot account for. With
the field's rank equal to the rational rank, every rational vector of small support has a
non-zero image mod P with no larger support in the field's span, so searching the field's span
misses nothing (it may, with odds of about 1/P, find a vector that only exists mod P: a refusal
too many, never a leak).

The search. Exact small-support search is hard in general (the minimum distance of a linear
code). For k = 5 it is not: a vector of weight <= 4 in a reduced basis (pivot columns unit) is a
combination c of the rows whose pivots it touches, so of at most 4 rows, and its support is those
pivots plus the non-pivot atoms where c.Q is not zero (Q: the non-pivot part). Then

  (a) one row: its own support is the vector's;
  (b) two rows: the best ratio cancels the most common atoms (exact, over the ratios);
  (c) three or four rows with nothing outside the pivots: c lies in the left null space of Q,
      and the question recurses there (coordinates: the rows, weighted by their pivots);
  (d) three rows (weight 3) plus one atom y: y is a coloop of Q's columns, and c lies in the
      left null space of Q without y, which is (c)'s plus one vector; recurse with bound 3.

Each recursion is on a space of lower dimension or with a lower bound, so it ends; the cost is a
few eliminations per connected block of U. Cases (c) and (d) take only the rows whose pivots are
light enough to be part of such a vector, drop rows alone on a column (they cannot cancel
there), and are skipped when a random sketch of the rows left shows full rank (a product's rank
never exceeds a factor's, so that shortcut can only say "none", truthfully). Blocks already
searched are remembered by their content. The search is complete for bounds up to 4 (a floor of
5, the schema's); a higher floor would need case (d) for two or more atoms, and is refused by an
assertion rather than audited incompletely."""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from enum import Enum

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

P = 2_147_483_647  # 2^31 - 1: a product of two residues fits in int64
# Rational reconstruction recovers a/b with |a|, b <= this (the bound that makes it unique).
_RATREC = math.isqrt(P // 2)
# The widest supported bound (floor - 1): see the module docstring, case (d).
MAX_BOUND = 4

I64 = np.int64


class Added(Enum):
    NEW = "new"  # the set widened the span
    KNOWN = "known"  # the set was already in the span (verified over the rationals)
    UNVERIFIED = "unverified"  # dependent mod P but not provably over the rationals


def _inv(x: int) -> int:
    return pow(int(x) % P, P - 2, P)


def _inv_all(a: np.ndarray) -> np.ndarray:
    """Element-wise inverse mod P (a has no zero)."""
    result = np.ones_like(a, dtype=I64)
    base = a.astype(I64) % P
    e = P - 2
    while e:
        if e & 1:
            result = result * base % P
        base = base * base % P
        e >>= 1
    return result


def _ratrec(u: int) -> tuple[int, int] | None:
    """a/b with a = b*u mod P and |a|, b <= _RATREC, or None."""
    u %= P
    if u == 0:
        return 0, 1
    r0, r1, s0, s1 = P, u, 0, 1
    while r1 > _RATREC:
        q = r0 // r1
        r0, r1 = r1, r0 - q * r1
        s0, s1 = s1, s0 - q * s1
    if s1 == 0 or abs(s1) > _RATREC:
        return None
    return (r1, s1) if s1 > 0 else (-r1, -s1)


def rref(b: np.ndarray, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Row-reduce `b` mod P, choosing pivots among its columns in `order` (all, left to right, by
    default). Returns (the whole reduced matrix, the pivot columns, the rank): rows past the rank
    are zero on the columns of `order`."""
    b = b.copy() % P
    rows = b.shape[0]
    cols = np.arange(b.shape[1]) if order is None else np.asarray(order, dtype=I64)
    rank, pos = 0, 0
    pivots: list[int] = []
    while rank < rows and pos < cols.size:
        # The next column (in order) with a non-zero below the rows already reduced: one
        # vectorised scan per pivot rather than a Python step per column.
        below = b[rank:][:, cols[pos:]] != 0
        reach = below.any(axis=0)
        if not reach.any():
            break
        j = int(np.argmax(reach))
        col = int(cols[pos + j])
        pos += j + 1
        r = rank + int(np.argmax(below[:, j]))
        if r != rank:
            b[[rank, r]] = b[[r, rank]]
        b[rank] = b[rank] * _inv(int(b[rank, col])) % P
        factor = b[:, col].copy()
        factor[rank] = 0
        hit = np.flatnonzero(factor)
        if hit.size == rows - 1:
            # Every other row: in place, without gathering them.
            b -= np.outer(factor, b[rank]) % P
            b %= P
        elif hit.size:
            b[hit] = (b[hit] - np.outer(factor[hit], b[rank]) % P) % P
        pivots.append(col)
        rank += 1
    return b, np.array(pivots, dtype=I64), rank


class Span:
    """The span of the row sets added so far, over the rows of one dataset: atoms, and a reduced
    basis over GF(P) in atom coordinates whose rows with a small pivot are zero on every big atom
    (so those rows alone span U).

    Also kept, for the rational check of dependent sets: the independent sets themselves in atom
    coordinates (`orig`) and `trans`, with basis = trans @ orig (mod P)."""

    def __init__(self, rows: int, floor: int) -> None:
        assert floor - 1 <= MAX_BOUND, f"the search is complete for a floor up to {MAX_BOUND + 1}"
        self.rows = rows
        self.floor = floor
        self.atom = np.zeros(rows, dtype=np.int32)
        self.size = np.array([rows], dtype=I64)
        self.pivot = np.zeros(0, dtype=I64)
        # Buffers with room to grow (rows: basis vectors; columns: atoms), so that adding a set
        # or cutting an atom writes in place instead of copying the whole matrix.
        self._b = np.zeros((8, 64), dtype=I64)
        self._o = np.zeros((8, 64), dtype=np.int8)
        self._t = np.zeros((8, 8), dtype=I64)
        # Set when a stored set could not be accounted for (see absorb): every later question
        # about this span is answered "disclosing", the safe side.
        self.broken = False

    @property
    def basis(self) -> np.ndarray:
        return self._b[: self.rank, : self.atoms]

    @property
    def orig(self) -> np.ndarray:
        return self._o[: self.rank, : self.atoms]

    @property
    def trans(self) -> np.ndarray:
        return self._t[: self.rank, : self.rank]

    def _room(self, rank: int, atoms: int) -> None:
        """Make the buffers hold `rank` rows and `atoms` columns (doubling when they grow)."""
        rows, cols = self._b.shape
        if rank <= rows and atoms <= cols:
            return
        rows, cols = max(rows, rank), max(cols, atoms)
        if rank > self._b.shape[0]:
            rows = max(rank, 2 * self._b.shape[0])
        if atoms > self._b.shape[1]:
            cols = max(atoms, 2 * self._b.shape[1])
        r, m = self.rank, self.atoms
        b = np.zeros((rows, cols), dtype=I64)
        b[:r, :m] = self._b[:r, :m]
        o = np.zeros((rows, cols), dtype=np.int8)
        o[:r, :m] = self._o[:r, :m]
        t = np.zeros((rows, rows), dtype=I64)
        t[:r, :r] = self._t[:r, :r]
        self._b, self._o, self._t = b, o, t

    def copy(self) -> Span:
        out = Span.__new__(Span)
        out.rows, out.floor, out.broken = self.rows, self.floor, self.broken
        out.atom = self.atom.copy()
        out.size = self.size.copy()
        out.pivot = self.pivot.copy()
        r, m = self.rank, self.atoms
        # Some room for the next answer's rows and cuts.
        rows, cols = r + 16, m + max(64, m // 8)
        out._b = np.zeros((rows, cols), dtype=I64)
        out._b[:r, :m] = self.basis
        out._o = np.zeros((rows, cols), dtype=np.int8)
        out._o[:r, :m] = self.orig
        out._t = np.zeros((rows, rows), dtype=I64)
        out._t[:r, :r] = self.trans
        return out

    @property
    def rank(self) -> int:
        return int(self.pivot.size)

    @property
    def atoms(self) -> int:
        return int(self.size.size)

    # -- adding a set ----------------------------------------------------------------------------

    def add(self, mask: np.ndarray) -> Added:
        """Add the set of rows where `mask` is true."""
        x, cut = self._split(mask)
        self._repivot(cut)
        # x is 0/1, so x's combination of the basis rows is the sum of the rows it selects
        # (each below P, at most 2^15 of them: no overflow).
        coeff = x[self.pivot]
        chosen = coeff != 0
        red = (x - self.basis[chosen].sum(axis=0)) % P
        nz = np.flatnonzero(red)
        if nz.size == 0:
            return Added.KNOWN if self._dependent(x, chosen) else Added.UNVERIFIED
        r, m = self.rank, self.atoms
        assert r + 1 < 1 << 15, "too many basis vectors for exact int64 sums"
        piv = int(nz[np.argmax(self.size[nz])])  # the heaviest atom (the first, on a tie)
        inv = _inv(int(red[piv]))
        new_row = red * inv % P
        # basis[new] = (x - coeff @ basis) / red[piv] = (e_new - coeff @ trans) @ orig / red[piv]
        t_new = np.append((-self.trans[chosen].sum(axis=0)) % P, 1) * inv % P
        factor = self.basis[:, piv].copy()
        self._room(r + 1, m)
        hit = np.flatnonzero(factor)
        if hit.size:
            b, t = self._b[:r, :m], self._t[:r, : r + 1]
            b[hit] = (b[hit] - np.outer(factor[hit], new_row) % P) % P
            t[hit] = (t[hit] - np.outer(factor[hit], t_new) % P) % P
        self._b[r, :m] = new_row
        self._t[r, : r + 1] = t_new
        self._o[r, :m] = x
        self.pivot = np.append(self.pivot, piv)
        return Added.NEW

    def _split(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Refine the atoms so that `mask` is a union of atoms; return it in atom coordinates,
        and the atoms that were cut (their old ids, which keep the part outside the mask)."""
        m = self.atoms
        inside = np.bincount(self.atom[mask], minlength=m)
        whole = (inside > 0) & (inside == self.size)
        mixed = np.flatnonzero((inside > 0) & (inside < self.size))
        if mixed.size:
            remap = np.full(m, -1, dtype=I64)
            remap[mixed] = np.arange(m, m + mixed.size)
            rows = np.flatnonzero(mask)
            target = remap[self.atom[rows]]
            moved = target >= 0
            self.atom[rows[moved]] = target[moved]
            self._room(self.rank, m + mixed.size)
            r = self.rank
            # The new atoms start as copies of the ones they were cut from.
            self._b[:r, m : m + mixed.size] = self._b[:r, mixed]
            self._o[:r, m : m + mixed.size] = self._o[:r, mixed]
            self.size = np.concatenate([self.size, inside[mixed]])
            self.size[mixed] -= inside[mixed]
        x = np.zeros(self.atoms, dtype=I64)
        x[:m][whole] = 1
        x[m:] = 1  # the parts inside the mask of the atoms cut
        return x, mixed

    def _repivot(self, cut: np.ndarray) -> None:
        """Restore the invariant after atoms shrank: a row whose pivot became small while it
        still has a non-zero on a big atom is pivoted on its heaviest such atom. Only a row
        whose pivot was cut can be one (a row with a small pivot was zero on every big atom,
        and the parts of a cut atom copy it)."""
        if not self.rank or not cut.size:
            return
        big = self.size >= self.floor
        for i in np.flatnonzero(np.isin(self.pivot, cut) & ~big[self.pivot]):
            cand = np.flatnonzero((self.basis[i] != 0) & big)
            if cand.size:
                self._pivot_on(int(i), int(cand[np.argmax(self.size[cand])]))

    def _pivot_on(self, i: int, col: int) -> None:
        inv = _inv(int(self.basis[i, col]))
        self.basis[i] = self.basis[i] * inv % P
        self.trans[i] = self.trans[i] * inv % P
        factor = self.basis[:, col].copy()
        factor[i] = 0
        hit = np.flatnonzero(factor)
        if hit.size:
            self.basis[hit] = (self.basis[hit] - np.outer(factor[hit], self.basis[i]) % P) % P
            self.trans[hit] = (self.trans[hit] - np.outer(factor[hit], self.trans[i]) % P) % P
        self.pivot[i] = col

    def _dependent(self, x: np.ndarray, chosen: np.ndarray) -> bool:
        """x = the sum of the chosen basis rows = (their trans rows, summed) @ orig mod P:
        recover the rational coefficients of the independent sets, verify exactly."""
        lam = self.trans[chosen].sum(axis=0) % P
        fracs = []
        for j in np.flatnonzero(lam):
            got = _ratrec(int(lam[j]))
            if got is None:
                return False
            fracs.append((int(j), got[0], got[1]))
        denom = math.lcm(*(b for _, _, b in fracs)) if fracs else 1
        idx = np.array([j for j, _, _ in fracs], dtype=I64)
        nums = [a * (denom // b) for _, a, b in fracs]
        bound = max((abs(v) for v in nums), default=0) * max(len(nums), 1) * 2
        if bound < 1 << 62 and denom < 1 << 62:
            total = np.asarray(nums, dtype=I64) @ self.orig[idx].astype(I64)
            return bool(np.array_equal(total, x * denom))
        # Wide coefficients: verify in Python integers (rare: ordinary dependencies are sums and
        # differences of answered sets).
        rows = self.orig[idx].astype(object)
        total_o = np.asarray(nums, dtype=object) @ rows
        return bool(all(int(t) == int(v) * denom for t, v in zip(total_o, x, strict=True)))

    # -- the question ----------------------------------------------------------------------------

    def discloses(self) -> bool:
        """True if the span holds a non-zero vector on fewer than `floor` rows."""
        if self.broken:
            return True
        if not self.rank:
            return False
        bound = self.floor - 1
        small_rows = self.size[self.pivot] < self.floor
        if not small_rows.any():
            return False
        u = self.basis[small_rows]
        cols = np.flatnonzero((self.size < self.floor) & (u != 0).any(axis=0))
        where = {int(c): k for k, c in enumerate(cols)}
        piv = np.array([where[int(p)] for p in self.pivot[small_rows]], dtype=I64)
        return _light(u[:, cols], self.size[cols], bound, piv)


# --- the search: is there a non-zero vector of weighted support <= bound? ----------------------


def _light(b: np.ndarray, w: np.ndarray, bound: int, piv: np.ndarray | None = None) -> bool:
    """Does the row space of `b` (mod P) hold a non-zero vector whose support weighs <= bound
    (coordinate j weighs w[j])? With `piv`, `b` is already reduced: piv[i] is row i's pivot, a
    unit column, and no coordinate weighs more than `bound`."""
    assert bound <= MAX_BOUND
    if bound <= 0 or b.shape[0] == 0:
        return False
    if piv is None:
        # Heaviest coordinates first: rows whose pivot is heavier than the bound are dropped,
        # and the rest are then zero on every such coordinate (echelon form).
        order = np.lexsort((np.arange(w.size), -w))
        red, pivots, rank = rref(b, order)
        keep = w[pivots] <= bound
        red, pivots = red[:rank][keep], pivots[keep]
        light = w <= bound
        cols = np.flatnonzero(light & (red != 0).any(axis=0))
        if not red.shape[0]:
            return False
        where = {int(c): k for k, c in enumerate(cols)}
        b, w = red[:, cols], w[cols]
        piv = np.array([where[int(p)] for p in pivots], dtype=I64)
    # Independent blocks: rows joined by a shared non-zero coordinate.
    nzr, nzc = np.nonzero(b)
    d, a = b.shape
    graph = csr_matrix((np.ones(nzr.size), (nzr, d + nzc)), shape=(d + a, d + a))
    count, label = connected_components(graph, directed=False)
    if count == 1:
        return _light_block(b, w, bound, piv)
    for lab in range(count):
        rows = np.flatnonzero(label[:d] == lab)
        if not rows.size:
            continue
        cols = np.flatnonzero(label[d:] == lab)
        where = {int(c): k for k, c in enumerate(cols)}
        sub_piv = np.array([where[int(p)] for p in piv[rows]], dtype=I64)
        if _light_block(b[np.ix_(rows, cols)], w[cols], bound, sub_piv):
            return True
    return False


# Answers already worked out, by block: a block untouched by a new answer is asked about again
# with every later question, and the answer is a function of the block alone. A guess at the
# size, flagged as one: enough for the blocks of a few datasets' audits.
_BLOCKS_KEPT = 4096
_blocks: OrderedDict[bytes, bool] = OrderedDict()
_blocks_lock = threading.Lock()


def _light_block(b: np.ndarray, w: np.ndarray, bound: int, piv: np.ndarray) -> bool:
    h = hashlib.blake2b(digest_size=20)
    for part in (np.array([bound, *b.shape], dtype=I64), b, w.astype(I64), piv):
        h.update(np.ascontiguousarray(part).tobytes())
    key = h.digest()
    with _blocks_lock:
        known = _blocks.get(key)
    if known is not None:
        return known
    got = _search_block(b, w, bound, piv)
    with _blocks_lock:
        _blocks[key] = got
        while len(_blocks) > _BLOCKS_KEPT:
            _blocks.popitem(last=False)
    return got


def _search_block(b: np.ndarray, w: np.ndarray, bound: int, piv: np.ndarray) -> bool:
    d = b.shape[0]
    if int(w.sum()) <= bound:
        return True  # every vector of the block lies within it
    if d == 1:
        return False  # multiples of the one row: all of the block's weight
    other = np.ones(w.size, dtype=bool)
    other[piv] = False
    q = b[:, other]
    pw, qw = w[piv], w[other]
    nz = q != 0
    # (a) one row
    if (pw + nz @ qw <= bound).any():
        return True
    # (b) two rows
    if _light_pair(q, nz, pw, qw, bound):
        return True
    # (c): three or four rows whose non-pivot parts cancel. Each of them has a pivot of weight
    # <= bound - 2 (three pivots weigh at least 3), so only those rows take part.
    if _light_null(q, pw, qw, bound, pw <= bound - 2, coloops=False):
        return True
    # (d): three rows whose non-pivot parts add up to one atom y of weight >= 1, so pivots of
    # weight <= bound - 3 each: y is a coloop of their columns.
    return bound - 3 >= 1 and _light_null(q, pw, qw, bound, pw <= bound - 3, coloops=True)


def _light_null(
    q: np.ndarray, pw: np.ndarray, qw: np.ndarray, bound: int, rows: np.ndarray, coloops: bool
) -> bool:
    """Cases (c) and (d) on the rows selected: c with c.q zero (c), or zero but on one coloop
    atom y (d), whose pivots weigh <= bound (c) or <= bound - w(y) (d)."""
    if int(rows.sum()) < 3:
        return False
    sub = q[rows]
    # A row alone on a column (among the rows still in) cannot take part: c.q would not cancel
    # there. (d) lets one such column be y, so there a row goes only with two of them.
    keep = _peel(sub != 0, 1 if coloops else 0)
    if int(keep.sum()) < 3:
        return False
    sub, rows = sub[keep], np.flatnonzero(rows)[keep]
    sub = sub[:, (sub != 0).any(axis=0)]
    d, qn = sub.shape
    # The common case, cheaply: rows of full rank have no left null space, and if they keep it
    # without either of two disjoint halves of the columns, deleting one column (y) cannot
    # lower it either.
    if coloops:
        if _full_row_rank(sub[:, ::2]) and _full_row_rank(sub[:, 1::2]):
            return False
    elif _full_row_rank(sub):
        return False
    red, pivots, rank = rref(np.hstack([sub, np.eye(d, dtype=I64)]), np.arange(qn))
    null = red[rank:, qn:]
    weights = pw[rows]
    if not coloops:
        return bool(null.shape[0]) and _light(null, weights, bound)
    cols_w = qw[(q[rows] != 0).any(axis=0)]
    assert cols_w.size == qn
    for t in range(rank):
        col = int(pivots[t])
        if cols_w[col] > bound - 3:
            continue
        if np.count_nonzero(red[t, :qn]) != 1:
            continue  # not a coloop: another column reaches this row
        widened = np.vstack([null, red[t, qn:][None, :]])
        if _light(widened, weights, bound - int(cols_w[col])):
            return True
    return False


def _full_row_rank(m: np.ndarray) -> bool:
    """True only if `m` certainly has full row rank: a sketch of it (each column added, with a
    random coefficient, into one of a few more buckets than rows) has it, and a sketch is m
    times a matrix, whose product's rank is never above m's. False: unknown (then the exact
    path runs). Integer sums, no BLAS: a multi-threaded BLAS on a busy machine costs more than
    the sums."""
    d, n = m.shape
    if n < d:
        return False
    # Fixed seed: the outcome, not the soundness, depends on it, and a re-run sees the same.
    rng = np.random.default_rng(d * 1_000_003 + n)
    width = d + 8
    bucket = np.asarray(rng.integers(0, width, size=n), dtype=I64)
    coef = np.asarray(rng.integers(1, 1 << 16, size=n), dtype=I64)
    order = np.argsort(bucket, kind="stable")
    # Each term below P, at most 2^17 per bucket: the sums stay under 2^48.
    assert n < 1 << 17
    terms = (m[:, order] % P) * coef[order] % P
    starts = np.searchsorted(bucket[order], np.arange(width))
    filled = starts < n
    sketch = np.zeros((d, width), dtype=I64)
    # Only the buckets that hold columns: reduceat sums each from its start to the next one.
    sketch[:, filled] = np.add.reduceat(terms, starts[filled], axis=1) % P
    return bool(rref(sketch)[2] == d)


def _peel(nz: np.ndarray, allowed: int) -> np.ndarray:
    """The rows left after repeatedly dropping every row that is the only one (of those left)
    on more than `allowed` columns."""
    keep = np.ones(nz.shape[0], dtype=bool)
    while keep.sum() >= 3:
        alone = nz & (nz[keep].sum(axis=0) == 1)[None, :]
        drop = keep & (alone.sum(axis=1) > allowed)
        if not drop.any():
            break
        keep &= ~drop
    return keep


def _light_pair(q: np.ndarray, nz: np.ndarray, pw: np.ndarray, qw: np.ndarray, bound: int) -> bool:
    """Two rows i, j and a ratio r: the support of row_i + r row_j is both pivots, the atoms only
    one of them reaches, and the shared atoms r does not cancel."""
    s = csr_matrix(nz.astype(np.float64) * qw.astype(np.float64))
    t = csr_matrix(nz.astype(np.float64))
    overlap = (s @ t.T).tocoo()
    own = nz @ qw
    i, j, o = overlap.row, overlap.col, np.rint(overlap.data).astype(I64)
    # Pivots and the atoms only one row reaches: a lower bound on the pair's weight.
    base = pw[i] + pw[j] + own[i] + own[j] - 2 * o
    for a, b, lower in zip(i, j, base, strict=True):
        if a >= b or lower > bound:
            continue
        common = np.flatnonzero(nz[a] & nz[b])
        ratio = q[a, common] * _inv_all(q[b, common]) % P
        weights = qw[common]
        _, group = np.unique(ratio, return_inverse=True)
        best = int(np.bincount(group, weights=weights).max())
        if int(lower) + int(weights.sum()) - best <= bound:
            return True
    return False
