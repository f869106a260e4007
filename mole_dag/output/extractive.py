"""The extractive answer (no model): the most relevant findings' quotes, one finding per sentence
(the report renders their citations). Also the fallback when a model's answer fails the
evidence check, and the notice a report made without a model carries."""

from __future__ import annotations

from mole_dag.skills.protocol import BoundSentence, WriteRequest, WrittenAnswer

MADE_WITHOUT_MODEL = (
    "This report was made without a language model: the extractive provider quoted sentences "
    "from the sources and judged them with word-overlap heuristics."
)


# How many findings the deterministic answer quotes. A guess, flagged as one: enough to answer
# a question of a few parts, short enough to be read before the sections.
MAX_ANSWER_SENTENCES = 3


def write_body(req: WriteRequest) -> WrittenAnswer:
    """The deterministic answer: the most relevant findings' quotes, one finding per sentence,
    so the first thing a reader meets is what the sources said, each cited. One per
    sub-question first, when the question has several parts; superseded findings only when
    nothing else is left. Also the fallback when a model's answer fails the evidence check."""
    if not req.findings:
        return WrittenAnswer((), "there is no finding to answer from")
    ranked = sorted(
        req.findings, key=lambda f: (f.superseded, -f.relevance, -f.confidence, f.number)
    )
    picked: list[int] = []
    parts: set[str] = set()
    for f in ranked:
        if f.sub_question not in parts and len(picked) < MAX_ANSWER_SENTENCES:
            picked.append(f.number)
            parts.add(f.sub_question)
    for f in ranked:
        if len(picked) >= MAX_ANSWER_SENTENCES:
            break
        if f.number not in picked:
            picked.append(f.number)
    order = {f.number: i for i, f in enumerate(ranked)}
    by_no = {f.number: f for f in req.findings}
    return WrittenAnswer(
        tuple(
            BoundSentence(" ".join(by_no[n].text.split()), (n,))
            for n in sorted(picked, key=order.__getitem__)
        )
    )
