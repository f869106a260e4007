"""The planning prompt and the parser for its answer (the boundary: mole_dag.skills.prompting)."""

from __future__ import annotations

from mole_dag.llm.jsonout import parse_items, string_field
from mole_dag.llm.provider import Call, Message, Tier
from mole_dag.skills.prompting import MAX_SUB_QUESTION_CHARS, flat
from mole_dag.skills.protocol import Digest, PlannedQuestion

# Output allowances (max_tokens). Guesses, flagged as such, sized to the answer each prompt asks
# for: a truncated answer is salvaged, so erring small loses the last item, not the call.
PLAN_MAX_TOKENS = 1024

# How many sub-questions one round may add. A guess, flagged as one: the first round covers the
# question's facets; later rounds only fill the gaps the digest shows.
FIRST_ROUND_SUB_QUESTIONS = 5
LATER_ROUND_SUB_QUESTIONS = 3
MAX_QUERY_CHARS = 200


PLAN_SYSTEM = """\
You plan a research session. You see the research question and a digest of the session so \
far: the sub-questions already asked with how many checked claims each has found, why searches \
came back empty (dead-end causes), how many contradictions were found, and the budget left. \
You never see page text.

Propose the next sub-questions to research. Each has "text" (the sub-question in plain words) \
and "query" (a keyword search query of at most 12 words for it). In round 1 cover the \
question's main facets. In later rounds propose only sub-questions that fill a gap the digest \
shows (a sub-question with few or no claims, a disputed point, a dead end to route around); \
never repeat one already listed. If the research already covers the question, or the budget is \
nearly spent, propose none.

Reply with JSON only, no prose: {"sub_questions": [{"text": "...", "query": "..."}]}"""


def _amount(amount: int, unit: str) -> str:
    return f"${amount / 1_000_000:.4f}" if unit == "usd_micros" else f"{amount} tokens"


def plan_call(digest: Digest) -> Call:
    lines = [
        f"Question: {flat(digest.question, 1000)}",
        f"Round: {digest.round}",
        f"Budget left: {_amount(digest.budget_left, digest.unit)}",
    ]
    if digest.sub_questions:
        lines.append("Sub-questions so far (checked claims found):")
        lines += [
            f"- {flat(t, MAX_SUB_QUESTION_CHARS)} ({n} claims)" for t, n in digest.sub_questions
        ]
    else:
        lines.append("Sub-questions so far: none")
    if digest.dead_ends:
        lines.append("Dead ends by cause:")
        lines += [f"- {cause}: {n}" for cause, n in digest.dead_ends]
    if digest.dead_ends_by_sub_question:
        lines.append("Dead ends by sub-question:")
        lines += [
            f"- {flat(t, MAX_SUB_QUESTION_CHARS)}: {cause} x{n}"
            for t, cause, n in digest.dead_ends_by_sub_question
        ]
    lines.append(f"Contradictions found: {digest.contradictions}")
    limit = FIRST_ROUND_SUB_QUESTIONS if digest.round <= 1 else LATER_ROUND_SUB_QUESTIONS
    lines.append(f"Propose at most {limit} sub-questions.")
    return Call(
        Tier.STRONG,
        (Message("user", "\n".join(lines)),),
        PLAN_MAX_TOKENS,
        system=PLAN_SYSTEM,
        json=True,
        purpose="plan",
    )


def parse_plan(text: str, digest: Digest) -> list[PlannedQuestion]:
    limit = FIRST_ROUND_SUB_QUESTIONS if digest.round <= 1 else LATER_ROUND_SUB_QUESTIONS
    out: list[PlannedQuestion] = []
    seen = {t.casefold() for t, _ in digest.sub_questions}
    for item in parse_items(text, "sub_questions").items:
        q = flat(string_field(item, "text", "question", "sub_question"), MAX_SUB_QUESTION_CHARS)
        query = flat(string_field(item, "query", "search"), MAX_QUERY_CHARS) or q[:MAX_QUERY_CHARS]
        if not q or q.casefold() in seen:
            continue
        seen.add(q.casefold())
        out.append(PlannedQuestion(q, query))
        if len(out) >= limit:
            break
    return out
