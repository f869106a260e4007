"""Extractive judging and grounding (no model). A judge without a model says only what it can
show (issue 31): two claims contradict when they have the same frame (the same subject, the same
attribute, the same entities, citations, populations and places) and differ in one value (a
figure, a direction such as "raises" against "lowers") or one states what the other explicitly
negates. Anything else, including two claims about different entities that share a figure's
shape, is `neither`: when in doubt, no edge. The rationale names the subject, the attribute and
both values. Near-identical claims with the same entities and figures duplicate. Grounding can
only recognise a verbatim claim."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from mole_dag.actors.quote import collapse
from mole_dag.skills.protocol import GroundRequest, GroundVerdict, Verdict
from mole_dag.text import NEGATIONS, STOPWORDS, normalize, stem

# Content-word Jaccard above which two claims with the same entities and figures are the same
# assertion. A guess, flagged as such; the labelled pairs of bench/claim_graph.py measure it.
DUPLICATE_OVERLAP = 0.8
# Content words and entities two claims must share, beyond the value they differ in, before a
# difference can be a dispute: fewer, and the shared frame is too thin to name a subject and an
# attribute. A guess, flagged as one.
MIN_SHARED_FRAME = 3


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
        ("growing", "shrinking"),
        ("warming", "cooling"),
    ]
}
_DIRECTIONAL = frozenset(w for pair in _ANTONYMS for w in pair)

_PUNCT = "\"'“”‘’()[]{}<>,;:!?*"
_VALUE = re.compile(r"^[-+\u2212]?\$?\d[\d.,\-\u2013/:%]*(?:st|nd|rd|th|s|%)?$")
_YEAR = re.compile(r"^(?:1[5-9]|20)\d\d[a-z]?$")
# Words after which a number names a thing rather than measures it ("version 1.3-17",
# "Theorem 2.3", "Section 4"): the number is part of the entity.
_LABELS = frozenset(
    "version release theorem lemma section table figure fig equation eq chapter page appendix "
    "item line step model type class".split()
)
# Marks of a name in code or on the web: "package=boot", "stats::lm", "aggregate.zoo", a URL.
_CODE_NAME = re.compile(r"[=_@$/\\]|::|\w\(|\w\.\w*[a-z]")


@dataclass(frozen=True)
class _Token:
    text: str  # as written, its surrounding punctuation stripped
    kind: str  # "entity" | "value" | "negation" | "content" | "stop"
    key: str  # what is compared: the stem of a content word, the lower-cased entity or value


@dataclass(frozen=True)
class _Frame:
    """What the judge reads from one claim: its tokens in order, and what it compares."""

    tokens: tuple[_Token, ...]
    content: Counter[str]  # stems of content words, directional words included
    entities: frozenset[str]
    values: frozenset[str]
    negated: bool
    question: bool

    def content_terms(self) -> frozenset[str]:
        return frozenset(self.content)


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pieces = text.split()
    sentence_start = True
    for i, piece in enumerate(pieces):
        word = piece.strip(_PUNCT).rstrip(".")
        in_parens = piece.startswith("(") or piece.endswith(")")
        if not word:
            sentence_start = piece.rstrip(_PUNCT[:7]).endswith((".", "!", "?", ":"))
            continue
        low = normalize(word)
        prev = out[-1] if out else None
        if _VALUE.match(word):
            # A number right after a name or a label names a thing ("Python 3.6", "version
            # 1.3-17"), also after a capitalised first word, which is not marked an entity.
            named = prev is not None and (
                prev.kind == "entity"
                or prev.key in _LABELS
                or (len(out) == 1 and prev.text[:1].isupper())
            )
            # A year in parentheses or after a name is a citation's: part of which work is meant.
            cited = _YEAR.match(low) is not None and (in_parens or named)
            # A figure heading the claim before a colon ("1924/1925: the index changed ...")
            # is when or where it holds, a condition of the claim, not its value.
            label = i < 3 and piece.endswith(":")
            kind = "entity" if named or cited or label else "value"
            # One figure however its range is dashed: "95-100%" is "95–100%".
            out.append(_Token(word, kind, re.sub("[\u2010-\u2015\u2212]", "-", low)))
        elif low in NEGATIONS or (low == "longer" and prev is not None and prev.key == "no"):
            out.append(_Token(word, "negation", low))
        elif (
            _CODE_NAME.search(word)
            or (word[:1].isupper() and not sentence_start and any(c.isalpha() for c in word))
            or (len(word) > 1 and word.isupper() and word.isalpha())
        ):
            out.append(_Token(word, "entity", low))
        elif stem(low) in _DIRECTIONAL:
            # "more" / "less", "above" / "below" are stopwords, and the value a claim states.
            out.append(_Token(word, "content", stem(low)))
        elif low in STOPWORDS or len(low) < 2:
            out.append(_Token(word, "stop", low))
        else:
            out.append(_Token(word, "content", stem(low)))
        sentence_start = piece.endswith((".", "!", "?", ":")) and i + 1 < len(pieces)
    return out


# A claim meets up to 8 candidates and is a candidate of as many (issue 14: recomputing its
# words for every pair was most of the verifier's time); the size is a guess that holds a large
# session's claims.
@lru_cache(maxsize=16_384)
def _frame(text: str) -> _Frame:
    toks = tuple(_tokens(text))
    return _Frame(
        tokens=toks,
        content=Counter(t.key for t in toks if t.kind == "content"),
        entities=frozenset(t.key for t in toks if t.kind == "entity"),
        values=frozenset(t.key for t in toks if t.kind == "value"),
        # Two negations make a statement ("Without variation there would be no evolution").
        # "no longer" is one negation.
        negated=sum(1 for t in toks if t.kind == "negation" and t.key != "longer") % 2 == 1,
        question=text.rstrip().rstrip(_PUNCT[:7]).endswith("?"),
    )


# A claim that opens on its condition ("If there was no glob match, ...", "When ...",
# "Otherwise ..."): the condition runs to the first comma, semicolon or colon.
_CONDITION = re.compile(r"\W*(?:if|when|whenever|unless|otherwise|in case)\b[^,;:]*", re.I)


def _different_cases(a: str, b: str) -> bool:
    """Both claims are conditional and their conditions differ: each says what holds in its
    own case ("If there was no glob match, use the magic match" / "If there is one matching
    glob, use its type"), so a difference between them is two cases, not a contradiction.
    Under the same condition it still is one."""
    ma, mb = _CONDITION.match(a), _CONDITION.match(b)
    if ma is None or mb is None:
        return False
    ca, cb = _frame(ma.group(0)), _frame(mb.group(0))
    return (ca.content_terms(), ca.negated) != (cb.content_terms(), cb.negated)


def _subject(f: _Frame, before: int) -> str:
    """The claim's subject as written: its entities and content words before position `before`
    (the value, the negation or the direction word), at most six."""
    named = [t for t in f.tokens[:before] if t.kind in ("content", "entity")]
    if not named:
        # The value opens the claim ("20 percent of adults smoke"): its subject follows.
        named = [t for t in f.tokens[before + 1 :] if t.kind in ("content", "entity")][1:]
    return " ".join(t.text for t in named[:6]) or "-"


def _attribute(f: _Frame, at: int) -> str:
    """What the value at position `at` measures: the word right after it ("20 percent",
    "330 metres"), else the content word before it ("opened in 1931", "rose to 20")."""
    near = f.tokens[at + 1 : at + 2]
    if near and near[0].kind in ("content", "entity"):
        return near[0].text
    for t in reversed(f.tokens[max(0, at - 3) : at]):
        if t.kind in ("content", "entity"):
            return t.text
    for t in f.tokens[at + 1 : at + 4]:
        if t.kind in ("content", "entity"):
            return t.text
    return "-"


def _index(f: _Frame, kind: str, keys: frozenset[str] | None = None) -> int:
    for i, t in enumerate(f.tokens):
        if t.kind == kind and (keys is None or t.key in keys):
            return i
    return len(f.tokens)


# Where a claim's main clause ends and its reason or concession begins ("... is no longer
# classified as a toxin because the reports were not confirmed").
_SUBORDINATE = re.compile(r"\s(?:because|since|although|though|whereas|while|but)\s", re.I)


def _main_clause(text: str) -> str | None:
    m = _SUBORDINATE.search(text)
    return text[: m.start()] if m else None


def _negation(neg: _Frame) -> str:
    """The rationale of a negation: the subject, what is negated, and both values."""
    at = _index(neg, "negation")
    word = " ".join(t.text for t in neg.tokens if t.kind == "negation")
    after = [t.text for t in neg.tokens[at + 1 :] if t.kind in ("content", "entity")]
    head = after[0] if after else "-"
    return (
        f"subject: {_subject(neg, at)}; attribute: {' '.join(after[:5]) or '-'}; values: "
        f"'{head}' vs '{word} {head}' (one states it, the other negates it)"
    )


def _dispute(a: str, b: str) -> str | None:
    """Why `a` and `b` contradict, naming subject, attribute and both values, or None: over
    the whole claims, else over their main clauses when both have a reason or a concession
    after them (two claims that agree or disagree in what they state, each with its own
    because-clause)."""
    why = _dispute_in(a, b)
    if why is None:
        ma, mb = _main_clause(a), _main_clause(b)
        if ma and mb:
            why = _dispute_in(ma, mb)
    return why


def _denies(text: str, f: _Frame) -> bool:
    """Whether a negated claim denies its main statement: the negation stands in its main
    clause ("is not accelerating"), not in a concession after it ("provides many of the
    methods, but not all"), and a content word follows it (what is denied; "not all" denies a
    quantity, which is no statement's opposite)."""
    main = _main_clause(text)
    if main is not None and not _frame(main).negated:
        return False
    at = _index(f, "negation")
    return any(t.kind in ("content", "entity") for t in f.tokens[at + 1 :])


def _dispute_in(a: str, b: str) -> str | None:
    fa, fb = _frame(a), _frame(b)
    if fa.question or fb.question or _different_cases(a, b):
        return None
    if fa.negated != fb.negated and not _denies(a if fa.negated else b, fa if fa.negated else fb):
        # The negation is in a concession or denies nothing a statement says: no dispute by
        # negation, and the polarity differs, so none by a figure or a direction either.
        return None
    if fa.negated != fb.negated:
        neg, pos = (fa, fb) if fa.negated else (fb, fa)
        # The negated claim's whole frame (its content words, entities and figures) is in the
        # other, which states it with more detail ("sea-level rise is not accelerating" against
        # "accelerated sea-level rise detected in the altimeter era"): the other implies what
        # the first denies. The other way round ("does not raise the risk in older adults"
        # against "raises the risk in adults") the denial is of a narrower claim: no edge.
        frame = len(neg.content_terms() - _DIRECTIONAL) + len(neg.entities)
        if (
            frame >= MIN_SHARED_FRAME
            and neg.content_terms() <= pos.content_terms()
            and neg.entities <= pos.entities
            and neg.values <= pos.values
        ):
            return _negation(neg)
    # Different entities, citations, places or versions: two things, not one disputed.
    if fa.entities != fb.entities:
        return None
    shared = fa.content_terms() & fb.content_terms()
    only_a = fa.content_terms() - fb.content_terms()
    only_b = fb.content_terms() - fa.content_terms()
    if len(shared - _DIRECTIONAL) + len(fa.entities) < MIN_SHARED_FRAME:
        return None
    if not only_a and not only_b:
        va, vb = fa.values - fb.values, fb.values - fa.values
        if fa.negated != fb.negated and not va and not vb:
            return _negation(fa if fa.negated else fb)
        if va and vb and fa.negated == fb.negated:
            ia = _index(fa, "value", va)
            ib = _index(fb, "value", vb)
            attr_a, attr_b = _attribute(fa, ia), _attribute(fb, ib)
            # The differing figures measure the same thing, or it is two figures of two things.
            if normalize(attr_a) != normalize(attr_b):
                return None
            return (
                f"subject: {_subject(fa, ia)}; attribute: {attr_a}; different figures "
                f"({', '.join(sorted(va))} vs {', '.join(sorted(vb))})"
            )
        return None
    # A direction word each ("raises" / "lowers"), everything else the same.
    if len(only_a) == 1 and len(only_b) == 1 and fa.negated == fb.negated:
        x, y = next(iter(only_a)), next(iter(only_b))
        if frozenset((x, y)) in _ANTONYMS and fa.values == fb.values:
            ia = _index(fa, "content", frozenset({x}))
            ib = _index(fb, "content", frozenset({y}))
            after = [t.text for t in fa.tokens[ia + 1 :] if t.kind in ("content", "entity")]
            return (
                f"subject: {_subject(fa, ia)}; attribute: {' '.join(after[:4]) or '-'}; "
                f"opposite directions ({fa.tokens[ia].text} / {fb.tokens[ib].text})"
            )
    return None


def _overlap(a: str, b: str) -> float:
    fa, fb = _frame(a), _frame(b)
    ta = fa.content_terms() | fa.entities | fa.values
    tb = fb.content_terms() | fb.entities | fb.values
    union = ta | tb
    return len(ta & tb) / len(union) if union else 0.0


def judge_pair(a: str, b: str) -> Verdict:
    overlap = _overlap(a, b)
    why = _dispute(a, b)
    if why is not None:
        return Verdict(0, "contradicts", f"heuristic: {why}; word overlap {overlap:.2f}")
    fa, fb = _frame(a), _frame(b)
    same = fa.entities == fb.entities and fa.values == fb.values and fa.negated == fb.negated
    if overlap >= DUPLICATE_OVERLAP and same:
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
