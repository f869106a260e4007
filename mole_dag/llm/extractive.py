"""The `extractive` provider: plans, mines, judges and writes without a language model.

The offline default, and the baseline every model is measured against. It costs nothing and
says so: every report it writes states it was made without a language model. Its judgements
are heuristics, flagged as such in what it writes:
- plan: the question, its parts when it asks several things, and for a broad question the
  corpus's dominant topics;
- mine: the sentences of a chunk most relevant to the question or sub-question (lexical
  relevance with context and answer-type cues), page furniture refused, quoted verbatim;
- judge: word-overlap pairs whose polarity, direction words or numbers differ contradict;
  near-identical pairs duplicate; everything else is `neither`;
- write: the most relevant findings' quotes, one finding per sentence (the report renders
  their citations)."""

from __future__ import annotations

import re
from collections import Counter

from mole_dag.actors.quote import MIN_QUOTE_CHARS, collapse
from mole_dag.compute.choose_extractive import choose_hypotheses
from mole_dag.compute.view import HypothesisChoice, ProfileView
from mole_dag.core import MAX_CLAIM_CHARS, ClaimDraft, Unit
from mole_dag.llm.skills import (
    BoundSentence,
    Digest,
    GroundRequest,
    GroundVerdict,
    Metered,
    MineRequest,
    PlannedQuestion,
    Verdict,
    WriteRequest,
    WrittenAnswer,
)
from mole_dag.mining.furniture import non_claim_reason
from mole_dag.mining.passages import Passages
from mole_dag.mining.relevance import (
    CONTEXT_WINDOW,
    SCOPE,
    AnswerType,
    Query,
    TermStats,
    answer_type,
    is_broad,
    score,
)
from mole_dag.text import NEGATIONS, stem, terms, words

NAME = "extractive"
MADE_WITHOUT_MODEL = (
    "This report was made without a language model: the extractive provider quoted sentences "
    "from the sources and judged them with word-overlap heuristics."
)

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
# Content-word Jaccard above which two claims are the same assertion, and above which a
# difference in polarity, direction or number reads as a contradiction. Guesses, flagged as
# such; the labelled pair set behind `mole eval` is what would calibrate them.
DUPLICATE_OVERLAP = 0.8
CONTRADICTION_OVERLAP = 0.45

_LEADING = re.compile(
    r"^(?:what|how|why|when|where|which|who|whom|is|are|was|were|does|do|did|can|could|should|"
    r"will|would|has|have)\b(?:\s+(?:are|is|was|were|do|does|did|can|the|a|an|there))*\s*",
    re.IGNORECASE,
)
# Where a question asks two things: ", and which ...", "; when ...", or a second question. A
# bare ", which" is not one: it starts a relative clause ("the Union, which reported ...").
_PART_BREAK = re.compile(
    r"(?:,?\s+(?:and|but)\s+(?:also\s+)?|;\s*|\?\s+)"
    r"(?=(?:(?:by|in|on|at|for|to|from|of|since|until|with)\s+)?"
    r"(?:which|what|who|whom|whose|when|where|how|why)\b)",
    re.IGNORECASE,
)
# Sub-questions planned from a broad question's corpus. A guess, flagged as one: enough topics
# to cover a small folder's themes, few enough that each gets its own section.
BROAD_TOPICS = 8
_ANTONYMS = {
    frozenset(stem(w) for w in p)
    for p in [
        ("raise", "lower"), ("raise", "reduce"), ("increase", "decrease"), ("increase", "reduce"),
        ("increase", "lower"), ("higher", "lower"), ("more", "less"), ("above", "below"),
        ("improve", "worsen"), ("benefit", "harm"), ("safe", "unsafe"), ("protective", "harmful"),
        ("gain", "loss"), ("rise", "fall"), ("rise", "decline"), ("positive", "negative"),
        ("strong", "weak"), ("effective", "ineffective"), ("likely", "unlikely"),
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


def topic_of(question: str) -> str:
    q = question.strip().rstrip("?？!. ")
    stripped = _LEADING.sub("", q).strip()
    return stripped or q


def question_parts(question: str) -> list[str]:
    """The separate things a question asks, in order; one part for a simple question. Split at
    a conjunction or a second question mark that starts a new wh-clause, so "Which X did Y,
    and when did Z?" gives two parts, while "Which cats and dogs ..." stays one."""
    q = " ".join(question.split())
    pieces = [p.strip(" ,;") for p in _PART_BREAK.split(q)]
    parts = [p[:1].upper() + p[1:] if p.endswith("?") else p[:1].upper() + p[1:].rstrip(".!")
             + "?" for p in pieces if len(terms(p)) >= 2]
    return parts if len(parts) >= 2 else [q]


def is_wide(question: str) -> bool:
    """A question about a topic's many sides ("What are the health effects of coffee?"), not
    one asking for a name, a number or a date: worth a sub-question per facet."""
    return bool(SCOPE.search(question)) and answer_type(question) is AnswerType.ANY


def _query(text: str) -> str:
    return (" ".join(dict.fromkeys(terms(topic_of(text)))) or topic_of(text).strip()
            or " ".join(text.split()))


def plan_questions(question: str, corpus_topics: tuple[str, ...] = ()) -> list[PlannedQuestion]:
    """The question itself; its parts when it asks several things; for a broad question, one
    sub-question per dominant topic of the corpus. No fixed facets: words the question did not
    use ("benefit", "risk") send the search away from what was asked."""
    q = " ".join(question.split())
    out = [PlannedQuestion(q, _query(q))]
    if is_broad(q) and corpus_topics:
        out += [PlannedQuestion(f"What about {t}?", t)
                for t in corpus_topics[:BROAD_TOPICS]]
        return out
    if corpus_topics:  # a wide question: its facets, as the corpus's documents on it have them
        base = _query(q)
        out += [PlannedQuestion(f"{topic_of(q)[:1].upper()}{topic_of(q)[1:]}: {t}?",
                                f"{base} {t}") for t in corpus_topics[:BROAD_TOPICS]]
    parts = question_parts(q)
    if len(parts) > 1:
        out += [PlannedQuestion(p, _query(p)) for p in parts]
    return out


def _stems(text: str) -> set[str]:
    return set(terms(text))


def _lone_line(sentence: str, sentences_in_block: int) -> bool:
    """A short block of one unpunctuated line is a heading, a caption or a menu entry in any
    language (extraction keeps each heading its own block): the furniture filter's word lists
    are English, this shape is not. At most HEADING_WORDS words, a guess flagged as one."""
    return (sentences_in_block == 1 and len(sentence.split()) <= HEADING_WORDS
            and sentence.rstrip()[-1:] not in _TERMINAL)


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
    scored: list[tuple[float, int, str]] = []
    per_block = Counter(s.block for s in page.sentences)
    for s in page.sentences:
        sentence = s.text
        n_words = len(sentence.split())
        if not (MIN_WORDS <= n_words <= MAX_WORDS) or len(sentence) > MAX_CLAIM_CHARS:
            continue
        if len(collapse(sentence)) < MIN_QUOTE_CHARS:  # could never pass the quote check
            continue
        if sentence.rstrip()[-1:] in {":", ",", ";"} or sentence.lstrip().startswith("#"):
            continue
        if non_claim_reason(sentence) or _lone_line(sentence, per_block[s.block]):
            continue
        around = page.around(s.start, s.end, CONTEXT_WINDOW)
        rel = max(score(qq, stats, sentence, around, req.title).value for qq in queries)
        if rel < floor:
            continue
        scored.append((rel, s.start, sentence))
    best = sorted(scored, key=lambda x: (-x[0], x[1]))[:MAX_CLAIMS_PER_CHUNK]
    best.sort(key=lambda x: x[1])
    return [ClaimDraft(text=" ".join(x[2].split()), quote=x[2]) for x in best]


def _signals(a: str, b: str) -> tuple[float, list[str]]:
    ta, tb = _stems(a), _stems(b)
    union = ta | tb
    overlap = len(ta & tb) / len(union) if union else 0.0
    wa, wb = words(a), words(b)
    why: list[str] = []
    neg_a = any(w in NEGATIONS for w in wa) or "no longer" in " ".join(wa)
    neg_b = any(w in NEGATIONS for w in wb) or "no longer" in " ".join(wb)
    if neg_a != neg_b:
        why.append("one states it, the other negates it")
    # Direction words include stopwords ("more", "above"), so they are read from all words.
    sa, sb = {stem(w) for w in wa}, {stem(w) for w in wb}
    only_a, only_b = sa - sb, sb - sa
    for pair in _ANTONYMS:
        x, y = tuple(pair)
        if (x in only_a and y in only_b) or (y in only_a and x in only_b):
            why.append(f"opposite directions ({x} / {y})")
            break
    nums_a = {w for w in ta if _NUMBER.match(w)}
    nums_b = {w for w in tb if _NUMBER.match(w)}
    if nums_a and nums_b and nums_a != nums_b:
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


# How many findings the deterministic answer quotes. A guess, flagged as one: enough to answer
# a question of a few parts, short enough to be read before the sections.
MAX_ANSWER_SENTENCES = 3


def write_body(req: WriteRequest) -> WrittenAnswer:
    """The deterministic answer: the most relevant findings' quotes, one finding per sentence,
    so the first thing a reader meets is what the sources said, each cited. One per
    sub-question first, when the question has several parts; superseded findings only when
    nothing else is left. Also the fallback when a model's answer fails the evidence check."""
    if not req.findings:
        return WrittenAnswer((), "there is no finding to answer from")
    ranked = sorted(req.findings,
                    key=lambda f: (f.superseded, -f.relevance, -f.confidence, f.number))
    picked: list[int] = []
    parts: set[str] = set()
    for f in ranked:
        if f.sub_question not in parts and len(picked) < MAX_ANSWER_SENTENCES:
            picked.append(f.number)
            parts.add(f.sub_question)
    for f in ranked:
        if len(picked) >= MAX_ANSWER_SENTENCES:
            break
        if f.number not in picked:
            picked.append(f.number)
    order = {f.number: i for i, f in enumerate(ranked)}
    by_no = {f.number: f for f in req.findings}
    return WrittenAnswer(tuple(BoundSentence(" ".join(by_no[n].text.split()), (n,))
                               for n in sorted(picked, key=order.__getitem__)))


class ExtractiveSkills:
    """Model-free skills. Every estimate and cost is zero, in any unit."""

    name = NAME
    uses_model = False

    def estimate_plan(self, digest: Digest, unit: Unit) -> int:
        return 0

    def plan(self, digest: Digest, unit: Unit) -> Metered[list[PlannedQuestion]]:
        # It plans once: without reading pages (which the planner must never do) there is
        # nothing new for a model-free planner to ask in a later round.
        planned = (plan_questions(digest.question, digest.corpus_topics)
                   if digest.round == 1 else [])
        return Metered(planned, model=NAME)

    def estimate_mine(self, req: MineRequest, unit: Unit) -> int:
        return 0

    def mine(self, req: MineRequest, unit: Unit) -> Metered[list[ClaimDraft]]:
        return Metered(mine_sentences(req), model=NAME)

    def estimate_judge(self, pairs: list[tuple[str, str]], unit: Unit) -> int:
        return 0

    def judge(self, pairs: list[tuple[str, str]], unit: Unit) -> Metered[list[Verdict]]:
        out = []
        for i, (a, b) in enumerate(pairs):
            v = judge_pair(a, b)
            out.append(Verdict(i, v.relation, v.rationale))
        return Metered(out, model=NAME)

    def estimate_write(self, req: WriteRequest, unit: Unit) -> int:
        return 0

    def write(self, req: WriteRequest, unit: Unit) -> Metered[WrittenAnswer]:
        return Metered(write_body(req), model=NAME)

    def estimate_ground(self, req: GroundRequest, unit: Unit) -> int:
        return 0

    def ground(self, req: GroundRequest, unit: Unit) -> Metered[GroundVerdict]:
        return Metered(ground_claim(req), model=NAME)

    # Local data: model-free hypothesis choice, by column-name overlap with the question.
    def estimate_hypothesize(self, view: ProfileView, unit: Unit) -> int:
        return 0

    def hypothesize(self, view: ProfileView, unit: Unit) -> Metered[list[HypothesisChoice]]:
        return Metered(choose_hypotheses(view), model=NAME)
