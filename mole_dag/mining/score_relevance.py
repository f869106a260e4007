"""The relevance stage: score every claim of a session against the question and each
sub-question, and store the result (claim_relevance). Re-run after each round's mining and
before the report, because term weights depend on every page read so far: a word rare after
one page may turn out to be on all of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from mole_dag.context import Run
from mole_dag.core import columns
from mole_dag.mining import relevance
from mole_dag.mining.passages import Passages, char_offset
from mole_dag.mining.question_terms import quoted_titles
from mole_dag.mining.ranker import keep, warm
from mole_dag.mining.relevance import (
    CONTEXT_WINDOW,
    WEIGHTS,
    DocumentTerms,
    Query,
    Relevance,
    TermStats,
    Weights,
    blend_with_grade,
    combine,
    document_terms,
    score_stretch,
)
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import RelevanceClaimRow, SourceRow, SubQuestionRow
from mole_dag.text import content_terms


@dataclass(frozen=True)
class RelevanceResult:
    claims: int
    relevant: int  # claims with relevance > 0
    best: float


@dataclass(frozen=True)
class SubQuestionText:
    id: str
    text: str


def session_passages(store: Store, session_id: str) -> dict[str, Passages]:
    """Every source's text (its chunks, which tile it exactly), split into sentences."""
    out: dict[str, Passages] = {}
    for src in store.named("relevance_source_texts", {"session_id": session_id}):
        out[str(src["source_id"])] = Passages(str(src["text"] or ""))
    return out


def session_stats(passages: dict[str, Passages]) -> TermStats:
    return TermStats.from_sentences(s.text for p in passages.values() for s in p.sentences)


def claim_context(passages: dict[str, Passages], claim: RelevanceClaimRow) -> list[str]:
    """The sentences around a claim's quote on its page, within its paragraph."""
    page = passages.get(claim.source_id)
    if page is None:
        return []
    data = page.text.encode("utf-8")
    a = char_offset(data, claim.quote_byte_start)
    b = char_offset(data, claim.quote_byte_end)
    return page.around(a, b, CONTEXT_WINDOW)


def claim_value(
    to_q: Relevance, to_sub: float, by_sub: list[Relevance], grade: int | None
) -> float:
    """A claim's relevance: the question's score lifted by its best part's (combine), blended
    with the miner's grade where a model mined it. A claim from a source other than the one
    the question and every part of it quote by title scores 0 whatever its grade: the model
    graded the sentence, not which document the question asks about."""
    if to_q.other_title and all(r.other_title for r in by_sub):
        return 0.0
    return blend_with_grade(combine(to_q.value, to_sub), grade)


def score_relevance(run: Run, weights: Weights = WEIGHTS) -> RelevanceResult:
    """Score and store every claim of the session. `weights` other than the defaults are for
    bench/qa.py's replay of stored sessions (the held-out check), never for a session."""
    store, sid = run.store, run.session_id
    question = run.session().question
    subs = [
        SubQuestionText(r.id, r.text)
        for r in store.many(SubQuestionRow, q("relevance_sub_questions"), {"session_id": sid})
    ]
    claims = store.many(RelevanceClaimRow, q("relevance_claims"), {"session_id": sid})
    titles = {
        s.id: s.title or ""
        for s in store.many(SourceRow, q("session_sources"), {"session_id": sid})
    }
    passages = session_passages(store, sid)
    stats = session_stats(passages)
    q_question = Query.of(question, stats)
    q_subs = [(s, Query.of(s.text, stats)) for s in subs]
    # The titles a question (or a part) quotes, among the sources read (score_stretch).
    title_terms = [frozenset(content_terms(t)) for t in titles.values()]
    quoted = {
        text: quoted_titles(text, title_terms) for text in [question, *(s.text for s in subs)]
    }
    contexts = {c.id: claim_context(passages, c) for c in claims}
    if relevance.LEARNED or relevance.FUSED:
        # Every text the learned ranking will read, embedded in one batch (ranker.warm).
        warm(
            [
                question,
                *(s.text for s in subs),
                *(" ".join(c.quote.split()) for c in claims),
            ]
        )
        keep()
    # What scores the claims, recorded with each (claim_relevance.basis). Weights other than
    # the defaults (a replay's) are always the word score.
    defaults = weights is WEIGHTS
    fused = relevance.FUSED and defaults
    ranking = "fused" if fused else "learned" if relevance.LEARNED and defaults else "lexical"
    documents: dict[str, DocumentTerms] = {}
    rows: list[dict[str, Any]] = []
    now = utcnow()
    for c in claims:
        context = contexts[c.id]
        sentence = " ".join(c.quote.split())
        title = titles.get(c.source_id, "")
        if c.source_id not in documents:
            page = passages.get(c.source_id)
            documents[c.source_id] = document_terms(
                (s.text for s in page.sentences) if page is not None else (), title
            )
        doc = documents[c.source_id]
        to_q = score_stretch(
            q_question, stats, sentence, context, title, weights, doc, quoted[question], fused
        )
        best_sub, best = c.sub_question_id, None
        by_sub: list[Relevance] = []
        for sub, query in q_subs:
            r = score_stretch(
                query, stats, sentence, context, title, weights, doc, quoted[sub.text], fused
            )
            by_sub.append(r)
            # Ties go to the sub-question that mined the claim, then to planner order.
            if (
                best is None
                or r.value > best.value
                or (r.value == best.value and sub.id == c.sub_question_id)
            ):
                best_sub, best = sub.id, r
        to_sub = best.value if best is not None else to_q.value
        grade = c.model_grade
        value = claim_value(to_q, to_sub, by_sub, int(grade) if grade is not None else None)
        explanation = f"question: {to_q.explain()}"
        if best is not None and best.value > to_q.value:
            explanation += f"; sub-question: {best.explain()}"
        if grade is not None:
            explanation += f"; the miner graded it {int(grade)}/3"
        rows.append(
            {
                "claim_id": c.id,
                "session_id": sid,
                "relevance": min(max(value, 0.0), 1.0),
                "to_question": to_q.value,
                "to_sub_question": to_sub,
                "sub_question_id": best_sub,
                "basis": f"model+{ranking}" if grade is not None else ranking,
                "model_grade": int(grade) if grade is not None else None,
                "explanation": explanation,
                "now": now,
            }
        )

    def write(cur: duckdb.DuckDBPyConnection) -> None:
        cur.execute(q("relevance_clear"), {"session_id": sid})
        if rows:
            # One statement for the session's claims: executemany still runs one statement
            # per row (issue 12).
            cur.execute(
                q("relevance_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(
                        rows,
                        (
                            "claim_id",
                            "relevance",
                            "to_question",
                            "to_sub_question",
                            "sub_question_id",
                            "basis",
                            "model_grade",
                            "explanation",
                        ),
                    ),
                },
            )

    store.transact(write)
    values = [r["relevance"] for r in rows]
    return RelevanceResult(len(rows), sum(1 for v in values if v > 0), max(values, default=0.0))
