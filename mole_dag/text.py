"""Small, deterministic text tools shared by the local search index, the lexical retriever and
the model-free (extractive) provider: tokens, stopwords, sentences."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

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
    elif (word.endswith("ed") and len(word) >= 6) or word.endswith(
        ("xes", "zes", "sses", "shes", "ches")
    ):
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
    # A terminator, then what closes its sentence: quotes, brackets, and reference markers a
    # page left after the full stop ("... Geoffrey Hinton.[1] It is ...").
    r"(?<=[.!?])(?P<close>(?:\[\d{1,3}(?:[,\u2013-]\d{1,3})*\])*[\"')\]\u201d\u2019]*)\s+"
    r"(?=[\"'(\[\u201c\u2018]?[A-Z0-9\u00c0-\u024f\u0400-\u04ff\u3040-\u30ff\u4e00-\u9fff])"
    r"|(?<=[\u3002\uff01\uff1f])(?P<cjkclose>[\u300d\u300f\u201d\uff09]*)"
    r"|\n\s*\n"
    # A single line break (not the start of a blank line): a boundary or not, decided below.
    r"|(?P<nl>\n)(?![ \t\r\f\v]*\n)"
)

# Abbreviations that end in a full stop without ending the sentence, lower-cased: honorifics and
# titles (always before a name), company and name suffixes, references (Fig. 3, Vol. 2, pp. 4),
# Latin shorthands and month names. A guess, flagged as one: the list covers English prose.
_ABBREVIATIONS = frozenset(
    (
        "mr mrs ms mx dr prof sen rep gov gen col lt capt cmdr sgt rev hon pres st mt ft "
        "jr sr inc ltd co corp bros llc plc vs etc cf viz approx ca al fig figs vol vols pp p "
        "ed eds no nos dept univ est jan feb mar apr jun jul aug sep sept oct nov dec"
    ).split()
)
# Never the last word of a sentence.
_NEVER_FINAL = frozenset(
    {"e.g", "i.e", "cf", "vs", "viz", "mr", "mrs", "ms", "dr", "prof", "fig", "figs", "pp"}
)
# After an abbreviation, a capitalised word from this list starts a new sentence ("... Acme Inc.
# The company ..."); any other word continues it ("Acme Inc. CEO", "St. Louis"). A guess, flagged
# as one: sentences most often open on a determiner, pronoun, preposition or connective.
_STARTERS = frozenset(
    (
        "the a an this that these those it its he she they we i you there here his her their our "
        "my in on at for but and or so if when while as after before however then thus yet both "
        "each such some all most many what which who how why where also although though because "
        "since during despite according"
    ).split()
)
_WORD_BEFORE = re.compile(r"(?<![^\s(\[\"'\u201c\u2018/-])([A-Za-z]+(?:\.[A-Za-z]+)*)\.\Z")
_ENUMERATOR = re.compile(r"(?:\A|\n)[ \t]*\d{1,3}\.\Z")
_WORD_AFTER = re.compile(r"[\"'(\[\u201c\u2018]?([^\W\d_]+)(\.?)")
# A line shorter than this that ends without sentence punctuation is a heading or a list line,
# not a hard-wrapped piece of a sentence (wrapped prose fills most of a 72-100 column line).
# A guess, flagged as one.
SHORT_LINE = 60
_LIST_MARK = re.compile(r"(?:[-*\u2022\u2023\u25aa\u25cf\u2013]|\d{1,3}[.)])\s")
_ENDS_SENTENCE = re.compile(r"[.!?:\u2026][\"')\]\u201d\u2019]*\Z")
_CONTINUES = ",;&/(-\u2013\u2014"


# A list item's bullet glyph at the start of a sentence: page layout, not the source's words
# (issue 33: quotes read "“• dispersiontest() tests ...”"). Glyphs only; a hyphen or an
# asterisk may be a minus sign or a footnote mark, and stays.
_LEADING_BULLET = re.compile(
    r"\A\s*[\u2022\u2023\u2043\u2219\u25aa\u25ab\u25cf\u25cb\u25a0\u25a1\u25e6\u25b8\u25ba\uf0b7]+\s*"
)


def plural(n: int, one: str, many: str | None = None) -> str:
    """`n` and the noun in the number it takes: "1 lead", "2 leads", "1 sub-question"."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def strip_bullet(text: str) -> str:
    """`text` without a leading bullet glyph (and the space after it)."""
    return _LEADING_BULLET.sub("", text, count=1)


def _abbreviation_continues(before: str, after: str) -> bool:
    """Whether the full stop that ends `before` belongs to an abbreviation or initial and the
    sentence goes on into `after`."""
    if _ENUMERATOR.search(before[-8:] if "\n" in before[-8:] else before):
        return True  # "2. Tea is milder." opens a numbered list line
    m = _WORD_BEFORE.search(before[-40:])
    if not m:
        return False
    word = m.group(1)
    low = word.lower()
    single = len(word) == 1
    if not (single or "." in word or low in _ABBREVIATIONS):
        return False
    if low in _NEVER_FINAL:
        return True
    nxt = _WORD_AFTER.match(after)
    if not nxt:
        # A number next: "Fig. 3", "Jan. 5", "No. 10", "pp. 4-9", "et al. (2019)".
        return after.lstrip("\"'([\u201c\u2018")[:1].isdigit()
    follower, dot = nxt.group(1), nxt.group(2)
    if len(follower) == 1 and follower.isupper() and dot:
        return True  # the next initial: "J. R. R. Tolkien"
    return follower.lower() not in _STARTERS


def _line_break_ends(text: str, at: int) -> bool:
    """Whether the single line break at `at` ends a sentence: a heading, a list line or a line
    that ends in a full stop. A hard-wrapped sentence goes on (next line in lower case, long
    line, or a line ending in a comma or a word like "the")."""
    line_start = text.rfind("\n", 0, at) + 1
    prev = text[line_start:at].strip()
    nl_end = text.find("\n", at + 1)
    nxt = text[at + 1 : nl_end if nl_end >= 0 else len(text)].strip()
    if not prev or not nxt:
        return True
    if _LIST_MARK.match(nxt):
        return prev[-1] not in _CONTINUES
    if nxt[0].islower():
        return False
    if _ENDS_SENTENCE.search(prev):
        return not (prev.endswith(".") and _abbreviation_continues(prev, nxt))
    if len(prev) >= SHORT_LINE or prev[-1] in _CONTINUES:
        return False
    last = words(prev[-30:])
    return not last or last[-1] not in STOPWORDS


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences, trimmed of surrounding whitespace. A heuristic splitter:
    Latin terminators followed by a capital or digit (not after an abbreviation or an initial),
    CJK terminators, blank lines, and single line breaks after a heading or list line."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group("nl") is not None:
            if not _line_break_ends(text, m.start()):
                continue
        elif m.group("close") == "" and _abbreviation_continues(
            text[start : m.start()], text[m.end() :]
        ):
            continue
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


# Content terms and their sentence frequencies: the relevance scorer's (mining) and the skills
# protocol's (a mining request carries them), so they sit here, below both.
def possessive_free(word: str) -> str:
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            return word[: -len(suffix)]
    return word.rstrip("'’")


def content_terms(text: str) -> list[str]:
    """mole_dag.text.terms, with possessives folded ("cartoonist's" meets "cartoonist")."""
    return list(_content_terms(text))


# Scoring a session tokenises the same sentences over and over: each claim's sentence, title
# and context once per sub-question, and every page sentence for the term statistics after
# each round (issue 12: 50,000 calls for the demo, the largest share of the pipeline's own
# work). The result depends on the text alone, so it is cached; the bound keeps a long-lived
# process (MCP server, Dagster daemon) from growing without limit.
@lru_cache(maxsize=1 << 16)
def _content_terms(text: str) -> tuple[str, ...]:
    out = []
    for w in words(text):
        w = possessive_free(w)
        if w and w not in STOPWORDS and (len(w) > 1 or w.isdigit()):
            out.append(stem(w))
    return tuple(out)


@dataclass(frozen=True)
class TermStats:
    """Sentence frequencies over the pages a session has read."""

    n: int
    df: dict[str, int]
    avg_len: float

    @classmethod
    def from_sentences(cls, sentences: Iterable[str]) -> TermStats:
        df: Counter[str] = Counter()
        n = total = 0
        for s in sentences:
            ts = content_terms(s)
            df.update(set(ts))
            n += 1
            total += len(ts)
        return cls(n, dict(df), (total / n) if n else 1.0)

    @classmethod
    def uniform(cls, sentences: Iterable[str]) -> TermStats:
        """Every term weighted alike: for text seen without its session (one chunk on its own),
        where frequencies within the chunk would call its own topic words uninformative."""
        lengths = [len(content_terms(s)) for s in sentences]
        return cls(0, {}, (sum(lengths) / len(lengths)) if lengths else 1.0)

    def idf(self, term: str) -> float:
        if self.n == 0:
            return 1.0
        # A term no page has is weighted as if one sentence had it: it cannot be matched, but
        # it still says the question asks for something the pages may not hold.
        df = max(self.df.get(term, 0), 1)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))
