"""Benchmark: the local-data boundary on the test suite's survey CSV (40,000 rows, 11 columns).

Times, as medians over several runs: opening the data (UTF-8 check and hash, load into the
private DuckDB, profile), and each template end to end through the boundary (render, guard, the
gate's folded query and its tests, the exfil recount). The bookkeeping across queries is shown
apart: the row-set query (row positions per raw group), and the answer judged by the query audit
(issue 22) holding HISTORY earlier row sets (decompressed from their stored blobs, as the
record's reader does). bench/audit_bench.py measures the audit itself as answers pile up.
Run: `.venv/bin/python bench/local_gate_bench.py` (or `make bench`). Nothing is written outside a
temporary folder."""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from survey_data import ROWS, write_survey  # noqa: E402

from mole_dag.local_data import boundary, exfil, gate, rowsets  # noqa: E402
from mole_dag.local_data.audit import Audit  # noqa: E402
from mole_dag.local_data.connector import Dataset  # noqa: E402
from mole_dag.local_data.hypothesis import render  # noqa: E402
from mole_dag.local_data.sqlguard import guard  # noqa: E402
from mole_dag.skills.view import HypothesisChoice  # noqa: E402

RUNS = 7
HISTORY = 200  # earlier row sets in the session: a long session (40 answers of ~5 figures)
CHOICES = [
    HypothesisChoice("count_by_group", {"group": "region"}),
    HypothesisChoice("mean_by_group", {"group": "region", "value": "income"}),
    HypothesisChoice("median_by_group", {"group": "plan", "value": "income"}),
    HypothesisChoice("proportion_by_group", {"group": "plan", "outcome": "renewed"}),
    HypothesisChoice("correlation", {"x": "age", "y": "income"}),
    HypothesisChoice("distribution", {"value": "income"}, buckets=5),
]


def median_ms(fn: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _history(ds: Dataset, g: object) -> Audit:
    """An audit holding HISTORY stored row sets shaped like this statement's groups, each with
    two rows moved, so none is equal to a new one."""
    groups = rowsets.raw_groups(ds, g)  # type: ignore[arg-type]
    audit = Audit.of(ds)
    for i in range(HISTORY):
        _, masks = groups.groups[i % len(groups.groups)]
        key = groups.keys[i % len(groups.keys)]
        mask = masks[key].copy()
        mask[i % ds.rows] = not mask[i % ds.rows]
        mask[(i * 7919 + 1) % ds.rows] = not mask[(i * 7919 + 1) % ds.rows]
        s = rowsets.RowSet.of(key, mask)
        stored = rowsets.RowSet.from_blob(s.columns, s.n, s.blob())
        audit.absorb(stored.columns, stored.mask(ds.rows))
    return audit


def _ask_or_refuse(ds: Dataset, choice: HypothesisChoice, audit: Audit) -> None:
    with contextlib.suppress(boundary.Refused):
        boundary.ask_template(ds, choice, audit.trial())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        csv = write_survey(Path(tmp) / "survey.csv")
        print(f"survey.csv: {ROWS} rows, {csv.stat().st_size / 1e6:.1f} MB; median of {RUNS} runs")
        print(f"{'open + profile':<40} {median_ms(lambda: Dataset.open(csv).close()):8.1f} ms")
        with Dataset.open(csv) as ds:
            for choice in CHOICES:
                label = f"{choice.template} ({', '.join(choice.columns.values())})"
                total = median_ms(lambda c=choice: boundary.ask_template(ds, c))
                g = guard(render(choice, ds).sql, ds)
                fold = median_ms(lambda g=g: gate._execute(ds, gate.fold_sql(ds, g)[0]))
                env = boundary.ask_template(ds, choice).envelope
                check = median_ms(lambda g=g, e=env: exfil.verify_no_leak(ds, g, e))
                print(
                    f"{label:<40} {total:8.1f} ms  (folded query {fold:.1f} ms, "
                    f"exfil check {check:.1f} ms)"
                )
                sets = median_ms(lambda g=g: rowsets.raw_groups(ds, g))
                hist = _history(ds, g)
                with_history = median_ms(lambda c=choice, h=hist: _ask_or_refuse(ds, c, h))
                print(
                    f"{'':<40} row sets {sets:.1f} ms; with a history of {HISTORY} "
                    f"sets {with_history:.1f} ms end to end"
                )


if __name__ == "__main__":
    main()
