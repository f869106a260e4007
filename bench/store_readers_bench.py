"""Sharing the store while research runs (issue 12), against a slow local web (every response
1-2 s late, tests/slowweb.py), each session a real `mole research` process:

  readers   while one session runs, time `mole sessions` (a whole CLI process) and a read-only
            `duckdb.connect` + query (retried until it gets in) again and again; baseline: the
            same readers on the same store with nothing running, measured in the same run.
  parallel  one session alone, then two sessions started together on one (fresh) store;
            wall time until both are done, against the one alone measured in the same run.

Prints medians over runs. `--src DIR` runs the sessions and readers from another checkout
(e.g. `git archive <rev> | tar -x -C DIR`) to measure the code before a change.

    .venv/bin/python bench/store_readers_bench.py [--runs 3] [--only readers|parallel]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from tests import slowweb  # noqa: E402


def _env(tmp: Path, home: Path, src: str | None) -> dict[str, str]:
    env = slowweb.research_env(tmp, home)
    if src:
        env["PYTHONPATH"] = src
    return env


def _start(sx: str, sid: str, tmp: Path, home: Path, src: str | None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        slowweb.research_argv(sx, sid),
        env=_env(tmp, home, src),
        cwd=src or ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> None:
    out, err = proc.communicate(timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"research failed ({proc.returncode}): {err[-1500:]}")


def _p95(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))] if xs else float("nan")


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _max(xs: list[float]) -> float:
    return max(xs) if xs else float("nan")


def _mole_sessions(home: Path, tmp: Path, src: str | None) -> tuple[float, bool]:
    """Seconds for a whole `mole sessions` process, and whether it succeeded without
    reporting a wait for the store."""
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "mole_dag.cli", "sessions"],
        env=_env(tmp, home, src),
        cwd=src or ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return time.perf_counter() - t0, p.returncode == 0 and "waiting" not in p.stderr


def _in_process_sessions(home: Path) -> tuple[float, bool]:
    """`mole sessions` called in this process (no interpreter start, no imports): the part of
    its time that is the store's (waiting for the file, opening it, the query)."""
    import contextlib
    import io

    from mole_dag.cli import main as mole

    os.environ["MOLE_HOME"] = str(home)
    err = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = mole(["sessions"])
    return time.perf_counter() - t0, code == 0 and "waiting" not in err.getvalue()


def _raw_read(db: Path, give_up_s: float = 600) -> tuple[float, int]:
    """Seconds until a read-only DuckDB client has connected and read (retrying every 10 ms
    while the file is locked), and how many attempts failed first."""
    t0 = time.perf_counter()
    failed = 0
    while True:
        try:
            conn = duckdb.connect(str(db), read_only=True)
        except duckdb.IOException:
            failed += 1
            if time.perf_counter() - t0 > give_up_s:
                raise
            time.sleep(0.01)
            continue
        try:
            conn.execute("SELECT count(*) FROM sessions").fetchone()
        finally:
            conn.close()
        return time.perf_counter() - t0, failed


def readers(run: int, src: str | None, tmp: Path) -> dict[str, float]:
    web, sx = slowweb.start(seed=run)
    home = tmp / f"readers{run}"
    db = home / "mole.duckdb"
    try:
        # A first session so the store exists, then the idle baseline on it.
        _finish(_start(sx, "s-first", tmp / f"r{run}a", home, src))
        idle_cli = [_mole_sessions(home, tmp / f"r{run}a", src)[0] for _ in range(8)]
        idle_raw = [_raw_read(db)[0] for _ in range(30)]
        idle_inproc = [_in_process_sessions(home)[0] for _ in range(30)]
        proc = _start(sx, "s-second", tmp / f"r{run}b", home, src)
        cli: list[float] = []
        raw: list[float] = []
        inproc: list[float] = []
        raw_first_try = 0
        bad = 0
        t0 = time.perf_counter()
        # A sample counts if the session was running when the reader started (an old Store
        # may keep a reader waiting until the run ends: that wait is the measurement).
        while proc.poll() is None:
            took, ok = _mole_sessions(home, tmp / f"r{run}b", src)
            bad += not ok
            cli.append(took)
            for _ in range(5):
                if proc.poll() is not None:
                    break
                took, ok = _in_process_sessions(home)
                bad += not ok
                inproc.append(took)
                if proc.poll() is not None:
                    break
                took, failed = _raw_read(db)
                raw.append(took)
                raw_first_try += failed == 0
                time.sleep(0.05)
        run_s = time.perf_counter() - t0
        _finish(proc)
    finally:
        web.stop()
    return {
        "run_s": run_s,
        "cli_n": len(cli),
        "cli_bad": bad,
        "cli_median": _median(cli),
        "cli_p95": _p95(cli),
        "cli_max": _max(cli),
        "idle_cli_p95": _p95(idle_cli),
        "inproc_median": _median(inproc),
        "inproc_p95": _p95(inproc),
        "inproc_max": _max(inproc),
        "idle_inproc_p95": _p95(idle_inproc),
        "raw_n": len(raw),
        "raw_first_try": raw_first_try / max(1, len(raw)),
        "raw_median": _median(raw),
        "raw_p95": _p95(raw),
        "raw_max": _max(raw),
        "idle_raw_p95": _p95(idle_raw),
    }


def _cpu_children() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _stats(paths: list[Path]) -> dict[str, float]:
    """The store's share, summed over the sessions (MOLE_STORE_STATS; absent for old code)."""
    import json

    got = [json.loads(p.read_text()) for p in paths if p.exists()]
    return {k: sum(g[k] for g in got) for k in ("opens", "open_s", "waited_s")} if got else {}


def parallel(run: int, src: str | None, tmp: Path) -> dict[str, float]:
    web, sx = slowweb.start(seed=run)
    try:
        stats_alone = tmp / f"stats-alone{run}.json"
        os.environ["MOLE_STORE_STATS"] = str(stats_alone)
        cpu0 = _cpu_children()
        t0 = time.perf_counter()
        _finish(_start(sx, "s-alone", tmp / f"p{run}a", tmp / f"alone{run}", src))
        alone = time.perf_counter() - t0
        cpu_alone = _cpu_children() - cpu0
        procs = []
        stats_both = [tmp / f"stats-both{run}-{i}.json" for i in range(2)]
        cpu0 = _cpu_children()
        t0 = time.perf_counter()
        for i in range(2):
            os.environ["MOLE_STORE_STATS"] = str(stats_both[i])
            procs.append(_start(sx, f"s-two-{i}", tmp / f"p{run}b{i}", tmp / f"two{run}", src))
        for p in procs:
            _finish(p)
        both = time.perf_counter() - t0
        cpu_both = _cpu_children() - cpu0
    finally:
        os.environ.pop("MOLE_STORE_STATS", None)
        web.stop()
    out = {
        "alone_s": alone,
        "both_s": both,
        "ratio": both / alone,
        "cpu_alone_s": cpu_alone,
        "cpu_both_s": cpu_both,
    }
    out |= {f"alone_{k}": v for k, v in _stats([stats_alone]).items()}
    out |= {f"both_{k}": v for k, v in _stats(stats_both).items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=["readers", "parallel"])
    ap.add_argument("--src", help="run sessions and readers from this checkout instead")
    args = ap.parse_args()
    src = str(Path(args.src).resolve()) if args.src else None
    if src:  # the in-process readers import mole_dag from there too
        sys.path.insert(0, src)
    os.environ.pop("MOLE_DB", None)
    with tempfile.TemporaryDirectory() as d:
        for name, fn in (("readers", readers), ("parallel", parallel)):
            if args.only and args.only != name:
                continue
            got = [fn(r, src, Path(d)) for r in range(args.runs)]
            for r, g in enumerate(got):
                print(
                    f"{name} run {r}: " + ", ".join(f"{k}={v:.3g}" for k, v in g.items()),
                    flush=True,
                )
            print(
                f"{name} medians over {len(got)} runs: "
                + ", ".join(f"{k}={statistics.median(g[k] for g in got):.3g}" for k in got[0]),
                flush=True,
            )


if __name__ == "__main__":
    main()
