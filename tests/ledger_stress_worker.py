"""One process of the multi-process ledger stress test (tests/test_ledger_stress.py): threads
that hold and settle against one session, then print their counts as one line of JSON.

    python tests/ledger_stress_worker.py STORE SESSION SEED THREADS OPS"""

from __future__ import annotations

import json
import random
import sys
import threading

from mole_dag.budget import BudgetExhausted, Ledger
from mole_dag.core import Role
from mole_dag.store import Store


def hold_and_settle(
    ledger: Ledger,
    sid: str,
    rng: random.Random,
    ops: int,
    counts: dict[str, int],
    lock: threading.Lock,
) -> None:
    """`ops` calls of random estimates against one session: 15 % fail after their hold (the
    hold released), the rest settle at or below their estimate, refusals are counted."""
    for _ in range(ops):
        estimate = rng.randint(1, 4000)
        try:
            with ledger.hold(
                sid, rng.choice(list(Role)), estimate, tool="llm:stress", stage="stress"
            ) as h:
                with lock:
                    counts["calls_made"] += 1
                if rng.random() < 0.15:
                    raise ConnectionError("simulated provider failure")
                h.settle(rng.randint(0, estimate))
                with lock:
                    counts["settled"] += 1
        except BudgetExhausted:
            with lock:
                counts["refused"] += 1
        except ConnectionError:
            with lock:
                counts["released"] += 1


def main(target: str, sid: str, seed: int, threads: int, ops: int) -> None:
    store = Store(target)
    counts = {"settled": 0, "refused": 0, "released": 0, "calls_made": 0}
    lock = threading.Lock()
    errors: list[str] = []

    def worker(i: int) -> None:
        rng = random.Random(seed * 100 + i)
        ledger = Ledger(store)
        try:
            hold_and_settle(ledger, sid, rng, ops, counts, lock)
        except BaseException as exc:  # reported to the test, not swallowed
            errors.append(repr(exc))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    store.close()
    print(json.dumps({"counts": counts, "errors": errors}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
