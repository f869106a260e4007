"""Confidence derived from the claim graph, never asked of a model.

Self-reported model confidence is uncalibrated: it mostly measures fluency. Here a score is a
product of terms a reader can check, and each score carries the one-line derivation:

    confidence = class weight x corroboration(distinct publishers)
                 x agreeing share (publishers for / (for + against))
                 x supersession x grounding

Corroboration saturates below certainty, so a scraper farm of identical pages cannot make a
claim certain. Recency is deliberately not a term: nothing here can measure it yet."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mole_dag.context import Run
from mole_dag.core import EdgeKind, SourceClass, columns
from mole_dag.store import q, utcnow
from mole_dag.store.records import ClaimRow, EdgeRow
from mole_dag.verifier.clusters import clusters
from mole_dag.verifier.source_class import STRENGTH, weight

STAGE = "confidence_scores"
# Corroboration = CEILING x (1 - HALF ** publishers): one publisher gives half the ceiling, each
# further independent publisher halves the remaining gap. Both numbers are guesses, flagged as
# such; the ordering they produce is the design.
CORROBORATION_CEILING = 0.95
CORROBORATION_HALF = 0.5
# A superseded claim is stale, not refuted: it keeps some weight as history. A guess.
SUPERSEDED_FACTOR = 0.3
# Grounding: a re-read that confirms the claim adds a little; one that finds the quote does not
# support the claim is near-fatal (quote-mining or a misreading).
GROUND_CONFIRMED_FACTOR = 1.1
GROUND_UNSUPPORTED_FACTOR = 0.1


@dataclass(frozen=True)
class ClaimNode:
    id: str
    publisher: str
    source_class: SourceClass
    created_at: datetime | None = None


@dataclass(frozen=True)
class Score:
    cluster_id: str
    members: tuple[str, ...]
    representative: str
    confidence: float
    publishers: int
    contradictors: int
    superseded: bool
    grounded: bool | None
    source_class: SourceClass
    explanation: str


def _corroboration(n: int) -> float:
    return CORROBORATION_CEILING * (1 - CORROBORATION_HALF**n)


def derive(
    claims: list[ClaimNode],
    edges: list[tuple[str, str, str]],
    grounded: dict[str, bool] | None = None,
) -> list[Score]:
    """Score every duplicate cluster. Every member gets its cluster's score: they are one
    assertion, and giving them different numbers would let the report's choice of wording change
    its stated confidence."""
    grounded = grounded or {}
    by_id = {c.id: c for c in claims}
    # The caller's order (content order: URL, then offset) breaks the last tie, not the id,
    # which hashes the session id.
    position = {c.id: i for i, c in enumerate(claims)}
    dup = [(s, d) for s, d, k in edges if k == EdgeKind.DUPLICATE_OF]
    groups = clusters(by_id, dup)
    cluster_of = {cid: g[0] for g in groups for cid in g}
    contra: dict[str, set[str]] = {}
    superseded_clusters: set[str] = set()
    for s, d, k in edges:
        if s not in by_id or d not in by_id:
            continue
        cs, cd = cluster_of[s], cluster_of[d]
        if k == EdgeKind.CONTRADICTS and cs != cd:
            contra.setdefault(cs, set()).add(d)
            contra.setdefault(cd, set()).add(s)
        elif k == EdgeKind.SUPERSEDES and cs != cd:
            superseded_clusters.add(cd)

    out: list[Score] = []
    for g in groups:
        members = [by_id[c] for c in g]
        publishers = sorted({m.publisher for m in members})
        strongest = max(members, key=lambda m: STRENGTH[m.source_class]).source_class
        rep = min(
            members,
            key=lambda m: (-STRENGTH[m.source_class], m.created_at or datetime.min, position[m.id]),
        )
        against = sorted({by_id[c].publisher for c in contra.get(g[0], set())} - set(publishers))
        n_for, n_against = len(publishers), len(against)
        cls_w = weight(strongest)
        corr = _corroboration(n_for)
        share = n_for / (n_for + n_against)
        conf = cls_w * corr * share
        parts = [
            f"{strongest} source ({cls_w:.2f})",
            f"{n_for} publisher{'s' if n_for != 1 else ''} ({corr:.2f})",
        ]
        if n_against:
            parts.append(
                f"{n_against} contradicting publisher{'s' if n_against != 1 else ''} "
                f"({n_for}/{n_for + n_against})"
            )
        sup = g[0] in superseded_clusters
        if sup:
            conf *= SUPERSEDED_FACTOR
            parts.append(f"superseded by a newer claim (x{SUPERSEDED_FACTOR})")
        verdicts = [grounded[c] for c in g if c in grounded]
        ground: bool | None = None
        if verdicts:
            ground = all(verdicts)
            factor = GROUND_CONFIRMED_FACTOR if ground else GROUND_UNSUPPORTED_FACTOR
            conf *= factor
            parts.append(
                ("re-read confirmed" if ground else "re-read did not support it") + f" (x{factor})"
            )
        conf = max(0.0, min(conf, CORROBORATION_CEILING))
        out.append(
            Score(
                cluster_id=g[0],
                members=tuple(g),
                representative=rep.id,
                confidence=round(conf, 4),
                publishers=n_for,
                contradictors=n_against,
                superseded=sup,
                grounded=ground,
                source_class=strongest,
                explanation=f"{conf:.2f} = " + " x ".join(parts),
            )
        )
    return out


def score_session(run: Run) -> list[Score]:
    store, sid = run.store, run.session_id
    nodes = [
        ClaimNode(c.id, c.publisher, c.source_class, c.created_at)
        for c in store.many(ClaimRow, q("session_claims"), {"session_id": sid})
    ]
    edges: list[tuple[str, str, str]] = [
        (e.src_claim_id, e.dst_claim_id, e.kind)
        for e in store.many(EdgeRow, q("session_edges"), {"session_id": sid})
    ]
    grounded = {
        r["claim_id"]: r["outcome"] == "confirmed"
        for r in store.named("grounded_claims", {"session_id": sid})
    }
    scores = derive(nodes, edges, grounded)
    now = utcnow()

    rows = [
        {
            "claim_id": member,
            "cluster_id": s.cluster_id,
            "representative": member == s.representative,
            "confidence": s.confidence,
            "publishers": s.publishers,
            "contradictors": s.contradictors,
            "superseded": s.superseded,
            "grounded": s.grounded,
            "source_class": str(s.source_class),
            "explanation": s.explanation,
        }
        for s in scores
        for member in s.members
    ]

    def write(cur: Any) -> None:
        cur.execute(q("scores_clear"), {"session_id": sid})
        # Scoring is a round's last stage: with its scores written, the round is finished (a
        # stop before this resumes the round; mole_dag.driver).
        cur.execute(q("round_mark_done"), {"session_id": sid, "now": now})
        if rows:
            # One statement for the session's scores, not one per claim (issue 12).
            cur.execute(
                q("score_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(
                        rows,
                        (
                            "claim_id",
                            "cluster_id",
                            "representative",
                            "confidence",
                            "publishers",
                            "contradictors",
                            "superseded",
                            "grounded",
                            "source_class",
                            "explanation",
                        ),
                    ),
                },
            )

    store.transact(write)
    multi = sum(1 for s in scores if len(s.members) > 1)
    run.progress(f"scored {len(rows)} claims in {len(scores)} clusters ({multi} with duplicates)")
    return scores
