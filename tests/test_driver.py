"""The driver sensor runs UI-launched sessions to the end (rounds while there is work, then the
report) and never touches sessions the CLI drives: in the embedded profile with one
`research_session` run per session, in the scale-out profile with a run per round and report."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from assets.definitions import build_definitions, defs
from assets.driver import SESSION_TAG
from assets.partitions import SESSIONS
from mole_dag.core import Unit
from mole_dag.resources import StoreResource
from mole_dag.session import create_session, ensure_session
from mole_dag.store import Store


def test_driver_runs_ui_sessions_to_the_report(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "drive.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    with Store(db) as st:
        ui = ensure_session(
            st,
            "ui-1",
            question="Does green tea affect sleep?",
            tokens="20000",
            corpus=str(mini_corpus),
        ).session_id
        cli = create_session(
            st, "Does green tea affect stroke?", Unit.TOKENS, 20_000, corpus=str(mini_corpus)
        ).session_id
    sensor = defs.resolve_sensor_def("research_driver")
    jobs_run: list[str] = []
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [ui, cli])
        for _ in range(3):  # bounded: one driving run takes the session to its report
            with dg.build_sensor_context(
                instance=instance,
                definitions=defs,
                resources={"store": StoreResource(database=str(db))},
            ) as ctx:
                got = sensor(ctx)
                requests = [r for r in (got or []) if isinstance(r, dg.RunRequest)]
            if not requests:
                break
            for req in requests:
                assert req.tags.get(SESSION_TAG) == ui  # never the CLI's session
                jobs_run.append(req.job_name)
                result = defs.resolve_job_def(req.job_name).execute_in_process(
                    instance=instance,
                    run_config=req.run_config,
                    tags=req.tags,
                    resources={"store": StoreResource(database=str(db))},
                )
                assert result.success
    assert jobs_run == ["research_session"]
    with Store(db) as st:
        assert st.scalar("SELECT status FROM sessions WHERE id = ?", [ui]) == "done"
        assert st.scalar("SELECT count(*) FROM reports WHERE session_id = ?", [ui]) == 1
        assert st.scalar("SELECT rounds FROM sessions WHERE id = ?", [cli]) == 0


def test_scale_out_driver_queues_a_run_per_round_then_the_report(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With drive_in_process=False (deploy/) each step is a queued run, so it can go to the
    cluster; the round's run names the session's stored question and budget."""
    db = tmp_path / "scale.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    with Store(db) as st:
        ui = ensure_session(
            st,
            "ui-2",
            question="Does green tea affect sleep?",
            tokens="20000",
            corpus=str(mini_corpus),
        ).session_id
    scale = build_definitions(dg.in_process_executor, drive_in_process=False)
    sensor = scale.resolve_sensor_def("research_driver")
    jobs_run: list[str] = []
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [ui])
        for _ in range(8):  # bounded: a session needs a few rounds and a report at most
            with dg.build_sensor_context(
                instance=instance,
                definitions=scale,
                resources={"store": StoreResource(database=str(db))},
            ) as ctx:
                got = sensor(ctx)
                requests = [r for r in (got or []) if isinstance(r, dg.RunRequest)]
            if not requests:
                break
            for req in requests:
                assert req.partition_key == ui
                jobs_run.append(req.job_name)
                result = scale.resolve_job_def(req.job_name).execute_in_process(
                    instance=instance, partition_key=req.partition_key, run_config=req.run_config
                )
                assert result.success
    assert jobs_run[0] == "research_round" and jobs_run[-1] == "research_report"
    assert jobs_run.count("research_report") == 1
    with Store(db) as st:
        assert st.scalar("SELECT status FROM sessions WHERE id = ?", [ui]) == "done"
