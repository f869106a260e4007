"""The performance suite (issue 14): every benchmark of the issue, several runs each, medians,
and the ratio of each median to the figure last recorded in bench/results.json.

    make bench                                   # = .venv/bin/python bench/suite.py
    .venv/bin/python bench/suite.py --quick      # smaller sizes, one run each: a few minutes
    .venv/bin/python bench/suite.py --only ledger batching --repeat 5
    .venv/bin/python bench/suite.py --record     # write these medians as the new reference

The interface a benchmark script keeps to be part of the suite (bench/README.md says the same):

- `python bench/<name>.py --json` runs it and prints, as the LAST line of its standard output,
  one JSON object. Anything before that line is ignored (progress, tables). The object is either
  `{"figures": {"name": number, ...}, "units": {"name": "unit"}, "better": {"name":
  "higher"|"lower"}, "limits": {"name": {"max": x} | {"min": x}}, "notes": ["..."]}` (only
  `figures` is required), or a plain object whose numeric leaves are taken as the figures
  (nested keys joined with " / ", a list of numbers read as its median).
- `--quick` (optional) makes it smaller for `suite.py --quick`. The suite passes it only if the
  script's `--help` mentions it.
- A script whose `--help` does not mention `--json` is skipped with a visible note, as is a
  script that is not there: the suite runs what exists.
- Exit status 0 on success. Figures must not depend on the suite (no reading results.json).
- A limit is a bound the figure must hold (overshoot max 0, growth max 2.2): a median outside it
  is marked in the table and the suite exits 1. Timing figures carry no limit: the machine is
  shared and noisy, so they are compared as ratios, never asserted.

Each script runs `--repeat` times (3, or fewer where a script says so in SUITE below; 1 with
--quick) as its own process, one after another; each figure's median over those runs is
reported with its spread. A script that exceeds its
time limit is stopped and reported, and the suite goes on.

results.json keeps one reference per mode (`full`, `quick`: sizes differ, so they are never
compared with each other), per benchmark: the figures, their units, the command, the commit
and the date. `--record` replaces the entries of the benchmarks that ran and leaves the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results.json"


@dataclass(frozen=True)
class Bench:
    """One script of the suite. `args` / `quick_args` are passed after `--json` (and
    `--quick`): they choose sizes the suite's time budget allows, for the scripts this suite's
    owner maintains. The other scripts are called with `--json` (and `--quick`) only."""

    name: str
    script: str
    args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ()
    # Seconds per run before the run is stopped (full mode; quick mode takes a third).
    timeout_s: float = 600.0
    # Runs of this script when --repeat is not given, instead of the suite's 3 (quick: 1): for a
    # script that takes its own --runs and reports medians over them, and is too long to repeat.
    repeat: int | None = None


# The issue-14 set, in the order they run. Sizes are chosen so that `make bench` stays under
# ~20 minutes on two shared cores (BENCHMARKS.md records the suite's own wall time).
SUITE: tuple[Bench, ...] = (
    # DuckDB across processes manages a few pairs per second (each hand-over of the file costs
    # a checkpoint and an open), so the sizes stay small: about 1-2 minutes a run.
    Bench(
        "ledger",
        "ledger_bench.py",
        ("--runs", "1", "--pairs", "160", "--stress-ops", "20"),
        # What the script's --quick means, spelled out so the command shown is the one run.
        ("--runs", "1", "--pairs", "96", "--stress-ops", "10"),
        timeout_s=600,
    ),
    Bench("batching", "batching_bench.py", ("--runs", "1", "--pairs", "120"), timeout_s=300),
    # Two recorded sessions (~260 and ~540 claims) and three replays of each per path, in
    # alternating order, take 5-8 minutes: one run of the script, its medians over its own
    # --runs 3 (one replay of each, 2-3 minutes, put the CLI path's growth anywhere in 1.6-2.3x).
    Bench(
        "session",
        "session_bench.py",
        ("--scaling", "--runs", "3"),
        ("--scaling", "--runs", "1"),
        timeout_s=1800,
        repeat=1,
    ),
    # 10k documents, 200 queries: one run of the script (~25 s, each side in its own process)
    # per suite run, so the median is over separate processes. Quick: 100 queries, still 10k
    # documents (the bound is at 10k).
    Bench(
        "bm25",
        "bm25_bench.py",
        ("--runs", "1"),
        ("--runs", "1", "--queries", "100"),
        timeout_s=900,
    ),
    # 7 runs of the three forms, ~25 s; quick 3 runs.
    Bench("quote_chunk", "quote_chunk_bench.py", ("--runs", "7"), ("--runs", "3"), timeout_s=600),
    # 500 to 2000 claims, 3 runs each, ~1 minute; quick 500 and 1000, 2 runs. Not from 250
    # (the script's default): from 250 to 500 the candidate pairs grow 2.6x, as a small pool
    # gets denser, so that step's growth (1.9-2.6x in runs on two shared cores) measures the
    # data more than the verifier, whose bound is 2.2x per doubling; pairs grow 2.1-2.2x after.
    Bench(
        "verifier",
        "verifier_bench.py",
        ("--n", "500", "--doublings", "2", "--runs", "3"),
        ("--n", "500", "--doublings", "1", "--runs", "2"),
        timeout_s=600,
    ),
    # Issue 20: the demo session against a stand-in with 0.5 s and 2 s of latency a call,
    # --parallel 1 and 8 side by side (and each at latency 0, for the session's own work):
    # 6 sessions, 5-8 minutes on two shared cores. Quick: 0.5 s only.
    Bench(
        "parallel",
        "parallel_bench.py",
        ("--runs", "1"),
        ("--runs", "1", "--latencies", "0.5"),
        timeout_s=1800,
        repeat=1,
    ),
)


# -- reading one run's output -----------------------------------------------------------------


@dataclass
class Output:
    figures: dict[str, float]
    units: dict[str, str] = field(default_factory=dict)
    better: dict[str, str] = field(default_factory=dict)
    limits: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return float(statistics.median(value))
    return None


def _flatten(obj: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            name = f"{prefix} / {k}" if prefix else str(k)
            n = _number(v)
            if n is not None:
                out[name] = n
            elif isinstance(v, dict):
                out.update(_flatten(v, name))
    return out


def parse_output(stdout: str) -> Output:
    """The figures in a script's last non-empty line of output (see the module docstring)."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        raise ValueError("no output")
    try:
        obj = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the last line is not JSON: {lines[-1][:120]!r}") from exc
    if not isinstance(obj, dict):
        raise ValueError("the last line is JSON but not an object")
    if isinstance(obj.get("figures"), dict):
        figures = _flatten(obj["figures"])
        return Output(
            figures,
            {str(k): str(v) for k, v in (obj.get("units") or {}).items()},
            {str(k): str(v) for k, v in (obj.get("better") or {}).items()},
            {
                str(k): {b: float(x) for b, x in v.items() if b in ("min", "max")}
                for k, v in (obj.get("limits") or {}).items()
                if isinstance(v, dict)
            },
            [str(n) for n in obj.get("notes") or []],
        )
    return Output(_flatten(obj))


# -- running ----------------------------------------------------------------------------------


@dataclass
class Result:
    bench: Bench
    command: str
    runs: list[Output] = field(default_factory=list)
    skipped: str = ""  # why it did not run (not there, no --json)
    failed: str = ""  # why a run failed (exit status, timeout, unreadable output)
    seconds: float = 0.0
    repeat: int = 0

    def medians(self) -> dict[str, float]:
        names: list[str] = []
        for r in self.runs:
            names += [n for n in r.figures if n not in names]
        return {
            n: statistics.median(vals)
            for n in names
            if (vals := [r.figures[n] for r in self.runs if n in r.figures])
        }

    def spread(self, name: str) -> tuple[float, float, int]:
        vals = [r.figures[name] for r in self.runs if name in r.figures]
        return min(vals), max(vals), len(vals)

    def meta(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for r in self.runs:
            out.update(getattr(r, key))
        return out


def _options(script: Path, python: str) -> str:
    """The script's --help text ('' when it cannot say)."""
    try:
        got = subprocess.run(
            [python, str(script), "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return ""
    return got.stdout if got.returncode == 0 else ""


def _display(cmd: Sequence[str]) -> str:
    """The command as a reader would type it from the checkout: relative paths, the venv's
    python named as such (no machine-specific paths in BENCHMARKS.md)."""
    out = []
    for part in cmd:
        p = Path(part)
        if p.is_absolute():
            try:
                part = str(p.relative_to(ROOT))
            except ValueError:
                part = p.name if part == sys.executable else part
        out.append(part)
    return " ".join(out)


def run_bench(
    bench: Bench,
    bench_dir: Path,
    *,
    quick: bool,
    repeat: int | None,
    python: str,
    log: Any = print,
) -> Result:
    script = bench_dir / bench.script
    res = Result(bench, "")
    if not script.exists():
        res.skipped = f"{script.name} not found (not written yet?)"
        return res
    help_text = _options(script, python)
    if "--json" not in help_text:
        res.skipped = f"{script.name} does not take --json yet (see bench/suite.py's interface)"
        return res
    cmd = [python, str(script), "--json"]
    if quick and "--quick" in help_text:
        cmd.append("--quick")
    cmd += list(bench.quick_args if quick and bench.quick_args else bench.args)
    res.command = _display(cmd)
    timeout = bench.timeout_s / 3 if quick else bench.timeout_s
    if repeat is None:
        repeat = 1 if quick else (bench.repeat or 3)
    res.repeat = repeat
    t0 = time.perf_counter()
    for i in range(repeat):
        log(f"-- {bench.name}: run {i + 1} of {repeat}: {res.command}", flush=True)
        try:
            got = subprocess.run(
                cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            res.failed = f"run {i + 1} stopped after {timeout:.0f} s"
            break
        if got.returncode != 0:
            tail = (got.stderr.strip().splitlines() or ["(no error output)"])[-1]
            res.failed = f"run {i + 1} exited {got.returncode}: {tail[:160]}"
            break
        try:
            res.runs.append(parse_output(got.stdout))
        except ValueError as exc:
            res.failed = f"run {i + 1}: {exc}"
            break
    res.seconds = time.perf_counter() - t0
    return res


# -- the reference file -----------------------------------------------------------------------


def load_results(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"version": 1, "modes": {}}
    data = json.loads(path.read_text("utf-8"))
    data.setdefault("modes", {})
    return data


def recorded_figures(data: dict[str, Any], mode: str, bench: str) -> dict[str, float]:
    entry = data.get("modes", {}).get(mode, {}).get(bench, {})
    return {k: float(v) for k, v in entry.get("figures", {}).items()}


def _commit() -> str:
    try:
        got = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return got.stdout.strip() + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def record(data: dict[str, Any], mode: str, results: Sequence[Result]) -> None:
    modes = data.setdefault("modes", {})
    entries = modes.setdefault(mode, {})
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    commit = _commit()
    for r in results:
        if r.skipped or r.failed or not r.runs:
            continue  # never replace a reference with nothing
        entries[r.bench.name] = {
            "figures": {k: round(v, 6) for k, v in r.medians().items()},
            "units": r.meta("units"),
            "command": r.command,
            "runs": len(r.runs),
            "commit": commit,
            "date": when,
        }
    modes[mode] = dict(sorted(entries.items()))


# -- the table --------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def violation(value: float, limit: dict[str, float]) -> str:
    if "max" in limit and value > limit["max"]:
        return f"above its limit {_fmt(limit['max'])}"
    if "min" in limit and value < limit["min"]:
        return f"below its limit {_fmt(limit['min'])}"
    return ""


def table(
    results: Sequence[Result], data: dict[str, Any], mode: str
) -> tuple[list[str], list[str]]:
    """The table's lines (Markdown, so it pastes into BENCHMARKS.md) and the limit violations."""
    lines = [
        "| bench | figure | median | unit | better | runs (min-max) | recorded | now / recorded |",
        "|---|---|---:|---|---|---|---:|---:|",
    ]
    bad: list[str] = []
    for r in results:
        name = r.bench.name
        if r.skipped:
            lines.append(f"| {name} | skipped: {r.skipped} | | | | | | |")
            continue
        if r.failed and not r.runs:
            lines.append(f"| {name} | FAILED: {r.failed} | | | | | | |")
            bad.append(f"{name}: {r.failed}")
            continue
        if r.failed:
            bad.append(f"{name}: {r.failed} (the runs before it are shown)")
        old = recorded_figures(data, mode, name)
        units, limits, better = r.meta("units"), r.meta("limits"), r.meta("better")
        for fig, med in r.medians().items():
            lo, hi, n = r.spread(fig)
            was = old.get(fig)
            ratio = f"{med / was:.2f}x" if was else ""
            mark = violation(med, limits.get(fig, {}))
            if mark:
                bad.append(f"{name} / {fig}: {_fmt(med)} is {mark}")
            lines.append(
                f"| {name} | {fig}{' **' + mark + '**' if mark else ''} | {_fmt(med)} | "
                f"{units.get(fig, '')} | {better.get(fig, '')} | {n} ({_fmt(lo)}-{_fmt(hi)}) | "
                f"{'' if was is None else _fmt(was)} | {ratio} |"
            )
        for note in dict.fromkeys(n for run in r.runs for n in run.notes):
            lines.append(f"| {name} | note: {note} | | | | | | |")
    return lines, bad


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, one run each")
    ap.add_argument(
        "--repeat", type=int, help="runs of each script (default 3, or the script's own; quick 1)"
    )
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks")
    ap.add_argument("--record", action="store_true", help="store these medians as the reference")
    ap.add_argument("--list", action="store_true", help="list the suite and exit")
    ap.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    ap.add_argument("--bench-dir", type=Path, default=HERE, help=argparse.SUPPRESS)
    ap.add_argument("--suite-json", help=argparse.SUPPRESS)  # the test's own suite
    ap.add_argument("--json", action="store_true", help="print the medians as one JSON line too")
    args = ap.parse_args(argv)

    suite = SUITE
    if args.suite_json:
        suite = tuple(Bench(**b) for b in json.loads(args.suite_json))
    if args.list:
        for b in suite:
            there = "" if (args.bench_dir / b.script).exists() else "  (not present)"
            print(f"{b.name:12} {b.script}{there}")
        return 0
    if args.only:
        unknown = set(args.only) - {b.name for b in suite}
        if unknown:
            ap.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        suite = tuple(b for b in suite if b.name in args.only)
    mode = "quick" if args.quick else "full"
    data = load_results(args.results)
    python = os.environ.get("MOLE_BENCH_PYTHON", sys.executable)

    t0 = time.perf_counter()
    results = [
        run_bench(b, args.bench_dir, quick=args.quick, repeat=args.repeat, python=python)
        for b in suite
    ]
    total = time.perf_counter() - t0
    lines, bad = table(results, data, mode)
    print()
    print(f"mode {mode}, {total:.0f} s in all; ratios are against")
    print(f"the {mode} figures recorded in {_display([str(args.results)])}.")
    print()
    print("\n".join(lines))
    print()
    for r in results:
        if r.command:
            print(f"{r.bench.name}: {r.command}  ({r.repeat} run(s), {r.seconds:.0f} s)")
    if bad:
        print("\nOutside a limit or failed:\n  " + "\n  ".join(bad))
    if args.record:
        record(data, mode, results)
        args.results.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", "utf-8")
        print(f"\nrecorded the {mode} figures in {_display([str(args.results)])}")
    if args.json:
        print(json.dumps({r.bench.name: r.medians() for r in results if r.runs}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
