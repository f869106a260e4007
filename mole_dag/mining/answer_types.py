"""The kind of answer a question asks for (a person, a number, a date, a place, a name), read
from its wh-word and the noun it asks about; relevance's answer-type cue looks for it."""

from __future__ import annotations

import re
from enum import StrEnum

from mole_dag.text import normalize, possessive_free, stem


class AnswerType(StrEnum):
    PERSON = "person"
    NUMBER = "number"
    DATE = "date"
    PLACE = "place"
    NAME = "name"  # which/what X: a name, a title, an identifier
    ANY = "any"  # yes/no, how, why: no cue


# What the noun a "which"/"what" asks about says about the answer: general English vocabulary,
# not any benchmark's wording. A head noun in none of these asks for a name (a title, a
# product, an organisation). "time" is in none: "what time" is a clock reading, "which time
# class" a name.
_QUANTITY_NOUNS = frozenset(
    stem(w)
    for w in (
        "number amount share percentage percent proportion fraction ratio rate price cost value "
        "temperature height length width depth distance weight mass size speed age population "
        "total count sum score figure level threshold quantile probability frequency duration "
        "volume capacity budget salary revenue margin majority"
    ).split()
)
_TIME_NOUNS = frozenset(
    stem(w) for w in "year date day month decade century era season week weekday".split()
)
_PLACE_NOUNS = frozenset(
    stem(w)
    for w in (
        "city country town state region island beach place village county province district "
        "continent street square road avenue location site area nation capital port river lake "
        "mountain valley park neighbourhood neighborhood address venue stadium"
    ).split()
)
_PERSON_NOUNS = frozenset(
    stem(w)
    for w in (
        "person man woman boy girl child people author writer actor actress singer player "
        "president minister director founder cofounder leader ceo chief secretary attorney "
        "officer engineer developer researcher professor teacher lecturer student judge king "
        "queen prince princess emperor pope bishop captain general commander coach manager "
        "owner editor reporter photographer designer architect inventor explorer composer poet "
        "chairman chairwoman chair spokesperson spokesman spokeswoman ambassador governor mayor "
        "senator member winner athlete husband wife son daughter father mother brother sister "
        "creator maker host presenter producer"
    ).split()
)
# Agent nouns by suffix (scientist, cartoonist, politician, historian), minus the common words
# that end the same way and name no person.
_PERSON_SUFFIX = re.compile(r"(?:ist|ian)s?$")
_NOT_PERSON = frozenset(
    "list wrist twist mist gist fist exist assist insist resist consist persist median "
    "christian italian indian canadian australian russian asian".split()
)
# "how" + one of these asks for a quantity; any other "how" asks for a manner.
_HOW_MUCH = frozenset(
    "many much long far old big large high tall deep fast often heavy wide small short "
    "early late soon".split()
)
# A unit the answer is asked in ("in kelvin", "in metres") asks for a number.
_UNIT = re.compile(
    r"\bin\s+(?:kelvin|celsius|fahrenheit|degrees|met(?:er|re)s|feet|foot|kilomet(?:er|re)s|"
    r"km|miles|kilograms|kg|pounds|tons|tonnes|dollars|euros|pounds|percent|years|months|"
    r"days|hours|minutes|seconds|bytes|megabytes|gigabytes)\b",
    re.IGNORECASE,
)
_WH = re.compile(r"\b(which|what|whose|who|whom|when|where|how|why)\b", re.IGNORECASE)
_COPULA = frozenset("is are was were 's be".split())
_AUX = frozenset(
    "do does did can could will would should shall may might must has have had".split()
)
_DETERMINERS = frozenset("the a an this that these those its their his her".split())
# Words that end the noun phrase after "which"/"what": function words and auxiliaries.
_PHRASE_END = frozenset(
    "of in on at for to from by with about as into than that which who and or but is are was "
    "were be been do does did can could will would should has have had".split()
)


# What "which X" / "what X" asks for when X names no kind known here ("which package", "what
# resolution"): a name, a title or an identifier. A guess, flagged as one; bench/rule_ablation.py
# measures it against asking for no kind in particular.
UNKNOWN_NOUN = AnswerType.NAME


def _noun_kind(word: str) -> AnswerType | None:
    w = possessive_free(normalize(word)).strip(".,;:!?()\"'“”‘’")
    if not w:
        return None
    st = stem(w)
    if st in _QUANTITY_NOUNS:
        return AnswerType.NUMBER
    if st in _TIME_NOUNS:
        return AnswerType.DATE
    if st in _PLACE_NOUNS:
        return AnswerType.PLACE
    if st in _PERSON_NOUNS or (
        len(w) > 5 and _PERSON_SUFFIX.search(w) and w.rstrip("s") not in _NOT_PERSON
    ):
        return AnswerType.PERSON
    return None


def _which_kind(rest: str) -> AnswerType:
    """The kind of answer "which X" / "what is the X of" asks for, from the noun phrase after
    the wh-word: a possessive names what is asked ("which cartoonist's critique" asks for the
    cartoonist); otherwise the last word of the phrase that names a kind (English puts the head
    of a noun phrase last: "which district attorney", "which wine region"); none: a name."""
    tokens = re.findall(r"[\w'’.\-]+|[,;:?!()]", rest)
    copular = bool(tokens) and normalize(tokens[0]) in _COPULA
    if copular:
        tokens = tokens[1:]
        if not tokens or normalize(tokens[0]) not in _DETERMINERS:
            return AnswerType.ANY  # "What is t-SNE?": a definition, not a name
    elif tokens and normalize(tokens[0]) in _AUX:
        return AnswerType.ANY  # "What did the study find?"
    while tokens and normalize(tokens[0]) in _DETERMINERS:
        tokens = tokens[1:]
    phrase: list[str] = []
    for t in tokens[:6]:
        if not re.match(r"\w", t) or normalize(t) in _PHRASE_END:
            break
        phrase.append(t)
        if re.search(r"['’]s?$", t):  # a possessive: the owner is what is asked for
            return _noun_kind(t) or AnswerType.NAME
    for t in reversed(phrase):
        kind = _noun_kind(t)
        if kind is not None:
            return kind
    after = tokens[len(phrase)] if len(tokens) > len(phrase) else "?"
    if copular and after in "?.!":
        return AnswerType.ANY  # "What is a hash map?": asks what it is, not for a name
    return UNKNOWN_NOUN


def _main_wh(question: str) -> re.Match[str] | None:
    """The wh-word the question asks with: the first one, except a leading "When ..., " or
    "Where ..., " clause that sets the scene for a later question word ("When xts converts
    data, which time class does it use?")."""
    found = list(_WH.finditer(question))
    if not found:
        return None
    first = found[0]
    if first.group(1).lower() in ("when", "where") and not question[: first.start()].strip():
        comma = question.find(",", first.end())
        later = [m for m in found[1:] if comma >= 0 and m.start() > comma]
        if later:
            return later[0]
    return first


def answer_type(question: str) -> AnswerType:
    """The kind of answer a question asks for, read from its main wh-word and, after "which"
    or "what", the noun it asks about."""
    m = _main_wh(question)
    if m is None:
        return AnswerType.NUMBER if _UNIT.search(question) else AnswerType.ANY
    wh, rest = m.group(1).lower(), question[m.end() :]
    if wh == "how":
        nxt = re.match(r"\s*(\w+)", rest)
        if nxt and nxt.group(1).lower() in _HOW_MUCH:
            return AnswerType.NUMBER
        return AnswerType.NUMBER if _UNIT.search(question) else AnswerType.ANY
    if wh == "when":
        return AnswerType.DATE
    if wh == "where":
        return AnswerType.PLACE
    if wh in ("who", "whom", "whose"):
        return AnswerType.PERSON
    if wh == "why":
        return AnswerType.ANY
    kind = _which_kind(rest)
    if kind in (AnswerType.NAME, AnswerType.ANY) and _UNIT.search(question):
        return AnswerType.NUMBER
    if kind is AnswerType.NAME and SCOPE.search(question):
        # "What are the health effects of coffee?" asks about a topic's many sides.
        return AnswerType.ANY
    return kind


# Words that ask about a topic's many sides rather than one fact ("What are the health effects
# of coffee?" wants no name, though it starts with "what"). A guess, flagged as one.
SCOPE = re.compile(
    r"\b(?:effects?|impacts?|consequences?|benefits?|risks?|harms?|advantages?|"
    r"disadvantages?|pros|cons|evidence|known|overview|implications?)\b",
    re.IGNORECASE,
)
