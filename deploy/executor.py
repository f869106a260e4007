"""The scale-out profile's executor: dagster-dask, with each run's tasks named for the run.

dagster-dask submits every step to the dask scheduler under the key "<job>.<step>". Dask keys
are global to the scheduler, so when two runs of the same job share one cluster (two sessions'
`research_round` at once: the point of this profile), the second run's steps are taken to be the
first run's tasks and are never executed; the second run is then reported as having done what
the first one did (dagster-io/dagster#21418, closed unfixed). And dask walks the arguments of
`submit()` looking for other tasks, iterating tuples, which Dagster's records refuse (a
partitioned run's execution state raised there). This executor is dagster-dask's with those two
changes: the run id in the key, and the step's arguments bound to the task function. The step
itself still runs through dagster-dask's `query_on_dask_worker`, in a worker process, against
the instance's (PostgreSQL) storage.

Only the two cluster kinds the profile uses are offered: `existing` (a scheduler address; the
default is $MOLE_DASK_SCHEDULER, read when the run starts) and `local` (a LocalCluster of the run's
own, for trying the profile on one machine). dagster-dask's other kinds (yarn, ssh, pbs, slurm,
kube, ...) start their own cluster per run and so never share one: use its `dask_executor` for
those."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg
import dask.distributed
from dagster._core.errors import raise_execution_interrupts
from dagster._core.execution.context.system import PlanOrchestrationContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.retries import RetryMode
from dagster._utils import iterate_with_context
from dagster_dask.executor import get_dask_resource_requirements, query_on_dask_worker

SCHEDULER_ENV = "MOLE_DASK_SCHEDULER"


def task_key(job_name: str, step_key: str, run_id: str) -> str:
    """Unique per run, so concurrent runs of one job never share a dask task."""
    return f"{job_name}.{step_key}.{run_id}"


class RunScopedDaskExecutor(dg.Executor):
    def __init__(self, cluster_type: str, cluster_configuration: dict[str, Any]) -> None:
        self.cluster_type = cluster_type
        self.cluster_configuration = cluster_configuration

    @property
    def retries(self) -> RetryMode:
        return RetryMode.DISABLED

    def _cluster(self) -> Any:
        """What dask.distributed.Client connects to: an address, or a new LocalCluster."""
        if self.cluster_type == "existing":
            # Read here, in the run's process, not as a config default: a worker re-resolves the
            # run's config for each step, and a worker needs no scheduler address of its own.
            address = self.cluster_configuration.get("address") or os.environ.get(SCHEDULER_ENV)
            if not address:
                raise dg.DagsterInvariantViolationError(
                    f"no dask scheduler: set {SCHEDULER_ENV} (e.g. tcp://127.0.0.1:8786) for "
                    "the processes that run the runs, or the executor's cluster.existing.address"
                )
            return address
        # Dagster is not thread-safe: one step per worker process (as dagster-dask does).
        cfg = {"threads_per_worker": 1, **self.cluster_configuration}
        return dask.distributed.LocalCluster(**cfg)

    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[dg.DagsterEvent]:
        # Workers reopen the instance from its ref: it must be shared storage, not in memory.
        if not plan_context.instance.is_persistent:
            raise dg.DagsterInvariantViolationError(
                "the dask executor needs a persistent Dagster instance (deploy/dagster.yaml)"
            )
        job_name = plan_context.job_name
        run_id = plan_context.dagster_run.run_id
        instance_ref = plan_context.instance.get_ref()
        cluster = self._cluster()
        try:
            yield from self._submit_and_wait(
                cluster, plan_context, execution_plan, job_name, run_id, instance_ref
            )
        finally:
            # A LocalCluster is this run's own; an existing scheduler is left as it was.
            if isinstance(cluster, dask.distributed.LocalCluster):
                cluster.close()

    def _submit_and_wait(
        self,
        cluster: Any,
        plan_context: PlanOrchestrationContext,
        execution_plan: ExecutionPlan,
        job_name: str,
        run_id: str,
        instance_ref: Any,
    ) -> Iterator[dg.DagsterEvent]:
        with dask.distributed.Client(cluster) as client:
            futures: list[Any] = []
            by_step: dict[str, Any] = {}
            for level in execution_plan.get_steps_to_execute_by_level():
                for step in level:
                    # A step's upstream futures are passed so dask orders the tasks; the worker
                    # function itself does not read them.
                    upstream = [
                        by_step[key]
                        for step_input in step.step_inputs
                        for key in step_input.dependency_keys
                    ]
                    # The step's arguments travel bound to the function, not as submit()'s own
                    # arguments: dask walks those looking for other tasks, and iterating some of
                    # Dagster's records (the execution state of a partitioned run) raises.
                    task = functools.partial(
                        query_on_dask_worker,
                        recon_job=plan_context.reconstructable_job,
                        dagster_run=plan_context.dagster_run,
                        run_config=plan_context.run_config,
                        step_keys=[step.key],
                        instance_ref=instance_ref,
                        known_state=execution_plan.known_state,
                    )
                    future = client.submit(
                        task,
                        upstream,
                        key=task_key(job_name, step.key, run_id),
                        resources=get_dask_resource_requirements(step.tags),
                        # Never reuse a result: a step must run every time its run asks.
                        pure=False,
                    )
                    futures.append(future)
                    by_step[step.key] = future
            # Events come back to this (the run's) process as each step finishes; an interrupt
            # (the run being cancelled) stops the wait.
            done = dask.distributed.as_completed(futures, with_results=True)
            for _future, events in iterate_with_context(raise_execution_interrupts, done):
                yield from events


@dg.executor(
    name="mole_dask",
    requirements=dg.multiple_process_executor_requirements(),
    config_schema={
        "cluster": dg.Field(
            dg.Selector(
                {
                    "existing": dg.Field(
                        {"address": dg.Field(dg.StringSource, is_required=False)},
                        description="The dask scheduler, e.g. tcp://10.0.0.5:8786; "
                        f"default ${SCHEDULER_ENV}.",
                    ),
                    "local": dg.Field(
                        dg.Permissive(),
                        description="A LocalCluster per run (distributed.LocalCluster's "
                        "arguments, e.g. n_workers): for trying the profile on one machine.",
                    ),
                }
            ),
            default_value={"existing": {}},
        )
    },
)
def mole_dask_executor(init_context: dg.InitExecutorContext) -> RunScopedDaskExecutor:
    """dagster-dask with run-scoped task keys (see the module's docstring)."""
    cluster = init_context.executor_config["cluster"]
    assert isinstance(cluster, Mapping)  # a Selector: exactly one kind, with its settings
    ((cluster_type, cluster_configuration),) = cluster.items()
    return RunScopedDaskExecutor(cluster_type, dict(cluster_configuration or {}))
