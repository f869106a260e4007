"""The ledger: reserve before dispatch, settle after, and a schema that cannot hold an overspend."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mole_dag.budget import BudgetExhausted, Ledger, LedgerError, Usage, escrow_for
from mole_dag.core import CallStatus, Role, SessionStatus, Unit
from mole_dag.store import Store, utcnow
from tests.backends import CONSTRAINT_ERRORS

pytestmark = pytest.mark.both_backends


def test_session_sets_aside_fifteen_percent_escrow(ledger: Ledger) -> None:
    bal = ledger.create_session("q?", Unit.USD_MICROS, 500_000)
    assert bal.escrow == 75_000 == escrow_for(500_000)
    assert bal.available == 425_000
    assert bal.status == SessionStatus.CREATED


def test_reserve_settle_moves_held_to_spent(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 400, tool="llm:x", stage="mine")
    assert ledger.balance(sid).held == 400
    s = ledger.settle(r, 250, usage=Usage(input_tokens=200, output_tokens=50))
    bal = ledger.balance(sid)
    assert (bal.spent, bal.held, bal.overrun) == (250, 0, 0)
    assert s.charged == 250 and s.overrun == 0
    row = ledger.store.row("SELECT * FROM tool_calls WHERE id = ?", [r.id])
    assert row["status"] == "settled" and row["actual"] == 250 and row["input_tokens"] == 200
    assert row["role"] == "executor" and row["stage"] == "mine"
    assert ledger.verify(sid).ok


def test_unaffordable_reservation_is_refused_before_the_call(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id  # 850 outside escrow
    calls = []
    with (
        pytest.raises(BudgetExhausted) as exc,
        ledger.hold(sid, Role.PLANNER, 851, tool="llm:x", stage="plan") as h,
    ):
        calls.append("dispatched")  # must never run
        h.settle(1)
    assert calls == []
    assert exc.value.available == 850 and exc.value.requested == 851
    assert ledger.store.scalar("SELECT count(*) FROM tool_calls") == 0
    assert ledger.balance(sid).held == 0


def test_escrow_is_not_available_until_released(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 850, tool="t", stage="s")
    ledger.settle(r, 850)
    with pytest.raises(BudgetExhausted):
        ledger.reserve(sid, Role.OUTPUT, 1, tool="t", stage="report")
    assert ledger.release_escrow(sid) == 150
    assert ledger.release_escrow(sid) == 0  # once only
    bal = ledger.balance(sid)
    assert bal.escrow_released and bal.status == SessionStatus.REPORTING and bal.available == 150
    r2 = ledger.reserve(sid, Role.OUTPUT, 150, tool="t", stage="report")
    ledger.settle(r2, 150)
    assert ledger.balance(sid).spent == 1000
    assert ledger.verify(sid).ok


def test_failed_call_releases_its_hold(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with (
        pytest.raises(RuntimeError),
        ledger.hold(sid, Role.EXECUTOR, 300, tool="llm:x", stage="mine"),
    ):
        raise RuntimeError("provider 529")
    bal = ledger.balance(sid)
    assert bal.held == 0 and bal.spent == 0
    row = ledger.store.row("SELECT status, note FROM tool_calls")
    assert row["status"] == "released" and "RuntimeError" in row["note"]
    assert ledger.verify(sid).ok


def test_hold_closed_without_settle_is_an_error_and_releases(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with (
        pytest.raises(LedgerError, match="neither settled nor released"),
        ledger.hold(sid, Role.EXECUTOR, 10, tool="t", stage="s"),
    ):
        pass
    assert ledger.balance(sid).held == 0


def test_actual_beyond_reservation_is_recorded_truthfully_and_flags_the_session(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 100, tool="llm:x", stage="mine")
    s = ledger.settle(r, 130)
    assert (s.charged, s.overrun) == (100, 30)
    bal = ledger.balance(sid)
    assert bal.spent == 100 and bal.overrun == 30  # the ceiling still holds for `spent`
    row = ledger.store.row("SELECT actual, overrun FROM tool_calls WHERE id = ?", [r.id])
    assert row == {"actual": 130, "overrun": 30}
    v = ledger.verify(sid)
    assert v.ok and v.overrun == 30
    assert any("beyond its reservation" in m for m in caplog.messages)


def test_double_settle_and_unknown_session_are_refused(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 10, tool="t", stage="s")
    ledger.settle(r, 5)
    with pytest.raises(LedgerError, match="already settled"):
        ledger.settle(r, 5)
    with pytest.raises(LedgerError, match="no session"):
        ledger.reserve("nope", Role.EXECUTOR, 1, tool="t", stage="s")


def test_expired_hold_is_settled_as_assumed_never_released(store: Store) -> None:
    """Issue 11: a sweep used to mark an abandoned call `expired, actual NULL` and hand its hold
    back, so a call the provider had answered never entered `spent`. Its outcome is unknown:
    it is settled at the reserved amount, flagged assumed."""
    now = [utcnow()]
    ledger = Ledger(store, ttl=timedelta(minutes=1), clock=lambda: now[0])
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 500, tool="t", stage="s")
    assert ledger.expire_stale() == 0
    now[0] += timedelta(minutes=2)
    assert ledger.expire_stale() == 1
    bal = ledger.balance(sid)
    assert (bal.held, bal.spent) == (0, 500)
    row = store.row("SELECT status, actual, assumed FROM tool_calls")
    assert row == {"status": CallStatus.SETTLED, "actual": 500, "assumed": True}
    assert ledger.verify(sid).ok and ledger.verify(sid).assumed == 1
    # A caller that was only slow, and settles after all: the real usage replaces the
    # assumption (the reservation still covers it, since it moved into `spent`).
    s = ledger.settle(r, 200)
    assert (s.charged, s.overrun) == (200, 0)
    assert ledger.balance(sid).spent == 200
    assert ledger.verify(sid).ok and ledger.verify(sid).assumed == 0


def test_release_of_expired_hold_is_a_no_op(store: Store) -> None:
    now = [utcnow()]
    ledger = Ledger(store, ttl=timedelta(seconds=1), clock=lambda: now[0])
    sid = ledger.create_session("q?", Unit.TOKENS, 100).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 50, tool="t", stage="s")
    now[0] += timedelta(seconds=5)
    ledger.expire_stale()
    ledger.release(r)
    assert ledger.balance(sid).held == 0


def test_verify_detects_a_tampered_balance(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 100, tool="t", stage="s")
    ledger.settle(r, 100)
    with ledger.store.write() as cur:
        cur.execute("UPDATE sessions SET spent = 90 WHERE id = ?", [sid])
    v = ledger.verify(sid)
    assert not v.ok and "spent 90 != tool_calls 100" in v.explain()


def test_the_schema_alone_refuses_an_overspend(ledger: Ledger) -> None:
    """Falsification of the application check: bypass it and the CHECK constraint still holds."""
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with pytest.raises(CONSTRAINT_ERRORS), ledger.store.write() as cur:
        cur.execute("UPDATE sessions SET held = held + 851 WHERE id = ?", [sid])


def test_budget_validation(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="empty"):
        ledger.create_session("  ", Unit.TOKENS, 10)
    with pytest.raises(LedgerError, match="positive"):
        ledger.create_session("q", Unit.TOKENS, 0)
    with pytest.raises(LedgerError, match="positive"):
        ledger.create_session("q", Unit.TOKENS, 1.5)  # type: ignore[arg-type]
    sid = ledger.create_session("q", Unit.TOKENS, 10).session_id
    with pytest.raises(LedgerError, match="negative"):
        ledger.reserve(sid, Role.EXECUTOR, -1, tool="t", stage="s")


# -- property: any interleaving of operations keeps the invariants ------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "settle", "settle_over", "release", "expire", "escrow"]),
        st.integers(min_value=0, max_value=400),
        st.sampled_from(list(Role)),
    ),
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(total=st.integers(min_value=1, max_value=2000), script=ops)
def test_invariants_hold_under_any_sequence(tmp_path: Path, total: int, script: list) -> None:
    now = [utcnow()]
    store = Store(tmp_path / f"p{abs(hash((total, len(script))))}.duckdb")
    try:
        ledger = Ledger(store, ttl=timedelta(seconds=10), clock=lambda: now[0])
        sid = ledger.create_session("q?", Unit.TOKENS, total).session_id
        open_: list = []
        for op, amount, role in script:
            if op == "reserve":
                before = ledger.balance(sid)
                try:
                    open_.append(ledger.reserve(sid, role, amount, tool="t", stage="s"))
                except BudgetExhausted:
                    # refused only when unaffordable, or after an overrun (issue 11)
                    assert amount > before.available or before.overrun > 0
            elif op in ("settle", "settle_over") and open_:
                r = open_.pop(0)
                actual = amount % (r.amount + 1) if op == "settle" else r.amount + amount
                ledger.settle(r, actual)
            elif op == "release" and open_:
                ledger.release(open_.pop())
            elif op == "expire":
                now[0] += timedelta(seconds=amount // 20)
                ledger.expire_stale()
            elif op == "escrow":
                ledger.release_escrow(sid)
            bal = ledger.balance(sid)
            assert bal.spent >= 0 and bal.held >= 0 and bal.escrow >= 0
            assert bal.spent + bal.held + bal.escrow <= bal.total
            assert ledger.verify(sid).ok, ledger.verify(sid).explain()
    finally:
        store.close()
