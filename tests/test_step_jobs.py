"""The step jobs a driving run resolves without the definitions (assets/jobs.py: a run no longer
imports assets/definitions.py to start runs inside itself, issue 34) are the jobs the definitions
hold. (No loop among assets/ modules: tests/test_import_cycles.py.)"""

from __future__ import annotations


def test_the_step_jobs_are_the_definitions_jobs() -> None:
    from assets.definitions import defs
    from assets.jobs import step_jobs

    for name, job in step_jobs().items():
        assert job.get_job_snapshot_id() == defs.resolve_job_def(name).get_job_snapshot_id(), name
