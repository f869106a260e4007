"""A session started from the Dagster UI against the same session from `mole research` (issue 23).

Starts the UI as `make dev` does (`dg dev` from the instance folder, a fresh MOLE_HOME of its
own) on 127.0.0.1, then, alternating, times `mole research QUESTION --usd 0.50` end to end and a
`research_session` run launched with the README's launch config through the webserver's GraphQL
API (the mutation the Launchpad's "Launch Run" button sends), from the launch to the run's end.
Medians of --runs each, their ratio, and where the UI session's time went (PHASES). Both use the
offline extractive provider over the demo corpus, so both do the same work.

    .venv/bin/python bench/ui_session_bench.py --runs 3 [--port 3009] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
QUESTION = "What are the health effects of drinking coffee?"
CONFIG = {"ops": {"drive_session": {"config": {"question": QUESTION, "budget": {"usd": "0.50"}}}}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(port: int, proc: subprocess.Popen[bytes], within_s: float = 300) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the Dagster UI exited before answering")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the Dagster UI did not answer within {within_s:.0f} s")


def _cli(env: dict[str, str]) -> tuple[float, float]:
    """The session's time end to end, and its start: until the first line it prints (the
    launch checked and the session created). Dagster and the definitions are imported after
    that line, while the first round's plan is made ahead (mole_dag.planner.ahead); a UI run's
    process imports them before its op starts."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [str(BIN / "mole"), "research", QUESTION, "--usd", "0.50"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    started = time.monotonic() - t0
    rest = proc.stdout.read()
    if proc.wait() != 0:
        raise SystemExit(f"mole research failed:\n{(first + rest).decode(errors='replace')}")
    return time.monotonic() - t0, started


# Where a UI session's time goes, from the run's own events (their timestamps, seconds since
# the launch request was sent): queued until the daemon hands it to the run launcher (Dagster
# records no dequeue event; STARTING is the launcher's), the run process's start (a new
# interpreter importing Dagster and the definitions) until the op starts, the op (the
# session's rounds and report), and the run's end until the status poll saw it.
PHASES = {
    "queued": ("PIPELINE_ENQUEUED", "PIPELINE_STARTING"),
    "process start": ("PIPELINE_STARTING", "STEP_START"),
    "op": ("STEP_START", "STEP_SUCCESS"),
    "run end": ("STEP_SUCCESS", "PIPELINE_SUCCESS"),
}


def _phases(run_id: str, sent: float, seen: float) -> dict[str, float]:
    from dagster import DagsterInstance

    with DagsterInstance.get() as instance:
        at: dict[str, float] = {}
        for entry in instance.all_logs(run_id):
            ev = entry.dagster_event
            if ev is not None:
                at.setdefault(ev.event_type_value, entry.timestamp)
    missing = {e for pair in PHASES.values() for e in pair} - at.keys()
    if missing:  # a Dagster that records other events: say which, keep the timing
        print(f"run {run_id}: no {sorted(missing)} among {sorted(at)}", file=sys.stderr)
        return {}
    out = {"launch to queued": at["PIPELINE_ENQUEUED"] - sent}
    out |= {name: at[b] - at[a] for name, (a, b) in PHASES.items()}
    out["poll"] = seen - at["PIPELINE_SUCCESS"]
    return out


def _ui(port: int) -> tuple[float, dict[str, float]]:
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient("127.0.0.1", port_number=port)
    sent = time.time()
    t0 = time.monotonic()
    run_id = client.submit_job_execution("research_session", run_config=CONFIG)
    while True:
        status = client.get_run_status(run_id).value
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(0.25)
    took = time.monotonic() - t0
    if status != "SUCCESS":
        raise SystemExit(f"the UI session's run {run_id} ended {status}")
    return took, _phases(run_id, sent, sent + took)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="sessions of each kind (default 3)")
    ap.add_argument("--port", type=int, default=0, help="the UI's port (default: a free one)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON, last line")
    args = ap.parse_args()
    if shutil.which("dg", path=str(BIN)) is None:
        print("needs dg (dagster-dg-cli, in the dev extra): make .venv/.installed", file=sys.stderr)
        return 2
    port = args.port or _free_port()
    home = Path(tempfile.mkdtemp(prefix="mole-ui-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "MOLE_DB")}
    env["MOLE_HOME"] = str(home)
    dagster_home = home / "dagster"
    dagster_home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", dagster_home / "dagster.yaml")
    env["DAGSTER_HOME"] = str(dagster_home)
    ui = subprocess.Popen(
        [str(BIN / "dg"), "dev", "-w", str(ROOT / "workspace.yaml"), "-p", str(port)],
        cwd=dagster_home,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    cli_s: list[float] = []
    ui_s: list[float] = []
    phases: list[dict[str, float]] = []
    cli_start: list[float] = []
    try:
        _wait_up(port, ui)
        os.environ.update({"MOLE_HOME": env["MOLE_HOME"], "DAGSTER_HOME": env["DAGSTER_HOME"]})
        _cli(env)  # warm-up: the corpus index, the first imports, the instance's tables
        for i in range(args.runs):
            took, started = _cli(env)
            cli_s.append(took)
            cli_start.append(started)
            took, phase = _ui(port)
            ui_s.append(took)
            phases.append(phase)
            where = ", ".join(f"{k} {v:.1f}" for k, v in phase.items())
            print(
                f"run {i + 1}: cli {cli_s[-1]:.1f} s (start {started:.1f}), "
                f"ui {ui_s[-1]:.1f} s ({where})",
                file=sys.stderr,
            )
    finally:
        os.killpg(ui.pid, signal.SIGINT)
        try:
            ui.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    cli_med, ui_med = statistics.median(cli_s), statistics.median(ui_s)
    figures = {
        "cli session s": round(cli_med, 1),
        "cli start s": round(statistics.median(cli_start), 1),
        "ui session s": round(ui_med, 1),
        "ui / cli": round(ui_med / cli_med, 2),
    }
    timed = [p for p in phases if p]
    where = {
        f"ui {k} s": round(statistics.median(p[k] for p in timed), 1)
        for k in (timed[:1] or [{}])[0]
    }
    print(
        f"median of {args.runs}: cli {cli_med:.1f} s, ui {ui_med:.1f} s, "
        f"ratio {ui_med / cli_med:.2f}; the cli's start {figures['cli start s']:.1f} s; "
        "the ui's time: " + ", ".join(f"{k[3:-2]} {v:.1f} s" for k, v in where.items())
    )
    figures |= where
    if args.json:
        print(json.dumps({"figures": figures, "better": {k: "lower" for k in figures}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
