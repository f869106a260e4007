"""Extractive judging and grounding (no model). Heuristics, flagged as such in what they write:
word-overlap pairs whose polarity or direction words differ, or that each give a figure the
other lacks, contradict (unless both are conditional on different conditions); near-identical
pairs duplicate; everything else is `neither`. Grounding can only recognise a verbatim claim."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from mole_dag.actors.quote import collapse
from mole_dag.skills.protocol import GroundRequest, GroundVerdict, Verdict
from mole_dag.text import NEGATIONS, stem, terms, words

# Content-word Jaccard above which two claims are the same assertion, and above which a
# difference in polarity, direction or number reads as a contradiction. Guesses, flagged as
# such; the labelled pair set behind `mole eval` is what would calibrate them.
DUPLICATE_OVERLAP = 0.8
CONTRADICTION_OVERLAP = 0.45


_ANTONYMS = {
    frozenset(stem(w) for w in p)
    for p in [
        ("raise", "lower"),
        ("raise", "reduce"),
        ("increase", "decrease"),
        ("increase", "reduce"),
        ("increase", "lower"),
        ("higher", "lower"),
        ("more", "less"),
        ("above", "below"),
        ("improve", "worsen"),
        ("benefit", "harm"),
        ("safe", "unsafe"),
        ("protective", "harmful"),
        ("gain", "loss"),
        ("rise", "fall"),
        ("rise", "decline"),
        ("positive", "negative"),
        ("strong", "weak"),
        ("effective", "ineffective"),
        ("likely", "unlikely"),
    ]
}


# Words that mark a sentence as asserting an effect or a quantity rather than setting a scene.
# Stems, as `terms` produces them.
_EFFECT = frozenset(
    stem(w)
    for w in (
        "risk increase decrease raise lower reduce cause associated link protect protective "
        "improve worsen higher more less percent effect benefit harm safe unsafe classified "
        "evidence found show"
    ).split()
)


_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")


@dataclass(frozen=True)
class _Features:
    """What the heuristics read from one claim's text."""

    terms: frozenset[str]
    negated: bool
    stems: frozenset[str]  # of all words, stopwords included
    numbers: frozenset[str]


# A claim meets up to 8 candidates and is a candidate of as many (issue 14: recomputing its
# words and stems for every pair was most of the verifier's time); the size is a guess that
# holds a large session's claims.
@lru_cache(maxsize=16_384)
def _features(text: str) -> _Features:
    ts = frozenset(terms(text))
    ws = words(text)
    return _Features(
        terms=ts,
        negated=any(w in NEGATIONS for w in ws) or "no longer" in " ".join(ws),
        stems=frozenset(stem(w) for w in ws),
        numbers=frozenset(w for w in ts if _NUMBER.match(w)),
    )


# A claim that opens on its condition ("If there was no glob match, ...", "When ...",
# "Otherwise ..."): the condition runs to the first comma, semicolon or colon.
_CONDITION = re.compile(r"\W*(?:if|when|whenever|unless|otherwise|in case)\b[^,;:]*", re.I)


def _different_cases(a: str, b: str) -> bool:
    """Both claims are conditional and their conditions differ: each says what holds in its
    own case ("If there was no glob match, use the magic match" / "If there is one matching
    glob, use its type"), so a difference of polarity, direction or figures between them is
    two cases, not a contradiction. Under the same condition it still is one."""
    ma, mb = _CONDITION.match(a), _CONDITION.match(b)
    if ma is None or mb is None:
        return False
    ca, cb = _features(ma.group(0)), _features(mb.group(0))
    return (ca.terms, ca.negated) != (cb.terms, cb.negated)


def _signals(a: str, b: str) -> tuple[float, list[str]]:
    fa, fb = _features(a), _features(b)
    ta, tb = fa.terms, fb.terms
    union = ta | tb
    overlap = len(ta & tb) / len(union) if union else 0.0
    why: list[str] = []
    if _different_cases(a, b):
        return overlap, why
    if fa.negated != fb.negated:
        why.append("one states it, the other negates it")
    # Direction words include stopwords ("more", "above"), so they are read from all words.
    only_a, only_b = fa.stems - fb.stems, fb.stems - fa.stems
    for pair in _ANTONYMS:
        x, y = tuple(pair)
        if (x in only_a and y in only_b) or (y in only_a and x in only_b):
            why.append(f"opposite directions ({x} / {y})")
            break
    nums_a, nums_b = fa.numbers, fb.numbers
    # Each gives a figure the other lacks: two figures for one thing. One that only adds a
    # figure to the other's (a citation's year, a theorem's number, "for all j = 1, ..., r")
    # says more, not otherwise.
    if nums_a - nums_b and nums_b - nums_a:
        a_only = ", ".join(sorted(nums_a - nums_b)) or "-"
        b_only = ", ".join(sorted(nums_b - nums_a)) or "-"
        why.append(f"different figures ({a_only} vs {b_only})")
    return overlap, why


def judge_pair(a: str, b: str) -> Verdict:
    overlap, why = _signals(a, b)
    if why and overlap >= CONTRADICTION_OVERLAP:
        return Verdict(0, "contradicts", f"heuristic: {why[0]}; word overlap {overlap:.2f}")
    if overlap >= DUPLICATE_OVERLAP and not why:
        return Verdict(0, "duplicate_of", f"heuristic: word overlap {overlap:.2f}")
    return Verdict(0, "neither", f"heuristic: word overlap {overlap:.2f}")


def ground_claim(req: GroundRequest) -> GroundVerdict:
    """Without a model, support can only be judged where the claim says what the passage says:
    an extractive claim is its own quote, so finding it verbatim again is support (of a narrow
    kind: the page still says it). Anything else is undecided, never unsupported: a heuristic
    must not sink a claim."""
    if collapse(req.claim) in collapse(req.passage):
        return GroundVerdict("supported", "the claim is its quote, and the page still says it")
    return GroundVerdict("undecided", "without a model, only a verbatim claim can be judged")
