"""One verification pass: retrieve candidate pairs over the session's whole claim set, settle
what a rule can settle, adjudicate the rest in batches, and write edges.

The verifier sees the store, not one lead's batch: a contradiction between claims found by
different leads is the case that matters most, and a per-lead verifier structurally cannot
see it."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from mole_dag.budget import BudgetExhausted
from mole_dag.context import Run
from mole_dag.core import EdgeKind, Role, stable_id
from mole_dag.store import q, utcnow
from mole_dag.verifier.relations import CONTRADICTS, DUPLICATE_OF, NEITHER, normalize_relation
from mole_dag.verifier.retriever import DEFAULT_MAX_CANDIDATES, ClaimText, Pair, candidate_pairs

STAGE = "claim_edges"
# How many pairs go into one adjudication call. A trade-off, not an optimum: larger batches
# amortise the instructions further, but a small model's attention and output ceiling give out
# sooner. Partial output is salvaged per verdict, so an over-long batch degrades, not fails.
DEFAULT_BATCH_SIZE = 8
# How far apart two publication dates must be before a contradiction reads as staleness rather
# than disagreement. A guess, flagged as one: it depends on how fast the field moves.
DEFAULT_STALENESS_GAP = timedelta(days=365)
# The cumulative verification allowance as a share of the session budget. A guess, set generously
# on purpose: a ceiling that binds before the graph is useful would make the verifier look
# worthless for reasons of arithmetic.
DEFAULT_MAX_SHARE = 0.25

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)


def normalized(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", t).split())


@dataclass(frozen=True)
class Judged:
    pair: Pair
    relation: str
    decided_by: str
    rationale: str = ""


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    kind: EdgeKind
    rationale: str
    created_by: str


@dataclass
class EdgeResult:
    claims_verified: int = 0
    pairs_retrieved: int = 0
    pairs_decided_free: int = 0
    pairs_judged: int = 0
    pairs_unjudged: int = 0
    pairs_skipped_budget: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    contradictions: int = 0
    calls: int = 0
    spent: int = 0


def edges_from(
    verdicts: list[Judged],
    published: dict[str, date | None],
    staleness_gap: timedelta = DEFAULT_STALENESS_GAP,
) -> list[Edge]:
    """Verdicts -> edges. `neither` stores nothing (it is a real answer, and storing it would fill
    the table with rows recording absence). A contradiction between claims published further
    apart than the staleness gap becomes `supersedes`, newer -> older, and REPLACES the
    contradiction: keeping both would penalise the newer claim for a disagreement it wins."""
    out: list[Edge] = []
    for v in verdicts:
        if v.relation == DUPLICATE_OF:
            out.append(Edge(v.pair.a, v.pair.b, EdgeKind.DUPLICATE_OF, v.rationale, v.decided_by))
        elif v.relation == CONTRADICTS:
            da, db = published.get(v.pair.a), published.get(v.pair.b)
            if da and db and abs((da - db).days) > staleness_gap.days:
                newer, older = (v.pair.a, v.pair.b) if da > db else (v.pair.b, v.pair.a)
                why = f"contradiction across {abs((da - db).days)} days: newer supersedes older"
                out.append(Edge(newer, older, EdgeKind.SUPERSEDES, why, v.decided_by))
            else:
                out.append(Edge(v.pair.a, v.pair.b, EdgeKind.CONTRADICTS, v.rationale, v.decided_by))
    return out


def _free_verdict(a: dict[str, Any], b: dict[str, Any], pair: Pair) -> Judged | None:
    """Settle a pair without a model where a rule can."""
    if normalized(a["text"]) == normalized(b["text"]):
        return Judged(pair, DUPLICATE_OF, "rule:identical-text", "identical after normalisation")
    if a["source_class"] == b["source_class"] == "local" and a["publisher"] == b["publisher"]:
        # Two gated aggregates of one dataset are both exact computations over the same rows:
        # they can differ, never contradict (mole_dag/compute).
        return Judged(pair, NEITHER, "rule:same-dataset", "two aggregates of one dataset")
    return None


def build_edges(
    run: Run,
    *,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    batch_size: int = DEFAULT_BATCH_SIZE,
    staleness_gap: timedelta = DEFAULT_STALENESS_GAP,
    max_share: float = DEFAULT_MAX_SHARE,
) -> EdgeResult:
    store, sid = run.store, run.session_id
    result = EdgeResult()
    claims = store.named("session_claims", {"session_id": sid})
    by_id = {c["id"]: c for c in claims}
    targets = {c["id"] for c in claims if not c["verified"]}
    if not targets:
        return result
    judged = {Pair(r["a_claim_id"], r["b_claim_id"]) for r in store.named("judged_pairs", {"session_id": sid})}
    pairs = candidate_pairs([ClaimText(c["id"], c["text"]) for c in claims], targets, judged,
                            max_candidates)
    result.pairs_retrieved = len(pairs)

    verdicts: list[Judged] = []
    to_judge: list[Pair] = []
    for p in pairs:
        free = _free_verdict(by_id[p.a], by_id[p.b], p)
        if free:
            verdicts.append(free)
            result.pairs_decided_free += 1
        else:
            to_judge.append(p)

    unit = run.unit
    bal = run.ledger.balance(sid)
    allowance = int(bal.total * max_share)
    spent_so_far = sum(r["spent"] for r in run.ledger.spend_by_role(sid) if r["role"] == "verifier")
    for start in range(0, len(to_judge), batch_size):
        batch = to_judge[start : start + batch_size]
        texts = [(by_id[p.a]["text"], by_id[p.b]["text"]) for p in batch]
        estimate = run.skills.estimate_judge(texts, unit)
        if spent_so_far + estimate > allowance and estimate > 0:
            result.pairs_skipped_budget += len(to_judge) - start
            break
        try:
            with run.ledger.hold(sid, Role.VERIFIER, estimate, tool=f"{run.skills.name}:judge",
                                 stage=STAGE) as h:
                got = run.skills.judge(texts, unit)
                h.settle(got.cost, usage=got.usage)
        except BudgetExhausted:
            result.pairs_skipped_budget += len(to_judge) - start
            break
        result.calls += 1
        result.spent += got.cost
        spent_so_far += got.cost
        seen = set()
        for v in got.value:
            rel = normalize_relation(v.relation)
            if rel is None or not (0 <= v.index < len(batch)) or v.index in seen:
                continue
            seen.add(v.index)
            verdicts.append(Judged(batch[v.index], rel, got.model or run.skills.name, v.rationale))
        result.pairs_judged += len(seen)
        result.pairs_unjudged += len(batch) - len(seen)

    published = {cid: c["published"] for cid, c in by_id.items()}
    edges = edges_from(verdicts, published, staleness_gap)
    now = utcnow()
    # A claim is verified once every pair it put up was settled; pairs the budget skipped or a
    # batch failed to return leave their claims for the next pass.
    settled = {v.pair for v in verdicts}
    unsettled_claims = {c for p in pairs if p not in settled for c in (p.a, p.b)}
    verified = sorted(targets - unsettled_claims)

    def write(cur: Any) -> None:
        for v in verdicts:
            cur.execute(q("verdict_insert"), {
                "session_id": sid, "a": v.pair.a, "b": v.pair.b, "relation": v.relation,
                "decided_by": v.decided_by, "confirmed": None, "rationale": v.rationale[:500],
                "now": now})
        for e in edges:
            cur.execute(q("edge_insert"), {
                "id": stable_id(sid, e.src, e.dst, str(e.kind), prefix="e-"), "session_id": sid,
                "src": e.src, "dst": e.dst, "kind": str(e.kind), "weight": 1.0,
                "rationale": e.rationale[:500], "created_by": e.created_by, "now": now})
        if verified:
            cur.execute(q("claims_mark_verified"), {"session_id": sid, "ids": verified})

    store.transact(write)
    result.claims_verified = len(verified)
    for e in edges:
        result.edges[str(e.kind)] = result.edges.get(str(e.kind), 0) + 1
    result.contradictions = result.edges.get(str(EdgeKind.CONTRADICTS), 0)
    run.progress(
        f"verified {len(verified)} claims: {result.pairs_retrieved} pairs, "
        f"{result.pairs_decided_free} settled by rule, {result.pairs_judged} judged, "
        f"edges {dict(sorted(result.edges.items())) or '{}'}"
    )
    return result


__all__ = ["NEITHER", "Edge", "EdgeResult", "Judged", "build_edges", "edges_from", "normalized"]
