"""What a question says besides its kind: the names it holds, the phrases it quotes, the
terms that only name the document to look in, and those that set the scene. Read once per
question, before any sentence is scored."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mole_dag.mining.answer_types import _main_wh
from mole_dag.text import content_terms, possessive_free, stem

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


_NAMED = re.compile(r"[^\W_][\w'’.\-/]*", re.UNICODE)


# A capitalised adjective of origin ("Indian", "British", "Korean", "Dutch"): it describes what
# is asked about rather than naming it, and a page says it another way ("in India", "in the
# Netherlands"). English demonym endings, and common demonyms without one.
_ORIGIN = re.compile(r"(?:ian|ean|ican|ese|ish)$")
_ORIGIN_WORDS = frozenset(
    "german dutch french swiss greek thai welsh irish scots czech israeli iraqi pakistani "
    "bangladeshi kuwaiti saudi nepali somali yemeni omani qatari".split()
)


def question_names(text: str) -> list[tuple[str, str]]:
    """What a question names, as (term, word as written): its capitalised words after the first
    ("Hinton", "WhatsApp", "Academy") and its numbers ("2021", "93rd", "3"), but not its
    adjectives of origin ("Indian", "Dutch"). A source that mentions none of them is not about
    what the question asks."""
    out: dict[str, str] = {}
    for i, m in enumerate(_NAMED.finditer(text)):
        word = m.group(0).rstrip(".-")
        low = possessive_free(word).lower()
        if (
            word[:1].isupper()
            and word[1:].islower()
            and (_ORIGIN.search(low) or low in _ORIGIN_WORDS)
        ):
            continue
        if (i > 0 and word[:1].isupper()) or any(ch.isdigit() for ch in word):
            for t in content_terms(word):
                out.setdefault(t, possessive_free(word))
    return list(out.items())


# Nouns that name a document. A question that says where to look ("according to the Rcpp
# FAQ", "in the pscl vignette on count-data regression", "per the sp introduction vignette")
# names the document with the words of that phrase; the sentence that answers it need not repeat
# them, and a sentence that does (the paper's title, its citations of itself) is not the answer
# for it. General English vocabulary for documents, not any benchmark's; a guess, flagged as one.
_DOCUMENT_NOUNS = (
    "paper|papers|article|articles|vignette|vignettes|note|notes|faq|faqs|introduction|manual|"
    "guide|documentation|docs|report|reports|study|book|chapter|thesis|dissertation|blog|post|"
    "website|tutorial|review|preprint|handbook|whitepaper|package|library|news|newsletter|"
    "documents?|text"
)
# Words that end the run of words before a document noun: a clause starts there ("in the rotarod
# data that coin's paper uses": the data is what is asked about, not where to look).
_CLAUSE_WORDS = "that|which|who|whose|whom|what|when|where|why|how|is|are|was|were|does|do|did"
_RUN_WORD = rf"(?!(?:{_CLAUSE_WORDS})\b)[\w'’.\-]+"
_DOCUMENT_PHRASE = re.compile(
    rf"\b(?:in|from|per|according\s+to)\s+(?:{_RUN_WORD}\s+){{0,7}}?(?:{_DOCUMENT_NOUNS})"
    # a possessive document noun ends the phrase ("the coin vignette's example ..." asks about
    # the example); otherwise a quoted title or what the document is on may follow.
    rf"(?:['’]s\b|\b(?:\s+(?:'[^']{{2,120}}'|‘[^’]{{2,120}}’|“[^”]{{2,120}}”|\"[^\"]{{2,120}}\"))?"
    rf"(?:\s+(?:on|about)\s+[^,;?()]+)?)",
    re.IGNORECASE,
)


# A phrase in quotation marks: opened after a space or at the start (so "Alzheimer's" opens
# nothing), closed before a space or punctuation.
_QUOTED = re.compile(r"(?:(?<=\s)|^)['‘“\"]([^'’”\"]{2,160})['’”\"](?=[\s,.;:?!)]|$)")


def quoted_phrases(question: str) -> tuple[frozenset[str], ...]:
    """The content terms of each phrase a question puts in quotation marks, of two terms or
    more: a title it quotes ("the effects vignette 'Examples of Effect Displays with Partial
    Residuals'") or a phrase it asks about; which one is told by the titles of the sources read
    (quoted_titles)."""
    out = []
    for m in _QUOTED.finditer(question):
        terms_ = frozenset(content_terms(m.group(1)))
        if len(terms_) >= 2:
            out.append(terms_)
    return tuple(out)


def quoted_titles(question: str, titles: Iterable[frozenset[str]]) -> tuple[frozenset[str], ...]:
    """The quoted phrases of a question that are the title of a source read: every term of the
    phrase is in that source's title. A question that quotes a title asks about that document."""
    held = list(titles)
    return tuple(p for p in quoted_phrases(question) if any(p <= t for t in held))


def scope_terms(question: str) -> frozenset[str]:
    """The terms a question uses only to say which document to look in: those of an "in / from /
    per / according to ... <document noun>" phrase (with the title or the topic that follows the
    noun), that the rest of the question does not also use. "According to the Rhodium Group"
    names who said it, which the answering sentence often repeats: no document noun, no scope.
    A sentence is credited with them when its document holds them (evidence()), so they tell
    the right document from the others, not one of its sentences from the next."""
    spans = [m.span() for m in _DOCUMENT_PHRASE.finditer(question)]
    if not spans:
        return frozenset()
    inside = [False] * len(question)
    for a, b in spans:
        for i in range(a, b):
            inside[i] = True
    scope = "".join(ch if inside[i] else " " for i, ch in enumerate(question))
    rest = "".join(" " if inside[i] else ch for i, ch in enumerate(question))
    return frozenset(set(content_terms(scope)) - set(content_terms(rest)))


_SETTING_END = re.compile(r"[,;:.]\s")


def setting_terms(question: str) -> frozenset[str]:
    """The terms only of the scene a question sets before it asks: what precedes the last
    comma (or sentence end) before its main wh-word ("In coin's MAX-test paper for genetic
    case-control studies, what threshold ...", "According to the xts FAQ, to roughly what
    ..."), minus the terms the question also asks with. None when it asks straight away."""
    m = _main_wh(question)
    if m is None:
        return frozenset()
    ends = list(_SETTING_END.finditer(question, 0, m.start()))
    if not ends:
        return frozenset()
    cut = ends[-1].end()
    return frozenset(set(content_terms(question[:cut])) - set(content_terms(question[cut:])))
