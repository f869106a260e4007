"""Issue 29, faults a real provider brings, end to end through `mole research` and `mole resume`
in process (the openai provider against the simulated model on 127.0.0.1):

- a provider that disappears mid-session (every answer an HTTP 503 past the retries): exit 75,
  the session `interrupted` with the reason, its unmined work pending; `mole resume` with a
  working provider ends `done` with the findings of an undisturbed run;
- a stage that fails for another reason (the first plan's model answers nothing) leaves the
  session `failed` with the reason and its escrow returned, not `running`;
- a rate-limit storm (every other request refused with 429) ends, at the default width and at
  one call at a time, with the undisturbed run's findings."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from mole_dag import cli
from mole_dag.budget import Ledger
from mole_dag.llm.concurrency import DEFAULT_PARALLEL
from mole_dag.paths import default_store_path
from mole_dag.store import Store
from tests.conftest import write_mini_corpus
from tests.model_server import ModelServer, Received, Reply, SimulatedModel, chat_completion
from tests.once import once_per_run
from tests.sessions import home_env, run_mole
from tests.test_cli_ceiling import QUESTION
from tests.test_cli_ceiling import _research as research_with_openai


def _outage() -> Reply:
    return Reply(503, {"error": {"message": "upstream connect error", "type": "server_error"}})


class GoesAway(SimulatedModel):
    """Answers as the simulated model until `after` mining requests have come in; from then on
    every request, of any skill, is a 503: the provider is gone."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after, self.mined = after, 0
        self.gone = threading.Event()

    def __call__(self, got: Received) -> Reply:
        if got.skill == "mine":
            with self._lock:
                self.mined += 1
                if self.mined > self.after:
                    self.gone.set()
        if self.gone.is_set():
            return _outage()
        return super().__call__(got)


class HalfRefused(SimulatedModel):
    """Every other request is refused with a 429 (retry-after 0): a rate-limit storm."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def __call__(self, got: Received) -> Reply:
        with self._lock:
            self.seen += 1
            refused = self.seen % 2 == 1
        if refused:
            return Reply(
                429,
                {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                {"retry-after": "0"},
            )
        return super().__call__(got)


def _research(server: ModelServer, corpus: Path, sid: str, mp: pytest.MonkeyPatch) -> int:
    return research_with_openai(server, corpus, "0.50", sid, mp)


def _resume(server: ModelServer, sid: str, mp: pytest.MonkeyPatch) -> int:
    mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
    return cli.main(["resume", sid, "--no-report-print"])


def _findings(sid: str, db: Path | None = None) -> str:
    store = Store(db or default_store_path(), read_only=True)
    try:
        md = store.scalar(
            "SELECT markdown FROM reports WHERE session_id = ? ORDER BY created_at DESC LIMIT 1",
            [sid],
        )
    finally:
        store.close()
    assert md, "no report"
    return md[md.index("## Answer") : md.index("## Spend")]


def _session(sid: str) -> tuple[str, str | None, int, bool]:
    store = Store(default_store_path(), read_only=True)
    try:
        row = store.row("SELECT status, stop_reason FROM sessions WHERE id = ?", [sid])
        assert row is not None
        ledger = Ledger(store)
        bal = ledger.balance(sid)
        return row["status"], row["stop_reason"], bal.held, ledger.verify(sid).ok
    finally:
        store.close()


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-outage")


@dataclass(frozen=True)
class Undisturbed:
    corpus: Path
    findings: str


def _undisturbed_run(root: Path) -> dict[str, str]:
    corpus = write_mini_corpus(root)
    home = root / "home"
    with ModelServer(SimulatedModel()) as server:
        env = home_env(home, OPENAI_API_KEY="sk-test-outage", OPENAI_BASE_URL=server.url + "/v1")
        argv = ["research", QUESTION, "--usd", "0.50", "--corpus", str(corpus), "--no-report-print"]
        done = run_mole(env, [*argv, "--provider", "openai", "--session-id", "s-whole"])
    assert done.code == 0, done.err
    return {"corpus": str(corpus), "findings": _findings("s-whole", home / "mole.duckdb")}


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Undisturbed:
    """The session no fault touched, made once per `pytest -n` run (tests/once.py) at the
    default width: what each faulty run must end with. (Issue 34: each test made its own, one
    per width; that the findings do not depend on the width is test_parallel_session's.) The
    tests research the same corpus folder, so nothing but the faults differs."""
    got = once_per_run(
        tmp_path_factory,
        worker_id,
        "provider-outage-undisturbed",
        lambda: _undisturbed_run(tmp_path_factory.mktemp("outage-undisturbed")),
    )
    return Undisturbed(Path(got["corpus"]), got["findings"])


@pytest.mark.slow
def test_provider_gone_mid_session_interrupts_and_resume_finishes(
    dagster_home: Path,
    undisturbed: Undisturbed,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = GoesAway(after=2)
    with ModelServer(model) as server:
        code = _research(server, undisturbed.corpus, "s-gone", monkeypatch)
    err = capsys.readouterr().err
    assert code == cli.EXIT_UNAVAILABLE, err
    assert model.gone.is_set()
    status, reason, held, ok = _session("s-gone")
    assert status == "interrupted" and held == 0 and ok
    assert reason is not None and "unreachable since" in reason and "503" in reason
    lines = [ln for ln in err.splitlines() if ln.startswith("mole:")]
    assert len(lines) == 1 and "mole resume s-gone" in lines[0], err
    assert "mole_dag." not in lines[0], err  # the cause, not our module path
    assert "Traceback" not in err

    with ModelServer(SimulatedModel()) as server:
        assert _resume(server, "s-gone", monkeypatch) == 0, capsys.readouterr().err
    status, reason, held, ok = _session("s-gone")
    assert status == "done" and held == 0 and ok
    assert _findings("s-gone") == undisturbed.findings


def test_a_failed_stage_marks_the_session_failed(
    dagster_home: Path,
    mini_corpus: Path,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An empty answer to the first plan fails the round: the session is `failed` with the
    reason and its escrow returned before the process exits (it stayed `running`)."""

    def empty(got: Received) -> Reply:
        return Reply(200, chat_completion("", prompt_tokens=10, completion_tokens=0))

    with ModelServer(empty) as server:
        code = _research(server, mini_corpus, "s-fail", monkeypatch)
    assert code == cli.EXIT_FAILED
    status, reason, held, ok = _session("s-fail")
    assert status == "failed" and held == 0 and ok
    assert reason and "step" in reason and "mole_dag." not in reason, reason
    store = Store(default_store_path(), read_only=True)
    try:
        assert Ledger(store).balance("s-fail").escrow_released
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [DEFAULT_PARALLEL, 1])
def test_a_rate_limit_storm_ends_with_the_findings(
    dagster_home: Path,
    undisturbed: Undisturbed,
    openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
    parallel: int,
) -> None:
    monkeypatch.setenv("MOLE_PARALLEL", str(parallel))
    model = HalfRefused()
    with ModelServer(model) as server:
        assert _research(server, undisturbed.corpus, "s-storm", monkeypatch) == 0
    assert model.seen > 10
    status, _reason, held, ok = _session("s-storm")
    assert status == "done" and held == 0 and ok
    assert _findings("s-storm") == undisturbed.findings
