"""Issue 11, in the ledger: the first overrun stops all dispatching, overrun counts against
the ceiling in what verify reports, and a reservation whose outcome is unknown is settled at
its reserved amount (assumed), by any process that opens the store for writing."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mole_dag.budget import BudgetExhausted, BudgetOverrun, Ledger
from mole_dag.core import CallStatus, Role, SessionStatus, Unit
from mole_dag.store import Store, q, utcnow


def _dead_owner() -> str:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}"


def test_no_reservation_after_an_overrun(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 10_000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 100, tool="t", stage="s")
    ledger.settle(r, 250)  # the provider used more than it was allowed
    for role, amount in [(Role.EXECUTOR, 1), (Role.PLANNER, 0), (Role.OUTPUT, 10)]:
        with pytest.raises(BudgetOverrun) as exc:
            ledger.reserve(sid, role, amount, tool="t", stage="s")
        assert exc.value.reason == "overrun" and isinstance(exc.value, BudgetExhausted)
        assert "no new call" in str(exc.value)
    # Even with the escrow handed to the report, nothing more is dispatched.
    ledger.release_escrow(sid)
    with pytest.raises(BudgetOverrun):
        ledger.reserve(sid, Role.OUTPUT, 10, tool="t", stage="report")
    bal = ledger.balance(sid)
    assert bal.available == 0 and bal.charged == 250


def test_verify_counts_overrun_against_the_ceiling(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 800, tool="t", stage="s")
    ledger.settle(r, 1300)
    v = ledger.verify(sid)
    assert v.ok  # the books agree with tool_calls...
    assert v.charged == 1300 and v.over_ceiling == 300  # ...and the ceiling was broken
    assert "CEILING EXCEEDED" in v.explain() and "overrun 500" in v.explain()
    # verify recomputes the overrun column too
    with ledger.store.write() as cur:
        cur.execute("UPDATE sessions SET overrun = 0 WHERE id = ?", [sid])
    assert not ledger.verify(sid).ok


def test_interrupted_hold_is_settled_at_its_reservation(ledger: Ledger) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    with (
        pytest.raises(KeyboardInterrupt),
        ledger.hold(sid, Role.EXECUTOR, 120, tool="t", stage="s"),
    ):
        raise KeyboardInterrupt  # the call may have been answered: we cannot know
    assert ledger.balance(sid).spent == 120
    assert ledger.store.row("SELECT assumed, actual FROM tool_calls") == {
        "assumed": True,
        "actual": 120,
    }
    # An ordinary failure is still released.
    with pytest.raises(RuntimeError), ledger.hold(sid, Role.EXECUTOR, 50, tool="t", stage="s"):
        raise RuntimeError("refused before it was sent")
    assert ledger.balance(sid).spent == 120 and ledger.verify(sid).ok


def test_opening_the_store_recovers_a_dead_process(tmp_path: Path) -> None:
    """A process died with a call reserved (answered, never settled) while driving a session;
    another finished session kept a hold. The next process to open the store for writing
    settles both as assumed, marks the dead driver's session interrupted and requeues its
    leases; nothing waits for the reservations' expiry."""
    path = tmp_path / "r.duckdb"
    dead = _dead_owner()
    with Store(path) as store:
        ledger = Ledger(store)
        live = ledger.create_session("q?", Unit.TOKENS, 1000, session_id="s-live").session_id
        done = ledger.create_session("q?", Unit.TOKENS, 1000, session_id="s-done").session_id
        ledger.reserve(live, Role.EXECUTOR, 300, tool="t", stage="mine")
        ledger.reserve(done, Role.EXECUTOR, 200, tool="t", stage="mine")
        now = utcnow()
        with store.write() as cur:
            cur.execute("UPDATE tool_calls SET owner = ? WHERE session_id = ?", [dead, live])
            cur.execute("UPDATE tool_calls SET owner = 'elsewhere:1' WHERE session_id = ?", [done])
            cur.execute(q("session_set_owner"), {"owner": dead, "now": now, "session_id": live})
            cur.execute("UPDATE sessions SET status = 'running' WHERE id = ?", [live])
            cur.execute("UPDATE sessions SET status = 'done' WHERE id = ?", [done])
            cur.execute(
                "INSERT INTO leads (id, session_id, sub_question_id, actor, query, status,"
                " lease_owner, lease_expires_at, created_at) VALUES ('l1', ?, 'sq', "
                "'local', 'q', 'leased', 'worker-x', ?, ?)",
                [live, now, now],
            )
        # This process is alive, so its own open reservation stays open.
        mine = ledger.reserve(live, Role.EXECUTOR, 10, tool="t", stage="mine")

    # The next process to open it: recovery runs once per process per store, at its first
    # writing open (this process has had its turn).
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from mole_dag.store import Store; Store(sys.argv[1])",
            str(path),
        ],
        check=True,
        timeout=120,
    )
    with Store(path) as store:
        ledger = Ledger(store)
        for sid, amount in [("s-live", 300 + 0), ("s-done", 200)]:
            bal = ledger.balance(sid)
            assert bal.spent == amount
            assert ledger.verify(sid).ok
        assert ledger.balance("s-live").held == 10  # still ours, and we are alive
        assert ledger.balance("s-done").held == 0
        assumed = store.rows(
            "SELECT session_id, reserved FROM tool_calls WHERE assumed ORDER BY session_id"
        )
        assert assumed == [
            {"session_id": "s-done", "reserved": 200},
            {"session_id": "s-live", "reserved": 300},
        ]
        assert ledger.balance("s-live").status == SessionStatus.INTERRUPTED
        assert store.scalar("SELECT status FROM leads WHERE id = 'l1'") == "pending"
        ledger.settle(mine, 10)
        assert (
            store.scalar(
                "SELECT count(*) FROM tool_calls WHERE status = ?", [str(CallStatus.RESERVED)]
            )
            == 0
        )
