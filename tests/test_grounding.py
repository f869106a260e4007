"""Grounding: each outcome, from the right cause; only confirmed/unsupported move confidence; the
allowance bounds spend; the schedule re-grounds across sessions under its own budget."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from fakes import ScriptedSkills

from assets.definitions import defs
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_round
from mole_dag.output.finish import finish_session
from mole_dag.output.trace import render_trace
from mole_dag.resources import StoreResource
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.grounding import ground_session


def _researched(tmp_path: Path, corpus: Path, skills, total: int = 100_000) -> Run:  # type: ignore[no-untyped-def]
    store = Store(tmp_path / "g.duckdb")
    sid = create_session(
        store,
        "Does green tea affect sleep and stroke risk?",
        Unit.TOKENS,
        total,
        corpus=str(corpus),
    ).session_id
    run = Run(store, Ledger(store), skills, sid, progress=lambda m: None)
    run_round(run)
    run.ledger.release_escrow(sid)
    return run


def _outcomes(run: Run) -> dict[str, str]:
    return {
        r["claim_id"]: r["outcome"]
        for r in run.store.rows(
            "SELECT claim_id, outcome FROM grounding_checks WHERE session_id = ?", [run.session_id]
        )
    }


def test_confirmed_when_the_page_still_says_it(tmp_path: Path, mini_corpus: Path) -> None:
    run = _researched(tmp_path, mini_corpus, ExtractiveSkills())
    rep = ground_session(run.store, run.ledger, run.skills, run.session_id, 0, max_checks=5)
    assert rep.checked == 5 and rep.count("confirmed") == 5
    assert rep.fetches <= rep.checked  # a source backing several claims is read once
    assert Ledger(run.store).verify(run.session_id).ok
    run.store.close()


def test_vanished_and_unreachable_teach_nothing(tmp_path: Path, mini_corpus: Path) -> None:
    run = _researched(tmp_path, mini_corpus, ExtractiveSkills())
    before = {
        r["claim_id"]: r["confidence"]
        for r in run.store.rows("SELECT claim_id, confidence FROM confidence_scores")
    }
    # The page changed under one source, and another disappeared.
    (mini_corpus / "a.md").write_text("---\nurl: https://www.alpha-news.com/tea\n---\nGone.\n")
    (mini_corpus / "b.md").unlink()
    rep = ground_session(run.store, run.ledger, run.skills, run.session_id, 0, max_checks=50)
    out = _outcomes(run)
    a_claims = {
        r["id"]
        for r in run.store.rows(
            "SELECT c.id FROM claims c JOIN sources s ON s.id = c.source_id "
            "WHERE s.url LIKE '%alpha-news%'"
        )
    }
    b_claims = {
        r["id"]
        for r in run.store.rows(
            "SELECT c.id FROM claims c JOIN sources s ON s.id = c.source_id "
            "WHERE s.url LIKE '%beta-health%'"
        )
    }
    checked_a = [out[c] for c in a_claims if c in out]
    checked_b = [out[c] for c in b_claims if c in out]
    assert checked_a and set(checked_a) == {"vanished"}
    assert checked_b and set(checked_b) == {"unreachable"}
    assert rep.count("vanished") and rep.count("unreachable")
    score_session(run)
    after = {
        r["claim_id"]: r["confidence"]
        for r in run.store.rows("SELECT claim_id, confidence FROM confidence_scores")
    }
    for c in a_claims | b_claims:
        assert after[c] == before[c]  # not evidence against the claim
    run.store.close()


def test_unsupported_is_near_fatal_and_provider_pages_are_not_refetched(
    tmp_path: Path, mini_corpus: Path
) -> None:
    skills = ScriptedSkills(ground_verdict="unsupported")
    run = _researched(tmp_path, mini_corpus, skills)
    # One source came from a provider that supplied its text.
    run.store.transact(
        lambda cur: cur.execute(
            "UPDATE sources SET provider_supplied = true, locator = NULL WHERE url LIKE '%gamma%'"
        )
    )
    before = {
        r["claim_id"]: r["confidence"]
        for r in run.store.rows("SELECT claim_id, confidence FROM confidence_scores")
    }
    rep = ground_session(run.store, run.ledger, skills, run.session_id, 10_000, max_checks=50)
    assert rep.count("unsupported") >= 1 and rep.count("not_refetchable") >= 1
    score_session(run)
    out = _outcomes(run)
    for cid, outcome in out.items():
        conf = run.store.scalar(
            "SELECT confidence FROM confidence_scores WHERE claim_id = ?", [cid]
        )
        if outcome == "unsupported":
            assert conf < before[cid] * 0.2
        elif outcome == "not_refetchable":
            assert conf == before[cid]
    run.store.close()


def test_allowance_bounds_grounding_spend(tmp_path: Path, mini_corpus: Path) -> None:
    skills = ScriptedSkills(price=10, estimate_margin=5)
    run = _researched(tmp_path, mini_corpus, skills)
    rep = ground_session(run.store, run.ledger, skills, run.session_id, 25, max_checks=5)
    assert rep.calls == 2 and rep.spent == 20 and rep.skipped_for_budget == 3
    run.store.close()


def test_finish_grounds_then_reports_with_the_outcome(tmp_path: Path, mini_corpus: Path) -> None:
    store = Store(tmp_path / "f.duckdb")
    sid = create_session(
        store, "Does green tea affect sleep?", Unit.TOKENS, 10_000, corpus=str(mini_corpus)
    ).session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    run_round(run)
    done = finish_session(run)
    assert done.escrow_released == 1_500 and done.grounding.checked > 0
    assert "re-read confirmed" in done.report.markdown
    trace = render_trace(store, sid)
    for section in ("clusters (", "edges (", "follow-ups (", "grounding ("):
        assert section in trace
    assert "contradiction between" in trace and "confirmed" in trace
    store.close()


def test_reground_schedule_runs_in_a_test_instance(tmp_path: Path, mini_corpus: Path) -> None:
    db = tmp_path / "sched.duckdb"
    run = _researched(tmp_path, mini_corpus, ExtractiveSkills())
    research_sid = run.session_id
    run.store.close()

    schedule = defs.resolve_schedule_def("reground_daily")
    with dg.instance_for_test() as instance:
        ctx = dg.build_schedule_context(instance=instance)
        requests = list(schedule.evaluate_tick(ctx).run_requests or [])
        assert len(requests) == 1
        job = defs.resolve_job_def("reground")
        result = job.execute_in_process(
            instance=instance,
            run_config={"ops": {"regrounding": {"config": {"tokens": "500", "max_checks": 3}}}},
            resources={"store": StoreResource(database=str(tmp_path / "g.duckdb"))},
        )
        assert result.success
        md = {
            k: v.value
            for k, v in result.asset_materializations_for_node("regrounding")[0].metadata.items()
        }
        assert md["grounding_checked"] == 3
    with Store(tmp_path / "g.duckdb") as st:
        rows = st.rows("SELECT session_id, paid_by FROM grounding_checks")
        assert len(rows) == 3 and {r["session_id"] for r in rows} == {research_sid}
        paid_by = {r["paid_by"] for r in rows}
        assert len(paid_by) == 1 and research_sid not in paid_by
        mid = paid_by.pop()
        assert st.scalar("SELECT kind FROM sessions WHERE id = ?", [mid]) == "maintenance"
        assert Ledger(st).verify(mid).ok
    assert not db.exists()
