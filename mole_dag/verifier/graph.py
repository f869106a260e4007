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

from mole_dag.budget import FreeCallBatch
from mole_dag.context import Run
from mole_dag.core import EdgeKind, Role, columns, stable_id
from mole_dag.llm.fanout import Allowance
from mole_dag.skills.protocol import Verdict, keep_list
from mole_dag.skills.unreadable import write_unreadable
from mole_dag.store import q, utcnow
from mole_dag.store.records import ClaimRow
from mole_dag.text import plural
from mole_dag.verifier.followups import ClaimInfo, FollowUp, propose
from mole_dag.verifier.judge import DEFAULT_BATCH_SIZE, Judged, judge_pairs
from mole_dag.verifier.relations import CONTRADICTS, DUPLICATE_OF, NEITHER
from mole_dag.verifier.retriever import (
    DEFAULT_MAX_CANDIDATES,
    ClaimText,
    Pair,
    candidate_pairs,
    meaning_candidate_pairs,
    pairing,
)

STAGE = "claim_edges"
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
    # A rerun's pairs of carried claims the previous session judged: its verdict, no call.
    pairs_carried: int = 0
    pairs_judged: int = 0
    pairs_unjudged: int = 0
    pairs_skipped_budget: int = 0
    pairs_confirmed: int = 0
    pairs_unconfirmed: int = 0
    confirm_pass: str = "off"
    edges: dict[str, int] = field(default_factory=dict)
    contradictions: int = 0
    follow_ups: list[FollowUp] = field(default_factory=list)
    calls: int = 0
    spent: int = 0
    calls_failed: int = 0
    unreadable: list[str] = field(default_factory=list)


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
        # A symmetric edge is stored one way (the table's CHECK src < dst), whichever way the
        # pair was shown to the judge (candidate_pairs: in the session's content order).
        lo, hi = sorted((v.pair.a, v.pair.b))
        if v.relation == DUPLICATE_OF:
            out.append(Edge(lo, hi, EdgeKind.DUPLICATE_OF, v.rationale, v.decided_by))
        elif v.relation == CONTRADICTS:
            da, db = published.get(v.pair.a), published.get(v.pair.b)
            if da and db and abs((da - db).days) > staleness_gap.days:
                newer, older = (v.pair.a, v.pair.b) if da > db else (v.pair.b, v.pair.a)
                why = f"contradiction across {abs((da - db).days)} days: newer supersedes older"
                out.append(Edge(newer, older, EdgeKind.SUPERSEDES, why, v.decided_by))
            else:
                out.append(Edge(lo, hi, EdgeKind.CONTRADICTS, v.rationale, v.decided_by))
    return out


def _free_verdict(a: ClaimRow, b: ClaimRow, pair: Pair) -> Judged | None:
    """Settle a pair without a model where a rule can."""
    if normalized(a.text) == normalized(b.text):
        return Judged(pair, DUPLICATE_OF, "rule:identical-text", "identical after normalisation")
    if a.source_class == b.source_class == "local" and a.publisher == b.publisher:
        # Two gated aggregates of one dataset are both exact computations over the same rows:
        # they can differ, never contradict (mole_dag/local_data).
        return Judged(pair, NEITHER, "rule:same-dataset", "two aggregates of one dataset")
    return None


def _carried_verdicts(run: Run) -> dict[Pair, tuple[Judged, bool | None]]:
    """A rerun's verdicts carried from the session it re-runs (issue 32), by pair of this
    session's claims: a pair of two claims copied from that session's unchanged sources, which
    it judged, is the same two statements, so its verdict (and confirm-pass outcome) holds
    without another judge call. Empty for a first run."""
    prev = run.session().previous_session_id
    if not prev:
        return {}
    store, sid = run.store, run.session_id
    new_of = {
        r["previous_claim_id"]: r["claim_id"]
        for r in store.named("rerun_carried_map", {"session_id": sid})
    }
    if len(new_of) < 2:
        return {}
    out: dict[Pair, tuple[Judged, bool | None]] = {}
    for r in store.named("rerun_previous_verdicts", {"session_id": prev}):
        a, b = new_of.get(r["a_claim_id"]), new_of.get(r["b_claim_id"])
        if a is None or b is None:
            continue
        # Pairs are stored with a < b; the copies' ids may sort the other way round, and a
        # duplicate_of verdict then reads in the copies' order.
        pair = Pair(min(a, b), max(a, b))
        why = f"carried from {prev}" + (f": {r['rationale']}" if r["rationale"] else "")
        out[pair] = (Judged(pair, r["relation"], r["decided_by"], why), r["confirmed"])
    return out


def _allowance(run: Run, max_share: float) -> Allowance:
    """The verifier's share of the session budget, enforced before each judge call (the
    ledger's ceiling still applies on top: this is a share of it, not a replacement). A paid
    failure (the provider charged for an empty answer) counts against it too."""
    bal = run.ledger.balance(run.session_id)
    spent = sum(
        int(r["spent"])
        for r in run.ledger.spend_by_role(run.session_id)
        if r["role"] == str(Role.VERIFIER)
    )
    return Allowance(int(bal.total * max_share), spent)


def build_edges(
    run: Run,
    *,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    batch_size: int = DEFAULT_BATCH_SIZE,
    staleness_gap: timedelta = DEFAULT_STALENESS_GAP,
    max_share: float = DEFAULT_MAX_SHARE,
    confirm: bool = True,
    queue_follow_ups: bool = True,
) -> EdgeResult:
    # A model-free judge's calls are free: their rows are written with the pass's verdicts and
    # edges, in one transaction, instead of two transactions per batch of pairs (issue 12).
    with run.ledger.free_calls(run.session_id) as free:
        return _build_edges(
            run,
            free,
            max_candidates=max_candidates,
            batch_size=batch_size,
            staleness_gap=staleness_gap,
            max_share=max_share,
            confirm=confirm,
            queue_follow_ups=queue_follow_ups,
        )


def _build_edges(
    run: Run,
    free: FreeCallBatch,
    *,
    max_candidates: int,
    batch_size: int,
    staleness_gap: timedelta,
    max_share: float,
    confirm: bool,
    queue_follow_ups: bool,
) -> EdgeResult:
    store, sid = run.store, run.session_id
    result = EdgeResult()
    claims = store.many(ClaimRow, q("session_claims"), {"session_id": sid})
    by_id = {c.id: c for c in claims}
    texts = {c.id: c.text for c in claims}
    targets = {c.id for c in claims if not c.verified}
    if not targets:
        return result
    judged_before = {
        Pair(r["a_claim_id"], r["b_claim_id"])
        for r in store.named("judged_pairs", {"session_id": sid})
    }
    # By words unless MOLE_PAIRING=meaning (retriever.pairing, issue 31).
    pick = meaning_candidate_pairs if pairing() == "meaning" else candidate_pairs
    pairs = pick([ClaimText(c.id, c.text) for c in claims], targets, judged_before, max_candidates)
    result.pairs_retrieved = len(pairs)

    verdicts: list[Judged] = []
    to_judge: list[Pair] = []
    # Confirm-pass outcomes by pair: of this pass's judgements, and of verdicts carried.
    confirmed: dict[Pair, bool] = {}
    carried = _carried_verdicts(run)
    for p in pairs:
        by_rule = _free_verdict(by_id[p.a], by_id[p.b], p)
        if by_rule:
            verdicts.append(by_rule)
            result.pairs_decided_free += 1
        elif Pair.of(p.a, p.b) in carried:
            # Carried verdicts are keyed canonically; a pair is shown in content order (issue 33).
            got, was_confirmed = carried[Pair.of(p.a, p.b)]
            verdicts.append(got)
            if was_confirmed is not None:
                confirmed[got.pair] = was_confirmed
            result.pairs_carried += 1
        else:
            to_judge.append(p)

    unit = run.unit
    allowance = _allowance(run, max_share)
    first = judge_pairs(
        run.skills,
        to_judge,
        texts,
        unit,
        batch_size=batch_size,
        fan=run.fan(
            Role.VERIFIER, STAGE, "judge", "judging", allowance=allowance, keep=keep_list(Verdict)
        ),
    )
    result.calls += first.calls
    result.spent += first.spent
    result.pairs_judged = len(first.judged)
    result.pairs_unjudged = len(first.unjudged)
    result.pairs_skipped_budget = len(first.stopped_for_budget or [])
    result.calls_failed += first.calls_failed
    result.unreadable += first.unreadable

    # The confirm pass: an edge is kept only when a second judgement, shown the pair the other
    # way round, agrees. Measured on the original system: contradiction precision 51% with one
    # judgement, 70% with two, at the cost of keeping about half the edges. A false contradiction
    # spends money researching a disagreement that does not exist, so the trade is taken. A
    # deterministic judge would only agree with itself, so it is not asked twice.
    edge_building = [j for j in first.judged if j.relation != NEITHER]
    if confirm and run.skills.uses_model and edge_building:
        result.confirm_pass = "on"
        second = judge_pairs(
            run.skills,
            [j.pair for j in edge_building],
            texts,
            unit,
            batch_size=batch_size,
            swap=True,
            fan=run.fan(
                Role.VERIFIER,
                STAGE,
                "judge",
                "confirming",
                allowance=allowance,
                keep=keep_list(Verdict),
            ),
        )
        result.calls += second.calls
        result.spent += second.spent
        result.calls_failed += second.calls_failed
        result.unreadable += second.unreadable
        again = {j.pair: j.relation for j in second.judged}
        for j in edge_building:
            if j.pair in again:
                confirmed[j.pair] = again[j.pair] == j.relation
        # A verdict the second pass could not re-judge (budget, truncated output) stays unsettled.
        unsettled = {j.pair for j in edge_building if j.pair not in again}
        first.judged = [j for j in first.judged if j.pair not in unsettled]
        result.pairs_unjudged += len(unsettled)
        result.pairs_confirmed = sum(1 for ok in confirmed.values() if ok)
        result.pairs_unconfirmed = sum(1 for ok in confirmed.values() if not ok)
    elif confirm and edge_building:
        result.confirm_pass = "skipped: deterministic judge"
    verdicts.extend(first.judged)

    kept = [v for v in verdicts if confirmed.get(v.pair, True)]
    published = {cid: c.published for cid, c in by_id.items()}
    edges = edges_from(kept, published, staleness_gap)
    now = utcnow()
    # A claim is verified once every pair it put up was settled; pairs the budget skipped or a
    # batch failed to return leave their claims for the next pass.
    settled = {v.pair for v in verdicts}
    unsettled_claims = {c for p in pairs if p not in settled for c in (p.a, p.b)}
    verified = sorted(targets - unsettled_claims)

    verdict_rows = [
        {
            # Stored canonical (the table's CHECK a < b), whichever way it was shown.
            "a": min(v.pair.a, v.pair.b),
            "b": max(v.pair.a, v.pair.b),
            "relation": v.relation,
            "decided_by": v.decided_by,
            "confirmed": confirmed.get(v.pair),
            "rationale": v.rationale[:500],
        }
        for v in verdicts
    ]
    edge_rows = [
        {
            "id": stable_id(sid, e.src, e.dst, str(e.kind), prefix="e-"),
            "src": e.src,
            "dst": e.dst,
            "kind": str(e.kind),
            "rationale": e.rationale[:500],
            "created_by": e.created_by,
        }
        for e in edges
    ]

    def write(cur: Any) -> list[FollowUp]:
        # One statement per table, not one per row: a pass writes hundreds of verdicts.
        if verdict_rows:
            cur.execute(
                q("verdict_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(
                        verdict_rows, ("a", "b", "relation", "decided_by", "confirmed", "rationale")
                    ),
                },
            )
        if edge_rows:
            cur.execute(
                q("edge_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(edge_rows, ("id", "src", "dst", "kind", "rationale", "created_by")),
                },
            )
        if verified:
            cur.execute(q("claims_mark_verified"), {"session_id": sid, "ids": verified})
        write_unreadable(cur, sid, [("judge", p) for p in result.unreadable], now)
        # Follow-ups read the edges just written (this thread's cursor sees them inside the
        # transaction), and their leads join it.
        return queue_follow_up_leads(run) if queue_follow_ups else []

    result.follow_ups, _ = free.write_with(write, store)
    result.claims_verified = len(verified)
    for e in edges:
        result.edges[str(e.kind)] = result.edges.get(str(e.kind), 0) + 1
    result.contradictions = result.edges.get(str(EdgeKind.CONTRADICTS), 0)
    run.progress(
        f"verified {len(verified)} claims: {result.pairs_retrieved} pairs, "
        f"{result.pairs_decided_free} settled by rule, "
        + (f"{result.pairs_carried} carried, " if result.pairs_carried else "")
        + f"{result.pairs_judged} judged"
        + (
            f" ({result.pairs_confirmed} confirmed, {result.pairs_unconfirmed} not)"
            if result.confirm_pass == "on"
            else ""
        )
        + f", edges {dict(sorted(result.edges.items())) or '{}'}"
        + (f", {plural(len(result.follow_ups), 'follow-up lead')}" if result.follow_ups else "")
    )
    return result


def queue_follow_up_leads(run: Run) -> list[FollowUp]:
    """Propose follow-ups for the session's live contradictions not yet followed up, and queue
    them as leads (one per search provider of the session)."""
    store, sid = run.store, run.session_id
    followed = {r["because"] for r in store.named("followed_contradictions", {"session_id": sid})}
    live = [
        (r["src_claim_id"], r["dst_claim_id"])
        for r in store.named("live_contradictions", {"session_id": sid})
    ]
    live = [p for p in live if f"contradiction between {p[0]} and {p[1]}" not in followed]
    if not live:
        return []
    info = {
        r["id"]: ClaimInfo(
            r["id"], r["text"], r["sub_question_id"], int(r["depth"]), r["root"] or r["id"]
        )
        for r in store.named("claim_lead_info", {"session_id": sid})
    }
    per_root = {
        r["root_claim_id"]: int(r["n"])
        for r in store.named("follow_ups_per_root", {"session_id": sid})
    }
    proposed = propose(live, info, per_root)
    if not proposed:
        return []
    actors = [a.strip() for a in run.session().actors.split(",") if a.strip()]
    now = utcnow()

    rows = [
        {
            "id": stable_id(sid, f.because, actor, prefix="lead-"),
            "sub_question_id": f.sub_question_id,
            "actor": actor,
            "query": f.query,
            "depth": f.depth,
            "root_claim_id": f.root_claim_id,
            "because": f.because,
        }
        for f in proposed
        for actor in actors
    ]

    def write(cur: Any) -> None:
        cur.execute(
            q("lead_insert_many"),
            {
                "session_id": sid,
                "now": now,
                **columns(
                    rows,
                    (
                        "id",
                        "sub_question_id",
                        "actor",
                        "query",
                        "depth",
                        "root_claim_id",
                        "because",
                    ),
                ),
            },
        )

    store.transact(write)
    return proposed


__all__ = [
    "NEITHER",
    "Edge",
    "EdgeResult",
    "Judged",
    "build_edges",
    "edges_from",
    "normalized",
    "queue_follow_up_leads",
]
