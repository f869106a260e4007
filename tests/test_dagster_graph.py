"""The asset graph: every session is a partition, each asset reports its counts and spend, the
report asset carries the Markdown, and a partition without a session fails with a clear reason."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.definitions import defs
from assets.partitions import SESSIONS
from assets.research import ALL_ASSETS
from mole_dag.budget import Ledger
from mole_dag.core import Unit
from mole_dag.session import create_session
from mole_dag.store import Store
from tests.dagster_helpers import metadata as _metadata
from tests.dagster_helpers import resources as _resources
from tests.dagster_helpers import session_config


def test_definitions_load_with_jobs_and_in_process_executor() -> None:
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"research_round", "research_report"}
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert keys >= {
        "session",
        "sub_questions",
        "fetched_chunks",
        "mined_claims",
        "claim_edges",
        "confidence_scores",
        "report",
    }


def test_one_partition_end_to_end(tmp_path: Path, mini_corpus: Path) -> None:
    db = tmp_path / "g.duckdb"
    with Store(db) as st:
        sid = create_session(
            st,
            "Does green tea affect sleep and stroke risk?",
            Unit.TOKENS,
            10_000,
            corpus=str(mini_corpus),
        ).session_id
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        result = dg.materialize(
            ALL_ASSETS,
            instance=instance,
            partition_key=sid,
            resources=_resources(db),
            run_config=session_config(db, sid),
        )
        assert result.success
        session_md = _metadata(result, "session")
        assert session_md["budget_total_tokens"] == 10_000
        assert session_md["budget_escrow_tokens"] == 1_500
        assert _metadata(result, "sub_questions")["sub_questions_added"] >= 1
        fetched = _metadata(result, "fetched_chunks")
        assert fetched["new_sources"] == 5 and fetched["stage_calls"] >= 1
        mined = _metadata(result, "mined_claims")
        assert mined["claims"] > 0 and mined["discarded_quote_not_found"] == 0
        edges = _metadata(result, "claim_edges")
        assert edges.get("edges_contradicts", 0) >= 1 and edges.get("edges_duplicate_of", 0) >= 1
        assert edges.get("edges_supersedes", 0) >= 1
        report_md = _metadata(result, "report")
        assert "made without a language model" in report_md["report"]
        assert report_md["findings"] > 0 and report_md["stage_spent_tokens"] == 0
        # The run is recorded in the instance, so the UI shows it for this partition.
        runs = instance.get_runs()
        assert runs and runs[0].tags.get("dagster/partition") == sid
    with Store(db) as st:
        assert Ledger(st).verify(sid).ok


def test_partition_without_session_fails_with_a_reason(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, ["nope"])
        result = dg.materialize(
            ALL_ASSETS[:1],
            instance=instance,
            partition_key="nope",
            resources=_resources(tmp_path / "e.duckdb"),
            run_config={
                "ops": {"session": {"config": {"question": " ", "budget": {"tokens": "5"}}}}
            },
            raise_on_error=False,
        )
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        # A dagster.Failure: the UI shows this one line as the reason.
        msg = failure.step_failure_data.user_failure_data.description
        assert msg == "the question is empty; ask something, in quotes"


def test_session_can_be_started_from_launch_config(tmp_path: Path, mini_corpus: Path) -> None:
    db = tmp_path / "ui.duckdb"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, ["ui-1"])
        cfg = {
            "ops": {
                "session": {
                    "config": {
                        "question": "Is green tea good for sleep?",
                        "budget": {"tokens": "5000"},
                        "corpus": str(mini_corpus),
                    }
                }
            }
        }
        result = dg.materialize(
            ALL_ASSETS,
            instance=instance,
            partition_key="ui-1",
            resources=_resources(db),
            run_config=cfg,
        )
        assert result.success
    with Store(db) as st:
        assert Ledger(st).balance("ui-1").total == 5000
        assert st.scalar("SELECT count(*) FROM reports WHERE session_id = 'ui-1'") == 1
