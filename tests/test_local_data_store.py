"""Local data in the store: the schema's floor, the refusal vocabulary, the local_findings stage
(claims that pass the quote check, provenance, idempotence, failures), and re-verification."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from survey_data import survey_csv  # noqa: F401 - fixture

from mole_dag.actors.quote import find_quote
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.local_data.crossings import listing
from mole_dag.local_data.findings import analyse_local_data, reverify
from mole_dag.local_data.refusal import Reason, Stage
from mole_dag.session import create_session
from mole_dag.skills.protocol import Metered
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store, utcnow


def _session(store: Store, data: Path | None, total: int = 500_000) -> str:
    return create_session(
        store,
        "Does income differ by plan?",
        Unit.USD_MICROS,
        total,
        data=str(data) if data else None,
    ).session_id


def _run(store: Store, sid: str, skills: Any = None) -> Run:
    return Run(store, Ledger(store), skills or ExtractiveSkills(), sid)


# --- schema -------------------------------------------------------------------------------------


def _crossing(cur: Any, **over: Any) -> None:
    row = {
        "id": "x1",
        "session_id": "s",
        "seq": 0,
        "kind": "template",
        "template": "t",
        "columns": "{}",
        "sql": "SELECT 1",
        "executed_sql": None,
        "envelope": '{"a":1}',
        "envelope_sha256": "a" * 64,
        "dataset_sha256": "b" * 64,
        "floor": 5,
        "min_rows": 5,
        "now": utcnow(),
    } | over
    cur.execute(
        "INSERT INTO local_crossings VALUES ($id, $session_id, $seq, $kind, $template, $columns, "
        "$sql, $executed_sql, $envelope, $envelope_sha256, $dataset_sha256, $floor, $min_rows, "
        "$now)",
        row,
    )


def test_schema_accepts_a_crossing_at_the_floor(store: Store) -> None:
    with store.write() as cur:
        _crossing(cur)


@pytest.mark.parametrize(
    "over",
    [
        {"min_rows": 1},  # a single-row figure: the floor is a constraint
        {"min_rows": 4},
        {"floor": 3, "min_rows": 3},  # nor may the floor itself be lowered
        {"kind": "profile"},  # a profile has no SQL
        {"kind": "sql", "template": "t"},
        {"envelope_sha256": "short"},
        {"kind": "dump"},
    ],
)
def test_schema_refuses_crossings_that_break_the_rules(store: Store, over: dict) -> None:
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        _crossing(cur, **over)


def _refusal(cur: Any, reason: str, stage: str = "sqlguard", seq: int = 0) -> None:
    cur.execute(
        "INSERT INTO local_refusals (id, session_id, seq, stage, reason, kind, request, detail, "
        "created_at) VALUES ($id, 's', $seq, $stage, $reason, 'sql', 'q', 'why', $now)",
        {"id": f"r{seq}", "seq": seq, "stage": stage, "reason": reason, "now": utcnow()},
    )


def test_refusal_vocabulary_is_the_schemas(store: Store) -> None:
    with store.write() as cur:
        for i, reason in enumerate(Reason):
            _refusal(cur, str(reason), seq=i)
        for j, stage in enumerate(Stage):
            _refusal(cur, "star", str(stage), seq=100 + j)
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        _refusal(cur, "looked_suspicious", seq=999)
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        _refusal(cur, "star", "connector", seq=998)


# --- the stage ----------------------------------------------------------------------------------


def test_findings_become_claims_that_pass_the_quote_check(store: Store, survey_csv: Path) -> None:
    sid = _session(store, survey_csv)
    res = analyse_local_data(_run(store, sid))
    assert res.attached and res.crossings >= 4 and res.claims >= res.crossings
    claims = store.rows(
        "SELECT c.*, s.url, s.publisher, s.source_class, s.actor FROM claims c "
        "JOIN sources s ON s.id = c.source_id WHERE c.session_id = $s",
        {"s": sid},
    )
    assert len(claims) == res.claims
    assert {c["source_class"] for c in claims} == {"local"}
    assert len({c["publisher"] for c in claims}) == 1  # one dataset, one publisher
    assert all(c["url"].startswith("data:survey.csv#") for c in claims)
    for c in claims:
        text = "".join(
            r["text"]
            for r in store.rows(
                "SELECT text FROM chunks WHERE source_id = $s ORDER BY ordinal",
                {"s": c["source_id"]},
            )
        )
        m = find_quote(text, c["quote"])
        assert m is not None and (m.byte_start, m.byte_end) == (
            c["quote_byte_start"],
            c["quote_byte_end"],
        )
        assert c["text"] == c["quote"]
    prov = store.rows(
        "SELECT f.*, x.sql AS x_sql, x.envelope_sha256 AS x_sha "
        "FROM local_findings f JOIN local_crossings x ON x.id = f.crossing_id "
        "WHERE f.session_id = $s",
        {"s": sid},
    )
    assert len(prov) == res.claims
    assert all(p["sql"] == p["x_sql"] and p["envelope_sha256"] == p["x_sha"] for p in prov)
    # Re-running the stage does nothing: one analysis per session.
    again = analyse_local_data(_run(store, sid))
    assert again.already_done and again.crossings == 0
    assert len(listing(store, sid).crossings) == res.crossings + 1  # + the profile


def test_no_data_is_a_no_op(store: Store) -> None:
    sid = _session(store, None)
    res = analyse_local_data(_run(store, sid))
    assert not res.attached and listing(store, sid).crossings == []


def test_data_that_vanished_is_a_dead_end(store: Store, tmp_path: Path, survey_csv: Path) -> None:
    copy = shutil.copy(survey_csv, tmp_path / "gone.csv")
    sid = _session(store, Path(copy))
    Path(copy).unlink()
    res = analyse_local_data(_run(store, sid))
    assert res.error and "does not exist" in res.error
    dead = store.rows("SELECT cause FROM dead_ends WHERE session_id = $s", {"s": sid})
    assert [d["cause"] for d in dead] == ["unreadable"]


class _Greedy(ExtractiveSkills):
    name = "greedy"

    def estimate_hypothesize(self, view: ProfileView, unit: Unit) -> int:
        return 10**9


def test_no_budget_no_hypotheses_and_the_profile_never_left(store: Store, survey_csv: Path) -> None:
    sid = _session(store, survey_csv, total=1000)
    res = analyse_local_data(_run(store, sid, _Greedy()))
    assert res.crossings == 0
    assert listing(store, sid).crossings == []  # the call never happened
    dead = store.rows("SELECT cause FROM dead_ends WHERE session_id = $s", {"s": sid})
    assert [d["cause"] for d in dead] == ["budget_exhausted"]


class _Chatty(ExtractiveSkills):
    name = "chatty"

    def hypothesize(self, view: ProfileView, unit: Unit) -> Metered[list[HypothesisChoice]]:
        return Metered([HypothesisChoice("count_by_group", {"group": "plan"})] * 4, model="x")


def test_answers_over_the_limit_are_refused_not_asked(store: Store, survey_csv: Path) -> None:
    sid = _session(store, survey_csv)
    res = analyse_local_data(_run(store, sid, _Chatty()), max_hypotheses=2)
    assert res.crossings == 2 and res.refused == {"bad_arguments": 2}
    assert [r.detail for r in listing(store, sid).refusals] == [
        "more than 2 hypotheses; this one was not asked"
    ] * 2


class _Old:
    """A provider written before the hypothesis skill existed."""

    name = "old"
    uses_model = False


def test_a_provider_without_the_skill_falls_back_to_the_model_free_chooser(
    store: Store, survey_csv: Path
) -> None:
    sid = _session(store, survey_csv)
    res = analyse_local_data(_run(store, sid, _Old()))
    assert res.chooser == "extractive (fallback)" and res.crossings >= 1


def test_reverify_reproduces_and_notices_changed_data(
    store: Store, tmp_path: Path, survey_csv: Path
) -> None:
    copy = Path(shutil.copy(survey_csv, tmp_path / "s.csv"))
    sid = _session(store, copy)
    analyse_local_data(_run(store, sid))
    crossings = listing(store, sid).crossings
    for c in crossings:
        ok, why = reverify(store, c.id)
        assert ok, why
    first_row = copy.read_text("utf-8").splitlines()[1]
    with copy.open("a", encoding="utf-8", newline="") as fh:
        fh.write(first_row + "\r\n")  # the csv module's line ending
    ok, why = reverify(store, crossings[1].id)
    assert not ok and "changed" in why


def test_ui_launched_session_checks_its_data_first(store: Store, tmp_path: Path) -> None:
    from mole_dag.launch import LaunchError
    from mole_dag.session import ensure_session

    # The launch check's refusal, worded for a config key (`data:`), as mole-mcp words it.
    with pytest.raises(LaunchError, match="^data: .*does not exist"):
        ensure_session(store, "ui-1", question="q?", usd="0.10", data=str(tmp_path / "x.csv"))
    assert store.row("SELECT id FROM sessions WHERE id = 'ui-1'") is None
    good = tmp_path / "ok.csv"
    good.write_text("k,v\n" + "".join(f"{'ab'[i % 2]},{i}\n" for i in range(10)), "utf-8")
    ensure_session(store, "ui-2", question="q?", usd="0.10", data=str(good))
    assert store.scalar("SELECT data FROM sessions WHERE id = 'ui-2'") == str(good.resolve())
