"""A research session with a model: the real Anthropic SDK against a simulated Claude on
127.0.0.1, the plain pipeline end to end; recorded to a cassette and replayed with no server;
the quote check as the gate every mined claim passes; the planner never shown page text; and
an estimate that turns out low recorded as an overrun, not hidden."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mole_dag.actors.quote import find_quote
from mole_dag.budget import Ledger, Usage
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.llm.pricing import PriceTable
from mole_dag.output.citations import cited_numbers
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, q
from tests.model_server import ModelServer, Reply, SimulatedModel, claude_message
from tests.report_reader import read, section

QUESTION = "Does green tea affect sleep and stroke risk?"
KEY = "sk-ant-e2e-test-key"


# Pinned to models whose prices these tests compute by hand, so a change of default tiers
# (tests/test_pricing.py checks those are priced) does not move their arithmetic.
PINNED = {"cheap": "claude-haiku-4-5", "strong": "claude-sonnet-4-5"}


def _config(server: ModelServer) -> dict:
    return {"anthropic": {"api_key": KEY, "base_url": server.url, "models": PINNED}}


def _session(
    store: Store, corpus: Path, sid: str, provider: str = "anthropic", usd_micros: int = 50_000
) -> Ledger:
    ledger = Ledger(store)
    ledger.create_session(
        QUESTION, Unit.USD_MICROS, usd_micros, session_id=sid, provider=provider, corpus=str(corpus)
    )
    return ledger


def _source_text(store: Store, source_id: str) -> str:
    return "".join(c["text"] for c in store.named("source_chunks", {"source_id": source_id}))


def _usage_of(body: dict) -> Usage:
    u = body["usage"]
    return Usage(
        u["input_tokens"],
        u["output_tokens"],
        u.get("cache_read_input_tokens") or 0,
        u.get("cache_creation_input_tokens") or 0,
    )


def _priced_sum(pairs: list[tuple[str, Usage]]) -> int:
    table = PriceTable.load()
    return sum(table.cost(model, usage, Unit.USD_MICROS) for model, usage in pairs)


def _report_body(markdown: str) -> str:
    return re.sub(r"generated \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "generated -", markdown)


def test_model_session_end_to_end(store: Store, mini_corpus: Path, tmp_path: Path) -> None:
    with ModelServer(SimulatedModel(throttle_first_mine=True)) as server:
        skills = skills_for("anthropic", _config(server))
        ledger = _session(store, mini_corpus, "s-live")
        run = Run(store, ledger, skills, "s-live")
        rounds, finished = run_session(run)
        report = finished.report

    # The model wrote the answer, its sentences passed the evidence check, and the citations
    # rendered from the findings it named are real sources.
    assert report.writer == "anthropic"
    assert "without a language model" not in report.markdown
    answer = section(report.markdown, "Answer")
    assert cited_numbers(answer)
    assert set(cited_numbers(answer)) <= set(range(1, report.sources_cited + 1))
    assert read(report.markdown).ok

    # Every stored claim's quote is in its source verbatim, at the stored span.
    claims = store.rows("SELECT * FROM claims WHERE session_id = 's-live'")
    assert claims
    for c in claims:
        text = _source_text(store, c["source_id"])
        m = find_quote(text, c["quote"])
        assert m is not None
        assert text.encode()[c["quote_byte_start"] : c["quote_byte_end"]].decode() == c["quote"]
        assert c["created_by"] == "anthropic"
    # The fabricated and too-short quotes the simulated model added never reached the store,
    # and were counted by cause.
    assert not any("never printed" in c["text"] for c in claims)
    discarded = {
        r["cause"]: r["n"] for r in store.named("discarded_by_cause", {"session_id": "s-live"})
    }
    assert discarded["quote_not_found"] >= 1 and discarded["quote_too_short"] >= 1
    assert sum(r.mined.discarded["quote_not_found"] for r in rounds) == discarded["quote_not_found"]

    # Every skill went through the model: plan and write on the strong tier, the rest cheap.
    models = {r.skill: r.json["model"] for r in server.received}
    assert models == {
        "plan": "claude-sonnet-4-5",
        "mine": "claude-haiku-4-5",
        "judge": "claude-haiku-4-5",
        "ground": "claude-haiku-4-5",
        "write": "claude-sonnet-4-5",
    }
    # The first mining call met a 429 and was retried.
    first_mine = next(r for r in server.received if r.skill == "mine")
    assert first_mine.reply is not None and first_mine.reply.status == 429

    # The ledger's spend is exactly the usage the server reported, priced by the table.
    answered = [
        (got.json["model"], _usage_of(got.reply.body))
        for got in server.received
        if got.reply is not None and got.reply.status == 200
    ]
    bal = ledger.balance("s-live")
    assert bal.spent == _priced_sum(answered) > 0
    assert bal.overrun == 0 and bal.held == 0
    assert ledger.verify("s-live").ok
    calls = store.named("settled_model_calls", {"session_id": "s-live"})
    assert len(calls) == len(answered)
    for c in calls:
        assert c["actual"] <= c["reserved"]  # every estimate was an upper bound
    by_model = {r["model"]: r for r in store.named("spend_by_model", {"session_id": "s-live"})}
    assert set(by_model) == {"claude-haiku-4-5", "claude-sonnet-4-5"}
    assert sum(r["cache_read_tokens"] for r in by_model.values()) > 0


def test_planner_never_sees_page_text(store: Store, mini_corpus: Path) -> None:
    canary = "CANARY-7f3a9c-the-planner-must-never-read-this"
    (mini_corpus / "f.md").write_text(
        "---\ntitle: f.md\nurl: https://www.delta-tea.net/canary\npublished: 2020-02-02\n---\n"
        f"Green tea drinkers had a lower risk of stroke, and {canary} was printed here too. "
        "Green tea in the evening raises the risk of poor sleep for some adults.\n",
        "utf-8",
    )
    with ModelServer(SimulatedModel()) as server:
        skills = skills_for("anthropic", _config(server))
        ledger = _session(store, mini_corpus, "s-canary", usd_micros=1_000_000)
        run = Run(store, ledger, skills, "s-canary")
        from mole_dag.driver import run_round
        from mole_dag.planner import plan_round

        run_round(run)
        # A second planning round, after claims, dead ends and edges exist.
        plan_round(run)
    plans = server.by_skill("plan")
    assert len(plans) == 2
    for got in plans:
        assert canary not in got.body.decode()
    # The page was read (so the test can fail): the canary reached a mining call ...
    assert any(canary in got.body.decode() for got in server.by_skill("mine"))
    # ... and the second plan saw counts of what was found, not what the pages said.
    second = plans[1].user
    assert "claims)" in second and "Contradictions found:" in second
    for c in store.rows("SELECT text, quote FROM claims WHERE session_id = 's-canary'"):
        assert c["quote"] not in second and c["text"] not in second


def test_record_then_replay_without_a_server(
    mini_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tape = tmp_path / "session.jsonl"
    live = Store(tmp_path / "live.duckdb")
    try:
        with ModelServer(SimulatedModel(throttle_first_mine=True)) as server:
            monkeypatch.setenv("MOLE_RECORD", str(tape))
            skills = skills_for("anthropic", _config(server))
            ledger = _session(live, mini_corpus, "s-rec")
            recorded = run_session(Run(live, ledger, skills, "s-rec"))[1].report
            monkeypatch.delenv("MOLE_RECORD")
        live_spent = ledger.balance("s-rec").spent
        live_claims = live.rows("SELECT id, text, quote FROM claims ORDER BY id")
    finally:
        live.close()
    lines = tape.read_text("utf-8").splitlines()
    assert json.loads(lines[0])["provider"] == "anthropic"
    assert len(lines) - 1 == len(server.received)  # every exchange, the 429 included
    assert KEY not in tape.read_text("utf-8")  # request headers are never recorded

    # The server is gone. Replay through the same SDK, under the same session id.
    replay = Store(tmp_path / "replay.duckdb")
    try:
        monkeypatch.setenv("MOLE_CASSETTE", str(tape))
        skills = skills_for("cassette", {})
        ledger = _session(replay, mini_corpus, "s-rec", provider="cassette")
        replayed = run_session(Run(replay, ledger, skills, "s-rec"))[1].report
        assert skills.provider.cassette.remaining() == 0
        assert ledger.balance("s-rec").spent == live_spent
        assert replay.rows("SELECT id, text, quote FROM claims ORDER BY id") == live_claims
        body = _report_body(replayed.markdown).replace("provider `cassette`", "provider `x`")
        assert body == _report_body(recorded.markdown).replace(
            "provider `anthropic`", "provider `x`"
        )
    finally:
        replay.close()


def test_stale_cassette_fails_loudly(
    mini_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: Store
) -> None:
    from mole_dag.llm.cassette import CassetteMiss

    tape = tmp_path / "one.jsonl"
    with ModelServer(SimulatedModel()) as server:
        monkeypatch.setenv("MOLE_RECORD", str(tape))
        skills = skills_for("anthropic", _config(server))
        from mole_dag.skills.protocol import Digest

        skills.plan(Digest(question="one question", round=1), Unit.TOKENS)
        monkeypatch.delenv("MOLE_RECORD")
    monkeypatch.setenv("MOLE_CASSETTE", str(tape))
    replay = skills_for("cassette", {})
    with pytest.raises(CassetteMiss, match="record it again"):
        replay.plan(Digest(question="another question", round=1), Unit.TOKENS)
    # Not a model failure a stage would shrug off: a stale recording fails the run.
    from mole_dag.llm.provider import ModelCallFailed

    assert not issubclass(CassetteMiss, ModelCallFailed)
    assert len(replay.provider.cassette.path.read_text().splitlines()) == 2


def test_estimate_too_low_is_recorded_as_overrun(
    store: Store, mini_corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that reports far more tokens than the bound allows: the call is settled at what
    it really cost, the excess is recorded as overrun and the session is flagged, loudly."""
    huge = claude_message(json.dumps({"claims": []}), input_tokens=5_000_000, output_tokens=10)
    plan = json.dumps(
        {"sub_questions": [{"text": "Green tea and stroke?", "query": "green tea stroke"}]}
    )

    def respond(got):  # type: ignore[no-untyped-def]
        if got.skill == "plan":
            return Reply(200, claude_message(plan, input_tokens=100, output_tokens=20))
        return Reply(200, huge)

    from mole_dag.executor import execute_leads
    from mole_dag.mining.mine import mine_claims
    from mole_dag.planner import plan_round

    with ModelServer(respond) as server:
        skills = skills_for("anthropic", _config(server))
        ledger = _session(store, mini_corpus, "s-over", usd_micros=200_000)
        run = Run(store, ledger, skills, "s-over")
        plan_round(run)
        execute_leads(run)
        caplog.set_level("ERROR", logger="mole.budget")
        mine_claims(run)
    bal = ledger.balance("s-over")
    # claude-haiku-4-5 at $1 per million input tokens: 5M tokens is $5, far past the budget.
    call = store.named("settled_model_calls", {"session_id": "s-over"})[-1]
    assert call["actual"] == 5_000_000 + 10 * 5
    assert call["overrun"] == call["actual"] - call["reserved"] > 0
    assert bal.overrun >= call["overrun"]
    assert bal.spent + bal.held + bal.escrow <= bal.total  # the ceiling still holds for spent
    check = ledger.verify("s-over")
    assert check.ok, check.explain()  # recorded truthfully: tool_calls and sessions agree
    assert "was not an upper bound" in caplog.text
    assert (
        store.scalar(
            q("session_get").replace("SELECT *", "SELECT overrun"), {"session_id": "s-over"}
        )
        == bal.overrun
    )
