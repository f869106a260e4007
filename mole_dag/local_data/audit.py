"""The query audit: what every answer given over a dataset tells, together, and which figures of a
new answer may leave.

A floor per figure is not enough: answers can be added and subtracted. Q(t+A) + Q(t+B) - Q(t+A+B)
is t's row however far apart A and B are, and a pair refused in one session could be asked in
two. So the audit holds every figure answered over the data (audit_log.py keeps them in the
store, for every session and process) and a new answer is judged against all of them:

- every figure is a sum over its rows (a count sums ones; a mean with its count gives the sum;
  variance, standard deviation and correlation are built from sums). The span of the answered
  row sets is what adding and subtracting answers can reach (span.py);
- an answer is refused when, with it, that span holds a non-zero vector on fewer than the floor's
  rows: one row's values, or a group under the floor;
- which groups of a GROUP BY answer leave is decided by the answer alone, with the totals the
  profile publishes: groups are admitted largest first, and a group that would let a set under
  the floor be computed (typically: the groups shown subtracted from the known total leave a
  suppressed remainder under the floor) is suppressed while the rest leave (secondary
  suppression, as in issue 11). The groups left are then judged against every earlier answer
  together, and if they would disclose anything the whole answer is refused. Never a group on
  its own for that: which group would be given up depends on the data (GROUP BY vote over a set,
  then over the same set without one respondent, differs only in that respondent's vote), so
  suppressing it alone would tell what the refusal is there to hide.

Spaces. Figures over different column sets tell about different values: `sum(x)` rests on the
rows where x is set and tells nothing about the rows where it is not. So each column-set key has
its own span (as in issue 11's overlap control): `''` for the rows themselves (every group's n,
count(*)), `x` for x's aggregates, `x,y` for a correlation. A key whose columns have no missing
value rests on exactly the rows its groups hold, so it shares the `''` space (whose sets then
include all of its own). Each space starts with its total (all rows where its columns are set),
treated as known: the profile publishes the row count and every column's non-null count.

Known limit, by that split: which of a set's rows have a missing value in a column can be
learned by differencing a count (n) against the column's figures over the same groups; the
profile already publishes the missing count over all rows. A median and a count(DISTINCT x) are
audited as sums over their rows (their row sets enter the span), though neither is a sum and each
can tell more than its rows' total."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from mole_dag.local_data import rowsets
from mole_dag.local_data.connector import FLOOR, Dataset
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.rowsets import ROWS, RowSet
from mole_dag.local_data.span import Added, Span


class Verdict(Enum):
    SAFE = "safe"
    DISCLOSES = "discloses"  # a set under the floor would become derivable
    UNVERIFIED = "unverified"  # a combination the rational check could not prove


@dataclass(frozen=True)
class Figure:
    """A row set to record with a crossing: the shown group it belongs to (its position in the
    envelope's rows) and the rows, for one column-set key."""

    cell: int
    rows: RowSet


class Audit:
    """The answered figures over one dataset, as one span per space. Copy-on-write: `trial()`
    gives an audit to try figures on without touching this one."""

    def __init__(
        self,
        rows: int,
        space_of: Callable[[str], str],
        total: Callable[[str], np.ndarray],
        floor: int = FLOOR,
    ) -> None:
        self.rows = rows
        self.floor = floor
        self._space_of = space_of
        self._total = total
        self._spaces: dict[str, Span] = {}
        self._owned: set[str] = set()
        # How many recorded sets this audit holds (audit_log.py: the record's length).
        self.answered = 0

    @classmethod
    def of(cls, dataset: Dataset) -> Audit:
        missing = {c.name: c.non_null < dataset.rows for c in dataset.columns}

        def space_of(columns: str) -> str:
            names = [c for c in columns.split(",") if c]
            return columns if any(missing.get(c, True) for c in names) else ROWS

        totals: dict[str, np.ndarray] = {}

        def total(space: str) -> np.ndarray:
            if space not in totals:
                totals[space] = rowsets.where_set(dataset, space)
            return totals[space]

        return cls(dataset.rows, space_of, total)

    def space_of(self, columns: str) -> str:
        return self._space_of(columns)

    def _span(self, space: str) -> Span:
        span = self._spaces.get(space)
        if span is None:
            span = Span(self.rows, self.floor)
            span.add(self._total(space))
            self._spaces[space] = span
            self._owned.add(space)
        elif space not in self._owned:
            span = span.copy()
            self._spaces[space] = span
            self._owned.add(space)
        return span

    def blank(self) -> Audit:
        """An audit of the same data holding nothing but the spaces' totals."""
        return Audit(self.rows, self._space_of, self._total, self.floor)

    def trial(self) -> Audit:
        out = Audit(self.rows, self._space_of, self._total, self.floor)
        out._spaces = dict(self._spaces)
        out.answered = self.answered
        # Both sides now share the spans: whichever writes first copies.
        self._owned = set()
        return out

    def absorb(self, columns: str, mask: np.ndarray) -> None:
        """Add a recorded set (it was admitted when answered)."""
        span = self._span(self._space_of(columns))
        if span.add(mask) is Added.UNVERIFIED:
            # Only a set recorded before this audit existed (or by other code) can land here:
            # the span can no longer be trusted, so everything in this space is refused.
            span.broken = True
        self.answered += 1

    def admit(self, figures: list[tuple[str, np.ndarray]]) -> Verdict:
        """Add the figures' row sets; say whether the spans then disclose a set under the floor.
        On anything but SAFE this audit is spoilt: call it on a trial."""
        touched: set[str] = set()
        for columns, mask in figures:
            space = self._space_of(columns)
            got = self._span(space).add(mask)
            if got is Added.UNVERIFIED:
                return Verdict.UNVERIFIED
            if got is Added.NEW:
                touched.add(space)
        for space in sorted(touched):
            if self._spaces[space].discloses():
                return Verdict.DISCLOSES
        return Verdict.SAFE

    def size(self) -> tuple[int, int, int]:
        """(spaces, total rank, total atoms): for the benchmark."""
        spans = self._spaces.values()
        return len(self._spaces), sum(s.rank for s in spans), sum(s.atoms for s in spans)


# --- which figures of an answer may leave -------------------------------------------------------


@dataclass
class Controlled:
    rows: list[dict[str, Any]]  # the envelope rows that may leave, in order
    least: int  # the fewest rows behind any figure kept
    figures: list[Figure]  # their row sets, to record
    refusals: list[Refused]
    audit: Audit  # the audit with them admitted (the record's cache after the answer is stored)


def _refused(verdict: Verdict, k: int) -> Refused:
    if verdict is Verdict.UNVERIFIED:
        return Refused(
            Stage.GATE,
            Reason.AUDIT_UNVERIFIED,
            "the audit could not prove exactly how it combines with the answers already given "
            "over this data; nothing leaves",
        )
    return Refused(
        Stage.GATE,
        Reason.QUERY_AUDIT,
        "with the answers already given over this data (in any session) and the totals the "
        f"profile publishes, it would let a set of fewer than {k} rows be computed by adding "
        "and subtracting answers; nothing leaves",
    )


def _figures(cell: dict[str, np.ndarray], keys: list[str], audit: Audit) -> list[tuple[str, Any]]:
    """A group's row sets, one per key, without repeats within a space (a column with no missing
    value rests on the group's own rows)."""
    out: list[tuple[str, Any]] = []
    seen: list[tuple[str, np.ndarray]] = []
    for key in keys:
        space = audit.space_of(key)
        mask = cell[key]
        if any(s == space and np.array_equal(m, mask) for s, m in seen):
            continue
        seen.append((space, mask))
        out.append((key, mask))
    return out


def control(
    rows: list[dict[str, Any]],
    groups: rowsets.Groups,
    audit: Audit,
    *,
    grouped: bool,
    k: int = FLOOR,
) -> Controlled:
    """The rows of a folded answer that may leave, given every answer already given over the
    data. Raises Refused when none may."""
    cells = rowsets.cells(rows, groups, audit.rows)
    figs = [_figures(c, groups.keys, audit) for c in cells]
    keep = list(range(len(rows)))
    refusals: list[Refused] = []
    # 1. The answer alone, with the published totals: which groups may be shown at all.
    alone = audit.blank()
    verdict = alone.trial().admit([f for fs in figs for f in fs])
    if verdict is not Verdict.SAFE:
        if not grouped:
            raise _refused(verdict, k)
        # Largest groups first: the least information lost for the groups given up. A guess at
        # the cheapest choice, not an optimal one (that is a hard problem in general).
        keep, worst = [], Verdict.SAFE
        for i in sorted(range(len(rows)), key=lambda i: (-int(rows[i]["n"]), i)):
            attempt = alone.trial()
            got = attempt.admit(figs[i])
            if got is Verdict.SAFE:
                alone = attempt
                keep.append(i)
            elif worst is not Verdict.UNVERIFIED:
                worst = got
        keep.sort()
        if worst is Verdict.UNVERIFIED:
            raise _refused(worst, k)
        dropped = len(rows) - len(keep)
        what = (
            "{n} group(s) suppressed: the groups shown, subtracted from the totals the "
            f"profile publishes, would otherwise leave a set of fewer than {k} rows"
        )
        if not keep:
            raise Refused(
                Stage.GATE,
                Reason.SECONDARY_SUPPRESSION,
                what.format(n="every") + "; nothing leaves",
            )
        refusals.append(
            Refused(
                Stage.GATE, Reason.SECONDARY_SUPPRESSION, what.format(n=dropped) + "; the rest left"
            )
        )
    # 2. What is left, against every answer already given: all of it, or nothing.
    after = audit.trial()
    verdict = after.admit([f for i in keep for f in figs[i]])
    if verdict is not Verdict.SAFE:
        raise _refused(verdict, k)
    recorded: list[Figure] = []
    least = 0
    for pos, i in enumerate(keep):
        for key, mask in figs[i]:
            recorded.append(Figure(pos, RowSet.of(key, mask)))
        for key in groups.keys:
            n = int(cells[i][key].sum())
            least = n if not least else min(least, n)
    return Controlled([rows[i] for i in keep], least, recorded, refusals, after)
