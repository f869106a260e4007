"""Extractive mining (no model): the sentences of a chunk most relevant to the question or
sub-question (lexical relevance with context and answer-type cues), page furniture refused,
quoted verbatim."""

from __future__ import annotations

from collections import Counter

from mole_dag.actors.quote import collapse
from mole_dag.core import MAX_CLAIM_CHARS, MIN_QUOTE_CHARS, ClaimDraft
from mole_dag.mining import relevance
from mole_dag.mining.furniture import non_claim_reason
from mole_dag.mining.passages import Passages, Sentence
from mole_dag.mining.ranker import model, warm
from mole_dag.mining.relevance import (
    CONTEXT_WINDOW,
    Query,
    TermStats,
    document_terms,
    evidence,
    score_stretch,
)
from mole_dag.skills.protocol import MineRequest

# How many claims one chunk may yield. A guess, flagged as one: enough to catch a paragraph's
# distinct statements without turning every sentence into a claim.
MAX_CLAIMS_PER_CHUNK = 8
# How many of a chunk's sentences the meaning model re-ranks (_nearest): twice what it may
# yield. A guess, flagged as one.
CANDIDATES = 2 * MAX_CLAIMS_PER_CHUNK

# Four words hold a short answer ("Redonda is now recovering."); the quote check's 24-character
# floor still applies.
MIN_WORDS, MAX_WORDS = 4, 90

# Relevance below which a sentence is not worth a claim. A guess, flagged as one: low enough that
# an answer worded apart from the question, next to one that names its topic, gets through.
MIN_MINE_RELEVANCE = 0.08

# Without the session's weights (a chunk mined on its own) every question word weighs alike, so
# one shared common word scores far higher: the floor is higher too. A guess, flagged as one.
MIN_MINE_RELEVANCE_UNWEIGHTED = 0.25
HEADING_WORDS = 12
_TERMINAL = frozenset('.!?…"”’)»')
# Words a finished English sentence does not end on: a paper's sentence that runs into a display
# equation or a code listing ("... is given by", "... can be computed via", "... using the")
# stops at one, and what it says is in the display, not in the text. A guess, flagged as one.
_UNFINISHED = frozenset(
    "a an the of by via to for with from in into on at as and or than that which where whose "
    "is are was were be been its their our his her this these those".split()
)

# Words that, ending a sentence before its colon, announce a display rather than finish a
# statement ("... as follows:", "... for example:"); with _UNFINISHED they mark a colon sentence
# that says nothing until the display it introduces. A guess, flagged as one.
_ANNOUNCING = frozenset(
    "follows following below example examples instance e.g e.g. i.e i.e. namely code output "
    "here".split()
)
_ENDS_ANNOUNCING = _UNFINISHED | _ANNOUNCING
# Verbs a statement before a colon holds ("... are chosen:", "... must be set:"); a colon line
# with none of them is a label for what follows. A guess, flagged as one: a statement whose only
# verb is a full verb ("The function returns:") is refused with the labels, and it introduces
# its display anyway.
_AUXILIARY = frozenset(
    "is are was were be been being has have had can cannot could will would may might must "
    "should shall does do did".split()
)
# Openings that point back to the sentence before ("Instead one must use ...", "However, ..."):
# such a sentence says nothing alone, so it is mined together with that sentence, as one quote.
# Connectives only, not pronouns, which open too many sentences that do stand alone. A guess,
# flagged as one.
_POINTS_BACK = frozenset(
    "instead however therefore thus hence consequently otherwise nevertheless nonetheless "
    "moreover furthermore additionally similarly likewise accordingly conversely".split()
)


def _lone_line(sentence: str, worded_in_block: int) -> bool:
    """A short block of one unpunctuated line is a heading, a caption or a menu entry in any
    language (extraction keeps each heading its own block): the furniture filter's word lists
    are English, this shape is not. Only sentences with a letter count, since a numbered heading
    ("4.3. Choosing the model") splits into its number and its title. At most HEADING_WORDS
    words, a guess flagged as one."""
    return (
        worded_in_block == 1
        and len(sentence.split()) <= HEADING_WORDS
        and sentence.rstrip()[-1:] not in _TERMINAL
    )


def _announces(sentence: str) -> bool:
    """A sentence that ends in a colon after a function word or an announcing word ("is given
    by:", "as follows:"): what it says is in the display it introduces, which is not a claim.
    One that ends in a colon after a finished statement ("By default the second and third powers
    of the fitted values are chosen:") stands on its own."""
    body = sentence.rstrip()
    if not body.endswith(":"):
        return False
    words = [w.lower().strip("()[],;") for w in body[:-1].split()]
    if not words or words[-1] in _ENDS_ANNOUNCING:
        return True
    # No auxiliary or copula: a label ("Summary of findings about green tea:"), not a statement.
    return not any(w in _AUXILIARY for w in words)


def _points_back(sentence: str) -> bool:
    first = sentence.lstrip().split(maxsplit=1)
    return bool(first) and first[0].lower().strip(",;:") in _POINTS_BACK


def _units(page: Passages) -> list[Sentence]:
    """The stretches a claim may quote: each sentence, except that one opening with a word that
    points back (_POINTS_BACK) is joined to the sentence before it in the same paragraph, and
    neither is quoted alone: the first is half of what the pair says."""
    out: list[Sentence] = []
    for s in page.sentences:
        prev = out[-1] if out else None
        joined = page.text[prev.start : s.end] if prev is not None else ""
        if (
            prev is not None
            and prev.block == s.block
            and _points_back(s.text)
            # Too long to quote as one claim: each sentence is quoted alone, as before.
            and len(joined.split()) <= MAX_WORDS
            and len(joined) <= MAX_CLAIM_CHARS
        ):
            out[-1] = Sentence(prev.start, s.end, s.block, joined)
        else:
            out.append(s)
    return out


def _cut_off(sentence: str) -> bool:
    """A sentence with no end mark whose last word is a function word: cut off before a display
    (an equation, a listing) that the text does not hold."""
    words = sentence.split()
    return (
        bool(words) and sentence.rstrip()[-1:] not in _TERMINAL and words[-1].lower() in _UNFINISHED
    )


def mine_sentences(req: MineRequest) -> list[ClaimDraft]:
    """The sentences of a chunk that best answer the question or the sub-question, by the same
    lexical relevance the report orders by (mining/relevance.py): the sentence's own words, the
    words around it (an answer is often worded apart from the question, next to the sentence
    that names the topic), and whether it holds the kind of answer asked for. Non-claims (page
    furniture, references, headings) are refused before they are scored."""
    page = Passages(req.chunk)
    stats = req.stats or TermStats.uniform(s.text for s in page.sentences)
    floor = MIN_MINE_RELEVANCE if req.stats else MIN_MINE_RELEVANCE_UNWEIGHTED
    queries = [Query.of(req.question, stats)]
    if req.sub_question.strip() and req.sub_question.strip() != req.question.strip():
        queries.append(Query.of(req.sub_question, stats))
    # The chunk and its title stand for the document when a question names it ("according to
    # the Rcpp FAQ"): those words then order no sentence of the chunk above another. The floor
    # is kept on the sentence's own match, so the words naming the document do not let every
    # sentence of it through.
    document = document_terms((s.text for s in page.sentences), req.title)
    candidates = _units_to_score(page)
    if relevance.LEARNED:
        candidates = _nearest(candidates, queries, stats, req.title)
        # The learned ranking reads meaning: embed the candidates in one batch now, so scoring
        # them one by one below costs nothing more.
        warm([*(qq.text for qq in queries), *(s.text for s, _ in candidates)])
        floor = model().mine_floor
    scored: list[tuple[float, int, str]] = []
    for s, around in candidates:
        sentence = s.text
        if (
            max(score_stretch(qq, stats, sentence, around, req.title).value for qq in queries)
            < floor
        ):
            continue
        rel = max(
            score_stretch(qq, stats, sentence, around, req.title, document=document).value
            for qq in queries
        )
        scored.append((rel, s.start, sentence))
    best = sorted(scored, key=lambda x: (-x[0], x[1]))[:MAX_CLAIMS_PER_CHUNK]
    best.sort(key=lambda x: x[1])
    # A trailing colon is left out of the quote: the statement ends before the display.
    quotes = [x[2].rstrip().removesuffix(":").rstrip() for x in best]
    return [ClaimDraft(text=" ".join(q.split()), quote=q) for q in quotes]


def _units_to_score(page: Passages) -> list[tuple[Sentence, list[str]]]:
    """The units of a chunk that may be claims (furniture, headings, fragments refused), with
    the sentences around each."""
    out: list[tuple[Sentence, list[str]]] = []
    worded = Counter(s.block for s in page.sentences if any(ch.isalpha() for ch in s.text))
    for s in _units(page):
        sentence = s.text
        n_words = len(sentence.split())
        if not (MIN_WORDS <= n_words <= MAX_WORDS) or len(sentence) > MAX_CLAIM_CHARS:
            continue
        if len(collapse(sentence)) < MIN_QUOTE_CHARS:  # could never pass the quote check
            continue
        if sentence.rstrip()[-1:] in {",", ";"} or sentence.lstrip().startswith("#"):
            continue
        if _announces(sentence):
            continue
        if non_claim_reason(sentence) or _lone_line(sentence, worded[s.block]):
            continue
        if _cut_off(sentence):
            continue
        out.append((s, page.around(s.start, s.end, CONTEXT_WINDOW)))
    return out


def _nearest(
    units: list[tuple[Sentence, list[str]]], queries: list[Query], stats: TermStats, title: str
) -> list[tuple[Sentence, list[str]]]:
    """For the learned ranking: the CANDIDATES units best by words, in themselves and around
    them (the title does not count: it is every sentence's), among those that share any; a
    sentence with none of the question near it is not scored, so the meaning model reads only
    what could answer (embedding every sentence of every chunk cost a PDF session three times
    its time)."""

    def words(s: Sentence, a: list[str]) -> float:
        return max(
            ev.own + ev.around for ev in (evidence(q, stats, s.text, a, title) for q in queries)
        )

    near = [(words(s, a), s, a) for s, a in units]
    kept = sorted((n for n in near if n[0] > 0), key=lambda c: (-c[0], c[1].start))
    return [(s, a) for _, s, a in kept[:CANDIDATES]]
