"""The scale-out profile (deploy/): Dagster's storage on a real PostgreSQL server, runs queued and
launched by the daemon several at a time, and their steps executed on a dask cluster.

Everything listens on 127.0.0.1; every server, cluster and daemon a test starts, it stops."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mole_dag.paths import PROJECT_ROOT
from tests.dask_cluster import dask_cluster, stop_group
from tests.machine import bound

pytest.importorskip("dagster_postgres", reason="the scale extra is not installed")
pytest.importorskip("dagster_dask", reason="the scale extra is not installed")

import dagster as dg  # noqa: E402

from deploy.definitions import DAGSTER_PG_SCHEME, check_dagster_pg_url  # noqa: E402

PROFILE = PROJECT_ROOT / "deploy"
BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 240.0
DONE = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


@pytest.fixture
def scale_home(pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGSTER_HOME with the profile's dagster.yaml, its storage in this test's database."""
    home = tmp_path / "dagster-scale"
    home.mkdir()
    shutil.copy(PROFILE / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("MOLE_DAGSTER_PG_URL", dagster_pg_url(pg_dsn))
    return home


def dagster_pg_url(dsn: str) -> str:
    """The same database for dagster-postgres, which needs the psycopg2 driver named."""
    return DAGSTER_PG_SCHEME + dsn[dsn.index("://") :]


@pytest.fixture
def scheduler(scale_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A dask scheduler and two workers, started after the environment is set (the workers
    inherit it); MOLE_DASK_SCHEDULER names it for the runs."""
    with dask_cluster(tmp_path / "dask", workers=2) as address:
        monkeypatch.setenv("MOLE_DASK_SCHEDULER", address)
        yield address


def test_profile_instance_is_on_postgres(scale_home: Path, pg_dsn: str) -> None:
    import psycopg
    from dagster._core.launcher import DefaultRunLauncher
    from dagster._core.run_coordinator import QueuedRunCoordinator
    from dagster_postgres import (
        PostgresEventLogStorage,
        PostgresRunStorage,
        PostgresScheduleStorage,
    )

    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        coordinator = instance.run_coordinator
        assert isinstance(coordinator, QueuedRunCoordinator)
        assert coordinator.get_run_queue_config().max_concurrent_runs > 1
        assert isinstance(instance.run_launcher, DefaultRunLauncher)
        # What dask workers receive to reopen the instance names the variable, not its value.
        assert pg_dsn not in repr(instance.get_ref())
    with psycopg.connect(pg_dsn) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables")}
    assert {"runs", "event_logs", "jobs"} <= tables
    # No secret in the profile's files: the URL comes from the environment.
    config = yaml.safe_load((PROFILE / "dagster.yaml").read_text())
    assert config["storage"]["postgres"]["postgres_url"] == {"env": "MOLE_DAGSTER_PG_URL"}
    assert "password" not in json.dumps(config).lower()  # e.g. postgres_db: {password: ...}
    for name in ("dagster.yaml", "workspace.yaml"):
        assert not re.search(r"postgres(ql)?://\S+@", (PROFILE / name).read_text()), name


def test_the_profile_definitions_run_every_job_on_the_dask_executor() -> None:
    from deploy.definitions import defs

    for job in defs.resolve_all_job_defs():
        assert job.executor_def.name == "mole_dask", job.name


def test_a_bare_postgresql_url_for_dagster_is_refused_without_repeating_it() -> None:
    check_dagster_pg_url("postgresql+psycopg2://u:secret@h/db")
    check_dagster_pg_url(None)
    with pytest.raises(ValueError, match="postgresql\\+psycopg2://") as err:
        check_dagster_pg_url("postgresql://u:secret@h/db")
    assert "secret" not in str(err.value)


def _workspace(tmp_path: Path, module: str) -> Path:
    ws = tmp_path / "workspace.yaml"
    ws.write_text(
        "load_from:\n"
        "  - python_module:\n"
        f"      module_name: {module}\n"
        "      attribute: defs\n"
        f"      working_directory: {PROJECT_ROOT}\n"
    )
    return ws


@contextlib.contextmanager
def _daemon(workspace: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`dagster-daemon run`: dequeues runs and launches each in its own process."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its code server and run processes share its group
        )
    try:
        yield proc
    finally:
        stop_group(proc, timeout=30)
        # Run processes may outlive the daemon by a moment; end any left in its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _wait_done(run_ids: list[str], daemon: subprocess.Popen[bytes], log: Path) -> dict[str, str]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    with dg.DagsterInstance.get() as instance:
        while True:
            runs = {rid: instance.get_run_by_id(rid) for rid in run_ids}
            if all(r is not None and r.status in DONE for r in runs.values()):
                return {
                    rid: r.status.value
                    + ("" if r.status == dg.DagsterRunStatus.SUCCESS else _errors(instance, rid))
                    for rid, r in runs.items()
                    if r is not None
                }
            if daemon.poll() is not None or time.monotonic() > deadline:
                states = {rid: r.status.value if r else None for rid, r in runs.items()}
                tail = log.read_text(errors="replace")[-3000:]
                raise AssertionError(f"runs not done: {states}\n{tail}")
            time.sleep(0.5)


def _run_ids(tag: str, values: tuple[str, ...] | list[str]) -> list[str]:
    """The ids of the runs tagged tag=value, one per value."""
    with dg.DagsterInstance.get() as instance:
        ids = []
        for value in values:
            found = instance.get_run_ids(dg.RunsFilter(tags={tag: value}))
            assert len(found) == 1, (tag, value, found)
            ids.extend(found)
    return ids


def _errors(instance: dg.DagsterInstance, run_id: str) -> str:
    """A failed run's error events, for the assertion message."""
    lines = []
    for record in instance.all_logs(run_id):
        if record.is_dagster_event and record.dagster_event and record.dagster_event.is_failure:
            data = record.dagster_event.event_specific_data
            error = getattr(data, "error", None)
            lines.append(error.to_string() if error else record.dagster_event.message or "")
        elif record.level >= 40:  # logging.ERROR
            lines.append(record.user_message)
    return ": " + "\n".join(lines)[-3000:]


Launch = tuple[dict[str, object], dict[str, str]]  # a run's config and tags


def _launch(workspace: Path, job: str, runs: list[Launch], log: Path) -> None:
    """`dagster job launch` for each run, all at once: each submits its run to the instance's
    queue and returns."""
    procs = []
    with open(log, "ab") as out:
        for config, tags in runs:
            cmd = [str(BIN / "dagster"), "job", "launch", "-w", str(workspace), "-j", job]
            cmd += ["--config-json", json.dumps(config), "--tags", json.dumps(tags)]
            procs.append(
                subprocess.Popen(
                    cmd, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=out
                )
            )
    for proc in procs:
        try:
            # A hang bound scaled to the machine's load: 120 s ran out at load 30 (issue 23).
            code = proc.wait(timeout=bound(120))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = -1
        assert code == 0, f"dagster job launch: {code}\n{log.read_text(errors='replace')[-3000:]}"


def _note(folder: Path, label: str, step: str, what: str) -> tuple[int, str]:
    ns, worker = (folder / f"{label}.{step}.{what}").read_text().split()
    return int(ns), worker


@pytest.mark.slow
def test_two_runs_execute_at_once_on_dask_workers(
    scheduler: str, scale_home: Path, tmp_path: Path
) -> None:
    """Two runs queued, launched by the daemon (DefaultRunLauncher), their steps on the dask
    workers: each run's first step waits at a barrier for the other's, so both succeed only if
    the runs execute at the same time."""
    notes = tmp_path / "notes"
    notes.mkdir()
    workspace = _workspace(tmp_path, "tests.deploy_tiny")
    labels = ("a", "b")
    launches: list[Launch] = []
    for label in labels:
        cfg = {"folder": str(notes), "label": label, "peers": 2}
        launches.append(
            ({"ops": {"first": {"config": cfg}, "second": {"config": cfg}}}, {"t": label})
        )
    log = tmp_path / "daemon.log"
    with _daemon(workspace, log) as daemon:
        _launch(workspace, "tiny", launches, tmp_path / "launch.log")
        states = _wait_done(_run_ids("t", labels), daemon, log)
    assert set(states.values()) == {"SUCCESS"}, "\n".join(states.values())
    first = {
        label: (_note(notes, label, "first", "start"), _note(notes, label, "first", "end"))
        for label in labels
    }
    # Overlap: each first step started before either ended.
    assert max(s[0] for s, _ in first.values()) < min(e[0] for _, e in first.values())
    for label in labels:
        (start, _), (end, _) = first[label]
        assert start < end <= _note(notes, label, "second", "start")[0]
    # The steps ran on the cluster's workers: the two waiting at once, on two of them.
    workers = {s[1] for s, _ in first.values()}
    assert len(workers) == 2 and all(w.startswith("tcp://127.0.0.1:") for w in workers)


# Two research sessions at once through the profile, as the UI starts them: a `research_round`
# run launched for each session's partition with the session's question, then the driver sensor
# (in the daemon) queues their next rounds and reports. MOLE_DB is the store both share.

SESSION_QUESTIONS = (
    "Does green tea affect sleep and stroke risk?",
    "Is green tea extract a liver toxin?",
)


@pytest.fixture
def store_url(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store both sessions write, on the test's PostgreSQL database."""
    monkeypatch.setenv("MOLE_DB", pg_dsn)
    return pg_dsn


@pytest.fixture
def sessions_scheduler(
    store_url: str, scale_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """As `scheduler`, with MOLE_DB set first, and the driver sensor looking every second."""
    monkeypatch.setenv("MOLE_DRIVER_INTERVAL_S", "1")
    with dask_cluster(tmp_path / "dask", workers=2) as address:
        monkeypatch.setenv("MOLE_DASK_SCHEDULER", address)
        yield address


def _wait_sessions(
    sids: list[str], daemon: subprocess.Popen[bytes], log: Path
) -> dict[str, list[dg.DagsterRun]]:
    """Until every run of the sessions' partitions is done and none is queued or running, and
    the store says each session has finished; fails at the first failed run."""
    from mole_dag.store import Store

    deadline = time.monotonic() + 2 * RUN_TIMEOUT_S
    with dg.DagsterInstance.get() as instance:
        while True:
            runs = {
                sid: list(instance.get_runs(dg.RunsFilter(tags={"dagster/partition": sid})))
                for sid in sids
            }
            for sid_runs in runs.values():
                for run in sid_runs:
                    if run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
                        raise AssertionError(
                            f"run {run.job_name} failed{_errors(instance, run.run_id)}"
                        )
            idle = all(r.status == dg.DagsterRunStatus.SUCCESS for rs in runs.values() for r in rs)
            if idle:
                with Store(os.environ["MOLE_DB"]) as st:
                    status = {
                        r["id"]: r["status"] for r in st.rows("SELECT id, status FROM sessions")
                    }
                if all(status.get(sid) == "done" for sid in sids):
                    return runs
            if daemon.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                states = {
                    sid: [(r.job_name, r.status.value) for r in rs] for sid, rs in runs.items()
                }
                raise AssertionError(f"sessions not done: {states}\n{tail}")
            time.sleep(1.0)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_sessions_at_once_through_the_profile(
    sessions_scheduler: str, store_url: str, scale_home: Path, tmp_path: Path, mini_corpus: Path
) -> None:
    from assets.partitions import SESSIONS
    from mole_dag.budget import Ledger
    from mole_dag.budget.ledger import new_session_id
    from mole_dag.store import Store

    sids = [new_session_id() for _ in SESSION_QUESTIONS]
    assert len(set(sids)) == 2
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(SESSIONS, sids)
    workspace = PROFILE / "workspace.yaml"
    launches: list[Launch] = []
    for sid, question in zip(sids, SESSION_QUESTIONS, strict=True):
        cfg = {"question": question, "budget": {"tokens": "10000"}, "corpus": str(mini_corpus)}
        launches.append(({"ops": {"session": {"config": cfg}}}, {"dagster/partition": sid}))
    # Both queued before the daemon starts: it dequeues and launches them together.
    _launch(workspace, "research_round", launches, tmp_path / "launch.log")
    log = tmp_path / "daemon.log"
    with _daemon(workspace, log) as daemon:
        runs = _wait_sessions(sids, daemon, log)
    with Store(store_url) as st:
        for sid in sids:
            claims = st.scalar("SELECT count(*) FROM claims WHERE session_id = $s", {"s": sid})
            assert claims and claims > 0, sid
            verified = Ledger(st).verify(sid)
            assert verified.ok, verified.explain()
    for sid, sid_runs in runs.items():
        jobs = sorted(r.job_name for r in sid_runs)
        assert jobs.count("research_report") == 1 and "research_round" in jobs, (sid, jobs)
    # The two sessions' first rounds ran at the same time (both launched before the daemon
    # could start either; each takes seconds on the workers).
    with dg.DagsterInstance.get() as instance:
        firsts = []
        for sid in sids:
            records = instance.get_run_records(
                dg.RunsFilter(tags={"dagster/partition": sid}, job_name="research_round"),
                order_by="create_timestamp",
                ascending=True,
                limit=1,
            )
            firsts.append((records[0].start_time, records[0].end_time))
    assert all(s is not None and e is not None for s, e in firsts)
    assert max(s for s, _ in firsts) < min(e for _, e in firsts)  # type: ignore[type-var]


def test_a_run_on_a_local_cluster_of_its_own(scale_home: Path, tmp_path: Path) -> None:
    """The executor's `local` kind (trying the profile on one machine): the run starts a
    LocalCluster, its steps run on that cluster's worker, and the cluster is closed after."""
    import psutil

    from tests.deploy_tiny import tiny

    notes = tmp_path / "notes"
    notes.mkdir()
    cfg = {"folder": str(notes), "label": "solo", "peers": 1}
    run_config = {
        "execution": {
            "config": {"cluster": {"local": {"n_workers": 1, "dashboard_address": ":0"}}}
        },
        "ops": {"first": {"config": cfg}, "second": {"config": cfg}},
    }

    def children() -> dict[int, str]:
        # Not the PostgreSQL server's processes (its backends come and go with connections), nor
        # multiprocessing's resource tracker (started with the first spawned process, it stays
        # for the life of this one, by design).
        found = {}
        for proc in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):  # it may end while being looked at
                cmd = " ".join(proc.cmdline()[:4])
                if (
                    proc.name() != "postgres"
                    and proc.status() != psutil.STATUS_ZOMBIE
                    and "multiprocessing.resource_tracker" not in cmd
                ):
                    found[proc.pid] = cmd
        return found

    before = children()
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(dg.reconstructable(tiny), instance=instance, run_config=run_config)
        assert result.success, _errors(instance, result.run_id)
    (start, worker), (end, _) = (
        _note(notes, "solo", "first", "start"),
        _note(notes, "solo", "first", "end"),
    )
    assert start < end <= _note(notes, "solo", "second", "start")[0]
    assert worker.startswith("tcp://127.0.0.1:")
    # The cluster's worker processes are gone with it.
    deadline = time.monotonic() + 30
    while left := {pid: cmd for pid, cmd in children().items() if pid not in before}:
        assert time.monotonic() < deadline, f"the run's LocalCluster left processes: {left}"
        time.sleep(0.2)
