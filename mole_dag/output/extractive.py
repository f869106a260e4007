"""The extractive answer (no model): the quotes of the findings that answer the question, one
finding per sentence (the report renders their citations), or none when none answers. Also the
fallback when a model's answer fails the evidence check, and the notice a report made without a
model carries."""

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
    """The deterministic answer: the quotes of the findings that answer the question (the
    lexical decision, mole_dag.output.answered), most relevant first, one finding per sentence,
    so the first thing a reader meets is what the sources said, each cited. One per
    sub-question first, when the question has several parts, after what several publishers
    agree on; superseded findings only when nothing else is left. When no finding answers, no
    sentence: the report says the question is not answered rather than quote something near it.
    Also the fallback when a model's answer fails the evidence check."""
    if not req.findings:
        return WrittenAnswer((), "there is no finding to answer from", answered=False)
    if not req.answered:
        return WrittenAnswer((), answered=False)
    # A request that flags no finding (a caller without the decision) is answered from all.
    pool = [f for f in req.findings if f.answers] or list(req.findings)
    ranked = sorted(pool, key=lambda f: (f.superseded, -f.relevance, -f.confidence, f.number))
    picked: list[int] = []
    parts: set[str] = set()
    # What several independent publishers state, among the findings that answer, comes first:
    # the best-supported answer, not the one that shares most words with the question (the
    # demo's three-publisher finding sat at #15 under a sentence about sleep). Most
    # publishers first, then relevance; disputed and superseded findings are not agreed on.
    agreed = sorted(
        (f for f in ranked if f.publishers > 1 and not f.disputed and not f.superseded),
        key=lambda f: (-f.publishers, -f.relevance, f.number),
    )
    if agreed:
        picked.append(agreed[0].number)
        parts.add(agreed[0].sub_question)
    # A question with parts or facets is answered part by part: the best finding of each part
    # first, then of the question's own section, whose findings are often about the whole
    # topic rather than any answer ("Coffee is one of the most widely consumed beverages").
    question = " ".join(req.question.split())
    by_part = sorted(ranked, key=lambda f: " ".join(f.sub_question.split()) == question)
    for f in by_part:
        if f.sub_question not in parts and len(picked) < MAX_ANSWER_SENTENCES:
            picked.append(f.number)
            parts.add(f.sub_question)
    for f in ranked:
        if len(picked) >= MAX_ANSWER_SENTENCES:
            break
        if f.number not in picked:
            picked.append(f.number)
    order = {f.number: i for i, f in enumerate(ranked)}
    if agreed:
        order[agreed[0].number] = -1  # stated first, as the sources' common ground
    by_no = {f.number: f for f in req.findings}
    return WrittenAnswer(
        tuple(
            BoundSentence(" ".join(by_no[n].text.split()), (n,))
            for n in sorted(picked, key=order.__getitem__)
        )
    )
