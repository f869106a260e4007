"""A value computed once per `pytest -n` run, whichever worker asks first (issue 34): the others
wait for it and read it back, so an expensive fixture (a whole research session) is not made
again in every worker. The pytest-xdist documentation's recipe: a file lock in the run's
temporary root, which the workers share and the next run does not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from filelock import FileLock


def once_per_run(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, key: str, make: Callable[[], Any]
) -> Any:
    """`make()`'s JSON-able value, made by one worker of this run and read by the others. Run
    without workers ("master"), it is just `make()`: the temporary root is then shared with
    other runs, so nothing is kept there."""
    if worker_id == "master":
        return make()
    root = tmp_path_factory.getbasetemp().parent
    path = root / f"{key}.json"
    with FileLock(str(path) + ".lock"):
        if path.is_file():
            return json.loads(path.read_text())
        value = make()
        path.write_text(json.dumps(value))
        return value
