"""Ledger throughput and safety: reserve+settle pairs per second against one session in one
DuckDB file, in one process (1 thread, 16 workers) and across processes (4 processes x 4
workers); and a stress run (4 processes x 4 workers against a small total) that must show
overshoot 0 and a ledger that verifies. Prints medians of several runs.

The Store opens the file per transaction (issue 12). Two baselines in the same run:
  - "file held open": the same code with the file kept open around the work (a `read()` block
    pinning this process's DuckDB instance), i.e. what opening per transaction costs;
  - `--baseline DIR`: the whole measurement again from another checkout, e.g. the code before
    the change (`git archive 7bc35b5 | tar -x -C DIR`), run with PYTHONPATH=DIR.

    .venv/bin/python bench/ledger_bench.py [--runs 5] [--pairs 640] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Iterator
from pathlib import Path

from mole_dag.budget import BudgetExhausted, Ledger
from mole_dag.core import Role, Unit
from mole_dag.store import Store


@contextlib.contextmanager
def _held(store: Store, hold: bool) -> Iterator[None]:
    read = getattr(store, "read", None)
    if hold and read is not None:  # older Stores hold the file anyway
        with read():
            yield
    else:
        yield


def _pairs(path: Path, sid: str, workers: int, per: int, hold: bool = False) -> None:
    store = Store(path)
    ledger = Ledger(store)

    def work() -> None:
        for _ in range(per):
            r = ledger.reserve(sid, Role.EXECUTOR, 1000, tool="bench", stage="bench")
            ledger.settle(r, 700)

    with _held(store, hold):
        threads = [threading.Thread(target=work) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    store.close()


def pairs_per_second(path: Path, workers: int, pairs: int, hold: bool = False) -> float:
    store = Store(path)
    ledger = Ledger(store)
    sid = ledger.create_session("bench?", Unit.TOKENS, 10**15).session_id
    store.close()
    per = pairs // workers
    t0 = time.perf_counter()
    _pairs(path, sid, workers, per, hold)
    elapsed = time.perf_counter() - t0
    store = Store(path)
    assert Ledger(store).verify(sid).ok
    store.close()
    return per * workers / elapsed


def _proc_pairs(path: str, sid: str, workers: int, per: int, start: float) -> None:
    time.sleep(max(0.0, start - time.time()))
    _pairs(Path(path), sid, workers, per)


def pairs_per_second_processes(path: Path, procs: int, workers: int, pairs: int) -> float:
    store = Store(path)
    sid = Ledger(store).create_session("bench?", Unit.TOKENS, 10**15).session_id
    store.close()
    per = pairs // (procs * workers)
    ctx = multiprocessing.get_context("spawn")
    # Started together once every child has imported (spawn costs a second or two).
    start = time.time() + 3.0
    ps = [
        ctx.Process(target=_proc_pairs, args=(str(path), sid, workers, per, start))
        for _ in range(procs)
    ]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
        assert p.exitcode == 0
    elapsed = time.time() - start
    store = Store(path)
    assert Ledger(store).verify(sid).ok
    store.close()
    return per * procs * workers / elapsed


def _proc_stress(path: str, sid: str, workers: int, seed: int, start: float) -> None:
    time.sleep(max(0.0, start - time.time()))
    store = Store(path)
    ledger = Ledger(store)

    def work(i: int) -> None:
        rng = random.Random(seed * 100 + i)
        for _ in range(40):
            est = rng.randint(1, 4000)
            try:
                r = ledger.reserve(sid, rng.choice(list(Role)), est, tool="stress", stage="stress")
            except BudgetExhausted:
                continue
            if rng.random() < 0.15:
                ledger.release(r)
            else:
                ledger.settle(r, rng.randint(0, est))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()


def stress(path: Path, procs: int, workers: int, seed: int) -> dict[str, int]:
    """A total far below what the workers ask for: refusals must happen, and the ceiling must
    hold across processes. Overshoot = spent + held beyond what the total allows."""
    total = 200_000
    store = Store(path)
    bal = Ledger(store).create_session("stress?", Unit.TOKENS, total)
    store.close()
    ctx = multiprocessing.get_context("spawn")
    start = time.time() + 3.0
    ps = [
        ctx.Process(
            target=_proc_stress, args=(str(path), bal.session_id, workers, seed * 10 + k, start)
        )
        for k in range(procs)
    ]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
        assert p.exitcode == 0
    store = Store(path)
    ledger = Ledger(store)
    final = ledger.balance(bal.session_id)
    calls = int(
        store.scalar("SELECT count(*) FROM tool_calls WHERE session_id = ?", [bal.session_id])
    )
    out = {
        "overshoot": max(0, final.spent + final.held + final.escrow - total),
        "verify_ok": int(ledger.verify(bal.session_id).ok),
        "held": final.held,
        "calls": calls,
    }
    store.close()
    return out


def measure(runs: int, pairs: int) -> dict[str, list[float]]:
    res: dict[str, list[float]] = {
        "1 thread": [],
        "1 thread, file held open": [],
        "16 workers": [],
        "4 processes x 4 workers": [],
        "stress overshoot": [],
        "stress verify ok": [],
    }
    with tempfile.TemporaryDirectory() as d:
        for run in range(runs):
            res["1 thread"].append(pairs_per_second(Path(d) / f"a{run}.duckdb", 1, pairs))
            res["1 thread, file held open"].append(
                pairs_per_second(Path(d) / f"h{run}.duckdb", 1, pairs, hold=True)
            )
            res["16 workers"].append(pairs_per_second(Path(d) / f"b{run}.duckdb", 16, pairs))
            res["4 processes x 4 workers"].append(
                pairs_per_second_processes(Path(d) / f"p{run}.duckdb", 4, 4, pairs)
            )
            s = stress(Path(d) / f"s{run}.duckdb", 4, 4, run)
            res["stress overshoot"].append(s["overshoot"])
            res["stress verify ok"].append(s["verify_ok"] and s["held"] == 0)
    return res


def report(label: str, res: dict[str, list[float]]) -> None:
    print(f"-- {label}")
    for name, vals in res.items():
        if name.startswith("stress"):
            print(f"{name:>26}: {vals}")
            continue
        print(
            f"{name:>26}: median {statistics.median(vals):8.1f} pairs/s  "
            f"(min {min(vals):.1f}, max {max(vals):.1f}, runs {len(vals)})"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=640)
    ap.add_argument("--baseline", help="a checkout to measure too (PYTHONPATH=DIR)")
    ap.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = ap.parse_args()
    res = measure(args.runs, args.pairs)
    if args.json:
        print(json.dumps(res))
        return
    base = None
    if args.baseline:
        env = {**os.environ, "PYTHONPATH": str(Path(args.baseline).resolve())}
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--runs",
                str(args.runs),
                "--pairs",
                str(args.pairs),
                "--json",
            ],
            env=env,
            cwd=args.baseline,
            capture_output=True,
            text=True,
            check=True,
        )
        base = json.loads(out.stdout.strip().splitlines()[-1])
        report(f"baseline: {args.baseline}", base)
    report("this checkout", res)
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"{'16 workers / 1 thread':>26}: {med['16 workers'] / med['1 thread']:.2f}x")
    print(f"{'held open / per tx':>26}: {med['1 thread, file held open'] / med['1 thread']:.2f}x")
    if base:
        for k in ("1 thread", "16 workers", "4 processes x 4 workers"):
            print(f"{'after / before, ' + k:>26}: {med[k] / statistics.median(base[k]):.2f}x")


if __name__ == "__main__":
    main()
