"""Grounding: re-read the sources behind the claims most worth checking.

The quote was checked verbatim when the claim was mined, so a re-read asks a different question:
does the passage around it support what the claim says? Outcomes:
- confirmed / unsupported: the only two that change confidence;
- vanished: the quote is gone, so the page changed. NOT evidence against the claim;
- unreachable / undecided: nothing was learned; a check that failed is not a claim that failed;
- not_refetchable: a search provider supplied the text, and re-fetching would manufacture a
  mismatch.
Each source is read once for all the claims it backs. Grounding is the most expensive check, and
it spends the escrow the report needs, so it runs against an explicit allowance and a count cap."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mole_dag.actors.quote import CollapsedText, QuoteRejected
from mole_dag.actors.reread import NotRefetchable, Unreachable, reread
from mole_dag.budget import FreeCallBatch, Ledger
from mole_dag.core import Role, Unit, columns, stable_id
from mole_dag.llm.fanout import Allowance, Job, Pass, Status, fan_out, parallel_for
from mole_dag.sanitize import one_line
from mole_dag.skills.protocol import GroundRequest, GroundVerdict, Metered, Skills
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import GroundClaimRow, SessionRow, SourceRow

STAGE = "grounding"
# Small, and the count is the point rather than the value: a pass that grounds everything
# produces a well-checked set of claims and no report to put them in.
DEFAULT_MAX_CHECKS = 5
# The fraction of released escrow grounding may spend. A guess, flagged as one; what it protects
# is not: the report must still be affordable afterwards.
DEFAULT_SHARE_OF_ESCROW = 0.3
# The window of re-read text around the quote that reaches the judge. A page is attacker-
# controlled, so its length must not decide the size of a call.
MAX_PASSAGE_CHARS = 2400

OUTCOME = {"supported": "confirmed", "unsupported": "unsupported", "undecided": "undecided"}


@dataclass
class GroundResult:
    claim_id: str
    session_id: str
    outcome: str
    note: str


@dataclass
class GroundReport:
    checked: int = 0
    fetches: int = 0
    calls: int = 0
    spent: int = 0
    skipped_for_budget: int = 0
    # Checks whose model call failed: the source was read again, but nothing judged it, so
    # they are not re-reads in any count a user sees (stored as undecided).
    failed: int = 0
    results: list[GroundResult] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    def summary(self) -> dict[str, int]:
        out = {
            k: self.count(k)
            for k in (
                "confirmed",
                "unsupported",
                "vanished",
                "unreachable",
                "undecided",
                "not_refetchable",
            )
        }
        return out | {
            "checked": self.checked,
            "fetches": self.fetches,
            "calls": self.calls,
            "spent": self.spent,
            "skipped_for_budget": self.skipped_for_budget,
            "failed": self.failed,
        }


def passage_around(
    text: str, byte_start: int, byte_end: int, limit: int = MAX_PASSAGE_CHARS
) -> str:
    data = text.encode("utf-8")
    quote = data[byte_start:byte_end].decode("utf-8", errors="ignore")
    room = max(0, limit - len(quote)) // 2
    before = data[:byte_start].decode("utf-8", errors="ignore")[-room:]
    after = data[byte_end:].decode("utf-8", errors="ignore")[:room]
    return (before + quote + after)[:limit]


def _reread_all(
    targets: list[tuple[SessionRow | None, SourceRow | None]], store: Store, parallel: int
) -> list[str | NotRefetchable | Unreachable]:
    """Each source's text as it reads now, or why it could not be read, in `targets`' order.
    Several at once when the session's calls run concurrently: a re-read of a web page waits on
    the network as a model call does (the fetcher keeps its own per-host limits)."""

    def one(
        target: tuple[SessionRow | None, SourceRow | None],
    ) -> str | NotRefetchable | Unreachable:
        try:
            return reread(target[0], target[1], store)
        except (NotRefetchable, Unreachable) as exc:
            return exc

    if parallel <= 1 or len(targets) <= 1:
        return [one(t) for t in targets]
    with ThreadPoolExecutor(min(parallel, len(targets)), thread_name_prefix="reread") as pool:
        return list(pool.map(one, targets))


def check_claims(
    store: Store,
    ledger: Ledger,
    skills: Skills,
    claims: list[GroundClaimRow],
    *,
    paid_by: str,
    unit: Unit,
    allowance: int,
    progress: Callable[[str], None] | None = None,
    parallel: int | None = None,
) -> GroundReport:
    """Ground `claims` (claim_id, session_id, text, quote, source_id), paying from the
    `paid_by` session's ledger, never more than `allowance` in total."""
    # A model-free judge's calls are free: recorded with the checks, in one transaction.
    with ledger.free_calls(paid_by) as free:
        return _check_claims(
            store,
            ledger,
            skills,
            claims,
            paid_by=paid_by,
            unit=unit,
            allowance=allowance,
            free=free,
            progress=progress if skills.uses_model else None,
            parallel=parallel_for(skills.uses_model, parallel),
        )


def _check_claims(
    store: Store,
    ledger: Ledger,
    skills: Skills,
    claims: list[GroundClaimRow],
    *,
    paid_by: str,
    unit: Unit,
    allowance: int,
    free: FreeCallBatch,
    progress: Callable[[str], None] | None,
    parallel: int,
) -> GroundReport:
    report = GroundReport()
    by_source: dict[str, list[GroundClaimRow]] = defaultdict(list)
    for c in claims:
        by_source[c.source_id].append(c)
    sessions: dict[str, SessionRow | None] = {}
    now = utcnow()
    order = sorted(by_source)
    sources = {sid: store.one(SourceRow, q("source_get"), {"source_id": sid}) for sid in order}
    for group in by_source.values():
        sid = group[0].session_id
        if sid not in sessions:
            sessions[sid] = store.one(SessionRow, q("session_get"), {"session_id": sid})
    texts = _reread_all(
        [(sessions[by_source[s][0].session_id], sources[s]) for s in order], store, parallel
    )
    # The checks in plan order (source by source, claim by claim); the judge calls among them
    # are made concurrently and their answers put back in their places (issue 20).
    slots: list[GroundResult | tuple[GroundClaimRow, int]] = []
    jobs: list[Job[Metered[GroundVerdict]]] = []
    for source_id, read in zip(order, texts, strict=True):
        group = by_source[source_id]
        if isinstance(read, NotRefetchable):
            slots += [
                GroundResult(c.claim_id, c.session_id, "not_refetchable", str(read)) for c in group
            ]
            continue
        report.fetches += 1
        if isinstance(read, Unreachable):
            slots += [
                GroundResult(c.claim_id, c.session_id, "unreachable", str(read)[:300])
                for c in group
            ]
            continue
        haystack = CollapsedText(read)
        for c in group:
            try:
                match = haystack.find(c.quote)
            except QuoteRejected:
                match = None
            if match is None:
                slots.append(
                    GroundResult(
                        c.claim_id,
                        c.session_id,
                        "vanished",
                        "the quote is no longer in the source: the page changed",
                    )
                )
                continue
            req = GroundRequest(c.text, passage_around(read, match.byte_start, match.byte_end))
            slots.append((c, len(jobs)))
            jobs.append(Job(skills.estimate_ground(req, unit), partial(skills.ground, req, unit)))
    fan = Pass(
        ledger,
        paid_by,
        Role.VERIFIER,
        STAGE,
        f"{skills.name}:ground",
        "grounding",
        parallel,
        progress,
        # Grounding spends from the escrow the report needs: never past its allowance. A
        # check it cannot afford is skipped, and the next (perhaps cheaper) one still tried.
        Allowance(allowance),
        stop_on_refusal=False,
    )
    answers = list(fan_out(fan, jobs))
    for slot in slots:
        if isinstance(slot, GroundResult):
            report.results.append(slot)
            continue
        c, k = slot
        o = answers[k]
        if o.status in (Status.REFUSED, Status.NOT_SENT):
            report.skipped_for_budget += 1
            continue
        if o.status == Status.FAILED:
            # A check that failed is not a claim that failed.
            report.failed += 1
            report.results.append(
                GroundResult(
                    c.claim_id,
                    c.session_id,
                    "undecided",
                    f"the judge gave no answer: {type(o.error).__name__}",
                )
            )
            continue
        got = o.value
        assert got is not None
        report.calls += 1
        report.spent += got.cost
        verdict = got.value.verdict if got.value.verdict in OUTCOME else "undecided"
        report.results.append(
            GroundResult(
                c.claim_id,
                c.session_id,
                OUTCOME[verdict],
                f"{got.model or skills.name}: {one_line(got.value.rationale) or verdict}",
            )
        )
    report.checked = len(report.results)

    source_of: dict[str, str] = {}
    for c in claims:
        source_of.setdefault(c.claim_id, c.source_id)
    rows = [
        {
            "id": stable_id(r.claim_id, paid_by, now.isoformat(), prefix="g-"),
            "session_id": r.session_id,
            "claim_id": r.claim_id,
            "source_id": source_of[r.claim_id],
            "outcome": r.outcome,
            "note": r.note[:300],
        }
        for r in report.results
    ]

    def write(cur: Any) -> None:
        if rows:
            cur.execute(
                q("ground_insert_many"),
                {
                    "paid_by": paid_by,
                    "decided_by": skills.name,
                    "now": now,
                    **columns(
                        rows, ("id", "session_id", "claim_id", "source_id", "outcome", "note")
                    ),
                },
            )

    if rows or len(free):
        free.write_with(write, store)
    return report


def ground_session(
    store: Store,
    ledger: Ledger,
    skills: Skills,
    session_id: str,
    allowance: int,
    *,
    max_checks: int = DEFAULT_MAX_CHECKS,
    progress: Callable[[str], None] | None = None,
    parallel: int | None = None,
) -> GroundReport:
    """One grounding pass over a research session, paid from its own (released) escrow. A
    rerun's carried claims take their previous checks instead (carry_checks)."""
    carry_checks(store, session_id)
    if max_checks <= 0 or allowance < 0:
        return GroundReport()
    claims = store.many(
        GroundClaimRow, q("ground_candidates"), {"session_id": session_id, "limit": max_checks}
    )
    unit = ledger.balance(session_id).unit
    return check_claims(
        store,
        ledger,
        skills,
        claims,
        paid_by=session_id,
        unit=unit,
        allowance=allowance,
        progress=progress,
        parallel=parallel,
    )


def carry_checks(store: Store, session_id: str) -> int:
    """A rerun's carried claims (issue 32) take the grounding outcomes of the claims they were
    copied from: their source was read again and is byte-identical, so the passage a judge
    would be shown is the one it was shown, and the answer would be the one it gave. Recorded
    with the check's own judge and payer and a note saying where it came from; the candidates
    for this session's own checks leave carried claims out (`ground_candidates`). Returns how
    many outcomes were carried."""
    latest: dict[str, dict[str, Any]] = {}
    for r in store.named("rerun_carried_checks", {"session_id": session_id}):
        latest[r["claim_id"]] = r  # ordered oldest first: the latest check wins
    if not latest:
        return 0
    now = utcnow()

    def write(cur: Any) -> None:
        for claim_id, r in sorted(latest.items()):
            cur.execute(
                q("ground_carried_insert"),
                {
                    "id": stable_id(claim_id, session_id, "carried", prefix="g-"),
                    "session_id": session_id,
                    "claim_id": claim_id,
                    "source_id": r["source_id"],
                    "paid_by": r["paid_by"],
                    "outcome": r["outcome"],
                    "note": ("carried: " + (r["note"] or ""))[:300],
                    "decided_by": r["decided_by"],
                    "now": now,
                },
            )

    store.transact(write)
    return len(latest)
