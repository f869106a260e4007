"""Tests for the model-free plan/mine/judge/write skills: mole_dag.skillsets.extractive and
each stage's extractive.py."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.actors.quote import MIN_QUOTE_CHARS, find_quote
from mole_dag.core import ClaimDraft, Unit
from mole_dag.mining.extractive import MAX_CLAIMS_PER_CHUNK, MIN_WORDS, mine_sentences
from mole_dag.mining.relevance import TermStats, is_broad
from mole_dag.output.extractive import MADE_WITHOUT_MODEL, write_body
from mole_dag.planner.extractive import is_wide, plan_questions, topic_of
from mole_dag.skills.protocol import (
    Digest,
    FindingForWriter,
    MineRequest,
    PlannedQuestion,
    WriteRequest,
)
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.text import terms
from mole_dag.verifier.extractive import judge_pair

# --- judge -------------------------------------------------------------------------------------


def test_negated_pair_contradicts() -> None:
    a = "X raises the risk of high blood pressure in adults."
    b = "X does not raise the risk of high blood pressure in adults."
    v = judge_pair(a, b)
    assert v.relation == "contradicts"
    assert "negates" in v.rationale
    assert judge_pair(b, a).relation == "contradicts"


def test_conditionals_on_different_conditions_do_not_contradict() -> None:
    """Seen in a specification outside the DEV sets: the steps of one algorithm were marked
    disputed by each other ("If there was no glob match, ..." against "If after this, there is
    one or more matching glob, ..."): two cases, not a contradiction."""
    steps = [
        "If there was no glob match, use the magic match as the result.",
        "If after this, there is one or more matching glob, and all the matching globs result "
        "in the same mimetype, use that mimetype as the result.",
        "Otherwise use the result of the glob match that has the highest weight.",
    ]
    for a in steps:
        for b in steps:
            if a != b:
                assert judge_pair(a, b).relation != "contradicts", (a, b)
    # Under the same condition, opposite consequences still contradict.
    a = "If coffee is drunk daily, it raises the risk of high blood pressure in adults."
    b = "If coffee is drunk daily, it does not raise the risk of high blood pressure in adults."
    assert judge_pair(a, b).relation == "contradicts"


def test_no_longer_counts_as_negation() -> None:
    a = "Green tea extract is classified as a possible liver toxin by the agency."
    b = "Green tea extract is no longer classified as a possible liver toxin by the agency."
    assert judge_pair(a, b).relation == "contradicts"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Coffee may raise the risk of heart disease in adults.",
            "Coffee may lower the risk of heart disease in adults.",
        ),
        (
            "The vaccine is safe for pregnant women according to the review.",
            "The vaccine is unsafe for pregnant women according to the review.",
        ),
        (
            "The treatment is effective for chronic back pain in older adults.",
            "The treatment is ineffective for chronic back pain in older adults.",
        ),
    ],
)
def test_antonym_pair_contradicts(a: str, b: str) -> None:
    v = judge_pair(a, b)
    assert v.relation == "contradicts"
    assert "opposite directions" in v.rationale


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Coffee raises the risk of heart disease in adults.",
            "Coffee lowers the risk of heart disease in adults.",
        ),
        (
            "Coffee increases the risk of heart disease in adults.",
            "Coffee decreases the risk of heart disease in adults.",
        ),
        (
            "Coffee increased the risk of heart disease in adults.",
            "Coffee decreased the risk of heart disease in adults.",
        ),
    ],
)
def test_inflected_antonym_pair_contradicts(a: str, b: str) -> None:
    assert judge_pair(a, b).relation == "contradicts"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Blood pressure stayed above the safe threshold in treated adults.",
            "Blood pressure stayed below the safe threshold in treated adults.",
        ),
        (
            "Children who drink soda get more cavities than other children.",
            "Children who drink soda get less cavities than other children.",
        ),
    ],
)
def test_stopword_antonym_pair_contradicts(a: str, b: str) -> None:
    assert judge_pair(a, b).relation == "contradicts"


def test_different_number_pair_contradicts() -> None:
    a = "Coffee raises the risk of stroke by 20 percent in adults."
    b = "Coffee raises the risk of stroke by 35 percent in adults."
    v = judge_pair(a, b)
    assert v.relation == "contradicts"
    assert "different figures" in v.rationale
    assert "20" in v.rationale and "35" in v.rationale


def test_a_sentence_that_only_adds_a_figure_does_not_contradict() -> None:
    # Seen in a PDF session: two papers of one package state the same theorem, one with the
    # index range of its condition; the extra figures are detail, not a different figure.
    a = (
        "Strasser and Weber (1999, Theorem 2.3) showed that the distribution of linear statistics "
        "tends to a normal distribution as the weights grow for all j = 1, ..., r."
    )
    b = (
        "Strasser and Weber (1999) showed in their Theorem 2.3 that the distribution of linear "
        "statistics tends to a normal distribution as the weights grow."
    )
    assert judge_pair(a, b).relation != "contradicts"
    # Each with a figure of its own still contradicts, the shared ones aside.
    c = "In 2019 coffee raised the risk of stroke by 20 percent in adults."
    d = "In 2019 coffee raised the risk of stroke by 35 percent in adults."
    assert judge_pair(c, d).relation == "contradicts"


def test_same_numbers_do_not_contradict() -> None:
    a = "Coffee raises the risk of stroke by 20 percent in adults."
    b = "Coffee raises the risk of stroke by 20 percent in older adults."
    assert judge_pair(a, b).relation != "contradicts"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Green tea drinkers had a lower risk of stroke in a large cohort study.",
            "Green tea drinkers had a lower risk of stroke in a large cohort study!",
        ),
        (
            "Green tea drinkers had a lower risk of stroke in a large cohort study.",
            "green tea drinkers had a lower risk of stroke in the large cohort study",
        ),
    ],
)
def test_near_identical_is_duplicate(a: str, b: str) -> None:
    v = judge_pair(a, b)
    assert v.relation == "duplicate_of"
    assert v.index == 0


def test_unrelated_is_neither() -> None:
    a = "Green tea contains antioxidants called catechins in its leaves."
    b = "The stock market fell sharply on Monday after the announcement."
    assert judge_pair(a, b).relation == "neither"


def test_low_overlap_negation_is_neither() -> None:
    # A polarity difference alone does not make unrelated sentences contradict.
    a = "Green tea contains antioxidants called catechins in its leaves."
    b = "The stock market did not fall on Monday after the announcement."
    assert judge_pair(a, b).relation == "neither"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120), st.text(max_size=120))
def test_judge_is_total_and_symmetric(a: str, b: str) -> None:
    v = judge_pair(a, b)
    assert v.relation in {"contradicts", "duplicate_of", "neither"}
    assert judge_pair(b, a).relation == v.relation
    assert v.rationale.startswith("heuristic:")


# --- mine --------------------------------------------------------------------------------------

CHUNK = (
    "Green tea and sleep.\n\n"
    "Drinking green tea in the evening raises the risk of poor sleep in adults who are "
    "sensitive to caffeine. Many people enjoy a cup of tea with their meals on weekends. "
    "A large cohort study found that green tea drinkers had a 20 percent lower risk of stroke. "
    "The weather in the valley was pleasant for most of the year. "
    "Summary of findings about green tea, sleep and the risk of stroke:\n\n"
    "# Green tea effects on risk of poor sleep in adults\n"
)


def _req(
    chunk: str,
    question: str = "Does green tea affect sleep or stroke risk?",
    sub: str = "green tea sleep stroke risk",
) -> MineRequest:
    return MineRequest(question=question, sub_question=sub, chunk=chunk)


def test_mine_quotes_verbatim_relevant_sentences() -> None:
    drafts = mine_sentences(_req(CHUNK))
    quotes = [d.quote for d in drafts]
    answers = [
        "Drinking green tea in the evening raises the risk of poor sleep in adults who are "
        "sensitive to caffeine.",
        "A large cohort study found that green tea drinkers had a 20 percent lower risk of stroke.",
    ]
    assert quotes == answers
    for d in drafts:
        assert d.quote in CHUNK
        assert len(d.quote) >= MIN_QUOTE_CHARS
        assert find_quote(CHUNK, d.quote) is not None
        assert d.text == " ".join(d.quote.split())


def test_mine_off_topic_chunk_gives_nothing() -> None:
    chunk = (
        "The weather in the valley was pleasant for most of the year. Farmers planted "
        "wheat and barley in the northern fields. The harvest festival drew large crowds "
        "from nearby towns every autumn."
    )
    assert mine_sentences(_req(chunk)) == []


def test_mine_caps_claims_per_chunk_and_keeps_order() -> None:
    sentences = [
        f"Green tea study {i} found a lower risk of stroke among {i + 10} thousand adults."
        for i in range(12)
    ]
    chunk = " ".join(sentences)
    # Weights from a session's pages, where these words are not on every line.
    stats = TermStats.from_sentences(
        [*sentences, *(f"Unrelated line {i} about weather and sleep." for i in range(40))]
    )
    drafts = mine_sentences(replace(_req(chunk), stats=stats))
    assert len(drafts) == MAX_CLAIMS_PER_CHUNK
    positions = [chunk.index(d.quote) for d in drafts]
    assert positions == sorted(positions)


def test_mine_collapses_whitespace_in_text_not_in_quote() -> None:
    chunk = "Drinking green tea in the\n   evening raises the risk of poor sleep in adults."
    drafts = mine_sentences(_req(chunk))
    assert len(drafts) == 1
    assert drafts[0].quote == chunk
    assert drafts[0].text == (
        "Drinking green tea in the evening raises the risk of poor sleep in adults."
    )


def test_mine_never_proposes_a_quote_too_short_to_check() -> None:
    chunk = "Tea is a risk to me. Nothing else is said here."
    drafts = mine_sentences(_req(chunk, question="tea risk?", sub="tea risk"))
    assert all(len(d.quote) >= MIN_QUOTE_CHARS for d in drafts)


_VOCAB = [
    "green",
    "tea",
    "risk",
    "stroke",
    "sleep",
    "adults",
    "the",
    "of",
    "in",
    "a",
    "20",
    "percent",
    "lower",
    "weather",
    "valley",
    "farmers",
    "wheat",
    "study",
    "found",
    "caffeine",
    "evening",
    "cup",
    "3.5",
    "raises",
    "not",
    "绿茶",
    "😀",
]


@st.composite
def _chunk(draw: st.DrawFn) -> str:
    sentences = draw(
        st.lists(
            st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=20), min_size=1, max_size=15
        )
    )
    seps = [". ", ".\n\n", "! ", "。", "? ", ", ", ".\n"]
    out = []
    for words_ in sentences:
        s = " ".join(words_)
        out.append(s[:1].upper() + s[1:] + draw(st.sampled_from(seps)))
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(_chunk())
def test_mine_property_verbatim_and_capped(chunk: str) -> None:
    drafts = mine_sentences(_req(chunk))
    assert len(drafts) <= MAX_CLAIMS_PER_CHUNK
    last = -1
    for d in drafts:
        assert isinstance(d, ClaimDraft)
        assert d.quote in chunk
        assert d.quote == d.quote.strip()
        assert MIN_WORDS <= len(d.quote.split()) <= 90
        pos = chunk.index(d.quote, last + 1)  # a repeated sentence may be mined twice
        last = pos
        if len(d.quote) >= MIN_QUOTE_CHARS:
            assert find_quote(chunk, d.quote) is not None


# --- plan --------------------------------------------------------------------------------------


def test_plan_is_the_question_with_no_fixed_facets() -> None:
    # Seen: every question got the same health-style facets and queries padded with fixed words
    # ("What benefits are reported for In which Emacs release…", "... benefit lower reduced").
    q = "  In which Emacs release did the package manager become part of the core?  "
    plan = plan_questions(q)
    assert [p.text for p in plan] == [q.strip()]
    assert all(isinstance(p, PlannedQuestion) for p in plan)
    for word in ("benefit", "risk", "revised", "disputed", "protective", "harm"):
        assert word not in plan[0].query
        assert word not in plan[0].text.casefold()
    assert plan[0].query == "Emacs release package manager become part core"


def test_plan_splits_a_two_part_question_into_its_parts() -> None:
    q = (
        "Which Python release did the project choose as its minimum, and which release did the "
        "blog announce as the newest major release of the language?"
    )
    plan = plan_questions(q)
    assert [p.text for p in plan] == [
        q,
        "Which Python release did the project choose as its minimum?",
        "Which release did the blog announce as the newest major release of the language?",
    ]


def test_a_part_that_points_back_carries_the_part_before_it() -> None:
    """Seen (qa-pdf-dev): "..., and what must be used instead?" was planned as the part "What
    must be used instead?", whose search and relevance matched every "instead" of every
    document; the answer sat 24th in its report. A later part that names nothing and points
    back is planned with the part it points at; one that names its own subject stands alone."""
    q = (
        "In the tide tables, why can a harbour's constituents not be fitted for a short record, "
        "and what must be used instead?"
    )
    first = "In the tide tables, why can a harbour's constituents not be fitted for a short record?"
    plan = plan_questions(q)
    assert [p.text for p in plan] == [q, first, f"What must be used instead? (after: {first})"]
    assert {"harbour", "constituents", "instead"} <= set(plan[2].query.split())
    # A part that names its own subject stands alone; so does one whose pronoun may stand for
    # the first part's answer, which the planner cannot know.
    for second in (
        "when did Microsoft say it would use wind power instead?",
        "what kind of integration rules does that package apply?",
    ):
        plan = plan_questions(f"Which package computes the tide tables, and {second}")
        assert plan[2].text == second[:1].upper() + second[1:]


@pytest.mark.parametrize(
    "q",
    [
        "Who is the general secretary of the Union, which reported on casual labour?",
        "Which cats and dogs are friendliest to children?",
        "Who founded Acme and when?",
    ],
)
def test_plan_keeps_relative_clauses_and_short_tails_whole(q: str) -> None:
    assert [p.text for p in plan_questions(q)] == [q]


def test_broad_question_is_planned_from_corpus_topics() -> None:
    assert is_broad("What do the sources say?")
    assert is_broad("Summarise this folder")
    assert not is_broad("What do the sources say about coffee?")
    plan = plan_questions("What do the sources say?", ("coffee", "sleep"))
    assert [p.query for p in plan[1:]] == ["coffee", "sleep"]
    # Seen: "## What about coffee drinkers?" and a lead 'sourc' via local. Each topic is now a
    # question a person would ask; the broad question itself runs no search (its words name
    # no topic) and only groups findings.
    assert plan[1].text == "What do the sources say about coffee?"
    assert not plan[0].search and all(p.search for p in plan[1:])
    # Without topics (a web session) the question stands alone, and is searched.
    alone = plan_questions("What do the sources say?")
    assert len(alone) == 1 and alone[0].search and alone[0].query == "sources"


def test_wide_question_is_planned_from_the_facets_of_its_documents() -> None:
    assert is_wide("What are the health effects of drinking coffee?")
    assert not is_wide("Who developed the algorithm?")
    assert not is_wide("How many rooms does the resort have?")
    plan = plan_questions(
        "What are the health effects of drinking coffee?", ("blood pressure", "pregnancy")
    )
    # Seen: leads 'health effect drink coffe ...' and sections "## Health effects of drinking
    # coffee: drinkers?". Queries are the question's words as written; facets are questions.
    assert [p.query for p in plan] == [
        "health effects drinking coffee",
        "health effects drinking coffee blood pressure",
        "health effects drinking coffee pregnancy",
    ]
    # A facet narrows the question with a relative clause, as a person would write it (issue
    # 33: "..., and what about caffeine intake?" was a question tacked on, not one question).
    assert [p.text for p in plan[1:]] == [
        "What are the health effects of drinking coffee that have to do with blood pressure?",
        "What are the health effects of drinking coffee that have to do with pregnancy?",
    ]
    # A facet's question holds no word beyond the question's and the facet's: each of its
    # words weighs in the relevance of the findings filed under it.
    q_terms = set(terms("What are the health effects of drinking coffee?"))
    for p, facet in zip(plan[1:], ("blood pressure", "pregnancy"), strict=True):
        assert set(terms(p.text)) <= q_terms | set(terms(facet)), p.text


def test_a_facet_clause_agrees_with_the_questions_own_verb() -> None:
    """The relative clause's "have" takes its number and tense from the verb the question opens
    with, so questions of other shapes read as one question too."""
    facets = ("sleep",)
    cases = {
        "What is the impact of remote work?": (
            "What is the impact of remote work that has to do with sleep?"
        ),
        "What were the consequences of the 2008 crisis?": (
            "What were the consequences of the 2008 crisis that had to do with sleep?"
        ),
        "Are there health risks of vaping?": (
            "Are there health risks of vaping that have to do with sleep?"
        ),
        "What does the evidence say about the effects of fasting?": (
            "What does the evidence say about the effects of fasting that has to do with sleep?"
        ),
    }
    for question, facet_question in cases.items():
        assert is_wide(question), question
        plan = plan_questions(question, facets)
        assert [p.text for p in plan[1:]] == [facet_question], question
        # Only function words are added: the facet question's terms are the question's and the
        # facet's.
        assert set(terms(plan[1].text)) == set(terms(question)) | {"sleep"}, plan[1].text


def test_queries_are_words_a_person_would_write() -> None:
    questions = [
        "Which cartoonist's critique of the narrative of lazy Millennials earned a spot on CNN?",
        "How many rooms does the Nam Nghi Phu Quoc resort have?",
        "In which Emacs release did the package manager become part of the core?",
    ]
    for q in questions:
        words = {w.removesuffix("'s") for w in re.findall(r"[\w'.+/-]+", q)}
        for p in plan_questions(q):
            # Every query word is a word of the question as written: no stem, no fragment of one.
            assert set(p.query.split()) <= words, (p.query, q)
    assert plan_questions(questions[0])[0].query == (
        "cartoonist critique narrative lazy Millennials earned spot CNN"
    )


def test_demo_folder_plans_read_as_questions_with_topics_not_the_subject() -> None:
    # Seen over the demo folder: sections "## coffee cancer" and "## What about coffee
    # drinkers?", facets "drinkers" and "association": the corpus's own subject and its
    # study vocabulary, planned as if they were topics.
    from mole_dag.actors.local import LocalCorpus
    from mole_dag.paths import demo_corpus

    corpus = LocalCorpus.open(str(demo_corpus()))
    text = " ".join(d.text for d in corpus.documents).lower()
    for question in ("What do the sources say?", "What are the health effects of drinking coffee?"):
        topics = corpus.topics(8, about="" if is_broad(question) else question)
        assert topics and not {"coffee", "drinkers", "drinking", "association"} & set(topics)
        assert not any("coffee" in t for t in topics), topics
        for p in plan_questions(question, topics):
            assert p.text.endswith("?") and p.text.split()[0] in ("What",), p.text
            for word in p.query.split():
                assert re.search(rf"\b{re.escape(word.lower())}\b", text + question.lower()), (
                    word,
                    p.query,
                )


def test_plan_is_deterministic() -> None:
    q = "Is intermittent fasting safe for people with diabetes?"
    assert plan_questions(q) == plan_questions(q)
    assert [p.text for p in plan_questions(q)] == [p.text for p in plan_questions(q)]


def test_topic_of_keeps_question_when_only_leading_words() -> None:
    assert topic_of("What is?") == "What is"


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=80).filter(lambda s: s.strip()))
def test_plan_property(question: str) -> None:
    plan = plan_questions(question)
    assert plan[0].text == " ".join(question.split())
    assert len({p.text for p in plan}) == len(plan)
    assert all(p.query.strip() for p in plan)
    assert plan == plan_questions(question)


# --- skills object -----------------------------------------------------------------------------


def _write_req(findings: tuple[FindingForWriter, ...]) -> WriteRequest:
    return WriteRequest("q?", findings)


def test_extractive_skills_cost_nothing() -> None:
    sk = ExtractiveSkills()
    assert sk.uses_model is False
    assert sk.name == "extractive"
    digest = Digest(question="Does green tea affect sleep?", round=1)
    req = _req(CHUNK)
    pairs = [
        ("a b c", "a b c"),
        (
            "X raises the risk of high blood pressure in adults.",
            "X does not raise the risk of high blood pressure in adults.",
        ),
    ]
    wreq = _write_req((FindingForWriter(1, "Tea helps.", 0.5),))
    for unit in Unit:
        assert sk.estimate_plan(digest, unit) == 0
        assert sk.estimate_mine(req, unit) == 0
        assert sk.estimate_judge(pairs, unit) == 0
        assert sk.estimate_write(wreq, unit) == 0
        for got in (
            sk.plan(digest, unit),
            sk.mine(req, unit),
            sk.judge(pairs, unit),
            sk.write(wreq, unit),
        ):
            assert got.cost == 0
            assert got.model == "extractive"
    assert sk.plan(digest, Unit.TOKENS).value == plan_questions(digest.question)
    assert sk.plan(Digest(question="q", round=2), Unit.TOKENS).value == []
    assert sk.mine(req, Unit.TOKENS).value == mine_sentences(req)
    verdicts = sk.judge(pairs, Unit.TOKENS).value
    assert [v.index for v in verdicts] == [0, 1]
    assert verdicts[1].relation == "contradicts"
    assert "without a language model" in MADE_WITHOUT_MODEL


# --- write -------------------------------------------------------------------------------------
# The extractive writer returns the deterministic answer: the most relevant findings' quotes,
# one finding per sentence, each bound to its own number (the report renders the citations).


def test_write_body_empty() -> None:
    got = write_body(_write_req(()))
    assert got.sentences == () and got.problem


def test_write_body_quotes_the_most_relevant_one_per_sub_question() -> None:
    findings = (
        FindingForWriter(1, "Green tea lowers stroke risk.", 0.9, 0.5, "stroke?"),
        FindingForWriter(2, "Green tea and stroke, again.", 0.9, 0.45, "stroke?"),
        FindingForWriter(3, "Green tea disturbs sleep.", 0.4, 0.7, "sleep?", disputed=True),
        FindingForWriter(4, "Old claim about tea.", 0.95, 0.99, "sleep?", superseded=True),
        FindingForWriter(5, "Tea is brewed hot.", 0.95, 0.1, "brewing?"),
    )
    got = write_body(_write_req(findings))
    # One per sub-question first (3, 1, 5 by relevance), superseded last: never picked here.
    assert [s.findings for s in got.sentences] == [(3,), (1,), (5,)]
    assert [s.text for s in got.sentences][0] == "Green tea disturbs sleep."


def test_write_body_fills_from_one_part_and_uses_superseded_last() -> None:
    findings = (
        FindingForWriter(1, "Old claim.", 0.3, 0.9, "q", superseded=True),
        FindingForWriter(2, "New claim.", 0.3, 0.2, "q"),
    )
    got = write_body(_write_req(findings))
    assert [s.findings for s in got.sentences] == [(2,), (1,)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
            st.floats(0, 1),
            st.floats(0, 1),
            st.sampled_from(["a", "b", "c", "d"]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_write_body_binds_each_sentence_to_one_given_finding(rows: list) -> None:
    findings = tuple(
        FindingForWriter(i + 1, text, conf, rel, sq, disputed=d, superseded=s)
        for i, (text, conf, rel, sq, d, s) in enumerate(rows)
    )
    got = write_body(_write_req(findings))
    assert 1 <= len(got.sentences) <= min(3, len(findings))
    numbers = [s.findings for s in got.sentences]
    assert all(len(n) == 1 and 1 <= n[0] <= len(findings) for n in numbers)
    assert len(set(numbers)) == len(numbers)
    by_no = {f.number: f for f in findings}
    assert all(s.text == " ".join(by_no[s.findings[0]].text.split()) for s in got.sentences)


def test_mine_refuses_a_lone_unpunctuated_line_in_any_language() -> None:
    # Seen: headings glued to or mined as sentences ("Short-term effects In people who…"); the
    # filter's word lists are English, so German headings got through.
    chunk = (
        "Das Wahrzeichen von Montauk und der alte Leuchtturm\n\n"
        "Green tea drinkers had a lower risk of stroke in a large cohort study.\n\n"
        "Green tea lowers stroke risk in older adults"
    )
    quotes = [d.quote for d in mine_sentences(_req(chunk))]
    assert quotes == ["Green tea drinkers had a lower risk of stroke in a large cohort study."]


def test_write_body_states_what_several_publishers_agree_on_first() -> None:
    # Seen in the demo: the finding three publishers agree on (three to four cups a day, a lower
    # risk of death) sat at #15 while the Answer quoted a sentence about sleep from one page.
    findings = (
        FindingForWriter(1, "Sleep problems can affect health.", 0.21, 0.5, "sleep?", answers=True),
        FindingForWriter(2, "Moderate coffee suits the liver.", 0.21, 0.45, "liver?", answers=True),
        FindingForWriter(3, "Intakes far above were not seen.", 0.21, 0.44, "q", answers=True),
        FindingForWriter(
            4,
            "Three to four cups a day: lower risk of death.",
            0.37,
            0.33,
            "q",
            answers=True,
            publishers=3,
        ),
        FindingForWriter(
            5,
            "Two say this but it is disputed.",
            0.3,
            0.4,
            "q",
            disputed=True,
            answers=True,
            publishers=2,
        ),
    )
    got = write_body(_write_req(findings))
    assert [s.findings for s in got.sentences][0] == (4,)
    assert len(got.sentences) == 3
    # One source alone changes nothing: the most relevant per part, as before.
    single = tuple(f for f in findings if f.number != 4)
    assert [s.findings for s in write_body(_write_req(single)).sentences] == [(1,), (2,), (3,)]
