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

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from mole_dag.mining.answer_types import AnswerType, answer_type
from mole_dag.mining.furniture import restates_question
from mole_dag.mining.question_terms import (
    is_broad,
    scope_terms,
    setting_terms,
)
from mole_dag.mining.relevance_records import Evidence, Relevance
from mole_dag.mining.synonyms import lexicon
from mole_dag.text import (
    STOPWORDS,
    TermStats,
    content_terms,
    normalize,
    possessive_free,
    sentence_spans,
)

# BM25's usual constants (Robertson's defaults).
K1 = 1.2
B = 0.75
# Sentences either side that count as context, within the same paragraph.
CONTEXT_WINDOW = 2
# The terms a question names its document with ("according to the Rcpp FAQ") are credited by the
# document rather than the sentence (scope_terms). Off only to measure what it does.
SCOPE_BY_DOCUMENT = True
# What a question term found only as a near-synonym ("chosen" in the question, "selected" in the
# sentence; mining.synonyms) counts for, as a share of the term's weight. A guess, flagged as
# one; 0 turns near-synonyms off.
NEAR_SHARE = 0.4
# What a term of the question's setting counts for, against a term of what it asks ("In the
# rotarod data that coin's paper uses, what did the 24 rats receive?": "rotarod" sets the
# scene, "rats" and "receive" are asked about), as a share of its weight. A guess, flagged as
# one; 1 treats the setting like the rest.
SETTING_SHARE = 0.5


@dataclass(frozen=True)
class Weights:
    """How the parts of relevance add up. Each is a guess, flagged as one; bench/qa.py's
    held-out check (tune on half the questions, score the other half) is what says whether a
    value holds beyond the questions it was tried on."""

    # How much the neighbouring sentences and the page title add to a sentence's own match:
    # context can lift a sentence that names the answer but not the topic, never make it as
    # relevant as one that states both.
    context: float = 0.5
    title: float = 0.3
    # Without an answer-type cue, a sentence needs this much of the question in its own words
    # before its context counts.
    context_needs_own: float = 0.25
    # Share of the score that the answer-type cue decides.
    cue: float = 0.25
    # A sentence with no content word beyond the question's restates it: it cannot hold the
    # answer.
    restatement: float = 0.5


WEIGHTS = Weights()
# Score with the learned ranking (mining.ranker: features weighed by a model fitted outside
# this project's question sets, meaning among them) rather than the hand-set Weights below.
# Off by default, by measurement (BENCHMARKS.md, issue 30): it beats the hand weights on both
# unseen question sets but falls under DEV's floors and costs a cold PDF session 2.8x its time.
# MOLE_RANKING=learned turns it on.
RANKING = os.environ.get("MOLE_RANKING", "").strip().lower()
LEARNED = RANKING == "learned"
# MOLE_RANKING=fused: a claim's relevance is the mean of the two scores, the hand-weighted word
# score and the learned probability (CombSUM, equal weights: a fusion with nothing fitted, on
# these question sets or any other). Sentences are mined by the word score alone, so a session
# embeds only what it mined. Off by default, by measurement (BENCHMARKS.md, issue 30, fourth
# pass): it keeps DEV's figures and gains one question on each unseen set, too little to
# tell from chance, for 1.3x a cold demo session's time.
FUSED = RANKING == "fused"
# How much a model's grade (0..3) weighs against the lexical score when a model mined the claim.
MODEL_GRADE_WEIGHT = 0.5


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
# A reference to an author's work: "(Mullahy 1986)", "(Kuan and Hornik, 1995)", "Rosenbaum
# (1994)", "Smith et al. (2001)". The name is group 1 (inside the brackets) or group 2.
_NAME_WORD = r"[A-Z][a-z][\w'’\-]+"
_CO_AUTHORS = rf"(?:\s+et\s+al\.?|\s+(?:and|&)\s+{_NAME_WORD})?"
_WORK_YEAR = r"(?:1[6-9]\d\d|20\d\d)[a-z]?"
_AUTHOR_YEAR = re.compile(
    rf"\(\s*({_NAME_WORD}){_CO_AUTHORS},?\s+{_WORK_YEAR}\b"
    rf"|\b({_NAME_WORD}){_CO_AUTHORS}\s+\({_WORK_YEAR}\)"
)
_IDENT = re.compile(r"\b\w+(?:[_/]\w+)+\b|\b[A-Za-z]+\d[\w.]*\b|\b\d+\.\d+(?:\.\d+)*\b")


def _has_run_at_start(sentence: str, query: Query) -> bool:
    """A name that opens the sentence ("Ana Ruiz, 41, won ...") is missed by _CAPITAL, which
    skips a sentence's first word."""
    m = _NAME_RUN.match(sentence.lstrip("\"“‘'("))
    if not m:
        return False
    words = m.group(0).split()
    if normalize(words[0]) in STOPWORDS:
        # "In March ...", "The Hague ...": a capitalised function word opens the sentence, the
        # run after it is one word.
        words = words[1:]
    if len(words) < 2 or any(_CALENDAR.fullmatch(w) for w in words):
        return False
    return any(normalize(w) not in query.surface for w in words)


@dataclass(frozen=True)
class Query:
    text: str
    weights: dict[str, float]  # term -> idf
    kind: AnswerType
    # Words of the question as written (lower-cased), so a cue can tell a new name from one
    # the question already holds.
    surface: frozenset[str]
    # Terms that only say which document to look in (scope_terms): credited by the document.
    scope: frozenset[str] = frozenset()
    # Near-synonyms of each term (mining.synonyms), minus the question's own terms.
    near: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.weights.values())

    @classmethod
    def of(cls, text: str, stats: TermStats) -> Query:
        ts = {} if is_broad(text) else dict.fromkeys(content_terms(text))
        lex = lexicon()
        near = {t: lex.near_terms(t) - ts.keys() for t in ts}
        scope = frozenset(t for t in scope_terms(text) if t in ts)
        setting = setting_terms(text) - scope
        return cls(
            text,
            {t: stats.idf(t) * (SETTING_SHARE if t in setting else 1.0) for t in ts},
            answer_type(text),
            frozenset(normalize(w) for w in re.findall(r"[\w'’.\-]+", text)),
            scope,
            {t: n for t, n in near.items() if n},
        )

    def near_in(self, term: str, terms: Iterable[str]) -> str | None:
        """The first of `terms` that is a near-synonym of the question's `term`."""
        near = self.near.get(term)
        if not near:
            return None
        base = lexicon().base
        return next((s for s in terms if s in near or base(s) in near), None)


def _has_cue(sentence: str, query: Query) -> bool:
    kind = query.kind
    if kind is AnswerType.ANY:
        # No kind of answer to look for. (A negation was the cue of a question asked in the
        # negative until issue 30's ablation: it moved one DEV question and no unseen one.)
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
        # Maaten" has two); one new capitalised word is as often a place or a weekday. A paper
        # names one by surname and year ("Mullahy (1986)", "Rosenbaum 1994", "Kuan and Hornik
        # 1995").
        return (
            any(_NAME_RUN.match(sentence, m.start()) for m in new)
            or _has_run_at_start(sentence, query)
            or any(
                normalize(name) not in query.surface
                for m in _AUTHOR_YEAR.finditer(sentence)
                if (name := m.group(1) or m.group(2))
            )
        )
    if kind is AnswerType.PLACE:
        return bool(new)
    idents = [
        m.group(0) for m in _IDENT.finditer(sentence) if normalize(m.group(0)) not in query.surface
    ]
    return bool(new or idents or re.search(r"[\"“‘][^\"”’]{2,60}[\"”’]", sentence))


NO_EVIDENCE = Evidence(0.0, 0.0, 0.0, False, False)


def evidence(
    query: Query,
    stats: TermStats,
    sentence: str,
    context: Sequence[str] = (),
    title: str = "",
    document: DocumentTerms | None = None,
) -> Evidence:
    """`document`: the content terms of the sentence's whole document and of its title, where
    the caller knows them. The question's scope terms are then credited by the document, not
    by the sentence; without it they count like any other term."""
    total = query.total
    if total <= 0:
        return NO_EVIDENCE
    scoped = query.scope if (SCOPE_BY_DOCUMENT and document is not None) else frozenset()
    own_terms = content_terms(sentence)
    tf = Counter(own_terms)
    have = set(own_terms)
    topical = {t: w for t, w in query.weights.items() if t not in scoped}
    norm = K1 * (1 - B + B * len(own_terms) / max(stats.avg_len, 1.0))
    own = sum(w * tf[t] * (K1 + 1) / (tf[t] + norm) for t, w in topical.items() if tf[t])
    # A term the sentence says another way counts at NEAR_SHARE, and at most as much as the
    # word it is said with: a common word does not stand in for a rare one.
    near_own: dict[str, str] = {}
    if NEAR_SHARE > 0 and query.near:
        for t, w in topical.items():
            if tf[t]:
                continue
            s = query.near_in(t, tf)
            if s is not None:
                near_own[t] = s
                own += NEAR_SHARE * min(w, stats.idf(s)) * tf[s] * (K1 + 1) / (tf[s] + norm)
    own = min(own / total, 1.0)
    named = sum(w for t, w in query.weights.items() if t in scoped)
    in_document = sum(
        w * document.holds(t) for t, w in query.weights.items() if t in scoped and document
    )
    near = {t for c in context for t in content_terms(c)} - have
    in_title = set(content_terms(title)) - have - near
    around = sum(w for t, w in topical.items() if t in near)
    if NEAR_SHARE > 0 and query.near:
        for t, w in topical.items():
            if t in have or t in near or t in near_own:
                continue
            s = query.near_in(t, near)
            if s is not None:
                around += NEAR_SHARE * min(w, stats.idf(s))
    around /= total
    titled = sum(w for t, w in topical.items() if t in in_title) / total
    cue = (own > 0 or around > 0 or titled > 0) and _has_cue(sentence, query)
    restates = bool(have) and have <= set(query.weights)
    return Evidence(
        round(own, 4),
        round(around, 4),
        round(titled, 4),
        cue,
        restates,
        round(min(in_document / total, 1.0), 4),
        round(min(named / total, 1.0), 4),
        tuple((s, t) for t, s in near_own.items()),
    )


# What a heading or FAQ entry restating the question scores (furniture.restates_question).
RESTATES = Relevance(0.0, 0.0, 0.0, False, True, heading=True)


def _surface(text: str, term: str) -> str:
    """The first word of `text` whose term is `term`, as written: what an explanation shows."""
    return next((w for w in re.findall(r"[\w'’\-]+", text) if term in content_terms(w)), term)


def weigh(ev: Evidence, weights: Weights = WEIGHTS) -> Relevance:
    # Where the question names its document, the sentence is scored on the rest of the
    # question (its shares rescaled to the rest's weight), then scaled by how much of the
    # named document's words its document holds: within the document the naming words order
    # nothing, and a document without them ranks below one with them. Multiplied, not added,
    # so that a sentence sharing nothing with the rest of the question stays at 0.
    rest = 1.0 - ev.scoped if 0.0 < ev.scoped < 1.0 else 1.0
    own, around, title = ev.own / rest, ev.around / rest, ev.title / rest
    ctx = around * weights.context + title * weights.title
    # Context lifts a sentence that holds the kind of answer asked for, or that is itself on
    # the question: the sentence after a topic sentence is not an answer just for being there.
    if not ev.cue and own < weights.context_needs_own:
        ctx = 0.0
    topical = min(own + ctx, 1.0)
    value = (1 - weights.cue) * topical + (weights.cue * topical if ev.cue else 0.0)
    if ev.restates:
        value *= weights.restatement
    if rest < 1.0:
        value *= rest + ev.scope
    return Relevance(
        round(min(max(value, 0.0), 1.0), 4),
        ev.own,
        round(ctx, 4),
        ev.cue,
        ev.restates,
        ev.scope,
    )


def said_otherwise(rel: Relevance, ev: Evidence, sentence: str, question: str) -> Relevance:
    """`rel` with the words the sentence says another way, as the two texts write them."""
    if not ev.said:
        return rel
    pairs = tuple((_surface(sentence, a), _surface(question, b)) for a, b in ev.said)
    return replace(rel, said=pairs)


def score(
    query: Query,
    stats: TermStats,
    sentence: str,
    context: Sequence[str] = (),
    title: str = "",
    weights: Weights = WEIGHTS,
    document: DocumentTerms | None = None,
    fused: bool = False,
) -> Relevance:
    """How well a sentence answers the question: by the learned ranking (LEARNED), else by the
    hand weights; FUSED, by the mean of the two (fuse), from the same evidence."""
    if restates_question(sentence, query.text):
        return RESTATES
    ev = evidence(query, stats, sentence, context, title, document)
    if fused and weights is WEIGHTS:
        from mole_dag.mining.ranker import rank

        rel = fuse(weigh(ev, weights), rank(query, ev, sentence))
    elif LEARNED and weights is WEIGHTS:
        from mole_dag.mining.ranker import rank

        rel = rank(query, ev, sentence)
    else:
        rel = weigh(ev, weights)
    return said_otherwise(rel, ev, sentence, query.text)


def fuse(words: Relevance, learned: Relevance) -> Relevance:
    """MOLE_RANKING=fused: the mean of the word score and the learned probability, explained by
    both. (A restated question or another document's quote is scored 0 before either.)"""
    value = round((words.value + learned.value) / 2, 4)
    how = f" ({learned.decided})" if learned.decided else ""
    said = f"mean of the word score {words.value:.2f} and the learned {learned.value:.2f}{how}"
    return replace(words, value=value, decided=said)


# What a sentence of a source scores for a question that quotes another source's title.
OTHER_TITLE = Relevance(0.0, 0.0, 0.0, False, False, other_title=True)


def score_stretch(
    query: Query,
    stats: TermStats,
    text: str,
    context: Sequence[str] = (),
    title: str = "",
    weights: Weights = WEIGHTS,
    document: DocumentTerms | None = None,
    titles_quoted: tuple[frozenset[str], ...] = (),
    fused: bool = False,
) -> Relevance:
    """A quote of several sentences ("... can not be converted to bool. Instead one must use
    is_true ...") scores as its best sentence, the others its context: scored whole, the
    length normalisation would rank it below either sentence alone. One sentence scores as
    score() does.

    `titles_quoted`: the titles of sources read that the question quotes (quoted_titles: "the
    effects vignette 'Examples of Effect Displays with Partial Residuals'"). A quote from a
    source whose title is none of them scores 0: the question says which document it asks
    about, by name, and its sibling documents share its words without being it."""
    if (
        titles_quoted
        and document is not None
        and not any(p <= document.title for p in titles_quoted)
    ):
        return OTHER_TITLE
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return score(query, stats, text, context, title, weights, document, fused)
    members = [text[a:b] for a, b in spans]
    return max(
        (
            score(
                query,
                stats,
                m,
                [*context, *members[:i], *members[i + 1 :]],
                title,
                weights,
                document,
                fused,
            )
            for i, m in enumerate(members)
        ),
        key=lambda r: r.value,
    )


@dataclass(frozen=True)
class DocumentTerms:
    """The content terms of a document's title and of its text: what a question's scope terms
    are looked for in. A question names a document by its title ("the effects vignette
    'Examples of Effect Displays with Partial Residuals'"), and its sibling documents use the
    same words in their text: a term in the title counts in full, one only in the text
    counts TEXT_SHARE."""

    title: frozenset[str]
    text: frozenset[str]

    def holds(self, term: str) -> float:
        if term in self.title:
            return 1.0
        return TEXT_SHARE if term in self.text else 0.0


# What a scope term found only in a document's text (not its title) counts for. A guess,
# flagged as one.
TEXT_SHARE = 0.5


def document_terms(sentences: Iterable[str], title: str = "") -> DocumentTerms:
    """A document's terms from its sentences and its title."""
    text: set[str] = set()
    for s in sentences:
        text.update(content_terms(s))
    return DocumentTerms(frozenset(content_terms(title)), frozenset(text))


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
