"""What surviving a server restart costs a PostgreSQL transaction (issue 22): reserve+settle
pairs per second in one thread against one session, and this process's CPU time per pair.

Since issue 22 every transaction on Postgres also asks for its transaction id at BEGIN (so a
COMMIT whose answer is lost can be looked up, not repeated), the pool checks a connection before
handing it out, and a reservation first looks for its own row (exactly once by call id). Run
it from this checkout and from one before the change, alternating, against a scratch database:

    git archive bc2ea32 | tar -x -C /tmp/before
    for i in 1 2 3 4 5; do
      PYTHONPATH=/tmp/before .venv/bin/python bench/pg_transaction_bench.py --pg DSN
      .venv/bin/python bench/pg_transaction_bench.py --pg DSN
    done

Each run creates its own session in the database (the rows stay). One line of JSON out:
{"tree": ..., "pairs": n, "pairs_per_s": x, "cpu_ms_per_pair": y}."""

from __future__ import annotations

import argparse
import json
import secrets
import time
from pathlib import Path

import mole_dag
from mole_dag.budget import Ledger
from mole_dag.core import Role, Unit
from mole_dag.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", required=True, metavar="DSN", help="a scratch PostgreSQL database")
    ap.add_argument("--pairs", type=int, default=400)
    args = ap.parse_args()
    store = Store(args.pg)
    ledger = Ledger(store)
    sid = f"bench-{secrets.token_hex(4)}"
    ledger.create_session("bench", Unit.TOKENS, 10**12, session_id=sid)
    for _ in range(20):  # warm the pool and the server's caches
        ledger.settle(ledger.reserve(sid, Role.EXECUTOR, 10, tool="t", stage="s"), 5)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.pairs):
        ledger.settle(ledger.reserve(sid, Role.EXECUTOR, 10, tool="t", stage="s"), 5)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert ledger.verify(sid).ok
    store.close()
    print(
        json.dumps(
            {
                "tree": str(Path(mole_dag.__file__).resolve().parent.parent),
                "pairs": args.pairs,
                "pairs_per_s": round(args.pairs / wall, 1),
                "cpu_ms_per_pair": round(1000 * cpu / args.pairs, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
