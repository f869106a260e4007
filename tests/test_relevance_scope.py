"""The words a question names its document with ("according to the Rcpp FAQ", "in the pscl
vignette on count-data regression") are credited by the document, not by the sentence (issue 19:
over papers, the sentences that repeat a paper's name and title outranked its answer)."""

from __future__ import annotations

import pytest

import mole_dag.mining.relevance as relevance
from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.passages import Passages
from mole_dag.mining.relevance import Query, TermStats, combine, document_terms, scope_terms, score
from mole_dag.skills.protocol import MineRequest
from mole_dag.text import stem


@pytest.fixture(autouse=True)
def _lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the hand-weighted lexical scorer's behaviours (relevance.weigh), kept as the
    baseline bench/fit_ranker.py compares with and for replays; a session ranks with the
    learned model (mining.ranker, tests/test_ranker.py)."""
    import mole_dag.mining.relevance as lexical

    monkeypatch.setattr(lexical, "LEARNED", False)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "According to the Widgetry FAQ, what can the default installer not do?",
            {"widgetry", "faq"},
        ),
        (
            "In the gizmo vignette on count-data regression, which author introduced hurdles?",
            {"gizmo", "vignett", "count", "data", "regression"},
        ),
        (
            "Why is it hard, according to Roe and Doe's paper on the gizmo package?",
            {"roe", "doe", "paper", "gizmo", "packag"},
        ),
        (
            "How many nodes are simulated in the gizmo vignette 'Examples of Sparse Graphs'?",
            {"gizmo", "vignett", "exampl", "sparse", "graph"},
        ),
        # A possessive document noun ends the phrase: the example is what is asked about.
        (
            "In the gizmo vignette's example of pairwise tests, why is one p-value adjusted?",
            {"gizmo", "vignett"},
        ),
        # A clause before any document noun: the data is what is asked about.
        ("In the rotarod data that gizmo's paper uses, what did the rats receive?", set()),
        # "According to" a speaker, not a document: the answer often repeats who said it.
        ("By how much did emissions fall according to the Rhodium Group?", set()),
        ("In which German wine region is the grape grown?", set()),
        # A word the question also asks with is not only the document's name.
        ("According to the widget manual, which widget setting is the default?", {"manual"}),
    ],
)
def test_scope_terms(question: str, expected: set[str]) -> None:
    assert scope_terms(question) == {stem(t) for t in expected}


QUESTION = "Why do many people find widgets hard to install, according to Roe's paper on Gizmo?"
ANSWER = "A common obstacle for many people is that widgets are hard to set up."
ECHO = "This paper by Roe describes Gizmo, a system of widgets, and how Gizmo is maintained."
# The paper's other sentences: its own words, which the question's document words are among.
PAPER = [
    ECHO,
    ANSWER,
    "Gizmo was first released in 2004 and is maintained by Roe and colleagues.",
    "The figures in this paper were made with Gizmo version 3.",
    "Each chapter ends with exercises.",
]
OTHER = [
    "Widgets are small devices.",
    "People install software every day.",
    "Many installers need root.",
    "The weather was fine.",
]


def _scores(question: str, sentences: list[str]) -> dict[str, float]:
    stats = TermStats.from_sentences(PAPER + OTHER)
    q = Query.of(question, stats)
    doc = document_terms(PAPER, "Gizmo: widgets for everyone")
    return {s: score(q, stats, s, document=doc).value for s in sentences}


def test_the_answer_outranks_the_sentence_that_repeats_the_papers_name() -> None:
    got = _scores(QUESTION, [ANSWER, ECHO])
    assert got[ANSWER] > got[ECHO]


def test_without_the_document_credit_the_echo_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the credit changes: switched off, the sentence naming Roe and Gizmo ranks first.
    monkeypatch.setattr(relevance, "SCOPE_BY_DOCUMENT", False)
    got = _scores(QUESTION, [ANSWER, ECHO])
    assert got[ECHO] > got[ANSWER]


def test_the_document_that_holds_the_named_words_ranks_above_one_that_does_not() -> None:
    stats = TermStats.from_sentences(PAPER + OTHER)
    q = Query.of(QUESTION, stats)
    in_paper = score(q, stats, ANSWER, document=document_terms(PAPER)).value
    elsewhere = score(q, stats, ANSWER, document=document_terms(OTHER + [ANSWER])).value
    assert in_paper > elsewhere
    explained = score(q, stats, ANSWER, document=document_terms(PAPER)).explain()
    assert "in the document the question names" in explained


def test_a_title_names_its_document_better_than_a_siblings_text() -> None:
    # Seen: "the effects vignette 'Examples of Effect Displays with Partial Residuals'": every
    # vignette of the package uses those words in its text; one has them as its title.
    question = "How many nodes are simulated in the gizmo vignette 'Sparse Graph Examples'?"
    sentence = "We simulate 500 nodes for each graph."
    stats = TermStats.from_sentences(PAPER + OTHER + [sentence])
    q = Query.of(question, stats)
    body = [sentence, "This gizmo vignette gives sparse graph examples."]
    titled = score(q, stats, sentence, document=document_terms(body, "Sparse Graph Examples"))
    sibling = score(q, stats, sentence, document=document_terms(body, "Gizmo Gallery"))
    assert titled.value > sibling.value


def test_without_a_document_the_named_words_count_as_before() -> None:
    stats = TermStats.from_sentences(PAPER + OTHER)
    q = Query.of(QUESTION, stats)
    assert score(q, stats, ECHO).value > score(q, stats, ANSWER).value


def test_the_miner_keeps_the_answer_and_lets_no_sentence_through_on_the_name_alone() -> None:
    chunk = " ".join(PAPER)
    stats = TermStats.from_sentences([s.text for s in Passages(chunk).sentences] + OTHER)
    got = [
        c.quote
        for c in mine_sentences(
            MineRequest(QUESTION, QUESTION, chunk, title="Gizmo: widgets for everyone", stats=stats)
        )
    ]
    assert ANSWER in got
    # Shares no word with the question: the document's words do not make it a claim.
    assert "Each chapter ends with exercises." not in got


def test_a_quoted_title_keeps_a_siblings_sentences_out() -> None:
    """Seen (qa-pdf-dev): "How many observations are simulated in the effects vignette
    'Examples of Effect Displays with Partial Residuals'?" was reported with 27 findings from
    7 other PDFs (the package's other vignettes share its words). A question that quotes the
    title of a source read asks about that document: a sibling's sentence scores 0, and says
    why; the titled document's sentence scores as before."""
    from mole_dag.mining.question_terms import quoted_phrases, quoted_titles
    from mole_dag.mining.relevance import score_stretch

    question = "How many nodes are simulated in the gizmo vignette 'Sparse Graph Examples'?"
    sentence = "We simulate 500 nodes for each sparse graph."
    stats = TermStats.from_sentences(PAPER + OTHER + [sentence])
    q = Query.of(question, stats)
    titled = document_terms([sentence], "Sparse Graph Examples in Gizmo")
    sibling = document_terms([sentence], "Gizmo Gallery of Sparse Graphs")
    named = quoted_titles(question, [titled.title, sibling.title])
    assert named == quoted_phrases(question)
    got = score_stretch(q, stats, sentence, document=sibling, titles_quoted=named)
    assert got.value == 0.0 and "quotes the title of another source" in got.explain()
    kept = score_stretch(q, stats, sentence, document=titled, titles_quoted=named)
    assert kept.value == score(q, stats, sentence, document=titled).value > 0
    # A quoted phrase that is no source's title (a term the question asks about) keeps nothing
    # out, and neither does a word with an apostrophe.
    assert quoted_titles("What does 'no structural change' mean?", [titled.title]) == ()
    assert quoted_phrases("Did Alzheimer's patients and controls smoke?") == ()


def test_a_models_grade_does_not_lift_a_claim_from_another_titled_source() -> None:
    """A model miner's grade is blended with the lexical score; it graded the sentence, not
    which document the question names by its quoted title, so a claim whose question and parts
    all quote another source's title stays at 0. A part that quotes no title keeps the blend."""
    from mole_dag.mining.relevance import OTHER_TITLE, Relevance
    from mole_dag.mining.score_relevance import claim_value

    assert claim_value(OTHER_TITLE, 0.0, [OTHER_TITLE], 3) == 0.0
    assert claim_value(OTHER_TITLE, 0.0, [], 3) == 0.0
    plain = Relevance(0.2, 0.2, 0.0, False, False)
    assert claim_value(OTHER_TITLE, 0.2, [OTHER_TITLE, plain], 3) > 0.0
    assert claim_value(plain, 0.2, [plain], None) == combine(0.2, 0.2)
