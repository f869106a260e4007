"""Extractive mining (no model): the sentences of a chunk most relevant to the question or
sub-question (lexical relevance with context and answer-type cues), page furniture refused,
quoted verbatim."""

from __future__ import annotations

from collections import Counter

from mole_dag.actors.quote import collapse
from mole_dag.core import MAX_CLAIM_CHARS, MIN_QUOTE_CHARS, ClaimDraft
from mole_dag.mining.furniture import non_claim_reason
from mole_dag.mining.passages import Passages
from mole_dag.mining.relevance import CONTEXT_WINDOW, Query, TermStats, document_terms, score
from mole_dag.skills.protocol import MineRequest

# How many claims one chunk may yield. A guess, flagged as one: enough to catch a paragraph's
# distinct statements without turning every sentence into a claim.
MAX_CLAIMS_PER_CHUNK = 8

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
    scored: list[tuple[float, int, str]] = []
    worded = Counter(s.block for s in page.sentences if any(ch.isalpha() for ch in s.text))
    for s in page.sentences:
        sentence = s.text
        n_words = len(sentence.split())
        if not (MIN_WORDS <= n_words <= MAX_WORDS) or len(sentence) > MAX_CLAIM_CHARS:
            continue
        if len(collapse(sentence)) < MIN_QUOTE_CHARS:  # could never pass the quote check
            continue
        if sentence.rstrip()[-1:] in {":", ",", ";"} or sentence.lstrip().startswith("#"):
            continue
        if non_claim_reason(sentence) or _lone_line(sentence, worded[s.block]):
            continue
        if _cut_off(sentence):
            continue
        around = page.around(s.start, s.end, CONTEXT_WINDOW)
        if max(score(qq, stats, sentence, around, req.title).value for qq in queries) < floor:
            continue
        rel = max(
            score(qq, stats, sentence, around, req.title, document=document).value for qq in queries
        )
        scored.append((rel, s.start, sentence))
    best = sorted(scored, key=lambda x: (-x[0], x[1]))[:MAX_CLAIMS_PER_CHUNK]
    best.sort(key=lambda x: x[1])
    return [ClaimDraft(text=" ".join(x[2].split()), quote=x[2]) for x in best]
