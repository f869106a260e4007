"""Where a demo session's time goes (issue 12): wall time, commits, and the share of the
pipeline's own work against DuckDB, imports and Dagster.

Each run is a fresh process on a warm venv, with its own MOLE_HOME (a new store and Dagster
instance), researching the demo question over the bundled corpus with the extractive provider,
exactly as `make demo` does:

- `cli`: `mole research "..." --usd 0.50` in-process (`mole_dag.cli.main`), Dagster runs and all;
- `pipeline`: the plain pipeline (`mole_dag.driver.run_session`, as tests/test_demo_session.py).

Wall time is measured by the parent around the whole child process (interpreter start to exit),
in runs without any profiler. The shares come from separate runs with a sampling profiler: a
thread reads the main thread's stack every millisecond (sys._current_frames) and files each
sample under the first owner it finds walking outward from the innermost frame:

- DuckDB: a DuckDB call in progress (the store's cursors are wrapped to flag it: statements,
  fetches, BEGIN/COMMIT), or a frame of mole_dag/store (the store layer, its open and migrations);
- imports: a frame of the import machinery;
- Dagster: a frame of dagster, its storage (sqlalchemy, alembic, sqlite) or the asset layer;
- pipeline: a frame of mole_dag (the stages, the CLI), the pipeline's own work;
- other: none of these (interpreter start-up, argument parsing).

While the main thread waits for the lead workers, the busiest worker is sampled instead.

    .venv/bin/python bench/session_bench.py --runs 5 [--mode cli|pipeline|both]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What are the health effects of drinking coffee?"
BUCKETS = ("pipeline", "duckdb", "imports", "dagster", "other")
DAGSTER_PARTS = (
    "/dagster",
    "/sqlalchemy/",
    "/alembic/",
    "/sqlite3/",
    "/grpc/",
    "/pydantic",
    "/dagster_",
)


# -- the child: one session, optionally sampled ---------------------------------------------


class _Sampler:
    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.counts: Counter[str] = Counter()  # seconds per bucket
        self.in_duckdb: set[int] = set()  # thread ids inside a DuckDB call
        self._stop = threading.Event()
        self._main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-sampler")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _classify(self, tid: int, frame: Any) -> str:
        if tid in self.in_duckdb:
            return "duckdb"
        stack = []
        while frame is not None:
            stack.append(frame.f_code.co_filename)
            frame = frame.f_back
        if any("importlib._bootstrap" in f for f in stack):
            return "imports"
        for f in stack:  # innermost first
            if "/mole_dag/store/" in f:
                return "duckdb"
            if "/mole_dag/" in f or f.startswith("<mole"):
                return "pipeline"
            if f"{os.sep}assets{os.sep}" in f and str(ROOT) in f:
                return "dagster"
            if any(p in f for p in DAGSTER_PARTS):
                return "dagster"
        return "other"

    @staticmethod
    def _waiting(frame: Any) -> bool:
        """The main thread is parked on the lead workers (a future's result, a pool join)."""
        f = frame.f_code.co_filename
        return f.endswith(("threading.py", "_base.py", "thread.py"))

    def _run(self) -> None:
        me = threading.get_ident()
        last = time.perf_counter()
        while not self._stop.wait(self.interval_s):
            frames = sys._current_frames()
            # Each sample stands for the time since the last one. The sampler gets the GIL at
            # once while DuckDB has released it, but only every switch interval (5 ms) while
            # Python code holds it: counting samples instead of time over-weights DuckDB ~5x.
            now = time.perf_counter()
            dt, last = now - last, now
            main = frames.get(self._main)
            if main is None:
                continue
            tid, frame = self._main, main
            if self._waiting(main):
                workers = {t.ident: t for t in threading.enumerate() if t.name.startswith("lead")}
                busy = [
                    (i, fr)
                    for i, fr in frames.items()
                    if i in workers and i != me and not self._waiting(fr)
                ]
                if busy:
                    tid, frame = busy[0]
            self.counts[self._classify(tid, frame)] += dt


def _instrument_duckdb(sampler: _Sampler) -> None:
    """Wrap the store's cursors so the sampler knows a DuckDB call is in progress."""
    from mole_dag.store import db

    class Timed:
        def __init__(self, cur: Any) -> None:
            self._cur = cur

        def _call(self, name: str, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            sampler.in_duckdb.add(tid)
            try:
                out = getattr(self._cur, name)(*a, **k)
            finally:
                sampler.in_duckdb.discard(tid)
            return self if out is self._cur else out

        def execute(self, *a: Any, **k: Any) -> Any:
            return self._call("execute", *a, **k)

        def executemany(self, *a: Any, **k: Any) -> Any:
            return self._call("executemany", *a, **k)

        def fetchone(self) -> Any:
            return self._call("fetchone")

        def fetchall(self) -> Any:
            return self._call("fetchall")

        def __getattr__(self, name: str) -> Any:
            return getattr(self._cur, name)

    plain_use = db.Store._use

    @contextlib.contextmanager
    def use(self: Any, *, read_only: bool) -> Any:
        # Every statement goes through a cursor handed out here (the store keeps none open).
        with plain_use(self, read_only=read_only) as raw:
            yield Timed(raw)

    db.Store._use = use  # type: ignore[method-assign]


def child(mode: str, home: Path, out: Path, sample: bool) -> None:
    sampler = _Sampler() if sample else None
    if sampler:
        sampler.start()
    # Imported here, under the sampler: the import cost is part of what is measured.
    from mole_dag.store import db

    if sampler:
        _instrument_duckdb(sampler)
    if mode == "cli":
        from mole_dag.cli import main

        code = main(["research", QUESTION, "--usd", "0.50", "--quiet", "--no-report-print"])
        if code != 0:
            raise SystemExit(f"mole research exited {code}")
    else:
        from mole_dag.budget import Ledger
        from mole_dag.context import Run
        from mole_dag.core import Unit
        from mole_dag.driver import run_session
        from mole_dag.paths import demo_corpus
        from mole_dag.session import create_session
        from mole_dag.skillsets.extractive import ExtractiveSkills
        from mole_dag.store import Store

        store = Store(home / "mole.duckdb")
        sid = create_session(
            store, QUESTION, Unit.USD_MICROS, 500_000, corpus=str(demo_corpus())
        ).session_id
        run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
        store.close()
    if sampler:
        sampler.stop()
    out.write_text(
        json.dumps(
            {"commits": db.process_commits(), "samples": dict(sampler.counts) if sampler else {}}
        )
    )


# -- the parent: runs, medians, a table ------------------------------------------------------


def one_run(mode: str, sample: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="mole-bench-"))
    try:
        (home / "dagster").mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster" / "dagster.yaml")
        env = {
            **os.environ,
            "MOLE_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster"),
            "MOLE_CONFIG": str(home / "config.json"),
            "MOLE_PROVIDER": "extractive",
        }
        env.pop("MOLE_DB", None)
        out = home / "result.json"
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, __file__, "--child", mode, "--home", str(home), "--out", str(out)]
            + (["--sample"] if sample else []),
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t0
        got = json.loads(out.read_text())
        got["wall_s"] = wall
        return got
    finally:
        shutil.rmtree(home, ignore_errors=True)


def measure(mode: str, runs: int) -> dict[str, Any]:
    walls, commits, shares = [], [], {b: [] for b in BUCKETS}
    for _ in range(runs):
        plain = one_run(mode, sample=False)
        walls.append(plain["wall_s"])
        commits.append(plain["commits"])
        sampled = one_run(mode, sample=True)
        total = sum(sampled["samples"].values()) or 1
        for b in BUCKETS:
            shares[b].append(100.0 * sampled["samples"].get(b, 0) / total)
    return {
        "mode": mode,
        "runs": runs,
        "wall_s": {"median": statistics.median(walls), "min": min(walls), "max": max(walls)},
        "commits": statistics.median(commits),
        "share_pct": {b: statistics.median(v) for b, v in shares.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mode", choices=("cli", "pipeline", "both"), default="both")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--child", choices=("cli", "pipeline"), help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sample", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        child(args.child, args.home, args.out, args.sample)
        return
    modes = ("cli", "pipeline") if args.mode == "both" else (args.mode,)
    results = [measure(m, args.runs) for m in modes]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"| session | wall s (median of {args.runs}) | min-max | commits | "
        + " | ".join(f"{b} %" for b in BUCKETS)
        + " |"
    )
    print("|---|---:|---|---:|" + "---:|" * len(BUCKETS))
    for r in results:
        w = r["wall_s"]
        print(
            f"| {r['mode']} | {w['median']:.1f} | {w['min']:.1f}-{w['max']:.1f} | "
            f"{r['commits']:.0f} | "
            + " | ".join(f"{r['share_pct'][b]:.0f}" for b in BUCKETS)
            + " |"
        )


if __name__ == "__main__":
    main()
