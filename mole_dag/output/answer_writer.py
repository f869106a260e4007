"""The Answer's sentences: the writer's request built from the findings, one writer call (a
model, or the extractive provider) paid from the report stage's escrow, its sentences bound to
the findings (mole_dag.output.binding), and the deterministic answer, with the reason, when the
call cannot be made or too little of its answer survives."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mole_dag.budget import BudgetExhausted, BudgetOverrun, charging
from mole_dag.context import Run
from mole_dag.core import Role
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.output.answered import Decision
from mole_dag.output.binding import Binding, bind
from mole_dag.output.extractive import write_body
from mole_dag.output.reasons import model_work
from mole_dag.output.selection import Finding
from mole_dag.output.wording import fmt_amount
from mole_dag.skills.protocol import FindingForWriter, WriteRequest, WrittenAnswer
from mole_dag.skills.unreadable import write_unreadable
from mole_dag.store import utcnow

log = logging.getLogger("mole.report")
# The report stage's name in the ledger: the writer call is what it pays for from the escrow.
STAGE = "report"
# What the report says it shows instead, when the writer's answer is not used.
ANSWER_FALLBACK = "the answer below is the deterministic one: the most relevant findings, quoted"
ANSWER_FALLBACK_DECLINED = (
    "the deterministic decision stands: no finding answers the question (the closest are below)"
)


@dataclass
class Written:
    """What the Answer is made of: the bound sentences, who wrote them, the notes that say why
    a writer's answer was not used, and whether the findings answer the question."""

    binding: Binding
    writer: str
    notes: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    spent: int = 0
    answered: bool = True
    basis: str = ""


def write_answer(
    run: Run, req: WriteRequest, findings: list[Finding], decision: Decision
) -> Written:
    """One writer call (no retry: the same prompt mostly earns the same answer, and the
    deterministic answer is a good one), bound to the findings; the deterministic answer when
    the call cannot be made or too little of its answer survives. Whether the findings answer
    the question is the writer's to say: a model reads them; the model-free writer follows the
    lexical decision (mole_dag.output.answered), which also stands when a model's answer is
    not used."""
    sid, unit = run.session_id, run.unit
    texts = {f.number: f.text for f in findings}
    got: WrittenAnswer | None = None
    spent = 0
    why = ""
    budget_note = ""
    estimate = run.skills.estimate_write(req, unit)
    try:
        with (
            run.ledger.hold(
                sid, Role.OUTPUT, estimate, tool=f"{run.skills.name}:write", stage=STAGE
            ) as h,
            charging(h),
        ):
            metered = run.skills.write(req, unit)
            h.settle(metered.cost, usage=metered.usage, model=metered.model or None)
        got, spent = metered.value, metered.cost
        if metered.unreadable:
            run.store.transact(
                lambda cur: write_unreadable(cur, sid, [("write", metered.unreadable)], utcnow())
            )
    except BudgetOverrun as exc:
        why = "writer not run: a provider overran its allowance, so no further call is made"
        budget_note = (
            f"The writer could not be afforded: a provider used "
            f"{fmt_amount(exc.overrun, exc.unit)} more than its calls were "
            "allowed, and after an overrun the session dispatches no further call"
        )
    except BudgetExhausted as exc:
        why = (
            f"writer not run: it needed {fmt_amount(exc.requested, exc.unit)} and "
            f"{fmt_amount(exc.available, exc.unit)} was left"
        )
        budget_note = (
            f"The writer could not be afforded: it needed "
            f"{fmt_amount(exc.requested, exc.unit)} and "
            f"{fmt_amount(exc.available, exc.unit)} was left"
        )
    except ModelCallFailed as exc:
        why = f"writer failed: {exc}"

    if got is not None and not got.answered:
        # The writer found that no finding answers the question: nothing to bind, nothing to
        # cite; the findings stay below as related.
        basis = (
            f"the model writer (`{run.skills.name}`) found that no finding answers the question"
            if run.skills.uses_model
            else decision.basis
        )
        return Written(Binding((), 0), run.skills.name, [], [], spent, False, basis)
    binding = bind(got, texts, req.question) if got is not None else None
    if binding is not None and binding.enough:
        notes = []
        if binding.dropped:
            notes.append(f"The writer's answer: {binding.explain()}.")
        basis = (
            f"the model writer (`{run.skills.name}`) answered from "
            + ", ".join(f"#{n}" for n in dict.fromkeys(n for b in binding.kept for n in b.findings))
            if run.skills.uses_model
            else decision.basis
        )
        return Written(binding, run.skills.name, notes, [], spent, True, basis)

    if binding is not None and got is not None:
        why = binding.explain()
        if got.problem:
            why = got.problem if not binding.offered else f"{got.problem}; {why}"
    log.warning("session %s: writer answer not used: %s", sid, why)
    fallback_answer = write_body(req)
    fallback = bind(fallback_answer, texts, req.question)
    declined = not fallback_answer.answered
    instead = ANSWER_FALLBACK_DECLINED if declined else ANSWER_FALLBACK
    notes = []
    if run.skills.uses_model:
        head = model_work(run)
        if budget_note:
            notes.append(f"{head}. {budget_note}, so {instead}.")
        else:
            notes.append(f"{head}. Its answer paragraph was not used ({why}), so {instead}.")
    else:
        notes.append(f"The extractive answer was not used ({why}), so {instead}.")
    return Written(fallback, "deterministic", notes, [why], spent, not declined, decision.basis)


def writer_request(question: str, findings: list[Finding], decision: Decision) -> WriteRequest:
    """What the writer is shown: the question, and each finding with the lexical decision."""
    return WriteRequest(
        question=question,
        findings=tuple(
            FindingForWriter(
                f.number,
                f.text,
                f.confidence,
                f.relevance,
                f.sub_question,
                disputed=bool(f.disputed_with),
                superseded=f.superseded,
                answers=f.number in decision.answering,
                publishers=f.publishers,
            )
            for f in findings
        ),
        answered=decision.answered,
    )
