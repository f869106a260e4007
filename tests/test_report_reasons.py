"""Issue 29, item 8: a thin report says what went wrong, from the store. A provider that reported
more tokens than a call was allowed (an overrun, which stops dispatching), a model whose replies
could not be read, a provider that stopped answering: each is named in the report's reason line
(or, over findings, its banner), never hidden behind "budget exhausted", "the planner proposed
nothing" or a grounding count of re-reads that never happened. In process, against the model
stand-in on 127.0.0.1 (tests/model_server.py)."""

from __future__ import annotations

import re
from pathlib import Path

from mole_dag.context import Run
from mole_dag.executor import execute_leads
from mole_dag.mining.mine import mine_claims
from mole_dag.output.finish import finish_session
from mole_dag.output.report import ReportResult
from mole_dag.planner import plan_round
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
from tests.test_model_failures import _run as failures_run


def _run(store: Store, server: ModelServer, corpus: Path, sid: str) -> Run:
    run = failures_run(store, server, corpus, sid)
    run.progress, run.parallel = (lambda m: None), 1
    return run


def _research(run: Run, lines: list[str] | None = None) -> ReportResult:
    """One round and the report, as the driver runs them."""
    if lines is not None:
        run.progress = lines.append
    plan_round(run)
    execute_leads(run)
    mine_claims(run)
    build_edges(run)
    score_session(run)
    return finish_session(run).report


class Breaks(SimulatedModel):
    """The simulated model, except that the named skills answer `reply`."""

    def __init__(self, reply: Reply, *skills: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.skills, self.reply = set(skills), reply

    def __call__(self, got: Received) -> Reply:
        return self.reply if got.skill in self.skills else super().__call__(got)


PROSE = Reply(200, claude_message("I would look into green tea and sleep, then stroke."))


def test_an_overrun_is_named_in_the_reason_line(store: Store, mini_corpus: Path) -> None:
    # A server ignoring max_tokens: the first call (the plan) overruns, every lead is refused.
    with ModelServer(SimulatedModel(output_factor=2.0)) as server:
        run = _run(store, server, mini_corpus, "s-over")
        rep = _research(run)
    assert rep.findings == 0
    answer = rep.markdown.split("## Answer", 1)[1].split("##", 1)[0]
    assert "the provider reported more tokens than a call was allowed (overrun of $" in answer
    assert "so dispatching stopped" in answer
    # Not "budget exhausted" alone, as if the budget had run out at 2 % spent.
    assert answer.index("overrun") < answer.index("dead end")


def test_unreadable_planner_replies_are_recorded_and_named(store: Store, mini_corpus: Path) -> None:
    with ModelServer(Breaks(PROSE, "plan")) as server:
        run = _run(store, server, mini_corpus, "s-prose-plan")
        rep = _research(run)
    rows = store.rows("SELECT * FROM unreadable_replies WHERE session_id = 's-prose-plan'")
    assert [r["skill"] for r in rows] == ["plan"]
    assert "the model's replies could not be read (1 of 1 planner replies unparseable)" in (
        rep.markdown
    )
    assert "the planner proposed nothing" not in rep.markdown.split("the model's replies")[0]


def test_unreadable_mining_replies_are_counted_with_the_plan(
    store: Store, mini_corpus: Path
) -> None:
    with ModelServer(Breaks(PROSE, "mine")) as server:
        run = _run(store, server, mini_corpus, "s-prose-mine")
        rep = _research(run)
        mined = len(server.by_skill("mine"))
    assert mined > 0 and rep.findings == 0
    got = re.search(
        r"the model's replies could not be read \((\d+) of (\d+) mining replies unparseable\)",
        rep.markdown,
    )
    assert got is not None, rep.markdown
    assert int(got.group(1)) == int(got.group(2)) == mined


def test_failed_mining_calls_are_named_in_the_reason_line(store: Store, mini_corpus: Path) -> None:
    """A call refused for good (HTTP 400, not retried) is work the session goes on without:
    the report says so. (A provider that stops answering interrupts the session instead:
    tests/test_provider_outage.py.)"""
    refused = claude_error(400, "invalid_request_error", "prompt is too long")
    with ModelServer(Breaks(refused, "mine")) as server:
        run = _run(store, server, mini_corpus, "s-down")
        rep = _research(run)
    calls = store.scalar(
        "SELECT count(*) FROM tool_calls WHERE session_id = 's-down' AND tool = 'anthropic:mine'"
    )
    assert calls > 0 and rep.findings == 0
    assert f"{calls} model calls failed, their work skipped (last: " in rep.markdown
    assert "prompt is too long" in rep.markdown


def test_failed_grounding_calls_are_not_counted_as_re_reads(
    store: Store, mini_corpus: Path
) -> None:
    refused = claude_error(400, "invalid_request_error", "prompt is too long")
    lines: list[str] = []
    with ModelServer(Breaks(refused, "ground")) as server:
        run = _run(store, server, mini_corpus, "s-ground-down")
        rep = _research(run, lines)
        failed = len(
            store.rows(
                "SELECT id FROM tool_calls WHERE session_id = 's-ground-down' "
                "AND tool = 'anthropic:ground'"
            )
        )
    assert failed > 0 and rep.findings > 0
    grounding = [ln for ln in lines if ln.startswith("grounding")]
    assert grounding, lines
    # No "5 claims re-read from 5 sources: 0 confirmed, ..." when no re-read was judged.
    assert not any("0 confirmed, 0 unsupported" in ln for ln in grounding), grounding
    assert any(f"{failed} could not be checked: the model call failed" in ln for ln in grounding)
    # A report with failed calls behind it says so: it is not presented as complete.
    assert f"This report is incomplete: {failed} model call" in rep.markdown
