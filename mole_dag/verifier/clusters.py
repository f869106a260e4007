"""Union-find over `duplicate_of` edges only. Two claims that merely support each other stay
two pieces of evidence: merging them would delete exactly the corroboration confidence counts."""

from __future__ import annotations

from collections.abc import Iterable


class UnionFind:
    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {x: x for x in items}

    def find(self, x: str) -> str:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # The smaller id becomes the root, so cluster identity is deterministic.
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def clusters(
    claim_ids: Iterable[str], duplicate_edges: Iterable[tuple[str, str]]
) -> list[list[str]]:
    """Groups of claim ids, each sorted, ordered by their smallest id."""
    ids = list(claim_ids)
    uf = UnionFind(ids)
    known = set(ids)
    for a, b in duplicate_edges:
        if a in known and b in known:
            uf.union(a, b)
    groups: dict[str, list[str]] = {}
    for x in ids:
        groups.setdefault(uf.find(x), []).append(x)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])
