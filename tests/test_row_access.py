"""Rows are read by column name, never by position (issue 13).

`row[5]` means whatever the SELECT lists sixth: reorder the columns of a query in sql/queries/
and a positional read silently takes the wrong field. These tests hold the line: an `ast` scan
of mole_dag/ and assets/ for positional reads of query results, and a ledger that still settles
the right amounts when `call_get` lists its columns in another order."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.core import CallStatus, Role, SessionStatus, Unit
from mole_dag.store import MissingColumn, Store, fetch_one, q, scalar
from mole_dag.store import queries as queries_mod
from mole_dag.store.records import CallRow, SessionRow

ROOT = Path(__file__).resolve().parent.parent
FETCH = {"fetchone", "fetchall", "fetchmany", "fetchnumpy", "fetchdf"}
# The one place a row is taken apart: by the names in cursor.description, or as the single
# column a scalar query is checked to have.
ALLOWED = {Path("mole_dag/store/records.py"), Path("mole_dag/store/base.py")}


ROW, ROWS = "row", "rows"


def _int_index(node: ast.Subscript) -> bool:
    sl = node.slice
    if isinstance(sl, ast.UnaryOp) and isinstance(sl.op, ast.USub):
        sl = sl.operand
    return isinstance(sl, ast.Constant) and type(sl.value) is int


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one function (or the module), not those of functions nested in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


class _Scope:
    """Which names of one scope hold a fetched row, and which a list of fetched rows."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def kind(self, expr: ast.AST) -> str | None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "fetchone":
                return ROW
            if expr.func.attr in FETCH:
                return ROWS
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Name)
            and expr.func.id in {"list", "sorted", "tuple", "reversed"}
            and expr.args
        ):
            return ROWS if self.kind(expr.args[0]) == ROWS else None
        if isinstance(expr, ast.Name):
            return self.names.get(expr.id)
        if isinstance(expr, ast.Subscript) and self.kind(expr.value) == ROWS:
            return ROW if _int_index(expr) else ROWS
        return None

    def bind(self, target: ast.AST, kind: str | None) -> bool:
        if kind is None or not isinstance(target, ast.Name) or self.names.get(target.id) == kind:
            return False
        self.names[target.id] = kind
        return True


def positional_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for every positional read of a query's rows in `tree`: an integer index on
    a fetched row (`cur.fetchone()[0]`, `row[5]` after `row = cur.fetchone()`, `r[0]` for `r`
    in fetched rows), and a tuple unpacking a fetched row (`for a, b in cur.fetchall()`)."""
    scopes = [
        tree,
        *(
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        ),
    ]
    seen: set[tuple[int, str]] = set()
    for scope in scopes:
        sc = _Scope()
        nodes = list(_own_nodes(scope))
        changed = True
        while changed:  # to a fixpoint: `rows = cur.fetchall()`, then `for r in rows`
            changed = False
            for node in nodes:
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        changed |= sc.bind(t, sc.kind(node.value))
                elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                    changed |= sc.bind(node.target, sc.kind(node.value))
                elif (
                    isinstance(node, ast.For | ast.AsyncFor | ast.comprehension)
                    and sc.kind(node.iter) == ROWS
                ):
                    changed |= sc.bind(node.target, ROW)
        for node in nodes:
            hit: tuple[int, str] | None = None
            if (
                isinstance(node, ast.Subscript)
                and (_int_index(node) or isinstance(node.slice, ast.Slice))
                and sc.kind(node.value) == ROW
            ):
                # An integer or a slice on a row: its columns taken by position.
                hit = (node.lineno, ast.unparse(node))
            elif (
                isinstance(node, ast.For | ast.AsyncFor | ast.comprehension)
                and isinstance(node.target, ast.Tuple)
                and sc.kind(node.iter) == ROWS
            ):
                hit = (node.target.lineno, f"unpacking {ast.unparse(node.target)}")
            elif (
                isinstance(node, ast.Assign)
                and sc.kind(node.value) == ROW
                and any(isinstance(t, ast.Tuple) for t in node.targets)
            ):
                hit = (node.lineno, f"unpacking {ast.unparse(node.targets[0])}")
            if hit is not None and hit not in seen:
                seen.add(hit)
                yield hit


def _sources() -> Iterator[Path]:
    for top in ("mole_dag", "assets"):
        yield from sorted((ROOT / top).rglob("*.py"))


def test_the_scan_finds_what_it_is_for() -> None:
    """The scan itself: each shape of positional read it must catch, and the named reads it
    must let through."""
    bad = """
def a(cur):
    return cur.execute(q("x")).fetchone()[0]
def b(cur):
    row = cur.execute(q("call_get")).fetchone()
    return row[5], row[-1]
def c(cur):
    return [Lease(r[0], r[1]) for r in cur.execute(q("y")).fetchall()]
def d(cur):
    rows = cur.execute(q("y")).fetchall()
    for rid, amount in rows:
        pass
def e(cur):
    got = cur.execute("SELECT 1").fetchall()
    for r in got:
        print(r[2])
def g(con, nk):
    raw = con.execute("SELECT k, n FROM data GROUP BY k").fetchall()
    return {tuple(r[:nk]): r[nk:] for r in raw}
"""
    assert sorted(line for line, _ in positional_reads(ast.parse(bad))) == [
        3,
        6,
        6,
        8,
        8,
        11,
        16,
        19,
        19,
    ]
    good = """
def f(store, cur):
    row = store.row(q("x"))
    rows = store.rows(q("x"))
    one = fetch_one(cur, CallRow, q("call_get"), {})
    got = cur.execute(q("x")).fetchall()
    n = len(got)
    return row["a"], rows[0]["b"], one.reserved, parts[0], got[0].name, n
"""
    assert list(positional_reads(ast.parse(good))) == []


def test_no_positional_row_access_in_the_code() -> None:
    found = []
    for path in _sources():
        rel = path.relative_to(ROOT)
        if rel in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(rel))
        found += [f"{rel}:{line}: {what}" for line, what in positional_reads(tree)]
    assert not found, (
        "rows read by position (read them by column name: "
        "mole_dag/store/records.py):\n" + "\n".join(found)
    )


# -- a reordered SELECT still fills every field ------------------------------------------------


def _reordered(name: str, select: str) -> dict[str, str]:
    """The named queries with `name`'s SELECT list replaced by `select`."""
    table = dict(queries_mod.load_queries())
    body = table[name]
    head, sep, rest = body.partition("FROM")
    assert sep and head.lstrip().upper().startswith("SELECT")
    table[name] = f"SELECT {select}\n{sep}{rest}"
    return table


@pytest.fixture()
def reordered_call_get(monkeypatch: pytest.MonkeyPatch) -> None:
    # The columns in a wholly different order: reserved is no longer sixth, status no longer
    # eighth, assumed no longer tenth.
    table = _reordered(
        "call_get",
        "assumed, completed_at, status, actual, overrun, reserved, expires_at, tool, stage, "
        "role, session_id, id",
    )
    monkeypatch.setattr(queries_mod, "load_queries", lambda directory=None: table)


def test_ledger_settles_the_right_amounts_with_call_get_reordered(
    store: Store, reordered_call_get: None
) -> None:
    assert q("call_get").startswith("SELECT assumed, completed_at, status")
    ledger = Ledger(store)
    sid = ledger.create_session("q?", Unit.TOKENS, 10_000).session_id
    # Settled within its reservation: the hold is returned, the actual spent.
    r1 = ledger.reserve(sid, Role.EXECUTOR, 300, tool="t", stage="s")
    s1 = ledger.settle(r1, 120)
    assert (s1.actual, s1.charged, s1.overrun) == (120, 120, 0)
    # Released: the hold goes back whole.
    r3 = ledger.reserve(sid, Role.EXECUTOR, 400, tool="t", stage="s")
    ledger.release(r3)
    # Beyond its reservation: charged the reservation, the rest recorded as overrun.
    r2 = ledger.reserve(sid, Role.EXECUTOR, 200, tool="t", stage="s")
    s2 = ledger.settle(r2, 250)
    assert (s2.actual, s2.charged, s2.overrun) == (250, 200, 50)
    bal = ledger.balance(sid)
    assert (bal.spent, bal.held, bal.overrun) == (320, 0, 50)
    # Settled as assumed (charged exactly the reservation) in a session of its own: after
    # the overrun the first one reserves nothing more.
    sid2 = ledger.create_session("q2?", Unit.TOKENS, 10_000).session_id
    r4 = ledger.reserve(sid2, Role.EXECUTOR, 700, tool="t", stage="s")
    ledger.settle_assumed(r4, note="interrupted")
    assert (ledger.balance(sid2).spent, ledger.balance(sid2).held) == (700, 0)
    # A late settle of the assumed call replaces the assumption with the real usage.
    late = ledger.settle(r4, 500)
    assert (late.actual, late.charged, late.overrun) == (500, 500, 0)
    assert ledger.balance(sid2).spent == 500
    assert ledger.verify(sid).ok and ledger.verify(sid2).ok
    with store.read() as cur:
        row = fetch_one(cur, CallRow, q("call_get"), {"id": r4.id})
    assert row is not None and row.reserved == 700 and row.actual == 500
    assert row.status == CallStatus.SETTLED and row.assumed is False


def test_a_record_refuses_a_select_that_lacks_a_column(store: Store) -> None:
    ledger = Ledger(store)
    sid = ledger.create_session("q?", Unit.TOKENS, 1_000).session_id
    r = ledger.reserve(sid, Role.EXECUTOR, 10, tool="t", stage="s")
    with store.read() as cur, pytest.raises(MissingColumn, match="reserved"):
        fetch_one(
            cur,
            CallRow,
            "SELECT id, session_id, role, stage, tool, actual, status, "
            "expires_at, assumed FROM tool_calls WHERE id = $id",
            {"id": r.id},
        )
    row = store.one(SessionRow, "SELECT status, unit, * FROM sessions WHERE id = $id", {"id": sid})
    assert row is not None and row.status == SessionStatus.CREATED and row.unit == Unit.TOKENS


def test_a_scalar_query_has_exactly_one_column(store: Store) -> None:
    with store.read() as cur:
        assert scalar(cur, int, "SELECT 41 + 1") == 42
        assert scalar(cur, int, "SELECT 1 WHERE false") is None
        with pytest.raises(MissingColumn, match="exactly one column"):
            scalar(cur, int, "SELECT 1, 2")
        with pytest.raises(TypeError, match="expected int"):
            scalar(cur, int, "SELECT 'a'")
    with pytest.raises(MissingColumn):
        store.scalar("SELECT 1, 2")
