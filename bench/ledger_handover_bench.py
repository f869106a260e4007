"""Several writing processes, several threads each, handing one store file back and forth:
reserve + settle pairs, counting the pairs whose settle found no row for the reservation just
made (the open "lost reservation" of issue 12, see BENCHMARKS.md). Prints one line per run:
errors, whether the ledger verifies, elapsed seconds.

    .venv/bin/python bench/ledger_handover_bench.py [--runs 5] [--procs 4] [--threads 4]
        [--pairs-per-thread 6]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mole_dag.budget import Ledger  # noqa: E402
from mole_dag.core import Role, Unit  # noqa: E402
from mole_dag.store import Store  # noqa: E402


def _worker(path: str, sid: str, threads: int, per: int, start: float, out: Any) -> None:
    time.sleep(max(0.0, start - time.time()))
    store = Store(path)
    ledger = Ledger(store)
    errors: list[str] = []

    def work() -> None:
        for _ in range(per):
            try:
                r = ledger.reserve(sid, Role.EXECUTOR, 1000, tool="bench", stage="bench")
                ledger.settle(r, 700)
            except Exception as exc:  # noqa: BLE001 - counted and reported, the run goes on
                errors.append(f"{type(exc).__name__}: {exc}"[:120])

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put(errors)


def one_run(procs: int, threads: int, per: int) -> tuple[list[str], bool, float]:
    path = str(Path(tempfile.mkdtemp(prefix="mole-handover-")) / "ledger.duckdb")
    store = Store(path)
    sid = Ledger(store).create_session("bench?", Unit.TOKENS, 10**15).session_id
    store.close()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 2.5  # every child imported before they start together
    ps = [
        ctx.Process(target=_worker, args=(path, sid, threads, per, start, out))
        for _ in range(procs)
    ]
    for p in ps:
        p.start()
    errors = [e for _ in ps for e in out.get()]
    for p in ps:
        p.join()
    ok = Ledger(Store(path)).verify(sid).ok
    return errors, ok, time.time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--pairs-per-thread", type=int, default=6)
    args = ap.parse_args()
    total = 0
    for i in range(args.runs):
        errors, ok, elapsed = one_run(args.procs, args.threads, args.pairs_per_thread)
        total += len(errors)
        print(f"run {i}: errors {len(errors)} {errors[:2]} verify {ok} elapsed {elapsed:.1f}s")
    print(
        f"lost or failed pairs: {total} in {args.runs} runs of "
        f"{args.procs * args.threads * args.pairs_per_thread}"
    )


if __name__ == "__main__":
    main()
