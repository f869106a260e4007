"""Issue 23: launching research from the Dagster UI the Dagster way. The `session` asset's and
`research_session`'s config schemas require a question and exactly one budget, so the launchpad
refuses an empty config before any run exists; a refused launch is one line and leaves no
partition behind; a config naming another question than the stored session's is refused, not
ignored; and one `research_session` run takes a session through its rounds and report, each a
run of its own, without waiting for a sensor tick."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.definitions import defs
from assets.driver import INTERVAL_S, SESSION_TAG
from assets.partitions import SESSIONS
from assets.research import ALL_ASSETS
from mole_dag.core import Unit
from mole_dag.resources import StoreResource
from mole_dag.session import create_session
from mole_dag.store import Store
from tests.dagster_helpers import resources as _resources
from tests.sessions import RecordedSession


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        ({}, "session"),
        ({"question": "Is tea good for sleep?"}, "budget"),
        ({"budget": {"usd": "0.50"}}, "question"),
    ],
)
def test_launchpad_refuses_a_launch_config_without_question_or_budget(
    config: dict[str, Any], missing: str
) -> None:
    run_config = {"ops": {"session": {"config": config}}} if config else {}
    job = defs.resolve_implicit_global_asset_job_def()
    with pytest.raises(dg.DagsterInvalidConfigError) as got:
        dg.validate_run_config(job, run_config)
    assert any(missing in e.message for e in got.value.errors), [
        e.message for e in got.value.errors
    ]


def test_launchpad_refuses_both_budgets_or_none() -> None:
    job = defs.resolve_job_def("research_session")
    for budget in ({}, {"usd": "0.50", "tokens": "1000"}):
        cfg = {"ops": {"drive_session": {"config": {"question": "q?", "budget": budget}}}}
        with pytest.raises(dg.DagsterInvalidConfigError):
            dg.validate_run_config(job, cfg)
    with pytest.raises(dg.DagsterInvalidConfigError):
        dg.validate_run_config(job, {})
    ok = {"ops": {"drive_session": {"config": {"question": "q?", "budget": {"usd": "0.50"}}}}}
    assert dg.validate_run_config(job, ok)


def _materialize_session(db: Path, sid: str, cfg: dict[str, Any], instance: Any) -> Any:
    return dg.materialize(
        ALL_ASSETS[:1],
        instance=instance,
        partition_key=sid,
        resources=_resources(db),
        run_config={"ops": {"session": {"config": cfg}}},
        raise_on_error=False,
    )


def test_a_refused_launch_is_one_line_and_leaves_no_partition(tmp_path: Path) -> None:
    db = tmp_path / "refused.duckdb"
    Store(db).close()
    cfg = {
        "question": "Is green tea good for sleep?",
        "budget": {"usd": "0.10"},
        "corpus": str(tmp_path / "missing"),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, ["ui-refused"])
        result = _materialize_session(db, "ui-refused", cfg, instance)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        line = failure.step_failure_data.user_failure_data.description
        assert "\n" not in line and "missing" in line
        # The partition the user added for it is gone: the UI lists no empty session.
        assert not instance.has_dynamic_partition(SESSIONS, "ui-refused")
    with Store(db) as st:
        assert st.scalar("SELECT count(*) FROM sessions") == 0


def test_a_config_naming_another_question_is_refused_and_keeps_the_session(
    tmp_path: Path, mini_corpus: Path
) -> None:
    db = tmp_path / "other.duckdb"
    with Store(db) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 20_000, corpus=str(mini_corpus)
        ).session_id
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        for cfg, word in (
            ({"question": "Is coffee good?", "budget": {"tokens": "20000"}}, "question"),
            ({"question": "Does green tea affect sleep?", "budget": {"usd": "1"}}, "budget"),
        ):
            result = _materialize_session(db, sid, cfg, instance)
            assert not result.success
            failure = next(e for e in result.all_events if e.is_step_failure)
            line = failure.step_failure_data.user_failure_data.description
            assert f"exists with another {word}" in line, line
            assert instance.has_dynamic_partition(SESSIONS, sid)
        same = {"question": "Does green tea  affect sleep?", "budget": {"tokens": "20000"}}
        assert _materialize_session(db, sid, same, instance).success


def _drive_config(question: str, **extra: Any) -> dict[str, Any]:
    cfg = {"question": question, "budget": {"tokens": "20000"}, **extra}
    return {"ops": {"drive_session": {"config": cfg}}}


def test_research_session_runs_rounds_and_report_in_one_run(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UI's door: one run creates the session, adds its partition and runs each round and
    the report as runs of their own (so the UI shows their assets), one after the other."""
    db = tmp_path / "drive.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    job = defs.resolve_job_def("research_session")
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance,
            run_config=_drive_config(
                "Does green tea affect sleep?", corpus=str(mini_corpus), session_id="ui-drive"
            ),
            resources={"store": StoreResource(database=str(db))},
        )
        assert result.success
        assert instance.has_dynamic_partition(SESSIONS, "ui-drive")
        runs = instance.get_runs(filters=dg.RunsFilter(tags={SESSION_TAG: "ui-drive"}))
        jobs = [r.job_name for r in reversed(runs)]
        assert jobs[0] == "research_session" and jobs[-1] == "research_report", jobs
        assert jobs.count("research_round") >= 1 and jobs.count("research_report") == 1
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs[:-1])
        assert all(r.tags.get("dagster/partition") == "ui-drive" for r in runs[:-1])
    with Store(db) as st:
        assert st.scalar("SELECT status FROM sessions WHERE id = 'ui-drive'") == "done"
        assert st.scalar("SELECT driver FROM sessions WHERE id = 'ui-drive'") == "dagster"


def test_research_session_refusal_adds_no_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "norun.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    job = defs.resolve_job_def("research_session")
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance,
            run_config=_drive_config("q?", corpus=str(tmp_path / "nowhere"), session_id="ui-no"),
            resources={"store": StoreResource(database=str(db))},
            raise_on_error=False,
        )
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        line = failure.step_failure_data.user_failure_data.description
        assert "\n" not in line and "nowhere" in line
        assert not instance.has_dynamic_partition(SESSIONS, "ui-no")
        assert len(instance.get_runs()) == 1  # no round ran


def test_the_sensor_looks_within_seconds() -> None:
    """A session started by materialising `session` is picked up by the next daemon loop
    (5 s), not after a 30 s interval."""
    assert INTERVAL_S <= 5
    assert defs.resolve_sensor_def("research_driver").minimum_interval_seconds == INTERVAL_S


def test_in_process_runs_are_listed_under_their_job_in_the_ui(
    cli_session: RecordedSession,
) -> None:
    """The UI finds a job's runs by job name and the repository label tag (its job pages and
    the Overview timeline); `mole research`'s runs lacked the tag, so after `make demo` the
    timeline said "No runs". The tag names the location workspace.yaml loads. Read on the
    shared CLI session (tests/sessions.py), which this test used to run itself."""
    import yaml

    from assets.definitions import CODE_LOCATION
    from mole_dag.paths import PROJECT_ROOT

    entry = yaml.safe_load((PROJECT_ROOT / "workspace.yaml").read_text("utf-8"))["load_from"][0]
    module = entry["python_module"]
    assert f"{module['module_name']}:{module['attribute']}" == CODE_LOCATION
    with dg.DagsterInstance.from_config(str(cli_session.dagster_home)) as instance:
        label = f"__repository__@{CODE_LOCATION}"
        for job in ("research_round", "research_report"):
            runs = instance.get_runs(
                dg.RunsFilter(job_name=job, tags={".dagster/repository": label})
            )
            assert runs, job
