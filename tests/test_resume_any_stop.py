"""Issue 22, "resume from any stop": a `mole research` process stopped (SIGKILL or SIGTERM)
with a paid call in flight in each stage (planning, mining, adjudication, grounding), then
`mole resume`, ends `done` with the same findings as an uninterrupted run of the same session,
and no call the simulated provider answered goes uncharged.

The stop lands in the stage deterministically: the simulated model holds the chosen request
(tests/model_server.py HeldModel) until the process has been signalled, so no test guesses how
long a stage takes. The stopped process is a real `mole` command in its own data folder and
Dagster instance, stopped by a real signal; what runs to completion, the uninterrupted run (once
per test process) and the `mole resume` after the stop, runs in this process through
`mole_dag.cli.main` with the same environment (issue 34: a `mole` process costs its interpreter
and Dagster's import on top of the session, and nothing about a run that is not stopped depends
on which process it runs in)."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mole_dag.budget import Ledger
from mole_dag.llm.concurrency import DEFAULT_PARALLEL
from mole_dag.llm.openai_compat import DEFAULT_TIMEOUT_S as OPENAI_TIMEOUT_S
from mole_dag.store import Store
from tests.model_server import HeldModel, ModelServer, SimulatedModel
from tests.once import once_per_run
from tests.sessions import home_env, run_mole
from tests.test_cli_ceiling import QUESTION, real_spend

MOLE = str(Path(sys.executable).parent / "mole")
CORPUS = Path(__file__).parent / "fixtures" / "model_corpus"
SID = "s-stop"
# Generous: a session takes about half a minute on a loaded two-core machine.
WAIT_S = 600
# How long a stopped process may take to exit. Generous, and below the HTTP client's timeout
# on purpose: a process that waited for the held call (it is answered only after the process
# ended) would sit until that timeout, then retry it, and must fail here rather than pass slowly.
STOPPED_EXIT_S = 200
assert STOPPED_EXIT_S < OPENAI_TIMEOUT_S

# stage -> (the skill whose request is held, which one of them, the call's ledger stage, where
# `mole resume` says it picks up)
STAGES = {
    "planning": ("plan", 1, "sub_questions", "round"),
    "mining": ("mine", 2, "mined_claims", "round"),
    "adjudication": ("judge", 1, "claim_edges", "round"),
    "grounding": ("ground", 1, "grounding", "report"),
    # The second round's plan: the round counter has moved, the first round is finished.
    "planning-round-2": ("plan", 2, "sub_questions", "round"),
}
# (stage, signal, parallel setting): every stage at the default setting, where several calls
# of a stage may be in flight when the signal lands; and mining one call at a time, where the
# stopped call is the only one in flight.
CASES = [
    (stage, sig, DEFAULT_PARALLEL)
    for stage in STAGES
    for sig in ("SIGKILL", "SIGTERM")
    if stage != "planning-round-2" or sig == "SIGKILL"
] + [("mining", sig, 1) for sig in ("SIGKILL", "SIGTERM")]


def _case_id(stage: str, sig: str, parallel: int) -> str:
    return f"{stage}-{sig}" + ("" if parallel == DEFAULT_PARALLEL else f"-parallel-{parallel}")


def _env(home: Path, base_url: str) -> dict[str, str]:
    """A process environment of its own: data folder, Dagster instance, config, provider."""
    return home_env(home, OPENAI_API_KEY="sk-test-any-stop", OPENAI_BASE_URL=f"{base_url}/v1")


RESEARCH = [
    "research",
    QUESTION,
    "--usd",
    "0.50",
    "--corpus",
    str(CORPUS),
    "--provider",
    "openai",
    "--session-id",
    SID,
    "--no-report-print",
]


def _research(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MOLE, *RESEARCH],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_held(model: HeldModel, proc: subprocess.Popen[str], what: str) -> None:
    """Until the held request arrives; a process that ends first (it failed) fails the test
    with its stderr at once, instead of after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not model.arrived.wait(1.0):
        if proc.poll() is not None:
            _out, err = proc.communicate()
            pytest.fail(f"`mole research` exited {proc.returncode} before {what}: {err}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} arrived in {WAIT_S}s")


def _in_process(env: dict[str, str], argv: list[str]) -> tuple[int, str, str]:
    """`mole <argv>` run to its end in this process: its exit code, stdout and stderr."""
    done = run_mole(env, argv)
    return done.code, done.out, done.err


def _findings(home: Path) -> str:
    """The report from its answer to its sources: what the session found, cited. (The header
    carries the time it was written and the Spend section what it cost; neither is a finding.)"""
    store = Store(home / "mole.duckdb", read_only=True)
    try:
        md = store.scalar(
            "SELECT markdown FROM reports WHERE session_id = ? ORDER BY created_at DESC LIMIT 1",
            [SID],
        )
    finally:
        store.close()
    assert md, "no report"
    body = md[md.index("## Answer") : md.index("## Spend")]
    assert "## Sources" in body
    return body


@dataclass(frozen=True)
class Baseline:
    findings: str
    skills: Counter[str]
    claims: int


def _uninterrupted(home: Path) -> dict[str, Any]:
    with ModelServer(SimulatedModel()) as server:
        code, _out, err = _in_process(_env(home, server.url), RESEARCH)
        assert code == 0, err
    skills = Counter(r.skill for r in server.received)
    # Each stage under test makes its calls in an uninterrupted run (two rounds, so two plans).
    assert skills["plan"] == 2 and skills["judge"] and skills["ground"] and skills["mine"] > 2
    store = Store(home / "mole.duckdb", read_only=True)
    try:
        claims = int(store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [SID]))
    finally:
        store.close()
    return {"findings": _findings(home), "skills": dict(skills), "claims": claims}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Baseline:
    """The uninterrupted run, made once per `pytest -n` run (tests/once.py)."""
    got = once_per_run(
        tmp_path_factory,
        worker_id,
        "resume-any-stop-uninterrupted",
        lambda: _uninterrupted(tmp_path_factory.mktemp("uninterrupted")),
    )
    return Baseline(got["findings"], Counter(got["skills"]), got["claims"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stage", "sig", "parallel"), CASES, ids=[_case_id(*case) for case in CASES]
)
def test_stop_in_any_stage_then_resume_ends_as_if_never_stopped(
    stage: str, sig: str, parallel: int, uninterrupted: Baseline, tmp_path: Path
) -> None:
    skill, nth, ledger_stage, picks_up = STAGES[stage]
    home = tmp_path / "home"
    model = HeldModel(skill, nth)
    with ModelServer(model) as server:
        env = _env(home, server.url)
        env["MOLE_PARALLEL"] = str(parallel)
        proc = _research(env)
        try:
            _wait_for_held(model, proc, f"{skill} request #{nth}")
            # Requests of the stopped skill answered before the signal: never made again
            # (issue 29: a resume after SIGTERM made every mining call again).
            answered_before = sum(1 for r in server.by_skill(skill) if r.reply is not None)
            proc.send_signal(getattr(signal, sig))
            _out, err = proc.communicate(timeout=STOPPED_EXIT_S)
            # What the stopped process sent of the stopped skill, the held request included.
            sent_before = len(server.by_skill(skill))
        finally:
            # The held request is answered only now, after its client stopped: the provider
            # bills it all the same (HeldModel logs its usage).
            model.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if sig == "SIGKILL":
            assert proc.returncode == -signal.SIGKILL
        else:
            # README: SIGTERM exits 143 and names itself, with the command that continues.
            assert proc.returncode == 143, err
            tail = [
                ln for ln in err.splitlines() if not ln.startswith(("  · ", "round ", "report"))
            ]
            # The command as it was invoked, to paste back (issue 33).
            again = shlex.join([MOLE, "resume", SID])
            assert tail[-1] == f"mole: interrupted by SIGTERM; continue with `{again}`"
            assert "Traceback" not in err
        code, _out, resumed = _in_process(env, ["resume", SID, "--no-report-print"])
    assert code == 0, resumed
    assert f"resuming session {SID}" in resumed, resumed
    next_step = re.search(r"; next: (\w+)", resumed)
    assert next_step is not None and next_step.group(1) == picks_up, resumed

    store = Store(home / "mole.duckdb", read_only=True)
    try:
        ledger = Ledger(store)
        check = ledger.verify(SID)
        assert check.ok, check.explain()
        bal = ledger.balance(SID)
        assert bal.status == "done" and bal.held == 0
        # No call the provider answered went uncharged: one ledger row per request it got, of
        # each skill (the tool is "openai:<skill>"), and at least what it billed charged (a
        # call whose answer was lost at its whole reservation). A reservation made as the stop
        # landed and returned unsent (fan-out: "not sent: the pass was ...") is no request.
        tools = store.rows(
            "SELECT tool FROM tool_calls WHERE session_id = ? AND tool LIKE 'openai:%' "
            "AND NOT (status = 'released' AND coalesce(note, '') LIKE 'not sent:%')",
            [SID],
        )
        rows_by_skill = Counter(r["tool"].removeprefix("openai:") for r in tools)
        got = Counter(r.skill for r in server.received)
        # A SIGKILL can land between a reservation's commit and its request leaving: nothing
        # runs after it to say "not sent", so recovery charges that row at its reservation
        # (assumed) like one in flight. Only such rows may outnumber the requests received,
        # and only of the stopped skill (seen with --parallel 8 on a loaded machine).
        n_assumed = int(
            store.scalar("SELECT count(*) FROM tool_calls WHERE session_id = ? AND assumed", [SID])
        )
        unsent = rows_by_skill[skill] - got[skill] if sig == "SIGKILL" else 0
        assert 0 <= unsent <= n_assumed, (rows_by_skill, got)
        rows_by_skill[skill] -= unsent
        assert rows_by_skill == got
        assert bal.charged >= real_spend(model)
        # The calls in flight at the stop whose answers never reached the ledger are charged
        # their reservations (`assumed`): the held call at least, all in the stopped stage, at
        # most as many as the parallel setting lets be in flight (exactly one, one at a time).
        assumed = [
            r["stage"]
            for r in store.rows(
                "SELECT stage FROM tool_calls WHERE session_id = ? AND assumed", [SID]
            )
        ]
        assert assumed and set(assumed) == {ledger_stage}, assumed
        assert len(assumed) <= parallel
        # Done: why it stopped earlier is no longer the session's story (`mole show`).
        assert store.scalar("SELECT stop_reason FROM sessions WHERE id = ?", [SID]) is None
        claims = int(store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [SID]))
        # No claim mined twice, by its quote's place or its text, whatever was mined before
        # the stop (tests/test_cli_resume.py's SIGKILL-mid-mining test, merged here).
        for key in ("source_id, quote_byte_start, quote_byte_end", "source_id, text"):
            dup = store.scalar(
                f"SELECT count(*) FROM (SELECT {key} FROM claims WHERE session_id = ? "
                "GROUP BY ALL HAVING count(*) > 1)",
                [SID],
            )
            assert dup == 0, key
    finally:
        store.close()
    assert claims > 0
    code, shown, _err = _in_process(env, ["show", SID])
    assert code == 0 and "status    done" in shown and "stopped " not in shown, shown
    assert claims == uninterrupted.claims
    assert _findings(home) == uninterrupted.findings
    # Nothing was done twice but the stopped stage's calls whose answers were lost: the same
    # requests of every other skill as the uninterrupted run; of the stopped skill, one more
    # for each of those calls, which includes every assumed one (its answer never arrived),
    # and none the stopped process did not send. One at a time, that is the held call alone.
    extra = got[skill] - uninterrupted.skills[skill]
    assert got - Counter({skill: got[skill]}) == uninterrupted.skills - Counter(
        {skill: uninterrupted.skills[skill]}
    )
    assert len(assumed) - unsent <= extra <= sent_before
    if sig == "SIGTERM":
        # Answers that reached the process before it stopped (given EXIT_GRACE_S after
        # SIGTERM) are kept with their settlement and not asked for again. After SIGKILL an
        # answer the server had sent may not have been read yet: that call was in flight.
        assert extra <= sent_before - answered_before
    if parallel == 1:
        assert extra == 1


# -- the round marks, in process, on both backends --------------------------------------------


@pytest.mark.both_backends
def test_a_round_stopped_part_way_is_finished_not_planned_again(
    store: Store, mini_corpus: Path
) -> None:
    from mole_dag.context import Run
    from mole_dag.core import Unit
    from mole_dag.driver import next_step, resume_point
    from mole_dag.executor import execute_leads
    from mole_dag.mining.mine import mine_claims
    from mole_dag.planner import plan_round
    from mole_dag.planner.plan import round_state
    from mole_dag.session import create_session
    from mole_dag.skillsets.extractive import ExtractiveSkills
    from mole_dag.store import q, utcnow
    from mole_dag.store.records import RoundStateRow
    from mole_dag.verifier.confidence import score_session
    from mole_dag.verifier.graph import build_edges

    bal = create_session(store, QUESTION, Unit.TOKENS, 100_000, corpus=str(mini_corpus))
    sid = bal.session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)

    def plans() -> int:
        return int(
            store.scalar(
                "SELECT count(*) FROM tool_calls WHERE session_id = $s AND stage = 'sub_questions'",
                {"s": sid},
            )
        )

    assert round_state(run) == RoundStateRow(0, False, False)
    assert resume_point(run) == next_step(run) == "round"
    first = plan_round(run)
    assert first.round == 1 and first.sub_questions_added > 0
    assert round_state(run) == RoundStateRow(1, True, False)
    # Stopped after its plan was written: the round is finished, never planned again.
    assert resume_point(run) == next_step(run) == "round"
    again = plan_round(run)
    assert (again.round, again.sub_questions_added, again.leads_added) == (1, 0, 0)
    assert plans() == 1
    execute_leads(run)
    mine_claims(run)
    build_edges(run)
    score_session(run)
    assert round_state(run) == RoundStateRow(1, True, True)
    # Stopped while planning round 2 (the counter moved, no plan written): round 2 is planned,
    # not a round 3 after an empty round 2.
    store.transact(
        lambda cur: cur.execute(q("session_next_round"), {"session_id": sid, "now": utcnow()})
    )
    assert round_state(run) == RoundStateRow(2, False, False)
    assert resume_point(run) == next_step(run) == "round"
    second = plan_round(run)
    assert second.round == 2 and run.session().rounds == 2
    assert round_state(run) == RoundStateRow(2, True, False) and plans() == 2
