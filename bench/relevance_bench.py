"""What near-synonyms cost the relevance stage (issue 19): the demo session's claims scored
against the question and its parts (mole_dag.mining.score_relevance), with near-synonyms off
(NEAR_SHARE = 0) and on (the default), alternating, medians of several runs, on one stored
session; and the first read of the near-synonym table.

    .venv/bin/python bench/relevance_bench.py            # 5 runs of each
    .venv/bin/python bench/relevance_bench.py --runs 9 --json

It runs the demo question over the demo corpus offline (extractive provider) into a temporary
data folder first, as `make demo` does."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

QUESTION = "What are the health effects of drinking coffee?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON last")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mole-relevance-bench-") as home:
        env = dict(os.environ, MOLE_HOME=home)
        env.pop("DAGSTER_HOME", None)
        subprocess.run(
            [str(REPO / ".venv" / "bin" / "mole"), "research", QUESTION, "--usd", "0.50"],
            env=env,
            check=True,
            capture_output=True,
        )
        t0 = time.perf_counter()
        from mole_dag.mining.synonyms import lexicon

        lexicon()
        table_s = time.perf_counter() - t0

        import mole_dag.mining.relevance as relevance
        from mole_dag.budget import Ledger
        from mole_dag.context import Run
        from mole_dag.mining.score_relevance import score_relevance
        from mole_dag.skillsets.extractive import ExtractiveSkills
        from mole_dag.store import Store

        store = Store(Path(home) / "mole.duckdb")
        try:
            sid = store.rows("select id from sessions order by created_at desc limit 1")[0]["id"]
            claims = store.rows(
                "select count(*) as n from claims where session_id = $s", {"s": sid}
            )[0]["n"]
            run = Run(store, Ledger(store), ExtractiveSkills(), sid, lambda _m: None)
            default = relevance.NEAR_SHARE
            times: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(a.runs):
                for label, share in (("off", 0.0), ("on", default)):
                    relevance.NEAR_SHARE = share
                    t = time.perf_counter()
                    score_relevance(run)
                    times[label].append(time.perf_counter() - t)
            relevance.NEAR_SHARE = default
        finally:
            store.close()
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    print(f"demo session, {claims} claims, medians of {a.runs} alternating runs:")
    print(
        f"  score_relevance without near-synonyms {off:.3f} s, with them {on:.3f} s "
        f"({on / off:.2f}x)"
    )
    print(f"  reading the near-synonym table once: {table_s:.3f} s")
    if a.json:
        print(
            json.dumps(
                {
                    "figures": {
                        "relevance_off_s": off,
                        "relevance_on_s": on,
                        "ratio": on / off,
                        "table_s": table_s,
                    },
                    "better": {
                        "relevance_off_s": "lower",
                        "relevance_on_s": "lower",
                        "ratio": "lower",
                        "table_s": "lower",
                    },
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
