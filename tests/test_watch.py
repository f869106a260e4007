"""Issue 32: `mole watch`. The Dagster schedule `watched_questions` is evaluated at given tick
times, the run it requests is launched in process, the difference from the run before is
stored, and --notify receives the diff's JSON on a material change and only then. In process,
with the extractive provider (offline, free) and the corpus of the rerun test."""

from __future__ import annotations

import json
import shlex
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.definitions import defs
from assets.watch import watched_questions_schedule
from mole_dag.actors.registry import forget_cached
from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import SessionStatus, Unit
from mole_dag.driver import run_session
from mole_dag.resources import StoreResource
from mole_dag.session import create_session
from mole_dag.skillsets import skills_for
from mole_dag.store import Store
from tests.dagster_helpers import metadata
from tests.test_rerun_changes import COHORT, FIGURE, QUESTION, _first_corpus, _second_corpus

NOTIFY = """import sys
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(sys.stdin.read().replace("\\n", " ") + "\\n")
"""


def _tick(instance: dg.DagsterInstance, db: Path, when: datetime) -> list[dg.RunRequest]:
    with dg.build_schedule_context(
        instance=instance,
        # As the daemon gives it: with its zone (the store's times are naive UTC).
        scheduled_execution_time=when.replace(tzinfo=UTC),
        resources={"store": StoreResource(database=str(db))},
    ) as ctx:
        got = watched_questions_schedule.evaluate_tick(ctx)
    return list(got.run_requests or [])


def _launch(instance: dg.DagsterInstance, req: dg.RunRequest) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def("watch_run").execute_in_process(
        instance=instance, run_config=req.run_config, tags=req.tags
    )


def _notified(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def test_schedule_runs_a_watch_stores_the_diff_and_notifies_only_on_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "corpus"
    _first_corpus(root)
    db = tmp_path / "watch.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    with Store(db) as st:
        first = create_session(st, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
        run_session(Run(st, Ledger(st), skills_for("extractive"), first, progress=lambda _m: None))
    script = tmp_path / "notify.py"
    script.write_text(NOTIFY, "utf-8")
    inbox = tmp_path / "inbox.jsonl"
    cmd = shlex.join([sys.executable, str(script), str(inbox)])
    argv = ["--db", str(db), "watch", first, "--every", "daily", "--tokens", "50000"]
    assert main([*argv, "--notify", cmd]) == 0
    assert "every daily (0 0 * * * UTC)" in capsys.readouterr().out
    with Store(db) as st:
        row = st.row("SELECT id, created_at FROM watches")
    assert row is not None
    watch_id, created = row["id"], row["created_at"]
    day1 = (created + timedelta(days=1)).replace(hour=0, minute=15, second=0, microsecond=0)

    with dg.instance_for_test() as instance:
        # Before its first tick a watch is not due (evaluated at its registration: a minute
        # later could cross midnight, a tick).
        assert _tick(instance, db, created) == []

        # Between the runs one figure changes, one source goes, one comes.
        _second_corpus(root)
        (req,) = _tick(instance, db, day1)
        assert req.run_key == f"{watch_id}:{day1:%Y-%m-%d}T00:00"
        result = _launch(instance, req)
        assert result.success
        md = metadata(result, "watched_questions")
        assert md["status"] == "done" and md["material"] is True and md["notified"] is True
        assert (md["findings_changed"], md["findings_new"], md["findings_removed"]) == (1, 1, 1)
        second = md["session"]
        assert md["previous_session"] == first
        assert watch_id in md["watched_questions"] and "1 changed" in md["watched_questions"]
        # The UI: the rerun's report carries the change counts and the section as metadata.
        ev = instance.get_latest_materialization_event(dg.AssetKey("report"))
        assert ev is not None and ev.asset_materialization is not None
        assert ev.asset_materialization.partition == second
        rep = {k: v.value for k, v in ev.asset_materialization.metadata.items()}
        assert (rep["findings_changed"], rep["findings_new"], rep["findings_removed"]) == (1, 1, 1)
        assert (rep["sources_added"], rep["sources_removed"], rep["sources_changed"]) == (1, 1, 1)
        assert rep["previous_session"] == first and rep["changes_material"] is True
        assert rep["what_changed"].startswith(f"## What changed since {first} (")
        # The same tick again: already run, nothing requested.
        assert _tick(instance, db, day1 + timedelta(minutes=15)) == []

        with Store(db) as st:
            stored = st.row(
                "SELECT material, diff_json FROM session_diffs "
                "WHERE old_session_id = ? AND new_session_id = ?",
                [first, second],
            )
            assert stored is not None and stored["material"] is True
            diff = json.loads(stored["diff_json"])
            row = st.row("SELECT previous_session_id FROM sessions WHERE id = ?", [second])
            assert row == {"previous_session_id": first}
        (got,) = _notified(inbox)
        assert got == diff
        (changed,) = got["findings"]["changed"]
        assert changed["old"]["quote"] == FIGURE.format(20)
        assert changed["new"]["quote"] == FIGURE.format(25)
        assert changed["new"]["source"] == COHORT

        # The next day nothing moved: the run is stored, not material, and no one is told.
        (req2,) = _tick(instance, db, day1 + timedelta(days=1))
        result2 = _launch(instance, req2)
        assert result2.success
        md2 = metadata(result2, "watched_questions")
        assert md2["material"] is False and md2["notified"] is False
        assert md2["previous_session"] == second  # diffed against the run before, not the first
        assert len(_notified(inbox)) == 1

    with Store(db) as st:
        runs = st.rows(
            "SELECT status, material, notified FROM watch_runs WHERE watch_id = ? ORDER BY due_at",
            [watch_id],
        )
        assert runs == [
            {"status": "done", "material": True, "notified": True},
            {"status": "done", "material": False, "notified": False},
        ]
        stored2 = st.row(
            "SELECT material FROM session_diffs WHERE new_session_id = ?", [md2["session"]]
        )
        assert stored2 == {"material": False}
        # A watch's total spend is queryable: the sum of its runs' sessions.
        spend = st.row("SELECT runs, material_runs, spent FROM watch_spend")
        total = st.scalar(
            "SELECT sum(spent + overrun) FROM sessions WHERE id IN (?, ?)",
            [second, md2["session"]],
        )
        assert spend == {"runs": 2, "material_runs": 1, "spent": int(total)}
    assert main(["--db", str(db), "watch", "--list"]) == 0
    listed = capsys.readouterr().out
    assert watch_id in listed and "nothing material changed" in listed and "2 runs" in listed
    assert main(["--db", str(db), "watch", "--remove", watch_id]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "watch", "--list"]) == 0
    assert capsys.readouterr().out.strip() == "no watched questions"
    forget_cached()


def test_a_run_whose_process_died_is_finished_by_the_next(
    small_store: tuple[Path, str, str],
) -> None:
    """A watch run's process died and its session ended without it (the research driver
    sensor, or failed): the watch is due again at its next tick, and the next run records the
    dead one first and re-runs from the last session that finished."""
    from mole_dag.session import stop_session
    from mole_dag.watch import add_watch, due, runs_of, start_run

    db, done, _running = small_store
    with Store(db) as st:
        w = add_watch(st, done, "daily", Unit.TOKENS, 20_000)
        tick1 = (w.created_at + timedelta(days=1)).replace(
            hour=0, minute=0, second=0, microsecond=0
        )
        assert [(x.id, t) for x, t in due(st, tick1 + timedelta(minutes=5))] == [(w.id, tick1)]
        first = start_run(st, w.id, tick1)
        assert start_run(st, w.id, tick1) == first  # a retried Dagster run starts nothing
        # While its session is open, the watch waits for it, even past its next tick.
        assert due(st, tick1 + timedelta(days=1, minutes=5)) == []
        stop_session(Ledger(st), first.session_id, SessionStatus.FAILED, "the run died")
        tick2 = tick1 + timedelta(days=1)
        assert [t for _x, t in due(st, tick2 + timedelta(minutes=5))] == [tick2]
        second = start_run(st, w.id, tick2)
        assert second.previous_session_id == done  # not the failed session
        runs = {r.due_at: r.status for r in runs_of(st, w.id)}
        assert runs == {tick1: "failed", tick2: "running"}


# -- bad input: one clear line, nothing written ------------------------------------------------


def _snapshot(db: Path) -> dict[str, int]:
    with Store(db) as st:
        return {t: int(st.scalar(f"SELECT count(*) FROM {t}")) for t in ("sessions", "watches")}


@pytest.fixture
def small_store(tmp_path: Path, mini_corpus: Path) -> tuple[Path, str, str]:
    db = tmp_path / "bad.duckdb"
    with Store(db) as st:
        ledger = Ledger(st)
        done = create_session(st, QUESTION, Unit.TOKENS, 20_000, corpus=str(mini_corpus))
        running = create_session(st, QUESTION, Unit.TOKENS, 20_000, corpus=str(mini_corpus))
        ledger.set_status(done.session_id, SessionStatus.DONE)
        ledger.set_status(running.session_id, SessionStatus.RUNNING)
    return db, done.session_id, running.session_id


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["nope", "--every", "daily", "--usd", "0.1"], "no session 'nope'"),
        (["{done}", "--every", "61 * * * *", "--usd", "0.1"], "not daily, weekly or a valid cron"),
        (["{done}", "--every", "fortnightly", "--usd", "0.1"], "not daily, weekly or a valid"),
        (["{done}", "--every", "daily"], "a budget is required"),
        (["{done}", "--usd", "0.1"], "--every is required"),
        (["{running}", "--every", "daily", "--usd", "0.1"], "is running"),
        (["{done}", "--every", "daily", "--usd", "0.1", "--notify", "'"], "does not parse"),
        (["{done}", "--list"], "one of them"),
        (["--remove", "w-nope"], "no watch 'w-nope'"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    small_store: tuple[Path, str, str],
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, done, running = small_store
    before = _snapshot(db)
    args = [a.format(done=done, running=running) for a in argv]
    assert main(["--db", str(db), "watch", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and said in err, err
    assert _snapshot(db) == before
