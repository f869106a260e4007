"""Relevance: how well a sentence answers a question. Not confidence (which says how far to trust
it); this says whether it is the answer a reader came for.

Lexical, so it works without a model and explains itself:
- term weights are inverse sentence frequencies over every page the session has read, so a word
  the question shares with every page counts for little and a rare one for much;
- a sentence's own words are scored like BM25 (saturated, length-normalised), as a share of what
  a sentence holding every question term would score;
- the words around it count at half weight (the answer is often the sentence after the one that
  names the topic: "... the mayoral race. Nadia Mohamed, 27, won with 58%."), and the page title
  at less;
- an answer-type cue: a who-question wants a name the question does not already hold, a
  how-many question a number, a when-question a date; a sentence that only restates the question
  holds no answer at all.
The weights below are guesses, flagged as such; the QA benchmark (bench/qa.py) is what checks
them, on pages and questions other than the ones they were tried on."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from mole_dag.text import TermStats, content_terms, normalize, possessive_free, stem

# BM25's usual constants (Robertson's defaults).
K1 = 1.2
B = 0.75
# How much the neighbouring sentences and the page title add to a sentence's own match. Guesses,
# flagged as such: context can lift a sentence that names the answer but not the topic, never
# make it as relevant as one that states both.
CONTEXT_WEIGHT = 0.5
TITLE_WEIGHT = 0.3
# Without an answer-type cue, a sentence needs this much of the question in its own words before
# its context counts. A guess, flagged as one.
CONTEXT_NEEDS_OWN = 0.25
# Sentences either side that count as context, within the same paragraph.
CONTEXT_WINDOW = 2
# Share of the score that the answer-type cue decides. A guess, flagged as one.
CUE_WEIGHT = 0.25
# A sentence with no content word beyond the question's restates it: it cannot hold the answer.
RESTATEMENT_FACTOR = 0.5
# How much a model's grade (0..3) weighs against the lexical score when a model mined the claim.
MODEL_GRADE_WEIGHT = 0.5


# Words that name the corpus rather than a topic: a question made only of these ("What do the
# sources say?", "Summarise this folder") is broad, and is planned from the corpus's own topics.
GENERIC = frozenset(
    stem(w)
    for w in (
        "source sources document documents folder corpus file files text texts page pages "
        "summarise summarize summary overview main topic topics theme themes key point points "
        "tell say said think find write written cover covered discuss discussed content "
        "contents everything anything general idea ideas information info"
    ).split()
)


def is_broad(question: str) -> bool:
    """A question with no content word beyond the corpus's own vocabulary ("What do the
    sources say?"): nothing in it to match, so it is planned from the corpus's topics and its
    own relevance is nil; its sub-questions carry the content."""
    return not [t for t in content_terms(question) if t not in GENERIC]


class AnswerType(StrEnum):
    PERSON = "person"
    NUMBER = "number"
    DATE = "date"
    PLACE = "place"
    NAME = "name"  # which/what X: a name, a title, an identifier
    ANY = "any"  # yes/no, how, why: no cue


_TYPE_RULES: tuple[tuple[re.Pattern[str], AnswerType], ...] = tuple(
    (re.compile(p, re.IGNORECASE), t)
    for p, t in (
        (
            r"\b(?:how\s+(?:many|much|long|far|old|big|large|high|fast|often)|what\s+(?:share|"
            r"percentage|proportion|fraction|number|amount|price|cost)|by\s+how\s+much|"
            r"how\s+much\s+(?:faster|slower|more|less))\b",
            AnswerType.NUMBER,
        ),
        (
            r"\b(?:when|what\s+(?:date|year|day|month|time)|which\s+(?:date|year|day|month)|"
            r"in\s+what\s+year|on\s+what\s+date)\b",
            AnswerType.DATE,
        ),
        (
            r"\b(?:who|whom|whose)\b|\b(?:which|what)\s+(?:\w+\s+){0,3}?(?:person|man|woman|"
            r"player|author|writer|artist|cartoonist|scientist|researcher|president|minister|"
            r"director|founder|leader|ceo|chief|secretary|attorney|officer|actor|actress|singer|"
            r"politician|engineer|developer|journalist)\b",
            AnswerType.PERSON,
        ),
        (
            r"\b(?:where|which\s+(?:city|country|town|state|region|island|beach|place|village|"
            r"county|province|district|continent|street))\b",
            AnswerType.PLACE,
        ),
        (r"\b(?:which|what)\b", AnswerType.NAME),
    )
)

_YEAR = re.compile(r"\b(?:1[5-9]\d\d|20\d\d)s?\b")
_MONTH = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\d|\b(?:hundred|thousand|million|billion|trillion|dozen|twice|"
    r"half|percent|per cent)\b",
    re.IGNORECASE,
)
# A capitalised word that is not the first of its sentence, or a run of two; or an identifier
# (snake_case, dotted.name, a version "5.2", a slash name): the shapes names take.
_CAPITAL = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'’\-]*[a-z0-9][\w'’\-]*\b")
_CALENDAR = re.compile(
    r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|"
    r"May|June|July|August|September|October|November|December)"
)
_NAME_RUN = re.compile(
    r"[A-Z][\w'’\-]+(?:\s+(?:(?:van|von|de|der|den|da|di|del|la|le|bin|al)"
    r"\s+)*[A-Z][\w'’\-]+)+"
)
_IDENT = re.compile(r"\b\w+(?:[_/]\w+)+\b|\b[A-Za-z]+\d[\w.]*\b|\b\d+\.\d+(?:\.\d+)*\b")


def _has_run_at_start(sentence: str, query: Query) -> bool:
    """A name that opens the sentence ("Ana Ruiz, 41, won ...") is missed by _CAPITAL, which
    skips a sentence's first word."""
    m = _NAME_RUN.match(sentence.lstrip("\"“‘'("))
    if not m:
        return False
    parts = [normalize(w) for w in m.group(0).split()]
    return any(p not in query.surface for p in parts) and not _CALENDAR.match(m.group(0))


# Words that ask about a topic's many sides rather than one fact ("What are the health effects
# of coffee?" wants no name, though it starts with "what"). A guess, flagged as one.
SCOPE = re.compile(
    r"\b(?:effects?|impacts?|consequences?|benefits?|risks?|harms?|advantages?|"
    r"disadvantages?|pros|cons|evidence|known|overview|implications?)\b",
    re.IGNORECASE,
)


def answer_type(question: str) -> AnswerType:
    if SCOPE.search(question) and not re.search(
        r"\b(?:which|who|whom|whose|when|where)\b", question, re.IGNORECASE
    ):
        kind = next((k for p, k in _TYPE_RULES if p.search(question)), AnswerType.ANY)
        return kind if kind in (AnswerType.NUMBER, AnswerType.DATE) else AnswerType.ANY
    for pattern, kind in _TYPE_RULES:
        if pattern.search(question):
            return kind
    return AnswerType.ANY


@dataclass(frozen=True)
class Query:
    text: str
    weights: dict[str, float]  # term -> idf
    kind: AnswerType
    # Words of the question as written (lower-cased), so a cue can tell a new name from one
    # the question already holds.
    surface: frozenset[str]

    @property
    def total(self) -> float:
        return sum(self.weights.values())

    @classmethod
    def of(cls, text: str, stats: TermStats) -> Query:
        ts = {} if is_broad(text) else dict.fromkeys(content_terms(text))
        return cls(
            text,
            {t: stats.idf(t) for t in ts},
            answer_type(text),
            frozenset(normalize(w) for w in re.findall(r"[\w'’.\-]+", text)),
        )


@dataclass(frozen=True)
class Relevance:
    value: float  # 0..1
    own: float
    context: float
    cue: bool
    restates: bool

    def explain(self) -> str:
        parts = [f"{self.value:.2f} = question terms in the sentence {self.own:.2f}"]
        if self.context:
            parts.append(f"+ around it {self.context:.2f}")
        if self.cue:
            parts.append("+ holds the kind of answer asked for")
        if self.restates:
            parts.append("x restates the question only")
        return " ".join(parts)


def _has_cue(sentence: str, query: Query) -> bool:
    kind = query.kind
    if kind is AnswerType.ANY:
        return False
    if kind is AnswerType.NUMBER:
        q_nums = set(re.findall(r"\d[\d.,]*", query.text))
        return any(m not in q_nums for m in re.findall(r"\d[\d.,]*", sentence)) or bool(
            _NUMBER.search(re.sub(r"\d", "", sentence)) and not _NUMBER.search(query.text)
        )
    if kind is AnswerType.DATE:
        years = [y for y in _YEAR.findall(sentence) if y not in query.text]
        return bool(years) or bool(_MONTH.search(sentence) and re.search(r"\d", sentence))
    names = [m for m in _CAPITAL.finditer(sentence) if not _CALENDAR.fullmatch(m.group(0))]
    new = [
        m
        for m in names
        if normalize(possessive_free(m.group(0))) not in query.surface
        and normalize(m.group(0)) not in query.surface
    ]
    if kind is AnswerType.PERSON:
        # A person is named with two capitalised words or more ("Ana Ruiz", "Laurens van der
        # Maaten" has two); one new capitalised word is as often a place or a weekday.
        return any(_NAME_RUN.match(sentence, m.start()) for m in new) or _has_run_at_start(
            sentence, query
        )
    if kind is AnswerType.PLACE:
        return bool(new)
    idents = [
        m.group(0) for m in _IDENT.finditer(sentence) if normalize(m.group(0)) not in query.surface
    ]
    return bool(new or idents or re.search(r"[\"“‘][^\"”’]{2,60}[\"”’]", sentence))


def score(
    query: Query, stats: TermStats, sentence: str, context: Sequence[str] = (), title: str = ""
) -> Relevance:
    total = query.total
    if total <= 0:
        return Relevance(0.0, 0.0, 0.0, False, False)
    own_terms = content_terms(sentence)
    tf = Counter(own_terms)
    norm = K1 * (1 - B + B * len(own_terms) / max(stats.avg_len, 1.0))
    own = sum(w * tf[t] * (K1 + 1) / (tf[t] + norm) for t, w in query.weights.items() if tf[t])
    own = min(own / total, 1.0)
    have = set(own_terms)
    around = {t for c in context for t in content_terms(c)} - have
    in_title = set(content_terms(title)) - have - around
    ctx = sum(w for t, w in query.weights.items() if t in around) * CONTEXT_WEIGHT
    ctx += sum(w for t, w in query.weights.items() if t in in_title) * TITLE_WEIGHT
    ctx = ctx / total
    cue = (own > 0 or ctx > 0) and _has_cue(sentence, query)
    # Context lifts a sentence that holds the kind of answer asked for, or that is itself on
    # the question: the sentence after a topic sentence is not an answer just for being there.
    if not cue and own < CONTEXT_NEEDS_OWN:
        ctx = 0.0
    topical = min(own + ctx, 1.0)
    value = (1 - CUE_WEIGHT) * topical + (CUE_WEIGHT * topical if cue else 0.0)
    restates = bool(have) and have <= set(query.weights)
    if restates:
        value *= RESTATEMENT_FACTOR
    return Relevance(
        round(min(max(value, 0.0), 1.0), 4), round(own, 4), round(ctx, 4), cue, restates
    )


def blend_with_grade(lexical: float, grade: int | None) -> float:
    """A model's grade (0..3) and the lexical score, half and half: the model reads meaning the
    words miss, the words keep a model that grades everything 3 honest."""
    if grade is None:
        return lexical
    g = min(max(grade, 0), 3) / 3
    return round((1 - MODEL_GRADE_WEIGHT) * lexical + MODEL_GRADE_WEIGHT * g, 4)


def combine(to_question: float, to_sub_question: float) -> float:
    """A claim answers the question directly, or answers one of its parts: a part's answer
    covers only part of the question's words, so the sub-question lifts it half way."""
    return round(to_question + 0.5 * max(0.0, to_sub_question - to_question), 4)
