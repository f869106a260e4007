"""Issue 33, item 8: a `dg.Failure` already says what went wrong in its description, so the
failure Dagster stores carries no chained traceback (no `cause`, no `context`) and no frame of
our code but the one line of the op that raised it: not the driver's internals (the round
loop, the step's closure) it passed through on its way out.

Dagster itself cannot store a Failure without a stack: it catches the exception in its step
executor and serialises `sys.exc_info()` whole (dagster/_core/execution/plan/execute_plan.py,
`except Failure` -> serializable_error_info_from_exc_info -> SerializableErrorInfo.
from_traceback), so its own frames down to the op stay. What is ours to decide is where the
Failure is raised, and what it is chained to."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

import assets.research
from assets.definitions import defs
from mole_dag.paths import PROJECT_ROOT
from mole_dag.resources import StoreResource
from mole_dag.store import Store

OURS = (str(PROJECT_ROOT / "assets"), str(PROJECT_ROOT / "mole_dag"))


def _our_frames(stack: list[str]) -> list[str]:
    return [f for f in stack if f.lstrip().startswith(tuple(f'File "{p}' for p in OURS))]


def _stored_failures(
    instance: dg.DagsterInstance, run_id: str
) -> list[tuple[str, dg.DagsterEvent]]:
    out = []
    for entry in instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is not None and ev.event_type_value in ("STEP_FAILURE", "PIPELINE_FAILURE"):
            out.append((ev.event_type_value, ev))
    return out


def _error(ev: dg.DagsterEvent) -> object:
    data = ev.step_failure_data if ev.is_step_failure else ev.event_specific_data
    return data.error  # type: ignore[union-attr]


def test_a_failed_round_fails_the_ui_run_with_one_frame_of_ours(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "fail.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))

    def broken(run: object) -> object:
        raise RuntimeError("the planner broke")

    # The round's own run fails (its asset calls the planner); the driving run then stops.
    monkeypatch.setattr(assets.research, "plan_round", broken)
    cfg = {
        "question": "Does green tea affect sleep?",
        "budget": {"tokens": "20000"},
        "corpus": str(mini_corpus),
        "session_id": "ui-fail",
    }
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("research_session").execute_in_process(
            instance=instance,
            run_config={"ops": {"drive_session": {"config": cfg}}},
            resources={"store": StoreResource(database=str(db))},
            raise_on_error=False,
        )
        assert not result.success
        stored = _stored_failures(instance, result.run_id)
        assert [kind for kind, _ in stored] == ["STEP_FAILURE", "PIPELINE_FAILURE"], stored
        for kind, ev in stored:
            err = _error(ev)
            assert err is not None, kind
            assert "the planner broke" in err.message and "round run" in err.message, kind  # type: ignore[attr-defined]
            assert err.cause is None and err.context is None, kind  # type: ignore[attr-defined]
            ours = _our_frames(err.stack)  # type: ignore[attr-defined]
            assert len(ours) == 1 and "in drive_session" in ours[0], (kind, ours)
    with Store(db) as st:
        assert st.scalar("SELECT status FROM sessions WHERE id = 'ui-fail'") == "failed"


def test_a_refused_launch_fails_with_one_frame_of_ours(tmp_path: Path) -> None:
    db = tmp_path / "refused.duckdb"
    cfg = {"question": "q?", "budget": {"tokens": "20000"}, "corpus": str(tmp_path / "nowhere")}
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("research_session").execute_in_process(
            instance=instance,
            run_config={"ops": {"drive_session": {"config": {**cfg, "session_id": "ui-no"}}}},
            resources={"store": StoreResource(database=str(db))},
            raise_on_error=False,
        )
        assert not result.success
        for kind, ev in _stored_failures(instance, result.run_id):
            err = _error(ev)
            # Raised `from None` in the except that caught the LaunchError: not chained to it.
            assert err.cause is None and err.context is None, kind  # type: ignore[attr-defined]
            assert len(_our_frames(err.stack)) == 1, (kind, err.stack)  # type: ignore[attr-defined]
