"""The extractive planner (no model): the question, its parts when it asks several things, and
for a broad or wide question the corpus's dominant topics. No fixed facets."""

from __future__ import annotations

import re

from mole_dag.mining.answer_types import SCOPE, AnswerType, answer_type
from mole_dag.mining.question_terms import is_broad, question_names
from mole_dag.skills.protocol import PlannedQuestion
from mole_dag.text import STOPWORDS, normalize, possessive_free, terms

_LEADING = re.compile(
    r"^(?:what|how|why|when|where|which|who|whom|is|are|was|were|does|do|did|can|could|should|"
    r"will|would|has|have)\b(?:\s+(?:are|is|was|were|do|does|did|can|the|a|an|there))*\s*",
    re.IGNORECASE,
)


# Where a question asks two things: ", and which ...", "; when ...", or a second question. A
# bare ", which" is not one: it starts a relative clause ("the Union, which reported ...").
_PART_BREAK = re.compile(
    r"(?:,?\s+(?:and|but)\s+(?:also\s+)?|;\s*|\?\s+)"
    r"(?=(?:(?:by|in|on|at|for|to|from|of|since|until|with)\s+)?"
    r"(?:which|what|who|whom|whose|when|where|how|why)\b)",
    re.IGNORECASE,
)


# Sub-questions planned from a broad question's corpus. A guess, flagged as one: enough topics
# to cover a small folder's themes, few enough that each gets its own section.
BROAD_TOPICS = 8


def topic_of(question: str) -> str:
    q = question.strip().rstrip("?？!. ")
    stripped = _LEADING.sub("", q).strip()
    return stripped or q


def question_parts(question: str) -> list[str]:
    """The separate things a question asks, in order; one part for a simple question. Split at
    a conjunction or a second question mark that starts a new wh-clause, so "Which X did Y,
    and when did Z?" gives two parts, while "Which cats and dogs ..." stays one."""
    q = " ".join(question.split())
    pieces = [p.strip(" ,;") for p in _PART_BREAK.split(q)]
    parts = [
        p[:1].upper() + p[1:] if p.endswith("?") else p[:1].upper() + p[1:].rstrip(".!") + "?"
        for p in pieces
        if len(terms(p)) >= 2
    ]
    return parts if len(parts) >= 2 else [q]


# Words by which a part of a question leaves out the situation the part before it described
# ("... and what must be used instead?"). Not pronouns: "which package ..., and what does that
# package apply?" points at the first part's answer, which the planner does not know, and
# carrying the first part's words along sends the part to the first part's pages (seen on the
# development set). A guess, flagged as one.
_BACK = frozenset("instead otherwise alternatively else".split())


def in_context(parts: list[str]) -> list[str]:
    """Each part as a question that can be searched and scored alone. A later part that names
    nothing of its own and leaves out its situation ("What must be used instead?") is about
    what the part before it described: it carries that part along, so its search and its
    relevance are not a bare "used instead" over every page. A part that names its own subject
    ("By what year does Microsoft aim to ... instead?") stands alone."""
    out = parts[:1]
    for prev, part in zip(parts, parts[1:], strict=False):
        words = {w.lower() for w in re.findall(r"[\w']+", part)}
        if words & _BACK and not question_names(part):
            part = f"{part} (after: {prev})"
        out.append(part)
    return out


def is_wide(question: str) -> bool:
    """A question about a topic's many sides ("What are the health effects of coffee?"), not
    one asking for a name, a number or a date: worth a sub-question per facet."""
    return bool(SCOPE.search(question)) and answer_type(question) is AnswerType.ANY


_WORD = re.compile(r"[^\W_][\w'’.+/\-]*", re.UNICODE)


def _query(text: str) -> str:
    """The search words of a question as a person would type them: its words as written,
    minus the question words and function words, each once. Never stems ("sourc", "coffe"):
    the search engine or the local index does its own matching."""
    topic = topic_of(text)
    seen: set[str] = set()
    out: list[str] = []
    for m in _WORD.finditer(topic):
        word = possessive_free(m.group(0).rstrip(".-"))
        key = normalize(word)
        if not word or key in STOPWORDS or key in seen:
            continue
        seen.add(key)
        out.append(word)
    return " ".join(out) or topic.strip() or " ".join(text.split())


# The verb that opens a question and the "have" that agrees with it in the relative clause a
# facet adds: a plural "be" ("What are the effects of X ...") is about its plural noun, "have";
# a singular one, or another verb ("What does the evidence say about X ..."), about a singular
# "what" or X, "has"; a past one, "had". Grammar, not vocabulary: English's auxiliaries.
_AUX = re.compile(
    r"^(?:(?:what|which|who|how|why|when|where)\s+)?"
    r"(?P<aux>are|is|were|was|do|does|did|have|has|had|can|could|will|would|should|may|might)\b",
    re.IGNORECASE,
)
_HAVE = {"are": "have", "were": "had", "was": "had", "did": "had", "had": "had"}


def _facet_question(question: str, facet: str) -> str:
    """A wide question narrowed to one facet, as a person would write it: the question with a
    relative clause, "What are the health effects of drinking coffee that have to do with
    sleep?". Its "have" agrees with the question's own opening verb (number and tense). Every
    word it adds is a function word, so its content terms are the question's and the facet's
    only (a word like "regarding", on no page, would weigh in the sub-question's relevance as if
    it were asked about)."""
    m = _AUX.match(question.strip())
    have = _HAVE.get(m.group("aux").lower(), "has") if m else "has"
    return f"{question.rstrip('?？!. ')} that {have} to do with {facet}?"


def plan_questions(question: str, corpus_topics: tuple[str, ...] = ()) -> list[PlannedQuestion]:
    """The question itself; its parts when it asks several things; for a broad question, one
    sub-question per dominant topic of the corpus. No fixed facets: words the question did not
    use ("benefit", "risk") send the search away from what was asked. A broad question with
    topics runs no search of its own: its words ("What do the sources say?") name no topic."""
    q = " ".join(question.split())
    if is_broad(q) and corpus_topics:
        return [PlannedQuestion(q, _query(q), search=False)] + [
            PlannedQuestion(f"What do the sources say about {t}?", t)
            for t in corpus_topics[:BROAD_TOPICS]
        ]
    out = [PlannedQuestion(q, _query(q))]
    if corpus_topics:  # a wide question: its facets, as the corpus's documents on it have them
        base = _query(q)
        out += [
            PlannedQuestion(_facet_question(q, t), f"{base} {t}")
            for t in corpus_topics[:BROAD_TOPICS]
        ]
    parts = question_parts(q)
    if len(parts) > 1:
        out += [PlannedQuestion(p, _query(p)) for p in in_context(parts)]
    return out
