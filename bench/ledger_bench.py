"""Ledger throughput: reserve+settle pairs per second, one thread and 16 workers, against one
session in one DuckDB file; plus the cost of opening the store (why we hold a connection per
unit of work instead of per transaction). Prints medians of several runs.

    .venv/bin/python bench/ledger_bench.py [--runs 5] [--pairs 2000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

from mole_dag.budget import Ledger
from mole_dag.core import Role, Unit
from mole_dag.store import Store


def pairs_per_second(path: Path, workers: int, pairs: int) -> float:
    store = Store(path)
    try:
        ledger = Ledger(store)
        sid = ledger.create_session("bench?", Unit.TOKENS, 10**15).session_id
        per = pairs // workers

        def work() -> None:
            for _ in range(per):
                r = ledger.reserve(sid, Role.EXECUTOR, 1000, tool="bench", stage="bench")
                ledger.settle(r, 700)

        threads = [threading.Thread(target=work) for _ in range(workers)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        assert ledger.verify(sid).ok
        return per * workers / elapsed
    finally:
        store.close()


def open_insert_close_per_second(path: Path, n: int) -> float:
    Store(path).close()  # migrate once
    t0 = time.perf_counter()
    for i in range(n):
        s = Store(path, migrate_schema=False)
        with s.write() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS bench_open (i INTEGER)")
            cur.execute("INSERT INTO bench_open VALUES (?)", [i])
        s.close()
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=640)
    args = ap.parse_args()
    results: dict[str, list[float]] = {"1 thread": [], "16 workers": [], "open+insert+close": []}
    with tempfile.TemporaryDirectory() as d:
        for run in range(args.runs):
            results["1 thread"].append(pairs_per_second(Path(d) / f"a{run}.duckdb", 1, args.pairs))
            results["16 workers"].append(
                pairs_per_second(Path(d) / f"b{run}.duckdb", 16, args.pairs))
            results["open+insert+close"].append(
                open_insert_close_per_second(Path(d) / f"c{run}.duckdb", 100))
    for name, vals in results.items():
        unit = "pairs/s" if "open" not in name else "opens/s"
        print(f"{name:>18}: median {statistics.median(vals):8.0f} {unit}  "
              f"(min {min(vals):.0f}, max {max(vals):.0f}, runs {len(vals)})")
    ratio = statistics.median(results["16 workers"]) / statistics.median(results["1 thread"])
    print(f"{'16 workers / 1':>18}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
