"""A tiny job on the scale-out profile's executor, for the mechanism: two runs of it must
execute at the same time on the dask workers.

Each run's `first` step notes its start, then waits until every run's `first` has started (a
barrier, not a sleep: runs one after another never meet and fail after BARRIER_S); `second`
runs after `first`. Every step notes the dask worker it ran on."""

import time
from pathlib import Path

import dagster as dg
from distributed import get_worker

from deploy.executor import mole_dask_executor

BARRIER_S = 120.0


class StepConfig(dg.Config):
    folder: str  # where the steps note their times
    label: str  # the run's name in those notes
    peers: int = 2  # how many runs must meet at the barrier


def _note(cfg: StepConfig, step: str, what: str) -> None:
    path = Path(cfg.folder) / f"{cfg.label}.{step}.{what}"
    path.write_text(f"{time.time_ns()} {get_worker().address}")


@dg.op
def first(config: StepConfig) -> int:
    _note(config, "first", "start")
    deadline = time.monotonic() + BARRIER_S
    while len(list(Path(config.folder).glob("*.first.start"))) < config.peers:
        if time.monotonic() > deadline:
            raise dg.Failure(f"the other runs never started within {BARRIER_S:.0f} s")
        time.sleep(0.05)
    _note(config, "first", "end")
    return 1


@dg.op
def second(config: StepConfig, upstream: int) -> int:
    _note(config, "second", "start")
    _note(config, "second", "end")
    return upstream + 1


@dg.job(executor_def=mole_dask_executor)
def tiny() -> None:
    second(first())


defs = dg.Definitions(jobs=[tiny])
