"""Small, deterministic text tools shared by the local search index, the lexical retriever and
the model-free (extractive) provider: tokens, stopwords, sentences."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

# Letters/digits runs; CJK ideographs and kana are handled as character bigrams below, because
# those scripts put no spaces between words and a whole run would never match a query.
_WORD = re.compile(r"[^\W_]+(?:[.,'’][^\W_]+)*", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")

STOPWORDS = frozenset(
    (
        "a about above after again against all also am an and any are as at be because been "
        "before being below between both but by can could did do does doing down during each few "
        "for from further had has have having he her here hers herself him himself his how i if "
        "in into is it its itself just me more most my myself no nor not of off on once only or "
        "other our ours ourselves out over own same she should so some such than that the their "
        "theirs them themselves then there these they this those through to too under until up "
        "very was we were what when where which while who whom why will with would you your yours "
        "yourself yourselves s t don now may might must shall per via within without across among "
        "upon whether whose say says said according new one two many much often however thus "
        "therefore der die das und ist nicht ein eine zu von mit den dem des im für auf sich als "
        "auch es le la les des et est un une du en que qui pour dans el los las y de con por para "
        "se"
    ).split()
)

# Words that reverse a statement's polarity. Kept out of STOPWORDS' effect where polarity
# matters (contradiction heuristics), and dropped from retrieval where it does not.
NEGATIONS = frozenset(
    (
        "not no never none neither nor without cannot isn't aren't wasn't weren't doesn't don't "
        "didn't won't wouldn't shouldn't couldn't hasn't haven't hadn't nicht kein keine nie"
    ).split()
)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def words(text: str) -> list[str]:
    """Lower-cased word tokens, keeping stopwords (for polarity and duplicates)."""
    out: list[str] = []
    for m in _WORD.finditer(normalize(text)):
        w = m.group(0)
        if _CJK.search(w):
            out.extend(_cjk_bigrams(w))
        else:
            out.append(w.strip(".,'’"))
    return [w for w in out if w]


def _cjk_bigrams(run: str) -> Iterator[str]:
    # Split a mixed run into CJK and non-CJK pieces; bigram the CJK pieces.
    buf = ""
    for ch in run:
        if _CJK.match(ch):
            buf += ch
        else:
            if buf:
                yield from _bigrams(buf)
                buf = ""
    if buf:
        yield from _bigrams(buf)
    latin = _CJK.sub(" ", run).split()
    yield from latin


def _bigrams(s: str) -> Iterator[str]:
    if len(s) == 1:
        yield s
        return
    for i in range(len(s) - 1):
        yield s[i : i + 2]


def stem(word: str) -> str:
    """A deliberately light English suffix stripper, enough that a query and a sentence meet on
    inflections: "raises", "raised" and "raise" all become "rais"; "studies" becomes "study".
    Not Porter: it never rewrites a stem, so "healthy" and "health" stay apart."""
    if not word.isascii() or not word.isalpha() or len(word) <= 4:
        return word
    if word.endswith("ies") and len(word) > 5:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) >= 7:
        word = word[:-3]
    elif (word.endswith("ed") and len(word) >= 6) or word.endswith(("xes", "zes", "sses", "shes",
                                                                   "ches")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    # A final silent e goes too, so "increase", "increases" and "increased" meet.
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Content terms: stemmed words minus stopwords and one-character Latin noise."""
    return [
        stem(w)
        for w in words(text)
        if w not in STOPWORDS and (len(w) > 1 or w.isdigit() or _CJK.match(w))
    ]


_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?P<close>[\"')\]\u201d\u2019]*)\s+"
    r"(?=[\"'(\[\u201c\u2018]?[A-Z0-9\u00c0-\u024f\u0400-\u04ff\u3040-\u30ff\u4e00-\u9fff])"
    r"|(?<=[\u3002\uff01\uff1f])(?P<cjkclose>[\u300d\u300f\u201d\uff09]*)"
    r"|\n\s*\n"
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences, trimmed of surrounding whitespace. A heuristic splitter:
    Latin terminators followed by a capital or digit, CJK terminators, and blank lines."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        # Closing quotes and brackets after a terminator belong to the sentence they close.
        closer = m.group("close") or m.group("cjkclose") or ""
        end = m.start() + len(closer)
        if end <= start:
            continue
        _push(text, start, end, spans)
        start = m.end()
    _push(text, start, len(text), spans)
    return spans


def _push(text: str, a: int, b: int, out: list[tuple[int, int]]) -> None:
    seg = text[a:b]
    lead = len(seg) - len(seg.lstrip())
    trail = len(seg) - len(seg.rstrip())
    if b - trail > a + lead:
        out.append((a + lead, b - trail))
