"""Asset checks run with each partition; a corrupted ledger fails the blocking check and the
report is not written from that state."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.checks import ALL_CHECKS
from assets.partitions import SESSIONS
from assets.research import ALL_ASSETS
from mole_dag.core import Unit
from mole_dag.resources import BudgetResource, StoreResource
from mole_dag.session import create_session
from mole_dag.store import Store
from tests.dagster_helpers import session_config


def _run(db: Path, sid: str, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    store = StoreResource(database=str(db))
    defs = dg.Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        resources={"store": store, "budget": BudgetResource(store=store)},
    )
    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(
        instance=instance,
        partition_key=sid,
        run_config=session_config(db, sid),
        raise_on_error=False,
    )


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def _session(db: Path, corpus: Path) -> str:
    with Store(db) as st:
        return create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 10_000, corpus=str(corpus)
        ).session_id


def test_checks_pass_on_a_clean_session(tmp_path: Path, mini_corpus: Path) -> None:
    db = tmp_path / "ok.duckdb"
    sid = _session(db, mini_corpus)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        result = _run(db, sid, instance)
        assert result.success
        assert _checks(result) == {
            "ledger_verify": True,
            "claim_integrity_check": True,
            "citation_validity_check": True,
        }


def test_corrupted_ledger_fails_the_check_and_blocks_the_report(
    tmp_path: Path, mini_corpus: Path
) -> None:
    db = tmp_path / "bad.duckdb"
    sid = _session(db, mini_corpus)
    with Store(db) as st:
        # A row in tool_calls the session total does not know about: spent no longer adds up.
        st.transact(
            lambda cur: cur.execute(
                "INSERT INTO tool_calls (id, session_id, role, stage, tool, reserved, actual, "
                "status,"
                " created_at, expires_at, completed_at) VALUES ('forged', ?, 'executor', 'x', 'x',"
                " 5, 5, 'settled', now()::TIMESTAMP, now()::TIMESTAMP, now()::TIMESTAMP)",
                [sid],
            )
        )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        result = _run(db, sid, instance)
        checks = _checks(result)
        assert checks["ledger_verify"] is False
        assert checks["claim_integrity_check"] is True
        assert not result.asset_materializations_for_node("report")
    with Store(db) as st:
        assert st.scalar("SELECT count(*) FROM reports WHERE session_id = ?", [sid]) == 0


def test_moved_quote_fails_claim_integrity(tmp_path: Path, mini_corpus: Path) -> None:
    db = tmp_path / "moved.duckdb"
    sid = _session(db, mini_corpus)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        assert _run(db, sid, instance).success
        with Store(db) as st:
            st.transact(
                lambda cur: cur.execute(
                    "UPDATE claims SET quote_byte_start = quote_byte_start + 1 WHERE id = "
                    "(SELECT min(id) FROM claims WHERE session_id = ?)",
                    [sid],
                )
            )
        result = _run(db, sid, instance)
        assert _checks(result)["claim_integrity_check"] is False
