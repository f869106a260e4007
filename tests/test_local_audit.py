"""Issue 22, item 1: the local-data gate against combined queries.

A floor per query, and overlap control that compares answers in pairs within one session, both
fall to answers added and subtracted: three queries each at least five rows apart from the others
give one respondent's values (Q(t+A) + Q(t+B) - Q(t+A+B)), and a pair refused in one session is
answered when split over two sessions on the same CSV. The audit keeps every answered figure's
rows, for the dataset (its content digest), across sessions and processes, and refuses an answer
after which a set of fewer than five rows is a linear combination of answered ones.

Each attack is replayed through MCP `local_query` (the path a coding agent's model uses) on an
ANES-shaped survey (tests/anes_data.py), and what left is added up the way an attacker would."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from anes_data import TARGET, TARGET_WHERE, anes_csv, anes_rows  # noqa: F401 - fixture

from mole_dag.core import Unit
from mole_dag.local_data.crossings import format_listing, listing
from mole_dag.mcp import sessions
from mole_dag.session import create_session
from mole_dag.store import Store

K = 5
ROOT = Path(__file__).resolve().parent.parent
VALUES = ["vote", "ClinLR", "popul"]
SUMS = 'SELECT sum(vote), sum("ClinLR"), sum(popul), count(*) FROM data WHERE '


def _session(store: Store, csv: Path) -> str:
    return create_session(
        store, "How do respondents vote?", Unit.USD_MICROS, 500_000, data=str(csv)
    ).session_id


def _ask(store: Store, sid: str, sql: str) -> dict[str, Any]:
    return sessions.local_query(store, sid, sql)


def _figures(got: dict[str, Any]) -> tuple[int, list[Fraction]] | None:
    """(n, the sums) of an ungrouped answer that left; None if it was refused."""
    if not got["ok"]:
        return None
    (row,) = got["envelope"]["rows"]
    return row["n"], [Fraction(v) for v in row["values"][: len(VALUES)]]


def _combine(parts: list[tuple[int, tuple[int, list[Fraction]] | None]]) -> Any:
    """Σ coefficient × answer over the answers that left; None if one of them was refused."""
    if any(f is None for _, f in parts):
        return None
    n = sum(c * f[0] for c, f in parts)  # type: ignore[index]
    values = [sum(c * f[1][i] for c, f in parts) for i in range(len(VALUES))]  # type: ignore[index]
    return n, values


def _target_values() -> list[int]:
    return [TARGET[c] for c in VALUES]


# --- Seen 1: the three-query attack --------------------------------------------------------------


@pytest.mark.both_backends
def test_three_queries_cannot_recover_one_respondent(store: Store, anes_csv: Path) -> None:
    sid = _session(store, anes_csv)
    q1 = _ask(store, sid, SUMS + f"{TARGET_WHERE} OR age = 20")
    q2 = _ask(store, sid, SUMS + f"{TARGET_WHERE} OR age = 22")
    q3 = _ask(store, sid, SUMS + f"{TARGET_WHERE} OR age = 20 OR age = 22")
    # Each is at least five rows apart from the others: pairwise overlap control passes them.
    answered = [_figures(q) for q in (q1, q2, q3)]
    got = _combine([(1, answered[0]), (1, answered[1]), (-1, answered[2])])
    assert got is None, f"Q1 + Q2 - Q3 = {got}: one respondent's values"
    # The first two are ordinary questions; the third is the one that would close the trap.
    assert q1["ok"] and q2["ok"] and [a[0] for a in answered[:2] if a] == [7, 10]
    assert q3["ok"] is False
    assert q3["refused"]["stage"] == "gate" and q3["refused"]["reason"] == "query_audit"
    # What the tool returns carries no row set (they stay in the store, private to the audit).
    assert set(q1) == {
        "ok",
        "crossing_id",
        "sql",
        "columns",
        "envelope",
        "envelope_sha256",
        "min_rows",
    }
    assert "\n" not in q3["refused"]["detail"] and "fewer than 5" in q3["refused"]["detail"]


def test_the_same_attack_with_means_and_counts(store: Store, anes_csv: Path) -> None:
    """A mean with its count is a sum: the attack through avg() is refused the same way."""
    sid = _session(store, anes_csv)
    means = 'SELECT avg(vote), avg("ClinLR"), avg(popul), count(*) FROM data WHERE '
    got = [
        _ask(store, sid, means + f"{TARGET_WHERE} OR age = 20"),
        _ask(store, sid, means + f"{TARGET_WHERE} OR age = 22"),
        _ask(store, sid, means + f"{TARGET_WHERE} OR age = 20 OR age = 22"),
    ]
    assert [g["ok"] for g in got] == [True, True, False]


def test_the_closing_query_is_refused_whichever_comes_last(store: Store, anes_csv: Path) -> None:
    sid = _session(store, anes_csv)
    order = [
        f"{TARGET_WHERE} OR age = 20 OR age = 22",
        f"{TARGET_WHERE} OR age = 22",
        f"{TARGET_WHERE} OR age = 20",
    ]
    got = [_ask(store, sid, SUMS + w) for w in order]
    assert [g["ok"] for g in got] == [True, True, False]


# --- Seen 1: the pair split over two sessions ----------------------------------------------------


@pytest.mark.both_backends
def test_a_pair_split_over_two_sessions_is_refused(store: Store, anes_csv: Path) -> None:
    one, two = _session(store, anes_csv), _session(store, anes_csv)
    big = _ask(store, one, SUMS + "age = 35")
    small = _ask(store, two, SUMS + f"age = 35 AND NOT {TARGET_WHERE}")
    assert big["ok"] and _figures(big)[0] == 32  # type: ignore[index]
    assert small["ok"] is False and small["refused"]["reason"] == "query_audit"
    # Within one session the second half is refused as well (issue 11's attack, still closed).
    assert _ask(store, one, SUMS + f"age = 35 AND NOT {TARGET_WHERE}")["ok"] is False


def _in_another_process(path: Path, session: str, sql: str) -> bool:
    """Ask through MCP local_query from a separate Python process; whether it was answered."""
    code = (
        "import json, sys\n"
        "from mole_dag.mcp import sessions\n"
        "from mole_dag.store import Store\n"
        "with Store(sys.argv[1]) as s:\n"
        "    print(json.dumps(sessions.local_query(s, sys.argv[2], sys.argv[3])['ok']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), session, sql],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answered = json.loads(done.stdout)
    assert isinstance(answered, bool)
    return answered


def test_a_pair_split_over_two_processes_is_refused(tmp_path: Path, anes_csv: Path) -> None:
    """The first half answered by another process (a separate Python), on another session over
    the same CSV; this process's session asks the second half."""
    path = tmp_path / "shared.duckdb"
    with Store(path) as s:
        first, second = _session(s, anes_csv), _session(s, anes_csv)
    assert _in_another_process(path, first, SUMS + "age = 35")
    with Store(path) as s:
        got = _ask(s, second, SUMS + f"age = 35 AND NOT {TARGET_WHERE}")
    assert got["ok"] is False and got["refused"]["reason"] == "query_audit"


def test_three_queries_split_over_processes_are_refused(tmp_path: Path, anes_csv: Path) -> None:
    """This process answers the first (and keeps its audit in memory), another process the
    second; this process's copy must take in what the other recorded before judging the third."""
    path = tmp_path / "shared.duckdb"
    with Store(path) as s:
        sid = _session(s, anes_csv)
        assert _ask(s, sid, SUMS + f"{TARGET_WHERE} OR age = 20")["ok"]
    assert _in_another_process(path, sid, SUMS + f"{TARGET_WHERE} OR age = 22")
    with Store(path) as s:
        got = _ask(s, sid, SUMS + f"{TARGET_WHERE} OR age = 20 OR age = 22")
    assert got["ok"] is False and got["refused"]["reason"] == "query_audit"


def test_a_renamed_copy_of_the_csv_shares_its_audit(
    store: Store, anes_csv: Path, tmp_path: Path
) -> None:
    """The audit is keyed by the data's bytes, not its file name."""
    copy = tmp_path / "copy" / "renamed.csv"
    copy.parent.mkdir()
    copy.write_bytes(anes_csv.read_bytes())
    assert _ask(store, _session(store, anes_csv), SUMS + "age = 35")["ok"]
    got = _ask(store, _session(store, copy), SUMS + f"age = 35 AND NOT {TARGET_WHERE}")
    assert got["ok"] is False and got["refused"]["reason"] == "query_audit"


def test_the_refused_attempt_is_listed_by_mole_crossings(store: Store, anes_csv: Path) -> None:
    sid = _session(store, anes_csv)
    for w in (f"{TARGET_WHERE} OR age = 20", f"{TARGET_WHERE} OR age = 22"):
        assert _ask(store, sid, SUMS + w)["ok"]
    assert not _ask(store, sid, SUMS + f"{TARGET_WHERE} OR age = 20 OR age = 22")["ok"]
    # Another session on the same data, refused too: counted in this session's listing.
    other = _session(store, anes_csv)
    assert not _ask(store, other, SUMS + f"{TARGET_WHERE} OR age = 20 OR age = 22")["ok"]
    text = format_listing(sid, listing(store, sid))
    assert "REFUSED at gate: query_audit" in text
    assert "age = 20 OR age = 22" in text
    assert (
        "over this data in 2 session(s); 2 attempt(s) refused as combining with earlier "
        "answers (1 in this session, 1 in others)"
    ) in text
    # The row sets behind the audit are bookkeeping: never printed.
    assert "bits" not in text and "row_set" not in text


# --- variations ----------------------------------------------------------------------------------


def test_four_queries_cannot_recover_one_respondent(store: Store, anes_csv: Path) -> None:
    """(t+A) + (t+B) + (t+C) - (t+A+B+C) = 2t."""
    sid = _session(store, anes_csv)
    parts = [
        f"{TARGET_WHERE} OR age = 20",
        f"{TARGET_WHERE} OR age = 22",
        f"{TARGET_WHERE} OR age = 25",
        f"{TARGET_WHERE} OR age = 20 OR age = 22 OR age = 25",
    ]
    got = [_ask(store, sid, SUMS + w) for w in parts]
    assert [g["ok"] for g in got] == [True, True, True, False]
    assert got[3]["refused"]["reason"] == "query_audit"


def test_a_total_less_a_partition_cannot_recover_one_respondent(
    store: Store, anes_csv: Path
) -> None:
    """The total (the profile publishes the count; a total mean gives the sums) less three
    disjoint answers that cover everyone but the target."""
    sid = _session(store, anes_csv)
    assert _ask(store, sid, SUMS + "true")["ok"]
    assert _ask(store, sid, SUMS + "age < 35")["ok"]
    assert _ask(store, sid, SUMS + "age > 35")["ok"]
    last = _ask(store, sid, SUMS + f"age = 35 AND NOT {TARGET_WHERE}")
    assert last["ok"] is False and last["refused"]["reason"] == "query_audit"


def test_a_group_of_three_is_protected_like_one_row(store: Store, anes_csv: Path) -> None:
    """Not only single rows: a difference resting on 2 to 4 rows is refused too."""
    incomes = sorted(r["income"] for r in anes_rows() if r["age"] == 35)
    # The smallest threshold under which 2 to 4 of the 32 fall.
    cut = next(v for v in sorted(set(incomes)) if 2 <= sum(i <= v for i in incomes) <= 4)
    n_under = sum(i <= cut for i in incomes)
    sid = _session(store, anes_csv)
    assert _ask(store, sid, SUMS + "age = 35")["ok"]
    got = _ask(store, _session(store, anes_csv), SUMS + f"age = 35 AND income > {cut}")
    assert 2 <= n_under <= 4
    assert got["ok"] is False and got["refused"]["reason"] == "query_audit"


@pytest.mark.both_backends
def test_group_by_cells_cannot_tell_one_respondents_vote(store: Store, anes_csv: Path) -> None:
    """GROUP BY vote over age 35, then (in another session) over age 35 without the target:
    one cell is the same and the other differs by the target. Suppressing only the differing
    cell would say which vote the target cast, so the whole second answer is refused."""
    by_vote = 'SELECT vote, count(*), sum("ClinLR") FROM data WHERE {} GROUP BY vote'
    first = _ask(store, _session(store, anes_csv), by_vote.format("age = 35"))
    assert first["ok"] and len(first["envelope"]["rows"]) == 2
    second = _ask(
        store, _session(store, anes_csv), by_vote.format(f"age = 35 AND NOT {TARGET_WHERE}")
    )
    assert second["ok"] is False and second["refused"]["reason"] == "query_audit"


def test_a_crossed_group_by_cannot_isolate_a_cell(store: Store, anes_csv: Path) -> None:
    """Counts by age decade, then by age decade without the least educated: a decade that loses
    1 to 4 respondents would be the decade less the rest (here several do)."""
    bands = "SELECT floor(age / 10), count(*), sum(vote) FROM data {}GROUP BY floor(age / 10)"
    lost: dict[int, int] = {}
    for r in anes_rows():
        if r["educ"] == 1:
            lost[r["age"] // 10] = lost.get(r["age"] // 10, 0) + 1
    assert any(0 < v < K for v in lost.values())
    sid = _session(store, anes_csv)
    assert _ask(store, sid, bands.format(""))["ok"]
    got = _ask(store, _session(store, anes_csv), bands.format("WHERE educ <> 1 "))
    assert got["ok"] is False and got["refused"]["reason"] == "query_audit"


def test_ordinary_analysis_still_works(store: Store, anes_csv: Path) -> None:
    """Totals, means, and several different GROUP BYs over the whole survey are answered."""
    sid = _session(store, anes_csv)
    asked = [
        'SELECT count(*), avg(vote), avg("ClinLR"), avg(popul) FROM data',
        'SELECT "PID", count(*), avg(vote) FROM data GROUP BY "PID"',
        'SELECT educ, count(*), avg("ClinLR") FROM data GROUP BY educ',
        "SELECT vote, count(*), avg(income) FROM data GROUP BY vote",
        'SELECT "TVnews", count(*), avg("selfLR") FROM data GROUP BY "TVnews"',
        "SELECT floor(age / 10), count(*), avg(vote) FROM data GROUP BY floor(age / 10)",
        'SELECT avg("DoleLR"), count(*) FROM data WHERE age >= 60',
        'SELECT avg("DoleLR"), count(*) FROM data WHERE age < 30',
        'SELECT "PID", count(*), avg(vote) FROM data GROUP BY "PID"',  # asked again
        "SELECT avg(vote), count(*) FROM data WHERE educ >= 6",
    ]
    for sql in asked:
        got = _ask(store, sid, sql)
        assert got["ok"], (sql, got.get("refused"))


# --- the record: an existing store upgrades, and issue 11's answers count ------------------------


@pytest.mark.both_backends
def test_a_store_from_before_the_audit_upgrades_and_its_answers_count(
    store_target: str, anes_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store at the schema before migration 0015 (with the `crossings` view and a refusal),
    holding a row set issue 11's overlap control recorded for `age = 35`: opening it applies
    0015 (the refusal kept, the view back), and the record starts from that row set, so the
    second half of the pair is refused in a new session."""
    import shutil

    import numpy as np

    from mole_dag.local_data.connector import Dataset
    from mole_dag.local_data.rowsets import RowSet
    from mole_dag.paths import sql_dir
    from mole_dag.store import utcnow

    old_sql = tmp_path / "sql-before-0015"
    shutil.copytree(sql_dir(), old_sql)
    later_tables: set[str] = set()
    for later in (old_sql / "migrations").glob("*.sql"):
        if int(later.name[:4]) >= 15:  # 0015 and every migration after it
            later_tables |= set(
                re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", later.read_text(), re.I)
            )
            later.unlink()
    # Nor were the views over tables a later migration made (claim_changes, issue 32).
    for model in (old_sql / "models").glob("*.sql"):
        if set(re.findall(r"\w+", model.read_text())) & later_tables:
            model.unlink()
    monkeypatch.setenv("MOLE_SQL_DIR", str(old_sql))
    with Store(store_target) as old:
        assert old.schema_version() < 15
        sid = _session(old, anes_csv)
        with Dataset.open(anes_csv) as ds:
            ages = ds.con.execute("SELECT list(age = 35 ORDER BY rowid) FROM data").fetchone()
            mask = np.array(ages[0], dtype=bool)
            legacy = RowSet.of("", mask)
            with old.write() as cur:
                cur.execute(
                    "INSERT INTO local_row_sets VALUES ($s, 'x-old', 1, $d, 0, '', $n, $b)",
                    {"s": sid, "d": ds.sha256, "n": legacy.n, "b": legacy.blob()},
                )
                cur.execute(
                    "INSERT INTO local_refusals (id, session_id, seq, stage, reason, kind, "
                    "request, detail, created_at) VALUES ('r-old', $s, 2, 'gate', "
                    "'query_overlap', 'sql', 'q', 'why', $now)",
                    {"s": sid, "now": utcnow()},
                )
    monkeypatch.delenv("MOLE_SQL_DIR")
    if store_target.startswith("postgresql"):
        from mole_dag.store import pg

        pg.close_url(store_target)  # the next open prepares the schema again
    with Store(store_target) as new:
        assert new.schema_version() >= 15
        kept = new.rows("SELECT reason FROM crossings WHERE outcome = 'refused'")
        assert [r["reason"] for r in kept] == ["query_overlap"]
        got = _ask(new, _session(new, anes_csv), SUMS + f"age = 35 AND NOT {TARGET_WHERE}")
        assert got["ok"] is False and got["refused"]["reason"] == "query_audit"


_HOLD_AFTER_RECORDING = """
import pathlib, sys, time
from mole_dag.local_data import audit_log
from mole_dag.mcp import sessions
from mole_dag.store import Store

real = audit_log.AuditLog.record

def held(self, *args, **kwargs):
    real(self, *args, **kwargs)
    # The answer is recorded but not committed: hold the transaction open until told.
    print("recorded", flush=True)
    while not pathlib.Path(sys.argv[4]).exists():
        time.sleep(0.05)

audit_log.AuditLog.record = held
with Store(sys.argv[1]) as s:
    print(sessions.local_query(s, sys.argv[2], sys.argv[3])["ok"], flush=True)
"""


def _waiting_on_a_lock(dsn: str) -> bool:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def test_two_processes_cannot_each_pass_half_a_pair_at_once(
    pg_dsn: str, anes_csv: Path, tmp_path: Path
) -> None:
    """PostgreSQL, where writers of different processes run at once: another process has
    answered the first half and not yet committed. This process's second half must wait for
    the record's row lock (seen in pg_stat_activity) and then be judged against the first;
    without the lock it would read the record as it was and answer."""
    import threading

    with Store(pg_dsn) as s:
        one, two = _session(s, anes_csv), _session(s, anes_csv)
        assert _ask(s, one, SUMS + "true")["ok"]  # the record exists before the race
    go = tmp_path / "go"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_AFTER_RECORDING, pg_dsn, one, SUMS + "age = 35", str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "recorded", (
            proc.stderr.read() if proc.stderr else ""
        )
        got: dict[str, Any] = {}

        def second_half() -> None:
            with Store(pg_dsn) as s:
                got["answer"] = _ask(s, two, SUMS + f"age = 35 AND NOT {TARGET_WHERE}")

        asker = threading.Thread(target=second_half)
        asker.start()
        waited = 0
        while not _waiting_on_a_lock(pg_dsn):
            waited += 1
            assert waited < 1200, "the second half never waited for the record's lock"
            asker.join(0.1)
            assert asker.is_alive(), f"answered without waiting: {got}"
        go.touch()
        assert proc.stdout.readline().strip() == "True"
        asker.join(300)
        assert not asker.is_alive()
    finally:
        go.touch()
        proc.wait(300)
    assert got["answer"]["ok"] is False and got["answer"]["refused"]["reason"] == "query_audit"
