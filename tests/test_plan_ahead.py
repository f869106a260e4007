"""Issue 20: a new session's first plan is asked for while `mole research` starts Dagster
(mole_dag.planner.ahead), and the round's run takes that plan instead of planning again.

- the plan request reaches the model before the Dagster instance is opened (the test holds the
  instance's opening until the request has arrived: no timing is assumed);
- the session makes one plan call per round, the ledger verifies, and the round's sub_questions
  materialisation reports the plan it took, not an empty one;
- a plan nobody takes (the run failed to start) still finishes and is settled before the
  process ends: the ledger holds nothing;
- a stop while that plan is in flight: an answer arriving within the grace settles it at what it
  used; one that does not arrive is charged at its reservation (`assumed`) before the exit;
- plan_round takes a plan started ahead, once, with its result or its error."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from mole_dag import cli
from mole_dag.budget import Ledger
from mole_dag.cli import drive as cli_drive
from mole_dag.context import Run
from mole_dag.paths import default_store_path
from mole_dag.planner import PlanResult, plan_round
from mole_dag.planner import ahead as planner_ahead
from mole_dag.store import Store
from tests.model_server import HeldModel, ModelServer, Received, Reply, SimulatedModel

QUESTION = "Does green tea affect sleep and stroke risk?"
SID = "s-ahead"
WAIT_S = 120  # generous: a loaded two-core machine; the new code needs well under a second


class PlanSignal(SimulatedModel):
    """Says when the first plan request has arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.plan_arrived = threading.Event()

    def __call__(self, got: Received) -> Reply:
        if got.skill == "plan":
            self.plan_arrived.set()
        return super().__call__(got)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dagster_home: Path) -> Any:
    monkeypatch.setenv("MOLE_HOME", str(tmp_path / "mole-home"))
    monkeypatch.setenv("MOLE_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-plan-ahead")
    for var in ("MOLE_DB", "MOLE_PARALLEL", "MOLE_PROVIDER", "MOLE_RECORD", "MOLE_CASSETTE"):
        monkeypatch.delenv(var, raising=False)
    sim = PlanSignal()
    with ModelServer(sim) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        yield sim, server


def _research(corpus: Path, *quiet: str) -> int:
    return cli.main(
        [
            "research",
            QUESTION,
            "--usd",
            "0.50",
            "--provider",
            "anthropic",
            "--corpus",
            str(corpus),
            "--session-id",
            SID,
            "--no-report-print",
            *quiet,
        ]
    )


def test_the_first_plan_is_asked_for_while_dagster_starts(
    model: Any, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    sim, server = model
    opened = cli_drive.dagster_instance
    seen: list[bool] = []

    def instance_after_the_plan_request():  # noqa: ANN202
        # Before the change, the plan was asked inside the round's run, after this call: the
        # wait would time out and the test fail.
        seen.append(sim.plan_arrived.wait(WAIT_S))
        return opened()

    monkeypatch.setattr(cli_drive, "dagster_instance", instance_after_the_plan_request)
    assert _research(mini_corpus) == 0
    assert seen == [True], "the plan was not asked for before Dagster's instance was opened"
    # The progress lines as before: the round, then what its plan made, once.
    err = capsys.readouterr().err.splitlines()
    at = err.index("round 1")
    assert err[at + 1].startswith("  · round 1: planned "), err[at : at + 2]
    assert err.count("round 1") == 1

    with Store(default_store_path()) as store:
        check = Ledger(store).verify(SID)
        assert check.ok, check.explain()
        rounds = int(store.scalar("SELECT rounds FROM sessions WHERE id = ?", [SID]))
        first_round_questions = int(
            store.scalar(
                "SELECT count(*) FROM sub_questions WHERE session_id = ? AND round = 1", [SID]
            )
        )
    # One plan call per round: the run took the plan made ahead instead of planning again.
    assert Counter(r.skill for r in server.received)["plan"] == rounds
    assert first_round_questions > 0
    instance = dg.DagsterInstance.get()
    planned = [
        m.asset_materialization.metadata
        for m in instance.fetch_materializations(dg.AssetKey("sub_questions"), limit=10).records
        if m.asset_materialization is not None
    ]
    first = next(md for md in planned if md["round"].value == 1)
    # The round's materialisation reports the plan it took (before, a plan found already made
    # was reported as "planned before the stop", adding nothing).
    assert first["sub_questions_added"].value == first_round_questions


def test_a_plan_nobody_takes_is_settled_before_the_process_ends(
    model: Any, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    sim, _server = model

    def instance_that_fails():  # noqa: ANN202
        sim.plan_arrived.wait(WAIT_S)
        raise cli.CliError("the Dagster instance is being opened by another process")

    monkeypatch.setattr(cli_drive, "dagster_instance", instance_that_fails)
    assert _research(mini_corpus, "--quiet") == cli.EXIT_USAGE
    assert "being opened by another process" in capsys.readouterr().err
    assert planner_ahead.take(SID) is None  # nothing left in the registry
    with Store(default_store_path()) as store:
        bal = Ledger(store).balance(SID)
        assert bal.held == 0, "the plan's reservation was left open"
        plan_calls = store.rows(
            "SELECT status FROM tool_calls WHERE session_id = ? AND stage = 'sub_questions'",
            [SID],
        )
        assert [r["status"] for r in plan_calls] == ["settled"]
        assert Ledger(store).verify(SID).ok


@pytest.mark.parametrize("answered", [False, True], ids=["no-answer", "answer-in-grace"])
def test_a_stop_while_the_plan_asked_ahead_is_in_flight(
    answered: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    dagster_home: Path,
    mini_corpus: Path,
    capsys: Any,
) -> None:
    from mole_dag.llm import fanout

    monkeypatch.setenv("MOLE_HOME", str(tmp_path / "mole-home"))
    monkeypatch.setenv("MOLE_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-plan-ahead")
    for var in ("MOLE_DB", "MOLE_PARALLEL", "MOLE_PROVIDER", "MOLE_RECORD", "MOLE_CASSETTE"):
        monkeypatch.delenv(var, raising=False)
    # The grace: short when no answer will come, long when one is released at the stop.
    monkeypatch.setattr(fanout, "EXIT_GRACE_S", 60.0 if answered else 0.5)
    held = HeldModel("plan", 1)

    def ctrl_c_while_dagster_starts():  # noqa: ANN202
        assert held.arrived.wait(WAIT_S)
        if answered:
            held.release.set()
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_drive, "dagster_instance", ctrl_c_while_dagster_starts)
    with ModelServer(held) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        try:
            assert _research(mini_corpus, "--quiet") == 130
            # As the command returns (the unanswered call still held by the server):
            assert "mole: interrupted" in capsys.readouterr().err
            with Store(default_store_path()) as store:
                bal = Ledger(store).balance(SID)
                assert bal.status == "interrupted" and bal.held == 0
                calls = store.rows(
                    "SELECT status, assumed FROM tool_calls WHERE session_id = ? "
                    "AND stage = 'sub_questions'",
                    [SID],
                )
                # Answered within the grace: what it used; not answered: its reservation.
                assert [(r["status"], r["assumed"]) for r in calls] == [("settled", not answered)]
                check = Ledger(store).verify(SID)
                assert check.ok, check.explain()
        finally:
            held.release.set()


def test_plan_round_takes_the_plan_started_ahead_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    try:
        run = Run(store, Ledger(store), None, "s-unit")  # type: ignore[arg-type]
        made = PlanResult(1, 3, 4, 4, 0)
        planner_ahead.start("s-unit", lambda: made)
        # The plan started ahead is the step's result; nothing else is read or planned (the
        # session does not even exist in this store, and there are no skills).
        assert plan_round(run) is made
        assert planner_ahead.take("s-unit") is None

        def fails() -> PlanResult:
            raise RuntimeError("the planner's call failed")

        planner_ahead.start("s-unit", fails)
        with pytest.raises(RuntimeError, match="the planner's call failed"):
            plan_round(run)
        # Taken once: the next plan_round plans (here: no such session).
        with pytest.raises(LookupError):
            plan_round(run)
    finally:
        store.close()


@pytest.mark.both_backends
def test_settle_assumed_in_stage_charges_only_that_stages_open_calls(store: Store) -> None:
    from mole_dag.core import Role, Unit

    ledger = Ledger(store)
    sid = ledger.create_session("q", Unit.TOKENS, 10_000, session_id="s-stage").session_id
    a = ledger.reserve(sid, Role.PLANNER, 100, tool="t:plan", stage="sub_questions")
    b = ledger.reserve(sid, Role.PLANNER, 50, tool="t:plan", stage="sub_questions")
    other = ledger.reserve(sid, Role.EXECUTOR, 70, tool="t:mine", stage="mined_claims")
    ledger.settle(b, 20)
    assert ledger.settle_assumed_in_stage(sid, "sub_questions", "interrupted") == 1
    rows = {
        r["id"]: (r["status"], r["assumed"], r["actual"])
        for r in store.rows("SELECT id, status, assumed, actual FROM tool_calls")
    }
    assert rows[a.id] == ("settled", True, 100)  # the open one: its reservation, in full
    assert rows[b.id] == ("settled", False, 20)  # settled before: untouched
    assert rows[other.id][0] == "reserved"  # another stage's call: untouched
    bal = ledger.balance(sid)
    assert (bal.held, bal.spent) == (70, 120)
    assert ledger.verify(sid).ok
