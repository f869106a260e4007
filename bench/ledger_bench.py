"""Ledger throughput and safety: reserve+settle pairs per second against one session, at 1 and
16 workers, on DuckDB (one file) and, when a DSN is given, on PostgreSQL; and a stress run per
backend (4 processes x 4 threads against a small total) that must show overshoot 0 and a ledger
that verifies. Prints medians of several runs.

Cases, per backend:
  - "1 thread": one worker;
  - "16 threads": 16 workers in one process (they share the process's store handle);
  - "16 workers, 4 processes x 4 threads": separate processes on the same store, started
    together (spawned; timing starts once all have imported);
  - "1 thread, file held open" (DuckDB only): the same code with the file kept open around the
    work (a `read()` block pinning this process's DuckDB instance), i.e. what opening per
    transaction costs;
  - stress: random estimates, 15 % released, against a total far below what the workers ask for.

Overshoot = spent + held + escrow beyond the session's total, read after every case (the
throughput cases have a total they cannot reach, so theirs can only be a bug). "lost
reservations" counts a `settle` that found no row for the reservation its worker had just made
(the open DuckDB multi-process bug in BENCHMARKS.md, issue 12): counted, not raised, so one
occurrence does not hide the rest of the figures.

Postgres: `--pg postgresql://...` or MOLE_BENCH_PG_DSN. The same cases through `Store(dsn)` and
`Ledger(store)` (the store's Postgres backend, issue 14); skipped with a note when no DSN is
given or when this checkout's Store has no Postgres backend. Each case creates its own session
in that database (the rows stay: point it at a scratch database).

    .venv/bin/python bench/ledger_bench.py [--runs 5] [--pairs 640] [--pg DSN] [--baseline DIR]
    .venv/bin/python bench/ledger_bench.py --json --runs 1 --pairs 320   # the suite's call

`--baseline DIR`: the whole DuckDB measurement again from another checkout, e.g. the code before
a change (`git archive 7bc35b5 | tar -x -C DIR`), run with PYTHONPATH=DIR. `--json`: one final
line of JSON (bench/suite.py's interface).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from mole_dag.budget import BudgetExhausted, Ledger, LedgerError
from mole_dag.core import Role, Unit
from mole_dag.store import Store

# A store target: a DuckDB file (a new one per case) or a Postgres DSN (a new session per case).
Target = Path | str
PAIR_CASES = ("1 thread", "16 threads", "16 workers, 4 processes x 4 threads")
HELD = "1 thread, file held open"


def _open(target: Target) -> Store:
    return Store(target)


@contextlib.contextmanager
def _held(store: Store, hold: bool) -> Iterator[None]:
    read = getattr(store, "read", None)
    if hold and read is not None:  # older Stores hold the file anyway
        with read():
            yield
    else:
        yield


def _pairs(
    target: Target, sid: str, workers: int, per: int, hold: bool = False, start: float = 0.0
) -> tuple[int, float]:
    """`workers` threads doing `per` reserve+settle pairs each, from `start` (wall clock) on,
    with the store already open (a process's first open checks the schema, and on Postgres
    fills a pool: not what is measured). Returns the lost reservations and the end time."""
    store = _open(target)
    ledger = Ledger(store)
    lost = [0]
    lock = threading.Lock()

    def work() -> None:
        for _ in range(per):
            r = ledger.reserve(sid, Role.EXECUTOR, 1000, tool="bench", stage="bench")
            try:
                ledger.settle(r, 700)
            except LedgerError as exc:
                if "no reservation" not in str(exc):
                    raise
                with lock:
                    lost[0] += 1

    time.sleep(max(0.0, start - time.time()))
    with _held(store, hold):
        threads = [threading.Thread(target=work) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    end = time.time()
    store.close()
    return lost[0], end


def _check(target: Target, sid: str) -> dict[str, int]:
    """Overshoot and `verify` for one session, after a case."""
    store = _open(target)
    ledger = Ledger(store)
    b = ledger.balance(sid)
    out = {
        "overshoot": max(0, b.spent + b.held + b.escrow - b.total),
        "verify_ok": int(ledger.verify(sid).ok),
    }
    store.close()
    return out


def _new_session(target: Target, total: int, question: str = "bench?") -> str:
    store = _open(target)
    sid = Ledger(store).create_session(question, Unit.TOKENS, total).session_id
    store.close()
    return sid


def pairs_per_second(
    target: Target, workers: int, pairs: int, hold: bool = False
) -> dict[str, float]:
    sid = _new_session(target, 10**15)
    per = max(1, pairs // workers)
    start = time.time() + 0.2  # after the store is open
    lost, end = _pairs(target, sid, workers, per, hold, start)
    return {"pairs_s": per * workers / (end - start), "lost": lost, **_check(target, sid)}


def _proc_pairs(target: Target, sid: str, workers: int, per: int, start: float, q: Any) -> None:
    q.put(_pairs(target, sid, workers, per, start=start))


def _spawn(fn: Callable[..., None], arglists: list[tuple[Any, ...]]) -> list[Any]:
    """Start one process per arglist (each also gets a queue as its last argument), wait for all,
    and return what each put on its queue."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=fn, args=(*a, q)) for a in arglists]
    for p in ps:
        p.start()
    got = [q.get() for _ in ps]
    for p in ps:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a bench process exited {p.exitcode}")
    return got


def pairs_per_second_processes(
    target: Target, procs: int, workers: int, pairs: int
) -> dict[str, float]:
    sid = _new_session(target, 10**15)
    per = max(1, pairs // (procs * workers))
    # Started together once every child has imported and opened the store (spawn costs a
    # second or two, more on a loaded machine); timed to the last child's last pair.
    start = time.time() + 5.0
    got = _spawn(_proc_pairs, [(target, sid, workers, per, start)] * procs)
    elapsed = max(end for _, end in got) - start
    return {
        "pairs_s": per * procs * workers / elapsed,
        "lost": sum(lost for lost, _ in got),
        **_check(target, sid),
    }


def _proc_stress(
    target: Target, sid: str, workers: int, ops: int, seed: int, start: float, q: Any
) -> None:
    time.sleep(max(0.0, start - time.time()))
    store = _open(target)
    ledger = Ledger(store)
    lost = [0]

    def work(i: int) -> None:
        rng = random.Random(seed * 100 + i)
        for _ in range(ops):
            est = rng.randint(1, 4000)
            try:
                r = ledger.reserve(sid, rng.choice(list(Role)), est, tool="stress", stage="stress")
            except BudgetExhausted:
                continue
            try:
                if rng.random() < 0.15:
                    ledger.release(r)
                else:
                    ledger.settle(r, rng.randint(0, est))
            except LedgerError as exc:
                if "no reservation" not in str(exc):
                    raise
                lost[0] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    q.put(lost[0])


def stress(target: Target, procs: int, workers: int, ops: int, seed: int) -> dict[str, int]:
    """A total far below what the workers ask for: refusals must happen, and the ceiling must
    hold across processes. Overshoot = spent + held + escrow beyond the total."""
    total = 200_000
    sid = _new_session(target, total, "stress?")
    start = time.time() + 3.0
    lost = _spawn(
        _proc_stress, [(target, sid, workers, ops, seed * 10 + k, start) for k in range(procs)]
    )
    store = _open(target)
    ledger = Ledger(store)
    final = ledger.balance(sid)
    calls = int(store.scalar("SELECT count(*) FROM tool_calls WHERE session_id = ?", [sid]))
    out = {
        "overshoot": max(0, final.spent + final.held + final.escrow - total),
        "verify_ok": int(ledger.verify(sid).ok and final.held == 0),
        "calls": calls,
        "lost": sum(lost),
    }
    store.close()
    return out


def measure(
    backend: str, runs: int, pairs: int, stress_ops: int, dsn: str = ""
) -> dict[str, list[float]]:
    """Raw per-run figures for one backend, keyed "<backend> <figure>"."""
    res: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        res.setdefault(f"{backend} {name}", []).append(value)

    with tempfile.TemporaryDirectory() as d:

        def target(tag: str) -> Target:
            return dsn if backend == "postgres" else Path(d) / f"{tag}.duckdb"

        for run in range(runs):
            checks: list[dict[str, float]] = []
            cases: list[tuple[str, Callable[[], dict[str, float]]]] = [
                ("1 thread", partial(pairs_per_second, target(f"a{run}"), 1, pairs)),
                ("16 threads", partial(pairs_per_second, target(f"b{run}"), 16, pairs)),
                (
                    "16 workers, 4 processes x 4 threads",
                    partial(pairs_per_second_processes, target(f"p{run}"), 4, 4, pairs),
                ),
            ]
            if backend == "duckdb":
                held = partial(pairs_per_second, target(f"h{run}"), 1, pairs, hold=True)
                cases.insert(1, (HELD, held))
            for name, case in cases:
                got = case()
                add(f"{name} pairs/s", got["pairs_s"])
                checks.append(got)
            s = stress(target(f"s{run}"), 4, 4, stress_ops, run)
            checks.append({k: float(v) for k, v in s.items()})
            add("stress calls", s["calls"])
            # One figure each for the whole run: the worst case over every case above.
            add("overshoot", max(c["overshoot"] for c in checks))
            add("verify ok", min(c["verify_ok"] for c in checks))
            add("lost reservations", sum(c["lost"] for c in checks))
    return res


def pg_dsn(arg: str | None) -> tuple[str, str]:
    """(dsn, why not) for the Postgres cases."""
    dsn = arg or os.environ.get("MOLE_BENCH_PG_DSN", "")
    if not dsn:
        return "", "no DSN given (--pg or MOLE_BENCH_PG_DSN): Postgres cases skipped"
    if importlib.util.find_spec("mole_dag.store.pg") is None:
        return "", "this checkout's Store has no Postgres backend (mole_dag.store.pg): skipped"
    return dsn, ""


def as_suite_json(res: dict[str, list[float]], notes: list[str]) -> dict[str, Any]:
    figures = {k: statistics.median(v) for k, v in res.items()}
    units, better, limits = {}, {}, {}
    for k in figures:
        if k.endswith("pairs/s"):
            units[k], better[k] = "pairs/s", "higher"
        elif k.endswith("overshoot"):
            units[k], limits[k] = "tokens", {"max": 0}
        elif k.endswith("verify ok"):
            units[k], limits[k] = "1 = yes", {"min": 1}
        elif k.endswith("lost reservations"):
            units[k], better[k] = "count", "lower"
    if any(k.endswith("lost reservations") and max(v) > 0 for k, v in res.items()):
        notes.append("a settle found no row for its reservation (the open issue-12 bug)")
    return {
        "figures": figures,
        "units": units,
        "better": better,
        "limits": limits,
        "notes": notes,
        "runs": res,
    }


def report(label: str, res: dict[str, list[float]]) -> None:
    print(f"-- {label}")
    for name, vals in res.items():
        if not name.endswith("pairs/s"):
            print(f"{name:>50}: {vals}")
            continue
        print(
            f"{name:>50}: median {statistics.median(vals):8.1f}  "
            f"(min {min(vals):.1f}, max {max(vals):.1f}, runs {len(vals)})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=640)
    ap.add_argument(
        "--stress-ops", type=int, default=40, help="attempts per stress worker (16 workers)"
    )
    ap.add_argument("--pg", metavar="DSN", help="also on Postgres (or MOLE_BENCH_PG_DSN)")
    ap.add_argument("--baseline", help="a checkout to measure too (PYTHONPATH=DIR)")
    ap.add_argument("--quick", action="store_true", help="1 run of 96 pairs")
    ap.add_argument("--json", action="store_true", help="one final line of JSON (bench/suite.py)")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.pairs, args.stress_ops = 1, 96, 10
    notes: list[str] = []
    res = measure("duckdb", args.runs, args.pairs, args.stress_ops)
    dsn, why = pg_dsn(args.pg)
    if dsn:
        res.update(measure("postgres", args.runs, args.pairs, args.stress_ops, dsn))
    else:
        notes.append(why)
    if args.json:
        print(json.dumps(as_suite_json(res, notes)))
        return
    base = None
    if args.baseline:
        env = {**os.environ, "PYTHONPATH": str(Path(args.baseline).resolve())}
        env.pop("MOLE_BENCH_PG_DSN", None)
        out = subprocess.run(
            [sys.executable, __file__, "--runs", str(args.runs), "--pairs", str(args.pairs)]
            + ["--stress-ops", str(args.stress_ops), "--json"],
            env=env,
            cwd=args.baseline,
            capture_output=True,
            text=True,
            check=True,
        )
        base = json.loads(out.stdout.strip().splitlines()[-1])["runs"]
        report(f"baseline: {args.baseline}", base)
    report("this checkout", res)
    for note in notes:
        print(f"note: {note}")
    med = {k: statistics.median(v) for k, v in res.items()}
    for backend in ("duckdb", "postgres"):
        if f"{backend} 1 thread pairs/s" not in med:
            continue
        one = med[f"{backend} 1 thread pairs/s"]
        for case in PAIR_CASES[1:]:
            ratio = med[f"{backend} {case} pairs/s"] / one
            print(f"{backend + ' ' + case + ' / 1 thread':>50}: {ratio:.2f}x")
    if f"duckdb {HELD} pairs/s" in med:
        ratio = med[f"duckdb {HELD} pairs/s"] / med["duckdb 1 thread pairs/s"]
        print(f"{'duckdb held open / per tx':>50}: {ratio:.2f}x")
    if base:
        for k in (f"duckdb {c} pairs/s" for c in PAIR_CASES):
            if k in base:
                print(f"{'after / before, ' + k:>50}: {med[k] / statistics.median(base[k]):.2f}x")


if __name__ == "__main__":
    main()
