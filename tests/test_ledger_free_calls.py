"""Free calls (a hold of 0: extractive skills, local search) recorded in one batch per stage
(issue 12): one transaction for all of them, one tool_calls row per call, `verify` exact, and
nothing about paid calls changes: each still reserves and commits before dispatch."""

from __future__ import annotations

import threading

import pytest

from mole_dag.budget import BudgetOverrun, Ledger, LedgerError, Usage
from mole_dag.core import Role, SessionStatus, Unit


def _rows(ledger: Ledger, sid: str) -> list[dict]:
    return ledger.store.rows(
        "SELECT * FROM tool_calls WHERE session_id = ? ORDER BY created_at", [sid]
    )


def test_a_stage_of_free_calls_commits_once_with_a_row_per_call(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.USD_MICROS, 1000).session_id
    before = ledger.store.commits
    with ledger.free_calls(sid):
        for i in range(40):
            with ledger.hold(sid, Role.EXECUTOR, 0, tool="extractive:mine", stage="mine") as h:
                h.settle(0, usage=Usage(input_tokens=i), model="extractive")
        assert ledger.store.commits == before  # nothing written during the stage
    assert ledger.store.commits == before + 1
    rows = _rows(ledger, sid)
    assert len(rows) == 40
    assert {
        (r["status"], r["reserved"], r["actual"], r["overrun"], r["assumed"]) for r in rows
    } == {("settled", 0, 0, 0, False)}
    assert sorted(r["input_tokens"] for r in rows) == list(range(40))
    assert {r["model"] for r in rows} == {"extractive"}
    assert all(r["completed_at"] >= r["created_at"] and r["owner"] for r in rows)
    v = ledger.verify(sid)
    assert v.ok and v.calls == 40 and v.spent == 0
    assert ledger.spend_by_stage(sid) == [
        {"stage": "mine", "role": "executor", "calls": 40, "spent": 0}
    ]


def test_paid_calls_in_a_batch_still_reserve_before_dispatch(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.USD_MICROS, 1000).session_id
    seen = []
    with ledger.free_calls(sid):
        with ledger.hold(sid, Role.VERIFIER, 0, tool="x:judge", stage="edges") as h:
            h.settle(0)
        with ledger.hold(sid, Role.VERIFIER, 100, tool="llm:judge", stage="edges") as h:
            # The reservation is committed, visible to any other reader, before the call.
            seen = [(r["status"], r["reserved"]) for r in _rows(ledger, sid)]
            h.settle(60)
    assert seen == [("reserved", 100)]
    assert sorted((r["status"], r["actual"]) for r in _rows(ledger, sid)) == [
        ("settled", 0),
        ("settled", 60),
    ]
    assert ledger.verify(sid).ok and ledger.balance(sid).spent == 60


def test_a_failed_free_call_is_recorded_released(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with (
        ledger.free_calls(sid),
        pytest.raises(RuntimeError),
        ledger.hold(sid, Role.EXECUTOR, 0, tool="search:local", stage="fetch"),
    ):
        raise RuntimeError("index gone")
    (row,) = _rows(ledger, sid)
    assert row["status"] == "released" and row["actual"] is None
    assert "RuntimeError" in row["note"]
    assert ledger.verify(sid).ok


def test_the_rows_are_kept_when_the_stage_fails(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with pytest.raises(KeyboardInterrupt), ledger.free_calls(sid):
        with ledger.hold(sid, Role.EXECUTOR, 0, tool="extractive:mine", stage="mine") as h:
            h.settle(0)
        with ledger.hold(sid, Role.EXECUTOR, 0, tool="extractive:mine", stage="mine"):
            raise KeyboardInterrupt
    rows = _rows(ledger, sid)
    assert [(r["status"], r["assumed"]) for r in rows] == [("settled", False), ("settled", True)]
    assert ledger.verify(sid).ok


def test_a_free_call_that_costs_something_is_an_overrun_at_once(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with ledger.free_calls(sid):
        with ledger.hold(sid, Role.EXECUTOR, 0, tool="odd:mine", stage="mine") as h:
            h.settle(7)
        # Written and settled in its own transaction: the session stops dispatching now.
        bal = ledger.balance(sid)
        assert (bal.spent, bal.overrun) == (0, 7)
        with (
            pytest.raises(BudgetOverrun),
            ledger.hold(sid, Role.EXECUTOR, 0, tool="x:mine", stage="mine") as h,
        ):
            h.settle(0)
    (row,) = _rows(ledger, sid)
    assert (row["status"], row["reserved"], row["actual"], row["overrun"]) == ("settled", 0, 7, 7)
    assert ledger.verify(sid).ok


def test_a_session_that_is_not_open_takes_no_free_call(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with ledger.free_calls(sid):
        with ledger.hold(sid, Role.EXECUTOR, 0, tool="x:mine", stage="mine") as h:
            h.settle(0)
        ledger.set_status(sid, SessionStatus.INTERRUPTED)
        ran = []
        with (
            pytest.raises(LedgerError),
            ledger.hold(sid, Role.EXECUTOR, 0, tool="x:mine", stage="mine") as h,
        ):
            ran.append(1)
    assert ran == [] and len(_rows(ledger, sid)) == 1


def test_threads_share_one_batch(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.USD_MICROS, 1000).session_id

    def work() -> None:
        for _ in range(25):
            with ledger.hold(sid, Role.EXECUTOR, 0, tool="search:local", stage="fetch") as h:
                h.settle(0)

    before = ledger.store.commits
    with ledger.free_calls(sid) as batch:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(batch) == 100
    assert ledger.store.commits == before + 1
    assert len({r["id"] for r in _rows(ledger, sid)}) == 100
    assert ledger.verify(sid).ok


def test_a_stage_writes_its_rows_and_its_calls_in_one_transaction(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.USD_MICROS, 1000).session_id
    before = ledger.store.commits
    with ledger.free_calls(sid) as batch:
        with ledger.hold(sid, Role.PLANNER, 0, tool="x:plan", stage="plan") as h:
            h.settle(0)
        got, n = batch.write_with(
            lambda cur: cur.execute(
                "UPDATE sessions SET rounds = rounds + 1 WHERE id = ?", [sid]
            ).fetchone()[0]
        )
        assert (got, n) == (1, 1)
    assert ledger.store.commits == before + 1  # nothing left to write at the block's end
    assert len(_rows(ledger, sid)) == 1


def test_calls_survive_a_failed_stage_transaction(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.USD_MICROS, 1000).session_id
    with ledger.free_calls(sid) as batch:
        with ledger.hold(sid, Role.PLANNER, 0, tool="x:plan", stage="plan") as h:
            h.settle(0)

        def fail(cur: object) -> None:
            raise RuntimeError("the stage's write failed")

        with pytest.raises(RuntimeError):
            batch.write_with(fail)
        assert len(batch) == 1  # rolled back, so kept for the block's end
    assert len(_rows(ledger, sid)) == 1 and ledger.verify(sid).ok
