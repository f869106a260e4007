"""The driver for sessions launched from the Dagster UI: the CLI drives its own sessions, but a
session started by materialising `session` with launch config needs someone to run the next
round while the planner has work and budget, then the report. This sensor does, one run at a
time per session, with the round driver's decision (mole_dag.driver.next_step); it never
touches sessions the CLI drives."""

import os

import dagster as dg

from assets.jobs import research_report, research_round
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.driver import next_step
from mole_dag.resources import StoreResource
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, StoreError, q
from mole_dag.store.records import SessionRow

# How often the sensor looks for sessions to drive: MOLE_DRIVER_INTERVAL_S, read when the
# definitions load (the daemon's sensor loop itself runs at most every 5 s). 30 s is a guess: a
# round takes longer than that, so a shorter wait gains little and costs a store read each time.
INTERVAL_S = int(os.environ.get("MOLE_DRIVER_INTERVAL_S") or 30)

ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def _busy(instance: dg.DagsterInstance, sid: str) -> bool:
    runs = instance.get_runs(
        filters=dg.RunsFilter(tags={"dagster/partition": sid}, statuses=ACTIVE), limit=1
    )
    return bool(runs)


@dg.sensor(
    name="research_driver",
    minimum_interval_seconds=INTERVAL_S,
    jobs=[research_round, research_report],
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Runs the next round (or the report) of sessions launched from the UI.",
)
def research_driver(context: dg.SensorEvaluationContext, store: StoreResource):  # noqa: ANN201
    try:
        # Short wait: a run holding the store is the usual reason it is busy; try next tick.
        st = Store(store.path, lock_wait_s=2.0)
    except StoreError as exc:
        yield dg.SkipReason(f"store busy: {exc}")
        return
    try:
        sessions = [r["id"] for r in st.named("sessions_driven_by_dagster")]
        requested = 0
        for sid in sessions:
            if _busy(context.instance, sid):
                continue
            row = st.one(SessionRow, q("session_get"), {"session_id": sid})
            run = Run(
                st,
                Ledger(st),
                skills_for(row.provider if row else None),
                sid,
                progress=lambda _m: None,
            )
            step = next_step(run)
            if step is None:
                continue
            key = f"{sid}:{step}:{row.rounds if row else 0}"
            job = research_round.name if step == "round" else research_report.name
            requested += 1
            yield dg.RunRequest(run_key=key, job_name=job, partition_key=sid)
        if not requested:
            yield dg.SkipReason(f"{len(sessions)} UI-driven sessions, none needing a run now")
    finally:
        st.close()
