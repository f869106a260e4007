"""A session's wall time against its critical path, with model calls made concurrently (issue 20)
and one at a time.

The demo question over the demo corpus (examples/corpus), `--usd 1.0`, through `mole research`
with the Anthropic provider, against the simulated Claude of tests/model_server.py on 127.0.0.1
answering every call after a fixed latency (0.5 s and 2 s by default). Each session is a fresh
process (`mole_dag.cli.main` in a child, Dagster runs and all, ending as `mole` does) with its
own MOLE_HOME, under the same session id, so the reports of every setting can be compared byte
for byte (the line with the generation time aside). For each latency and each `--parallel` setting:

- wall: the child process's wall time, interpreter start to exit (what a user waits);
- calls: model calls answered; max in flight: the most requests the server had at once;
- levels: the chain of dependent calls, one per pass of independent calls (a stage's mining,
  the judge's first and confirm passes, grounding; mole_dag.llm.fanout.PASSES) and one per
  call made alone (planner, writer);
- critical path: levels x latency, the wall time infinite concurrency could reach if the
  session's own work took no time; wall / critical path is the issue's figure;
- the session's own work: the same session's wall time at latency 0; wall / (own work +
  critical path) is how close the session comes to what concurrency alone can give;
- speedup: wall at --parallel 1 over wall at this setting, at the same latency, same run;
- in passes: the time the passes of independent calls took (their own clocks), over their share
  of the chain (passes x latency), and its speedup: what concurrency did to the waiting, apart
  from the pipeline's own work, which a loaded machine stretches (the child's CPU seconds are
  given beside it).

Medians over --runs (settings alternate within a run). Timing on a shared machine is noisy:
compare the ratios, measured in the same run.

    .venv/bin/python bench/parallel_bench.py [--latencies 0.5 2.0] [--settings 1 8]
        [--runs 3] [--mode cli|pipeline] [--port 0] [--json] [--quick]

`--mode pipeline` runs the same session through the plain pipeline (no Dagster, no CLI), whose
own work is far smaller: how close concurrency brings the wall time to the chain when the
orchestration's fixed cost is set aside.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUESTION = "What are the health effects of drinking coffee?"
SID = "bench-parallel"


# -- the child: one session through the CLI -------------------------------------------------


def child(parallel: int, mode: str) -> None:
    from mole_dag.llm import fanout

    code = _cli(parallel) if mode == "cli" else _pipeline(parallel)
    passes = [
        {"label": p.label, "calls": p.calls, "seconds": p.seconds, "max": p.max_in_flight}
        for p in fanout.PASSES
    ]
    print(json.dumps({"code": code, "passes": passes}))
    if mode == "cli":
        from mole_dag import cli

        cli.exit_now(0)  # ends as the `mole` command does (no interpreter teardown)


def _pipeline(parallel: int) -> int:
    """The same session through the plain pipeline (mole_dag.driver.run_session): no Dagster,
    so the session's own work is the stages' alone."""
    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.core import Unit
    from mole_dag.driver import run_session
    from mole_dag.paths import default_store_path, demo_corpus
    from mole_dag.skillsets import skills_for
    from mole_dag.store import Store

    store = Store(default_store_path())
    try:
        Ledger(store).create_session(
            QUESTION,
            Unit.USD_MICROS,
            1_000_000,
            session_id=SID,
            provider="anthropic",
            corpus=str(demo_corpus()),
        )
        run = Run(store, Ledger(store), skills_for("anthropic"), SID, parallel=parallel)
        _rounds, finished = run_session(run)
    finally:
        store.close()
    return 0 if finished is not None else 1


def _cli(parallel: int) -> int:
    from mole_dag import cli

    return cli.main(
        [
            "research",
            QUESTION,
            "--usd",
            "1.0",
            "--provider",
            "anthropic",
            "--parallel",
            str(parallel),
            "--session-id",
            SID,
            "--no-report-print",
            "--quiet",
        ]
    )


# -- the parent ---------------------------------------------------------------------------


def _report(home: Path) -> str:
    from mole_dag.store import Store, q

    store = Store(home / "mole.duckdb", read_only=True)
    try:
        row = store.row(q("report_latest"), {"session_id": SID})
    finally:
        store.close()
    assert row is not None, "the session wrote no report"
    return re.sub(r"generated \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "generated -", row["markdown"])


def session(latency: float, parallel: int, port: int, mode: str) -> dict[str, Any]:
    from tests.model_server import ModelServer, SimulatedModel

    with tempfile.TemporaryDirectory(prefix="mole-par-") as tmp:
        home = Path(tmp)
        env = {
            **os.environ,
            "MOLE_HOME": str(home),
            "MOLE_CONFIG": str(home / "config.json"),
            "ANTHROPIC_API_KEY": "sk-bench-not-a-key",
            "PYTHONPATH": str(ROOT),
        }
        for var in ("MOLE_DB", "DAGSTER_HOME", "MOLE_PARALLEL", "MOLE_PROVIDER", "MOLE_RECORD"):
            env.pop(var, None)
        with ModelServer(SimulatedModel(delay_s=latency), port=port) as server:
            env["ANTHROPIC_BASE_URL"] = server.url
            started = time.monotonic()
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            got = subprocess.run(
                [sys.executable, __file__, "--child", str(parallel), "--mode", mode],
                env=env,
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            wall = time.monotonic() - started
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if got.returncode != 0:
            raise SystemExit(f"the session failed (exit {got.returncode}): {got.stderr[-2000:]}")
        out = json.loads(got.stdout.strip().splitlines()[-1])
        if out["code"] != 0:
            raise SystemExit(f"mole research exited {out['code']}: {got.stderr[-2000:]}")
        answered = sum(1 for r in server.received if r.reply is not None and r.reply.status == 200)
        in_passes = sum(p["calls"] for p in out["passes"])
        passes = [p for p in out["passes"] if p["calls"]]
        levels = len(passes) + (answered - in_passes)
        return {
            "wall": wall,
            "cpu": (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime),
            "in_passes": sum(p["seconds"] for p in passes),
            "pass_levels": len(passes),
            "calls": answered,
            "max_in_flight": server.max_in_flight,
            "levels": levels,
            "passes": out["passes"],
            "report": _report(home),
        }


def measure(
    latencies: list[float], settings: list[int], runs: int, port: int, mode: str
) -> dict[str, Any]:
    rows: dict[tuple[float, int], list[dict[str, Any]]] = {}
    own: dict[int, list[float]] = {}
    reports: set[str] = set()
    for run in range(runs):
        order = settings if run % 2 == 0 else list(reversed(settings))
        for parallel in order:
            zero = session(0.0, parallel, port, mode)
            own.setdefault(parallel, []).append(zero["wall"])
            reports.add(zero["report"])
            for latency in latencies:
                got = session(latency, parallel, port, mode)
                rows.setdefault((latency, parallel), []).append(got)
                reports.add(got["report"])
                print(
                    f"run {run + 1}: latency {latency}s, --parallel {parallel}: "
                    f"{got['wall']:.1f}s, {got['calls']} calls, {got['levels']} levels, "
                    f"at most {got['max_in_flight']} in flight",
                    file=sys.stderr,
                )
    out: dict[str, Any] = {"same_report": len(reports) == 1, "settings": {}}
    base = settings[0]
    for (latency, parallel), got in sorted(rows.items()):
        wall = statistics.median(g["wall"] for g in got)
        levels = statistics.median(g["levels"] for g in got)
        work = statistics.median(own[parallel])
        base_wall = statistics.median(g["wall"] for g in rows[(latency, base)])
        out["settings"][f"{latency}s / parallel {parallel}"] = {
            "wall_s": wall,
            "calls": statistics.median(g["calls"] for g in got),
            "max_in_flight": max(g["max_in_flight"] for g in got),
            "levels": levels,
            "critical_path_s": levels * latency,
            "wall / critical path": wall / (levels * latency),
            "own_work_s": work,
            "wall / (own work + critical path)": wall / (work + levels * latency),
            f"speedup over parallel {base}": base_wall / wall,
            "cpu_s": statistics.median(g["cpu"] for g in got),
            "in_passes_s": statistics.median(g["in_passes"] for g in got),
            "in passes / their chain": statistics.median(
                g["in_passes"] / (g["pass_levels"] * latency) for g in got
            ),
            f"in passes speedup over parallel {base}": statistics.median(
                g["in_passes"] for g in rows[(latency, base)]
            )
            / statistics.median(g["in_passes"] for g in got),
            "walls_s": [round(g["wall"], 2) for g in got],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latencies", type=float, nargs="+", default=[0.5, 2.0])
    ap.add_argument(
        "--settings",
        type=int,
        nargs="+",
        default=[1, 8],
        help="--parallel values; the first is the baseline of the speedup",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--port", type=int, default=0, help="the stand-in's port (0: a free one)")
    ap.add_argument("--quick", action="store_true", help="one run at 0.5 s only")
    ap.add_argument("--json", action="store_true", help="one final line of JSON (bench/suite.py)")
    ap.add_argument(
        "--mode",
        choices=("cli", "pipeline"),
        default="cli",
        help="cli: `mole research`, Dagster runs and all (default); pipeline: the plain "
        "pipeline (mole_dag.driver.run_session), no Dagster",
    )
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        child(args.child, args.mode)
        return 0
    if args.quick:
        args.runs, args.latencies = 1, [0.5]
    got = measure(args.latencies, args.settings, args.runs, args.port, args.mode)
    if not got["same_report"]:
        print("the settings wrote different reports", file=sys.stderr)
    for name, fig in got["settings"].items():
        print(
            f"{name:>22}: wall {fig['wall_s']:6.1f}s  calls {fig['calls']:3.0f}  max in flight "
            f"{fig['max_in_flight']:2d}  levels {fig['levels']:3.0f}  critical path "
            f"{fig['critical_path_s']:5.1f}s  wall/cp {fig['wall / critical path']:5.2f}  "
            f"own work {fig['own_work_s']:5.1f}s  wall/(own+cp) "
            f"{fig['wall / (own work + critical path)']:4.2f}  speedup "
            f"{fig[f'speedup over parallel {args.settings[0]}']:4.2f}x  cpu {fig['cpu_s']:5.1f}s  "
            f"in passes {fig['in_passes_s']:5.1f}s ({fig['in passes / their chain']:4.2f}x their "
            f"chain, speedup {fig[f'in passes speedup over parallel {args.settings[0]}']:4.2f}x)",
            file=sys.stderr,
        )
    if args.json:
        figures = {
            f"{name} / {k}": v
            for name, fig in got["settings"].items()
            for k, v in fig.items()
            if k != "walls_s"
        }
        figures["same report"] = 1.0 if got["same_report"] else 0.0
        print(
            json.dumps(
                {
                    "figures": figures,
                    "units": {k: "s" for k in figures if k.endswith("_s")},
                    "better": {
                        k: ("higher" if "speedup" in k else "lower")
                        for k in figures
                        if "wall" in k or "speedup" in k
                    },
                    # The same report whatever the setting (issue 20): a bound, not a timing.
                    "limits": {"same report": {"min": 1.0}},
                    "notes": [f"runs {args.runs}, latencies {args.latencies}, mode {args.mode}"],
                }
            )
        )
    return 0 if got["same_report"] else 1


if __name__ == "__main__":
    sys.exit(main())
