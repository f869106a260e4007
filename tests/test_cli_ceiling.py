"""Issue 11, "Budget ceiling", through `mole research` with the openai provider against the
simulated model server: a server that reports twice the output tokens it was allowed, and a
budget too small for the first call."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag import cli
from mole_dag.budget import Ledger, Usage
from mole_dag.core import Unit
from mole_dag.evals.scorecard import scorecard
from mole_dag.llm.concurrency import DEFAULT_PARALLEL
from mole_dag.llm.pricing import PriceTable
from mole_dag.paths import default_store_path
from mole_dag.store import Store
from tests.model_server import ModelServer, Received, Reply, SimulatedModel

QUESTION = "Does green tea affect sleep and stroke risk?"


class OverrunAfter(SimulatedModel):
    """Honest for the first `honest` mining answers, then 2x the allowed output tokens on
    every answer (the factor applies from then on, whatever the skill)."""

    def __init__(self, honest: int) -> None:
        super().__init__()
        self.honest, self.mined = honest, 0
        self.first_overrun: int | None = None  # index in `usages` of the first overrun

    def __call__(self, got: Received) -> Reply:
        if got.skill == "mine":
            self.mined += 1
            if self.mined > self.honest and self.output_factor is None:
                self.output_factor = 2.0
                self.first_overrun = len(self.usages)
        return super().__call__(got)


def real_spend(model: SimulatedModel) -> int:
    """What the provider would bill: every answer's logged usage, priced."""
    table = PriceTable.load()
    return sum(
        table.cost(m, Usage(fresh, out, cached), Unit.USD_MICROS)
        for _skill, m, fresh, out, cached in model.usages
    )


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-ceiling")


def _research(
    server: ModelServer, corpus: Path, usd: str, sid: str, monkeypatch: pytest.MonkeyPatch
) -> int:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    return cli.main(
        [
            "research",
            QUESTION,
            "--usd",
            usd,
            "--corpus",
            str(corpus),
            "--provider",
            "openai",
            "--session-id",
            sid,
            "--no-report-print",
        ]
    )


@pytest.mark.parametrize("parallel", ["1", str(DEFAULT_PARALLEL)])
def test_overrun_stops_dispatch_and_counts_everywhere(
    dagster_home: Path,
    mini_corpus: Path,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    parallel: str,
) -> None:
    monkeypatch.setenv("MOLE_PARALLEL", parallel)
    model = OverrunAfter(honest=2)
    with ModelServer(model) as server:
        code = _research(server, mini_corpus, "0.50", "s-over", monkeypatch)
    out, err = capsys.readouterr()
    assert model.first_overrun is not None
    after = [u[0] for u in model.usages[model.first_overrun + 1 :]]
    if parallel == "1":
        # No call was dispatched after the first overrun was settled (one at a time, so none
        # was in flight either).
        assert after == [], [u[0] for u in model.usages]
    else:
        # Nothing was dispatched once the first overrun was settled: what answered after it
        # were mining calls already in flight, a bounded few (issue 20).
        assert set(after) <= {"mine"} and len(after) < 2 * DEFAULT_PARALLEL, after

    store = Store(default_store_path())
    try:
        ledger = Ledger(store)
        bal = ledger.balance("s-over")
        first_excess = store.scalar(
            "SELECT overrun FROM tool_calls WHERE session_id = 's-over' "
            "AND overrun > 0 ORDER BY completed_at LIMIT 1"
        )
        real = real_spend(model)
        assert real == bal.spent + bal.overrun  # the ledger holds every micro-dollar billed
        assert real <= bal.total + first_excess
        assert bal.status == "exhausted" and bal.held == 0
        v = ledger.verify("s-over")
        assert v.ok and v.charged == real
        # The CLI summary's figure is spent + overrun.
        assert f"spent ${real / 1e6:.6f} of $0.500000" in out
        assert "overrun" in out and "status exhausted" in out
        assert code == (0 if real <= bal.total else cli.EXIT_FAILED), err
        # The report says why the writer did not write.
        md = store.scalar("SELECT markdown FROM reports WHERE session_id = 's-over'")
        assert "The writer could not be afforded" in md
        # spend_by_role_stage and the scorecard carry the overrun too.
        view = store.scalar(
            "SELECT sum(spent) FROM spend_by_role_stage WHERE session_id = 's-over'"
        )
        assert view == real
        over = next(m for m in scorecard(store, "s-over") if m.name == "budget_overshoot_pct")
        assert f"spent ${real / 1e6:.6f}" in over.detail
    finally:
        store.close()
    assert cli.main(["show", "s-over"]) == 0
    shown = capsys.readouterr().out
    assert f"spent ${real / 1e6:.6f}" in shown and "OVERRUN" in shown


def test_overrun_on_the_first_call_dispatches_nothing_more(
    dagster_home: Path,
    mini_corpus: Path,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = SimulatedModel(output_factor=2.0)
    with ModelServer(model) as server:
        _research(server, mini_corpus, "0.50", "s-over1", monkeypatch)
    capsys.readouterr()
    assert [u[0] for u in model.usages] == ["plan"]
    store = Store(default_store_path())
    try:
        bal = Ledger(store).balance("s-over1")
        assert bal.status == "exhausted" and real_spend(model) == bal.charged
    finally:
        store.close()


@pytest.mark.parametrize("usd", ["0.01", "0.015"])  # the planner bound here is $0.0136
def test_budget_too_small_for_the_first_call(
    usd: str,
    dagster_home: Path,
    mini_corpus: Path,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = SimulatedModel()
    with ModelServer(model) as server:
        code = _research(server, mini_corpus, usd, "s-small", monkeypatch)
    out, err = capsys.readouterr()
    assert code == cli.EXIT_USAGE
    lines = [ln for ln in err.splitlines() if ln.startswith("mole")]
    assert len(lines) == 1 and lines[0].startswith(
        "mole: budget too small: the planner needs at least $"
    ), err
    # Progress lines ("  · ...") may precede it; nothing else does.
    rest = [ln for ln in err.splitlines() if not ln.startswith(("  · ", "session ", "round "))]
    assert rest == lines, err
    assert "Traceback" not in err and "Dagster" not in err
    assert model.usages == []
    store = Store(default_store_path())
    try:
        bal = Ledger(store).balance("s-small")
        assert bal.status == "exhausted" and bal.spent == 0 and bal.held == 0
    finally:
        store.close()


def test_after_a_planner_overrun_stderr_counts_the_dead_ends_the_report_counts(
    dagster_home: Path,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Issue 22: the planner overran, so every lead's search was refused (a dead end each); the
    # progress line said "0 dead ends" while the report said how many there were.
    import re

    corpus = Path(__file__).parent / "fixtures" / "model_corpus"
    model = SimulatedModel(output_factor=2.0)
    with ModelServer(model) as server:
        _research(server, corpus, "0.50", "s-over-dead", monkeypatch)
    _out, err = capsys.readouterr()
    store = Store(default_store_path())
    try:
        stored = int(
            store.scalar("SELECT count(*) FROM dead_ends WHERE session_id = 's-over-dead'")
        )
        markdown = store.scalar(
            "SELECT markdown FROM reports WHERE session_id = 's-over-dead' "
            "ORDER BY created_at DESC LIMIT 1"
        )
    finally:
        store.close()
    said = sum(int(n) for n in re.findall(r"(\d+) dead ends?\b", err))
    reported = re.search(r"dead ends: (\d+)", markdown)
    assert stored > 0 and reported is not None, markdown
    assert said == int(reported.group(1)) == stored, err
