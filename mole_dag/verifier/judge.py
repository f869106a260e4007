"""Batched adjudication: pairs of claims in, one verdict per pair out.

Batching is the difference between verification costing a third of a session and a twentieth:
the instruction block dominates a single-pair call, so amortising it over several pairs is where
nearly all of the saving comes from. Partial output is salvaged per verdict; a pair the batch did
not answer stays unjudged (and is retried by a later pass), never guessed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from mole_dag.core import Unit, stable_id
from mole_dag.llm.fanout import Job, Outcome, Pass, Status, fan_out
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.skills.protocol import Metered, Skills, Verdict
from mole_dag.verifier.relations import normalize_relation
from mole_dag.verifier.retriever import Pair

# How many pairs go into one adjudication call. A trade-off, not an optimum: larger batches
# amortise the instructions further, but a small model's attention and output ceiling give out
# sooner. Partial output is salvaged per verdict, so an over-long batch degrades, not fails.
DEFAULT_BATCH_SIZE = 8


@dataclass(frozen=True)
class Judged:
    pair: Pair
    relation: str
    decided_by: str
    rationale: str = ""


@dataclass
class BatchOutcome:
    judged: list[Judged]
    unjudged: list[Pair]
    calls: int = 0
    calls_failed: int = 0
    spent: int = 0
    stopped_for_budget: list[Pair] | None = None
    # Why each reply that could not be read was lost (mole_dag.skills.unreadable).
    unreadable: list[str] = field(default_factory=list)


def batches(items: Sequence[Pair], size: int) -> list[list[Pair]]:
    if size < 1:
        raise ValueError("batch size must be at least 1")
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def parse_verdicts(got: Metered[list[Verdict]], batch: list[Pair], decided_by: str) -> BatchOutcome:
    seen: dict[int, Judged] = {}
    for v in got.value:
        rel = normalize_relation(v.relation)
        if rel is None or not (0 <= v.index < len(batch)) or v.index in seen:
            continue
        seen[v.index] = Judged(batch[v.index], rel, decided_by, v.rationale)
    judged = [seen[i] for i in sorted(seen)]
    unjudged = [p for i, p in enumerate(batch) if i not in seen]
    return BatchOutcome(judged, unjudged)


def judge_pairs(
    skills: Skills,
    pairs: Sequence[Pair],
    texts: dict[str, str],
    unit: Unit,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    swap: bool = False,
    fan: Pass | None = None,
) -> BatchOutcome:
    """Adjudicate `pairs` in batches. With `fan` the batches are paid from a session's ledger
    and made concurrently (mole_dag.llm.fanout), their verdicts read in batch order; a batch
    the budget refuses stops the pass (the remaining pairs are reported as stopped). Without
    `fan` the calls are made one by one and nothing is recorded: the evaluation path, whose
    cost is the evaluator's, not a session's. `swap` presents each pair as (b, a), for the
    confirm pass."""
    out = BatchOutcome([], [])
    groups = batches(pairs, batch_size)
    jobs: list[Job[Metered[list[Verdict]]]] = []
    for batch in groups:
        shown = [(texts[p.b], texts[p.a]) if swap else (texts[p.a], texts[p.b]) for p in batch]
        # The batch's pairs, in the order shown: the same batch asked again finds its answer.
        key = stable_id(*(f"{p.b}|{p.a}" if swap else f"{p.a}|{p.b}" for p in batch), prefix="j-")
        jobs.append(
            Job(skills.estimate_judge(shown, unit), partial(skills.judge, shown, unit), key=key)
        )
    outcomes = fan_out(fan, jobs) if fan is not None else _unpaid(jobs)
    for i, (batch, o) in enumerate(zip(groups, outcomes, strict=True)):
        if o.status == Status.FAILED:
            # No usable answer: the batch stays unjudged (its claims unverified, for a later
            # pass) and the rest of the pass goes on.
            out.calls_failed += 1
            out.unjudged.extend(batch)
            continue
        if o.status != Status.DONE:
            out.stopped_for_budget = [p for b in groups[i:] for p in b]
            break
        got = o.value
        assert got is not None
        out.calls += 1
        out.spent += got.cost
        if got.unreadable:
            out.unreadable.append(got.unreadable)
        parsed = parse_verdicts(got, batch, got.model or skills.name)
        out.judged.extend(parsed.judged)
        out.unjudged.extend(parsed.unjudged)
    return out


def _unpaid(jobs: list[Job[Metered[list[Verdict]]]]) -> Iterator[Outcome[Metered[list[Verdict]]]]:
    for i, job in enumerate(jobs):
        try:
            yield Outcome(i, Status.DONE, value=job.call())
        except ModelCallFailed as exc:
            yield Outcome(i, Status.FAILED, error=exc)
