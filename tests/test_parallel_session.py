"""Issue 20, a session's model calls made concurrently, end to end: the real Anthropic SDK
against the simulated Claude on 127.0.0.1 (tests/model_server.py), the plain pipeline.

- a stage's calls overlap, never more than the setting at once, and the stage line says so;
- the stored results and the report do not depend on the order calls complete in: two runs
  whose calls answer after random delays (different seeds), and a one-at-a-time run, store the
  same claims, edges and verdicts and write the same report;
- a server that refuses more than 3 concurrent requests (429 with and without retry-after,
  529): the session finishes, no call is lost or charged twice, the ledger verifies, the
  report equals the unthrottled one, and the throttling is recorded for `mole show`."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mole_dag import cli
from mole_dag.budget import Ledger, Usage
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.llm.pricing import PriceTable
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, q
from tests.conftest import write_mini_corpus
from tests.determinism_run import snapshot
from tests.model_server import ModelServer, Received, Reply, SimulatedModel

QUESTION = "Does green tea affect sleep and stroke risk?"
PINNED = {"cheap": "claude-haiku-4-5", "strong": "claude-sonnet-4-5"}
SID = "s-par"


def _report_body(markdown: str) -> str:
    return re.sub(r"generated \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "generated -", markdown)


def _session(
    store_path: Path, corpus: Path, server: ModelServer, progress: list[str] | None = None
) -> tuple[Store, str, dict[str, Any]]:
    """One session over `corpus` against `server`, under the one session id (ids hash it, so
    two stores can be compared row for row); returns the store, the report and the snapshot."""
    store = Store(store_path)
    ledger = Ledger(store)
    ledger.create_session(
        QUESTION, Unit.USD_MICROS, 200_000, session_id=SID, provider="anthropic", corpus=str(corpus)
    )
    skills = skills_for(
        "anthropic", {"anthropic": {"api_key": "k", "base_url": server.url, "models": PINNED}}
    )
    run = Run(store, ledger, skills, SID)
    if progress is not None:
        run.progress = progress.append
    _rounds, finished = run_session(run)
    assert finished is not None
    return store, _report_body(finished.report.markdown), snapshot(store, SID)


class Rendezvous(SimulatedModel):
    """Holds a mining or judging answer until a second request is on the wire (or a few
    seconds have passed): whether calls overlap is then a property of the client, not of how
    fast this machine happens to be."""

    def __init__(self) -> None:
        super().__init__()
        self.server: ModelServer | None = None

    def __call__(self, got: Received) -> Reply:
        if got.skill in ("mine", "judge") and self.server is not None:
            deadline = time.monotonic() + 3.0
            while self.server.in_flight < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        return super().__call__(got)


def test_a_stages_calls_overlap_within_the_setting(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOLE_PARALLEL", "3")
    model = Rendezvous()
    lines: list[str] = []
    with ModelServer(model) as server:
        model.server = server
        store, _report, _snap = _session(tmp_path / "a.duckdb", mini_corpus, server, lines)
        store.close()
    assert 2 <= server.max_in_flight <= 3
    # Each mining pass's line: calls made, how many at most in flight, the setting.
    passes = [
        re.fullmatch(
            r"mining: (\d+) calls in [\d.]+s, at most ([123]) in flight \(parallel 3\)", ln
        )
        for ln in lines
    ]
    made = [int(m.group(1)) for m in passes if m]
    assert sum(made) == len(server.by_skill("mine")) > 0, lines
    assert any(m.group(2) != "1" for m in passes if m)

    # One at a time restores the sequential order: never two requests on the wire.
    monkeypatch.setenv("MOLE_PARALLEL", "1")
    with ModelServer(SimulatedModel()) as server:
        store, _report, _snap = _session(tmp_path / "b.duckdb", mini_corpus, server)
        store.close()
    assert server.max_in_flight == 1


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The unthrottled session, one call at a time, on a corpus of this module's own."""
    root = tmp_path_factory.mktemp("par-ref")
    corpus = write_mini_corpus(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MOLE_PARALLEL", "1")
        mp.setenv("MOLE_HOME", str(root / "home"))
        mp.setenv("MOLE_CONFIG", str(root / "home" / "config.json"))
        with ModelServer(SimulatedModel()) as server:
            store, report, snap = _session(root / "ref.duckdb", corpus, server)
            store.close()
    return {"corpus": corpus, "report": report, "snapshot": snap}


@pytest.mark.parametrize("seed", [1, 2])
def test_same_report_whatever_order_the_calls_complete_in(
    tmp_path: Path, reference: dict[str, Any], monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setenv("MOLE_PARALLEL", "8")
    model = SimulatedModel(delay_s=(0.0, 0.4), seed=seed)
    with ModelServer(model) as server:
        store, report, snap = _session(tmp_path / "r.duckdb", reference["corpus"], server)
        store.close()
    # The calls did run concurrently and complete out of order (else this proves nothing).
    assert server.max_in_flight > 1
    assert [id(r) for r in server.completed] != [id(r) for r in server.received]
    for part, want in reference["snapshot"].items():
        assert snap[part] == want, part
    assert report == reference["report"]


def _priced(received: list[Received]) -> int:
    table = PriceTable.load()
    total = 0
    for got in received:
        assert got.reply is not None
        if got.reply.status != 200:
            continue
        u = got.reply.body["usage"]
        usage = Usage(
            u["input_tokens"],
            u["output_tokens"],
            u.get("cache_read_input_tokens") or 0,
            u.get("cache_creation_input_tokens") or 0,
        )
        total += table.cost(got.json["model"], usage, Unit.USD_MICROS)
    return total


class Crowded(SimulatedModel):
    """Refuses what arrives beyond 3 at once; until it first has to, it holds the calls it
    accepts (a few seconds at most), so a client that sends more than 3 at once meets a refusal
    however slowly this machine dispatches them."""

    server: ModelServer | None = None

    def __call__(self, got: Received) -> Reply:
        if self.server is not None and got.in_flight <= 3 and got.skill in ("mine", "judge"):
            deadline = time.monotonic() + 3.0
            while not self.refused and time.monotonic() < deadline:
                time.sleep(0.01)
        return super().__call__(got)


@pytest.mark.parametrize(
    ("status", "retry_after"), [(429, None), (429, "0"), (529, None)], ids=["429", "429-ra", "529"]
)
def test_a_server_that_refuses_above_three_concurrent_requests(
    tmp_path: Path,
    reference: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    status: int,
    retry_after: str | None,
) -> None:
    monkeypatch.setenv("MOLE_PARALLEL", "8")
    model = Crowded(
        delay_s=0.2, refuse_above=3, refuse_status=status, refuse_retry_after=retry_after
    )
    db = tmp_path / "t.duckdb"
    lines: list[str] = []
    with ModelServer(model) as server:
        model.server = server
        store, report, snap = _session(db, reference["corpus"], server, lines)
    try:
        assert model.refused > 0, "the server never had to refuse: nothing was tested"
        ledger = Ledger(store)
        check = ledger.verify(SID)
        assert check.ok, check.explain()
        bal = ledger.balance(SID)
        assert bal.held == 0 and bal.overrun == 0
        # No call lost or charged twice: one settled row per answered request, the spend
        # exactly the priced usage of the answers, none of the refusals.
        calls = store.named("settled_model_calls", {"session_id": SID})
        answered = [r for r in server.received if r.reply is not None and r.reply.status == 200]
        assert len(calls) == len(answered)
        assert bal.spent == _priced(server.received)
        released = store.scalar(
            "SELECT count(*) FROM tool_calls WHERE session_id = ? AND status = 'released'", [SID]
        )
        assert released == 0  # no call given up
        throttled = store.row(q("session_throttling"), {"session_id": SID})
        assert throttled is not None
        key = "rate_limited" if status == 429 else "overloaded"
        assert int(throttled[key]) == model.refused
        assert 1 <= int(throttled["lowest"]) < 8
        # The stage line said so while it ran.
        said = [ln for ln in lines if "throttled by the provider" in ln]
        assert said and all(f"x HTTP {status}" in ln for ln in said), lines
        assert sum(int(n) for ln in said for n in re.findall(r"(\d+) x HTTP", ln)) == (
            model.refused
        )
    finally:
        store.close()
    for part, want in reference["snapshot"].items():
        assert snap[part] == want, part
    assert report == reference["report"]

    monkeypatch.setenv("MOLE_DB", str(db))
    assert cli.main(["show", SID]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("throttled "))
    assert f"{model.refused} x HTTP {status}" in line and "concurrency lowered to" in line


def test_interrupt_with_calls_in_flight_charges_them_as_assumed(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt (Ctrl-C, SIGTERM, Dagster's) while calls are in flight: nothing more is
    sent, each call in flight is charged its reservation at once (its outcome is unknown), and
    the books still agree."""
    from mole_dag.executor import execute_leads
    from mole_dag.mining.mine import mine_claims
    from mole_dag.planner import plan_round

    monkeypatch.setenv("MOLE_PARALLEL", "4")
    release = threading.Event()

    class Slow(SimulatedModel):
        def __call__(self, got: Received) -> Reply:
            if got.skill == "mine":
                release.wait(10)
            return super().__call__(got)

    store = Store(tmp_path / "i.duckdb")
    with ModelServer(Slow()) as server:
        ledger = Ledger(store)
        ledger.create_session(
            QUESTION,
            Unit.USD_MICROS,
            200_000,
            session_id=SID,
            provider="anthropic",
            corpus=str(mini_corpus),
        )
        skills = skills_for(
            "anthropic", {"anthropic": {"api_key": "k", "base_url": server.url, "models": PINNED}}
        )
        run = Run(store, ledger, skills, SID)
        plan_round(run)
        execute_leads(run)

        def interrupt(message: str) -> None:
            # The stage line comes from the calling thread while calls are in flight.
            if message.startswith("mining:") and "in flight" in message:
                raise KeyboardInterrupt

        run.progress = interrupt
        with pytest.raises(KeyboardInterrupt):
            mine_claims(run)
        assumed = store.rows(
            "SELECT stage, reserved, actual, note FROM tool_calls WHERE session_id = ? AND assumed",
            [SID],
        )
        assert 1 <= len(assumed) <= 4
        assert all(r["actual"] == r["reserved"] for r in assumed)
        assert all("interrupted: KeyboardInterrupt" in r["note"] for r in assumed)
        assert ledger.balance(SID).held == 0 and ledger.verify(SID).ok
        sent = len(server.by_skill("mine"))
        release.set()
        # The calls in flight still get their answers: each replaces the assumption with what
        # it really used (Ledger.settle), and the books agree again.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.scalar(
            "SELECT count(*) FROM tool_calls WHERE session_id = ? AND assumed", [SID]
        ):
            time.sleep(0.1)
        assert not store.scalar(
            "SELECT count(*) FROM tool_calls WHERE session_id = ? AND assumed", [SID]
        )
        assert ledger.balance(SID).held == 0 and ledger.verify(SID).ok
    store.close()
    assert sent <= 4  # nothing sent after the interrupt


def test_a_cassette_replays_whatever_order_its_calls_were_recorded_in(
    tmp_path: Path, reference: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay matches a request by its bytes, not its position: a session recorded with calls
    completing out of order replays one at a time, and concurrently, to the same report."""
    tape = tmp_path / "par.jsonl"
    monkeypatch.setenv("MOLE_PARALLEL", "8")
    monkeypatch.setenv("MOLE_RECORD", str(tape))
    with ModelServer(SimulatedModel(delay_s=(0.0, 0.3), seed=7, refuse_above=3)) as server:
        store, recorded, _snap = _session(tmp_path / "rec.duckdb", reference["corpus"], server)
        store.close()
    monkeypatch.delenv("MOLE_RECORD")
    assert server.max_in_flight > 1
    assert len(tape.read_text("utf-8").splitlines()) - 1 == len(server.received)
    monkeypatch.setenv("MOLE_CASSETTE", str(tape))
    for parallel in ("1", "8"):
        monkeypatch.setenv("MOLE_PARALLEL", parallel)
        store = Store(tmp_path / f"replay-{parallel}.duckdb")
        ledger = Ledger(store)
        ledger.create_session(
            QUESTION,
            Unit.USD_MICROS,
            200_000,
            session_id=SID,
            provider="cassette",
            corpus=str(reference["corpus"]),
        )
        skills = skills_for("cassette", {})
        _rounds, finished = run_session(Run(store, ledger, skills, SID))
        store.close()
        assert finished is not None
        assert skills.provider.cassette.remaining() == 0  # type: ignore[attr-defined]
        replayed = _report_body(finished.report.markdown).replace("`cassette`", "`anthropic`")
        assert replayed == recorded == reference["report"]
