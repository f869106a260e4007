"""Issue 33, item 8: a UI launch the launchpad refused left an empty session partition in the
UI's list (the UI adds the partition when "Add a partition" is clicked, before the launch is
configured; no run of ours ever starts to remove it). The driver sensor removes a partition that
names no session in the store and never had a run, once it has stayed so for ORPHAN_AFTER_S."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.driver import ORPHAN_AFTER_S, sweep_orphan_partitions
from assets.partitions import SESSIONS
from mole_dag.core import Unit
from mole_dag.session import create_session
from mole_dag.store import Store


def test_an_orphan_partition_is_removed_after_a_while(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as st, dg.instance_for_test() as instance:
        real = create_session(st, "Does tea help sleep?", Unit.TOKENS, 1_000).session_id
        instance.add_dynamic_partitions(SESSIONS, [real, "typed-but-never-launched"])
        removed, waiting = sweep_orphan_partitions(instance, st, {}, now=1_000.0)
        # Just seen: someone may be filling in the launchpad for it right now.
        assert removed == [] and waiting == {"typed-but-never-launched": 1_000.0}
        removed, waiting = sweep_orphan_partitions(
            instance, st, waiting, now=1_000.0 + ORPHAN_AFTER_S - 1
        )
        assert removed == [] and list(waiting) == ["typed-but-never-launched"]
        removed, waiting = sweep_orphan_partitions(
            instance, st, waiting, now=1_000.0 + ORPHAN_AFTER_S
        )
        assert removed == ["typed-but-never-launched"] and waiting == {}
        assert instance.get_dynamic_partitions(SESSIONS) == [real]
