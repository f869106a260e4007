"""What each stage does when a model call fails: the reservation is released (or, for a model
that used tokens and answered nothing, settled at its price), the failure is counted, and the
session goes on wherever it sensibly can."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.executor import execute_leads
from mole_dag.llm.concurrency import DEFAULT_PARALLEL
from mole_dag.llm.pricing import UnpricedModel
from mole_dag.llm.provider import EmptyOutput, ProviderUnavailable
from mole_dag.llm.retry import RetryPolicy
from mole_dag.mining.mine import mine_claims
from mole_dag.output.report import write_report
from mole_dag.planner import plan_round
from mole_dag.skills.protocol import Digest
from mole_dag.skillsets import skills_for
from mole_dag.store import Store
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.graph import build_edges
from tests.model_server import (
    ModelServer,
    Received,
    Reply,
    SimulatedModel,
    claude_error,
    claude_message,
)

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0, max_delay_s=0.0)


def _run(
    store: Store,
    server: ModelServer,
    corpus: Path,
    sid: str,
    unit: Unit = Unit.USD_MICROS,
    total: int = 1_000_000,
) -> Run:
    # Pinned to models whose prices these tests compute by hand (not the current defaults).
    skills = skills_for(
        "anthropic",
        {
            "anthropic": {
                "api_key": "k",
                "base_url": server.url,
                "models": {"cheap": "claude-haiku-4-5", "strong": "claude-sonnet-4-5"},
            }
        },
    )
    skills.provider.policy = FAST
    ledger = Ledger(store)
    ledger.create_session(
        "Does green tea affect sleep and stroke risk?",
        unit,
        total,
        session_id=sid,
        provider="anthropic",
        corpus=str(corpus),
    )
    return Run(store, ledger, skills, sid)


class Breaks(SimulatedModel):
    """The simulated model, except that one skill fails the way `reply` says."""

    def __init__(self, skill: str, reply: Reply) -> None:
        super().__init__()
        self.skill, self.reply = skill, reply

    def __call__(self, got: Received) -> Reply:
        return self.reply if got.skill == self.skill else super().__call__(got)


def _calls(store: Store, sid: str, tool: str) -> list[dict]:
    return store.rows(
        "SELECT * FROM tool_calls WHERE session_id = $s AND tool = $t", {"s": sid, "t": tool}
    )


def test_empty_mining_answers_are_paid_for_counted_and_skipped(
    store: Store, mini_corpus: Path
) -> None:
    empty = Reply(
        200,
        claude_message(
            None, content=[], input_tokens=900, output_tokens=1200, stop_reason="max_tokens"
        ),
    )
    with ModelServer(Breaks("mine", empty)) as server:
        run = _run(store, server, mini_corpus, "s-empty")
        plan_round(run)
        execute_leads(run)
        res = mine_claims(run)
    assert res.failed_calls == len(server.by_skill("mine")) > 0
    assert res.claims == 0
    calls = _calls(store, "s-empty", "anthropic:mine")
    assert calls and all(c["status"] == "settled" for c in calls)
    # claude-haiku-4-5: 900 in at $1 + 1200 out at $5 per million tokens.
    assert all(c["actual"] == 900 + 1200 * 5 for c in calls)
    assert all("EmptyOutput" in c["note"] and c["model"] == "claude-haiku-4-5" for c in calls)
    assert run.ledger.verify("s-empty").ok
    assert run.ledger.balance("s-empty").held == 0


def test_empty_output_inside_a_hold_is_settled_not_released(
    store: Store, mini_corpus: Path
) -> None:
    empty = Reply(200, claude_message(None, content=[], input_tokens=10, output_tokens=20))
    with ModelServer(Breaks("plan", empty)) as server:
        run = _run(store, server, mini_corpus, "s-hold", unit=Unit.TOKENS)
        digest = Digest(question="q", round=1)
        with (
            pytest.raises(EmptyOutput),
            run.ledger.hold(
                "s-hold",
                "planner",
                run.skills.estimate_plan(digest, Unit.TOKENS),
                tool="t",
                stage="s",
            ),
        ):
            run.skills.plan(digest, Unit.TOKENS)
    bal = run.ledger.balance("s-hold")
    assert bal.spent == 30 and bal.held == 0


@pytest.mark.parametrize("parallel", [1, DEFAULT_PARALLEL])
def test_judge_outage_stops_the_stage_and_releases(
    store: Store, mini_corpus: Path, parallel: int
) -> None:
    """Issue 29: a provider that stops answering stops the stage (ProviderUnavailable), its
    pairs left unjudged for a resume, rather than a pass that "completes" without them."""
    with ModelServer(Breaks("judge", claude_error(529, "overloaded_error"))) as server:
        run = _run(store, server, mini_corpus, "s-judge")
        run.parallel = parallel
        plan_round(run)
        execute_leads(run)
        mine_claims(run)
        with pytest.raises(ProviderUnavailable, match="unreachable since"):
            build_edges(run)
    assert not store.scalar("SELECT count(*) FROM claim_edges WHERE session_id = 's-judge'")
    judge_calls = _calls(store, "s-judge", "anthropic:judge")
    assert judge_calls and all(c["status"] == "released" for c in judge_calls)
    # The pass stopped dispatching at the first call that ran out of retries: the calls made
    # are those in flight by then, at most the setting.
    assert len(judge_calls) <= parallel
    # Bounded: FAST allows two attempts per batch. Batches sent concurrently are also retried
    # while the outage halves the session's concurrency (8, 4, 2, 1: three more at most, see
    # mole_dag/llm/retry.py): a refusal at a concurrency the session has since lowered is not
    # counted against the call.
    sent = len(server.by_skill("judge"))
    if parallel == 1:
        assert sent == 2 * len(judge_calls)
    else:
        assert 2 * len(judge_calls) <= sent <= (2 + 3) * len(judge_calls)
    assert run.ledger.verify("s-judge").ok


def test_writer_refusal_falls_back_to_the_deterministic_summary(
    store: Store, mini_corpus: Path
) -> None:
    with ModelServer(Breaks("write", claude_error(400, "invalid_request_error", "nope"))) as s:
        run = _run(store, s, mini_corpus, "s-write")
        plan_round(run)
        execute_leads(run)
        mine_claims(run)
        build_edges(run)
        score_session(run)
        rep = write_report(run)
    assert rep.writer == "deterministic"
    assert "writer failed" in rep.markdown and "HTTP 400" in rep.markdown
    assert rep.findings > 0
    assert len(s.by_skill("write")) == 1  # a refusal is not retried


def test_first_plan_failing_fails_loudly_and_releases(store: Store, mini_corpus: Path) -> None:
    with ModelServer(Breaks("plan", claude_error(503, "api_error"))) as server:
        run = _run(store, server, mini_corpus, "s-plan")
        with pytest.raises(ProviderUnavailable, match="after 2 attempts"):
            plan_round(run)
    bal = run.ledger.balance("s-plan")
    assert bal.held == 0 and bal.spent == 0


def test_later_plan_outage_stops_the_round(store: Store, mini_corpus: Path) -> None:
    model = SimulatedModel()

    def respond(got: Received) -> Reply:
        # The first plan is answered; every later planning request meets an outage.
        if got.skill == "plan" and len(server.by_skill("plan")) > 1:
            return claude_error(503, "api_error")
        return model(got)

    with ModelServer(respond) as server:
        run = _run(store, server, mini_corpus, "s-later")
        plan_round(run)
        # The first round finishes (its scores written): the next plan is a new round's.
        score_session(run)
        # Issue 29: not a quiet end of the research (a report "complete" without its second
        # round), but a stop the session can resume from once the provider answers.
        with pytest.raises(ProviderUnavailable):
            plan_round(run)
    assert run.ledger.balance("s-later").held == 0


def test_unpriced_model_in_usd_is_refused_before_any_request(
    store: Store, mini_corpus: Path
) -> None:
    with ModelServer(SimulatedModel()) as server:
        skills = skills_for(
            "anthropic",
            {
                "anthropic": {
                    "api_key": "k",
                    "base_url": server.url,
                    "models": {"cheap": "claude-next-unpriced"},
                }
            },
        )
        with pytest.raises(UnpricedModel):
            skills.check_priced(Unit.USD_MICROS)
        from mole_dag.skills.protocol import MineRequest

        req = MineRequest("q", "s", "chunk text")
        with pytest.raises(UnpricedModel):
            skills.estimate_mine(req, Unit.USD_MICROS)
        with pytest.raises(UnpricedModel):
            skills.mine(req, Unit.USD_MICROS)
        # In tokens, nothing needs a price.
        skills.check_priced(Unit.TOKENS)
        got = skills.mine(req, Unit.TOKENS)
    assert len(server.received) == 1 and got.model == "claude-next-unpriced"
    assert json.loads(server.received[0].body)["model"] == "claude-next-unpriced"


def test_budget_running_out_mid_source_keeps_what_was_paid_for(
    store: Store, mini_corpus: Path
) -> None:
    para = (
        "Green tea drinkers in cohort {n} had a lower risk of stroke than adults who drank "
        "no tea at all, the study of cohort {n} reported. "
    )
    body = "\n\n".join(para.format(n=n) * 14 for n in range(1, 5))  # a chunk per cohort
    (mini_corpus / "long.md").write_text(
        "---\ntitle: long.md\nurl: https://www.long-study.org/tea\npublished: 2020-01-01\n---\n"
        + body
        + "\n",
        "utf-8",
    )
    with ModelServer(SimulatedModel()) as server:
        run = _run(store, server, mini_corpus, "s-budget", unit=Unit.TOKENS, total=10_000_000)
        plan_round(run)
        execute_leads(run)
        real = run.skills.estimate_mine
        # The second chunk of the long source cannot be afforded: everything before it can.
        run.skills.estimate_mine = lambda req, unit: (  # type: ignore[method-assign]
            10**12 if "cohort 3" in req.chunk else real(req, unit)
        )
        res = mine_claims(run)
    assert res.budget_stopped
    long_id = store.scalar("SELECT id FROM sources WHERE url = 'https://www.long-study.org/tea'")
    kept = store.rows("SELECT quote FROM claims WHERE source_id = $s", {"s": long_id})
    assert kept and all("cohort 3" not in c["quote"] for c in kept)
    assert any("cohort 1" in c["quote"] for c in kept)
    dead = store.scalar(
        "SELECT count(*) FROM dead_ends WHERE session_id = 's-budget' "
        "AND cause = 'budget_exhausted'"
    )
    assert dead == 1
    assert run.ledger.verify("s-budget").ok
