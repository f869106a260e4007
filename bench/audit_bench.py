"""Benchmark: the cost of the query audit (issue 22) per question, as the answered ones pile up.

Data: the test suite's survey CSV (tests/survey_data.py) at 1,000 and at 100,000 rows, written to
a temporary folder. Workload: an analyst's questions, drawn from a fixed seed: counts and means
by region, plan, renewal, satisfaction, age decade and pairs of those, means over subpopulations
(a region and a plan, an age range, an income threshold) and totals. Questions are asked through
the boundary with one audit carried from answer to answer (as the record's cache does) until
ANSWERED of them have been answered (some are refused or trimmed on the way: that is the audit
working).

Then, with ANSWERED answers held, each of PROBES further questions is timed, each against its own
copy of that audit: the whole boundary (guard, folded query, row sets, audit, exfil check), the
audit's part alone (admitting the figures and searching the spans), and the same boundary with
the audit switched off in the same run (the baseline: issue 21's gate without any cross-query
control). Wall time and CPU time (process_time) are medians over the probes. Also measured: a
process's first question on a store holding those answers (no cache: every recorded set is read,
decompressed and added), through the recorder on a DuckDB file.

Run: `.venv/bin/python bench/audit_bench.py` (or `--rows 1000` for one size). Nothing is
written outside a temporary folder."""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from survey_data import RARE_PLANS, RARE_REGIONS, write_survey  # noqa: E402

from mole_dag.core import Unit  # noqa: E402
from mole_dag.local_data import audit as query_audit  # noqa: E402
from mole_dag.local_data import boundary  # noqa: E402
from mole_dag.local_data.audit import Audit, Controlled  # noqa: E402
from mole_dag.local_data.audit_log import forget_cached  # noqa: E402
from mole_dag.local_data.connector import Dataset  # noqa: E402
from mole_dag.local_data.crossings import gated_query  # noqa: E402
from mole_dag.local_data.refusal import Refused  # noqa: E402

ANSWERED = 100
PROBES = 15
SIZES = (1_000, 100_000)

KEYS = [
    "region",
    "plan",
    "renewed",
    "satisfaction",
    "floor(age / 10)",
]
VALUES = ["avg(income)", "avg(age)", "avg(satisfaction)", "stddev(income)"]
REGIONS = ["north", "south", "east", "west", "central", "coast"]
PLANS = ["basic", "plus", "pro"]


def questions(seed: int) -> Iterator[str]:
    """An endless, reproducible stream of an analyst's questions."""
    rng = random.Random(seed)
    while True:
        kind = rng.randrange(6)
        value = rng.choice(VALUES)
        if kind == 0:
            key = rng.choice(KEYS)
            yield f"SELECT {key}, count(*), {value} FROM data GROUP BY {key}"
        elif kind == 1:
            a, b = rng.sample(KEYS[:4], 2)
            yield f"SELECT {a}, {b}, count(*), {value} FROM data GROUP BY {a}, {b}"
        elif kind == 2:
            r, p = rng.choice(REGIONS), rng.choice(PLANS)
            yield f"SELECT count(*), {value} FROM data WHERE region = '{r}' AND plan = '{p}'"
        elif kind == 3:
            lo = rng.randrange(18, 80)
            hi = lo + rng.randrange(3, 25)
            yield f"SELECT count(*), {value} FROM data WHERE age BETWEEN {lo} AND {hi}"
        elif kind == 4:
            t = rng.randrange(30, 70) * 1000
            key = rng.choice(KEYS[:3])
            yield (f"SELECT {key}, count(*), {value} FROM data WHERE income > {t} GROUP BY {key}")
        else:
            yield f"SELECT count(*), {value} FROM data"


def _no_audit(
    rows: list[dict[str, Any]], groups: Any, audit: Audit, *, grouped: bool, k: int = 5
) -> Controlled:
    return Controlled(rows, 0, [], [], audit)


def _timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    got = fn()
    return (time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000, got


def _ask(ds: Dataset, sql: str, audit: Audit) -> boundary.Crossing | Refused:
    try:
        return boundary.ask_sql(ds, sql, audit)
    except Refused as r:
        return r


def build(ds: Dataset, seed: int) -> tuple[Audit, int, int, int, Iterator[str]]:
    """Ask questions until ANSWERED are answered; (the audit, answered, trimmed, refused)."""
    audit = Audit.of(ds)
    stream = questions(seed)
    answered = trimmed = refused = 0
    while answered < ANSWERED:
        got = _ask(ds, next(stream), audit)
        if isinstance(got, Refused):
            refused += 1
            continue
        assert got.audit is not None
        audit = got.audit
        answered += 1
        trimmed += bool(got.also_suppressed)
    return audit, answered, trimmed, refused, stream


def probe(ds: Dataset, audit: Audit, stream: Iterator[str]) -> dict[str, float]:
    """Median costs of PROBES further questions, each against a copy of `audit`."""
    original = query_audit.control
    spent: list[float] = []

    def timed_control(*args: Any, **kwargs: Any) -> Controlled:
        t = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append((time.process_time() - t) * 1000)

    walls, cpus, audit_cpu, base_walls, base_cpus = [], [], [], [], []
    refused = 0
    for _ in range(PROBES):
        sql = next(stream)
        query_audit.control = timed_control  # type: ignore[assignment]
        try:
            spent.clear()
            w, c, got = _timed(lambda s=sql: _ask(ds, s, audit.trial()))
            walls.append(w)
            cpus.append(c)
            audit_cpu.append(sum(spent))
            refused += isinstance(got, Refused)
        finally:
            query_audit.control = original  # type: ignore[assignment]
        query_audit.control = _no_audit  # type: ignore[assignment]
        try:
            w, c, _ = _timed(lambda s=sql: _ask(ds, s, audit.trial()))
            base_walls.append(w)
            base_cpus.append(c)
        finally:
            query_audit.control = original  # type: ignore[assignment]
    med, mean = statistics.median, statistics.fmean
    return {
        "wall": med(walls),
        "cpu": med(cpus),
        "cpu_mean": mean(cpus),
        "audit_cpu": med(audit_cpu),
        "audit_mean": mean(audit_cpu),
        "audit_max": max(audit_cpu),
        "base_wall": med(base_walls),
        "base_cpu": med(base_cpus),
        "base_mean": mean(base_cpus),
        "refused": refused,
    }


def cold_start(csv: Path, tmp: Path, seed: int) -> tuple[float, float, float, float, int]:
    """Through the recorder on a DuckDB store: ANSWERED answers recorded, then the cache dropped
    and one more question asked (every recorded set read back and added), then five more (with
    the audit cached), then five with the audit off. Returns (cold wall, cold CPU, warm CPU,
    warm CPU with the audit off, row sets recorded), in ms; warm figures are medians."""
    from mole_dag.session import create_session
    from mole_dag.store import Store

    with Store(tmp / f"bench{seed}.duckdb") as store:
        sid = create_session(store, "bench", Unit.USD_MICROS, 1_000_000, data=str(csv)).session_id
        stream = questions(seed)
        answered = 0
        while answered < ANSWERED:
            answered += gated_query(store, sid, next(stream)).crossing is not None
        sets = int(store.scalar("SELECT count(*) FROM local_audit_sets"))
        forget_cached()
        cold_w, cold_c, _ = _timed(lambda: gated_query(store, sid, next(stream)))
        warm = [_timed(lambda: gated_query(store, sid, next(stream)))[1] for _ in range(5)]
        original = query_audit.control
        query_audit.control = _no_audit  # type: ignore[assignment]
        try:
            off = [_timed(lambda: gated_query(store, sid, next(stream)))[1] for _ in range(5)]
        finally:
            query_audit.control = original  # type: ignore[assignment]
    return cold_w, cold_c, statistics.median(warm), statistics.median(off), sets


def _without_small_groups(csv: Path) -> None:
    text = csv.read_text("utf-8")
    for region in set(RARE_REGIONS):
        text = text.replace(f",{region},", ",north,")
    for plan in set(RARE_PLANS):
        text = text.replace(f",{plan},", ",basic,")
    csv.write_text(text, "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, action="append", help="data sizes (default both)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument(
        "--without-small-groups",
        action="store_true",
        help="rewrite the survey's planted regions and plans of 1-4 respondents to big ones "
        "(north, basic): how many refusals those groups account for",
    )
    args = parser.parse_args()
    sizes = tuple(args.rows or SIZES)
    print(f"{ANSWERED} answered questions, then {PROBES} probes; medians; seed {args.seed}")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for rows in sizes:
            csv = write_survey(tmp / f"survey{rows}.csv", rows=rows)
            if args.without_small_groups:
                _without_small_groups(csv)
            with Dataset.open(csv) as ds:
                w, c, built = _timed(lambda ds=ds: build(ds, args.seed))
                audit, answered, trimmed, refused, stream = built  # type: ignore[misc]
                spaces, rank, atoms = audit.size()
                print(
                    f"\n{rows:,} rows: {answered} answered ({trimmed} trimmed), {refused} "
                    f"refused on the way; {w / 1000:.1f} s wall, {c / 1000:.1f} s CPU to build"
                )
                print(f"  audit held: {spaces} space(s), rank {rank}, {atoms} atoms")
                got = probe(ds, audit, stream)
                print(
                    f"  next question ({PROBES} probes, {got['refused']:.0f} refused), whole "
                    f"boundary: median {got['wall']:.1f} ms wall, {got['cpu']:.1f} ms CPU "
                    f"(mean {got['cpu_mean']:.1f})"
                )
                print(
                    f"  of which the audit: median {got['audit_cpu']:.1f} ms CPU, mean "
                    f"{got['audit_mean']:.1f}, max {got['audit_max']:.1f}"
                )
                print(
                    f"  same questions, audit off (baseline): median {got['base_wall']:.1f} ms "
                    f"wall, {got['base_cpu']:.1f} ms CPU (mean {got['base_mean']:.1f}); "
                    f"mean CPU ratio {got['cpu_mean'] / got['base_mean']:.2f}x"
                )
            cw, cc, warm, off, sets = cold_start(csv, tmp, args.seed)
            print(
                f"  through the recorder on a store holding them ({sets} row sets): a new "
                f"process's first question {cw:.0f} ms wall, {cc:.0f} ms CPU (the record read "
                f"back); the next ones (cached) {warm:.0f} ms CPU, then with the audit off "
                f"{off:.0f} ms CPU (medians of 5)"
            )


if __name__ == "__main__":
    main()
