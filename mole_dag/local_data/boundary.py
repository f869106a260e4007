"""The boundary as one call: a request in, a crossing (what may leave) or a refusal out.

    template choice -> hypothesis.render -> sqlguard -> gate -> exfil check -> Crossing
    SQL text        ->                      sqlguard -> gate -> exfil check -> Crossing

No store here: recording is crossings.py's job, so this module can be tested, benchmarked and
used by the toolkit without a session. The answers already given over the data reach the gate
as an `audit.Audit` (without one, a request is judged as the first over the data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mole_dag.local_data import exfil, gate, hypothesis
from mole_dag.local_data.audit import Audit, Figure
from mole_dag.local_data.connector import FLOOR, Dataset
from mole_dag.local_data.refusal import Refused
from mole_dag.local_data.sqlguard import Guarded, guard
from mole_dag.local_data.values import canonical_json, sha256_of
from mole_dag.skills.view import HypothesisChoice, ProfileView


@dataclass(frozen=True)
class Crossing:
    """Exactly what leaves, and how it was obtained."""

    kind: str  # profile | template | sql
    template: str | None
    columns: dict[str, str] | list[str]
    sql: str | None
    executed_sql: str | None
    envelope: dict[str, Any]
    envelope_json: str
    envelope_sha256: str
    min_rows: int
    # Set when part of the answer was suppressed under the floor (the rest left).
    partial: Refused | None = None
    # Further suppressions in the same answer (the query audit).
    also_suppressed: tuple[Refused, ...] = ()
    # The rows each figure rests on. Private to the boundary: stored by the recorder, never in
    # the envelope, never shown (repr=False keeps it out of logs and tracebacks too).
    figures: tuple[Figure, ...] = field(default=(), repr=False, compare=False)
    # The audit with those figures admitted: the record's once the recorder has stored them.
    audit: Audit | None = field(default=None, repr=False, compare=False)

    @property
    def partials(self) -> list[Refused]:
        return ([self.partial] if self.partial is not None else []) + list(self.also_suppressed)


def _crossing(
    kind: str,
    template: str | None,
    columns: dict[str, str] | list[str],
    sql: str | None,
    executed: str | None,
    envelope: dict[str, Any],
    min_rows: int,
    result: gate.GateResult | None = None,
) -> Crossing:
    text = canonical_json(envelope)
    partial = result.suppressed if result is not None else None
    more = tuple(result.also_suppressed) if result is not None else ()
    if partial is None and more:
        partial, more = more[0], more[1:]
    figures = tuple(result.figures) if result is not None else ()
    return Crossing(
        kind,
        template,
        columns,
        sql,
        executed,
        envelope,
        text,
        sha256_of(text),
        min_rows,
        partial,
        more,
        figures,
        result.audit if result is not None else None,
    )


def _checked(dataset: Dataset, guarded: Guarded, envelope: dict[str, Any]) -> None:
    try:
        exfil.verify_no_leak(dataset, guarded, envelope)
    except Refused as r:
        r.envelope_sha256 = sha256_of(canonical_json(envelope))
        raise


def profile_crossing(dataset: Dataset, view: ProfileView) -> Crossing:
    """The profile itself leaves (to whichever mind picks hypotheses), so it is a crossing
    too. Names, types, counts and null rates over all rows; no values.
    Its figures (the row count and each column's non-null count) are the totals every space of
    the query audit starts from, so it adds nothing to the audit's record."""
    envelope = {
        "dataset": dataset.sha256[:12],
        "file": view.file,
        "rows": view.rows,
        "floor": FLOOR,
        "columns": [
            {
                "name": c.name,
                "type": c.type,
                "roles": list(c.roles),
                "distinct": c.distinct,
                "null_rate": c.null_rate,
                "withheld": c.withheld,
            }
            for c in view.columns
        ],
    }
    return _crossing(
        "profile",
        None,
        [c.name for c in view.columns],
        None,
        None,
        envelope,
        view.rows,
    )


def ask_template(
    dataset: Dataset, choice: HypothesisChoice, audit: Audit | None = None
) -> Crossing:
    """Raises Refused (hypothesis, sqlguard, gate or exfil) or returns what may leave."""
    rendered = hypothesis.render(choice, dataset)
    guarded = guard(rendered.sql, dataset)
    request: dict[str, Any] = {
        "kind": "template",
        "template": rendered.template,
        "columns": rendered.columns,
    }
    if choice.buckets is not None:
        request["buckets"] = choice.buckets
    result = gate.run(
        dataset,
        guarded,
        request=request,
        tests=rendered.tests,
        extra=rendered.extra,
        audit=audit,
    )
    _checked(dataset, guarded, result.envelope)
    return _crossing(
        "template",
        rendered.template,
        rendered.columns,
        guarded.sql,
        result.executed_sql,
        result.envelope,
        result.min_rows,
        result,
    )


def ask_sql(dataset: Dataset, sql: str, audit: Audit | None = None) -> Crossing:
    """A statement written by someone else (toolkit mode: a coding agent's own model)."""
    guarded = guard(sql, dataset)
    result = gate.run(dataset, guarded, request={"kind": "sql"}, audit=audit)
    _checked(dataset, guarded, result.envelope)
    return _crossing(
        "sql",
        None,
        list(guarded.columns),
        guarded.sql,
        result.executed_sql,
        result.envelope,
        result.min_rows,
        result,
    )
