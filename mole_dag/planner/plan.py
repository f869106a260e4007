"""One planning round: digest -> skills.plan (paid, reserved first) -> sub-questions and leads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mole_dag.actors.registry import local_corpus
from mole_dag.budget import BudgetExhausted, FreeCallBatch, charging
from mole_dag.context import Run
from mole_dag.core import Role, SessionStatus, columns, stable_id
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.mining.relevance import is_broad
from mole_dag.paths import demo_corpus
from mole_dag.planner.ahead import take as take_ahead
from mole_dag.planner.extractive import BROAD_TOPICS, is_wide
from mole_dag.sanitize import one_line
from mole_dag.skills.protocol import Digest, Metered, PlannedQuestion
from mole_dag.skills.unreadable import write_unreadable
from mole_dag.store import q, utcnow
from mole_dag.store.records import RoundStateRow, SessionRow, SubQuestionClaimsRow, scalar
from mole_dag.text import plural

STAGE = "sub_questions"


@dataclass(frozen=True)
class PlanResult:
    round: int
    sub_questions_added: int
    leads_added: int
    pending_leads: int
    spent: int


def plan_progress(round_no: int, added_sq: int, added_leads: int, pending: int) -> str:
    """What the round will do, in words that match what follows: a round that planned nothing
    new but has follow-up leads queued (from contradictions) says it runs those only."""
    follow_ups = pending - added_leads
    if added_sq == 0 and follow_ups > 0:
        return (
            f"round {round_no}: no new sub-questions; running "
            f"{plural(follow_ups, 'follow-up lead')} only"
        )
    line = (
        f"round {round_no}: planned {plural(added_sq, 'sub-question')}, "
        f"{plural(added_leads, 'lead')}"
    )
    if follow_ups > 0:
        line += f", plus {plural(follow_ups, 'follow-up lead')}"
    return line


def _corpus_topics(run: Run, question: str) -> tuple[str, ...]:
    """A broad question over a local folder is planned from the folder's dominant terms, a wide
    one ("What are the effects of X?") from the dominant terms of the documents about it; only
    for the model-free planner, since a model planner must see no page-derived words."""
    if run.skills.uses_model or not (is_broad(question) or is_wide(question)):
        return ()
    actors = [a.strip() for a in run.session().actors.split(",")]
    if "local" not in actors:
        return ()
    corpus = local_corpus(run.session().corpus or str(demo_corpus()))
    return corpus.topics(BROAD_TOPICS, about="" if is_broad(question) else question)


def build_digest(run: Run, round_no: int) -> Digest:
    """Counts and the planner's own wording only: nothing a page wrote reaches the planner."""
    store, sid = run.store, run.session_id
    sess = run.session()
    subs = store.many(SubQuestionClaimsRow, q("digest_sub_questions"), {"session_id": sid})
    dead = store.named("digest_dead_ends", {"session_id": sid})
    dead_by_sq = store.named("digest_dead_ends_by_sub_question", {"session_id": sid})
    contradictions = store.scalar(q("digest_contradictions"), {"session_id": sid}) or 0
    bal = run.ledger.balance(sid)
    # Control sequences are never search words ("\x1b[31m" planned as "31m"): a question stored
    # before the launch check removed them, or written by a direct library call, is cleaned here.
    question = one_line(sess.question)
    return Digest(
        corpus_topics=_corpus_topics(run, question) if round_no == 1 else (),
        question=question,
        round=round_no,
        sub_questions=tuple((s.text, s.claims) for s in subs),
        dead_ends=tuple((d["cause"], int(d["n"])) for d in dead),
        contradictions=int(contradictions),
        budget_left=max(bal.available, 0),
        unit=str(bal.unit),
        dead_ends_by_sub_question=tuple(
            (d["sub_question"], d["cause"], int(d["n"])) for d in dead_by_sq
        ),
    )


def budget_too_small(exc: BudgetExhausted, total: int) -> str:
    """One line: what the first planning call needed, and the budget that would cover it
    (the call must fit outside the escrow)."""
    from mole_dag.budget import ESCROW_PERCENT

    need = exc.requested
    budget = -(-need * 100 // (100 - ESCROW_PERCENT))
    while budget - budget * ESCROW_PERCENT // 100 < need:  # escrow rounds down
        budget += 1
    if exc.unit == "usd_micros":
        return (
            f"budget too small: the planner needs at least ${need / 1e6:.6f} for its first "
            f"call (a budget of at least ${budget / 1e6:.6f}, with the 15% escrow)"
        )
    return (
        f"budget too small: the planner needs at least {need} tokens for its first call "
        f"(a budget of at least {budget} tokens, with the 15% escrow)"
    )


def round_state(run: Run) -> RoundStateRow:
    got = run.store.one(RoundStateRow, q("round_state"), {"session_id": run.session_id})
    return got if got is not None else RoundStateRow(0, False, False)


def plan_round(run: Run) -> PlanResult:
    """Plan the session's next round, or take the plan this process started ahead of the
    round's run (mole_dag.planner.ahead): its result, or its error, is this step's."""
    ahead = take_ahead(run.session_id)
    if ahead is not None:
        return ahead.result()
    return plan_round_now(run)


def plan_round_now(run: Run) -> PlanResult:
    store, sid = run.store, run.session_id
    sess = run.session()
    if sess.status not in (SessionStatus.CREATED, SessionStatus.RUNNING):
        # Re-materialising a finished session is allowed (a re-run of the graph); it just has
        # nothing left to plan.
        pending = int(store.scalar(q("pending_leads_count"), {"session_id": sid}) or 0)
        run.progress(f"session is {sess.status}: no new round planned")
        return PlanResult(sess.rounds, 0, 0, pending, 0)
    now = utcnow()
    state = round_state(run)
    if state.unfinished and state.planned:
        # Stopped after its plan was written (mole resume, or the round's job run again): the
        # round goes on with the leads it planned; planning again would pay twice.
        pending = int(store.scalar(q("pending_leads_count"), {"session_id": sid}) or 0)
        run.progress(
            f"round {state.rounds}: planned before the stop; continuing with "
            f"{plural(pending, 'pending lead')}"
        )
        return PlanResult(state.rounds, 0, 0, pending, 0)
    if state.unfinished:
        # Stopped while planning (the call in flight was charged): plan the same round again.
        round_no = state.rounds
    else:

        def next_round(cur: Any) -> int:
            cur.execute(q("session_next_round"), {"session_id": sid, "now": now})
            return scalar(cur, int, q("session_rounds"), {"session_id": sid}) or 0

        round_no = store.transact(next_round)
    # A model-free planner's call is free: its row is written with the round's sub-questions
    # and leads, in one transaction (issue 12). A paid one still reserves first.
    with run.ledger.free_calls(sid) as free:
        return _plan(run, sess, round_no, now, free)


def _plan(
    run: Run, sess: SessionRow, round_no: int, now: datetime, free: FreeCallBatch
) -> PlanResult:
    digest = build_digest(run, round_no)
    planned = _carried_plan(run, sess, round_no) or _call_planner(run, digest, round_no)
    if planned is None:
        return PlanResult(round_no, 0, 0, 0, 0)
    return _write_plan(run, sess, round_no, now, free, digest, planned)


def _carried_plan(
    run: Run, sess: SessionRow, round_no: int
) -> Metered[list[PlannedQuestion]] | None:
    """A rerun's first round takes the plan of the session it re-runs (issue 32), at no model
    cost: the same question asked again is planned the same way, and the same sub-questions
    let the re-read sources and carried claims fall under the ones they were found for. Later
    rounds plan as usual, from what this session found. A model-free plan costs nothing and
    reads the corpus as it is now (a broad question's topics), so it is made afresh."""
    if round_no != 1 or not sess.previous_session_id or not run.skills.uses_model:
        return None
    rows = run.store.named("rerun_first_plan", {"session_id": sess.previous_session_id})
    if not rows:
        return None  # the previous session never planned: plan afresh
    run.progress(
        f"round 1: the plan of {sess.previous_session_id} carried ({len(rows)} sub-questions), "
        "no planner call"
    )
    return Metered(
        [PlannedQuestion(r["text"], r["query"], bool(r["search"])) for r in rows], cost=0
    )


def _call_planner(run: Run, digest: Digest, round_no: int) -> Metered[list[PlannedQuestion]] | None:
    """The planner's answer for this round; None when a first round cannot be planned (the
    session has been ended as exhausted)."""
    sid, unit = run.session_id, run.unit
    estimate = run.skills.estimate_plan(digest, unit)
    try:
        with (
            run.ledger.hold(
                sid, Role.PLANNER, estimate, tool=f"{run.skills.name}:plan", stage=STAGE
            ) as h,
            charging(h),
        ):
            planned = run.skills.plan(digest, unit)
            h.settle(planned.cost, usage=planned.usage, model=planned.model or None)
    except BudgetExhausted as exc:
        if round_no <= 1:
            # Without a first plan there is no session, and no budget will appear later: end
            # it as exhausted with one line saying what the planner needed, instead of a
            # failed step that leaves the session `running`.
            reason = budget_too_small(exc, run.ledger.balance(sid).total)
            run.ledger.set_status(sid, SessionStatus.EXHAUSTED, reason)
            run.progress(reason)
            return None
        run.progress(f"round {round_no}: no new sub-questions ({exc})")
        planned = Metered[list[PlannedQuestion]]([])
    except ModelCallFailed as exc:
        if round_no <= 1:
            raise  # without a first plan there is no session: fail loudly, with the cause
        # A later round that cannot plan (the model failed, or what is left outside escrow
        # does not cover a planning call) ends the research; the report still gets written.
        run.progress(f"round {round_no}: no new sub-questions ({exc})")
        planned = Metered[list[PlannedQuestion]]([])
    return planned


def _write_plan(
    run: Run,
    sess: SessionRow,
    round_no: int,
    now: datetime,
    free: FreeCallBatch,
    digest: Digest,
    planned: Metered[list[PlannedQuestion]],
) -> PlanResult:
    store, sid = run.store, run.session_id
    actors = [a.strip() for a in sess.actors.split(",") if a.strip()]
    existing = {s[0].casefold() for s in digest.sub_questions}
    added_sq = added_leads = 0

    subs: list[dict[str, Any]] = []
    leads: list[dict[str, Any]] = []
    for ordinal, pq in enumerate(planned.value):
        if pq.text.casefold() in existing:
            continue
        existing.add(pq.text.casefold())
        sq_id = stable_id(sid, pq.text, prefix="sq-")
        subs.append({"id": sq_id, "ordinal": ordinal, "text": pq.text, "query": pq.query})
        if not pq.search:
            continue  # a sub-question to group findings under, with no search of its own
        leads += [
            {
                "id": stable_id(sq_id, actor, pq.query, prefix="lead-"),
                "sub_question_id": sq_id,
                "actor": actor,
                "query": pq.query,
                "depth": 0,
                "root_claim_id": None,
                "because": None,
            }
            for actor in actors
        ]
    added_sq, added_leads = len(subs), len(leads)

    def write(cur: Any) -> None:
        # The round's plan is written: from here a stop resumes the round, not its planning.
        cur.execute(q("round_mark_planned"), {"session_id": sid, "round": round_no, "now": now})
        if planned.unreadable:
            write_unreadable(cur, sid, [("plan", planned.unreadable)], now)
        if subs:
            cur.execute(
                q("sub_question_insert_many"),
                {
                    "session_id": sid,
                    "round": round_no,
                    "now": now,
                    **columns(subs, ("id", "ordinal", "text", "query")),
                },
            )
        if leads:
            cur.execute(
                q("lead_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(
                        leads,
                        (
                            "id",
                            "sub_question_id",
                            "actor",
                            "query",
                            "depth",
                            "root_claim_id",
                            "because",
                        ),
                    ),
                },
            )

    free.write_with(write, store)
    pending = int(store.scalar(q("pending_leads_count"), {"session_id": sid}) or 0)
    run.progress(plan_progress(round_no, added_sq, added_leads, pending))
    return PlanResult(round_no, added_sq, added_leads, pending, planned.cost)
