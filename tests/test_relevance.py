"""Relevance (mole_dag/mining/relevance.py): how well a sentence answers the question, stored
per claim and separate from confidence. Each test is a behaviour seen on real pages, written
here in sentences of our own."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.passages import Passages
from mole_dag.mining.relevance import (
    AnswerType,
    Query,
    TermStats,
    answer_type,
    blend_with_grade,
    combine,
    score,
    score_stretch,
)
from mole_dag.output.trace import render_trace
from mole_dag.session import create_session
from mole_dag.skills.protocol import MineRequest
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

# A page where the answer is worded apart from the question: the sentence that names the topic
# holds no answer, the next one holds it and shares no word with the question.
PAGE = (
    "Lakeview held its mayoral election on Tuesday, the first open race for the office in twenty "
    "years. Ana Ruiz, 41, won with 58 percent of the vote. Turnout was higher than in the last "
    "council election, officials said.\n\n"
    "The city's summer festival will return in July with music on the waterfront. Tickets go on "
    "sale next month at the town hall.\n\n"
    "Lakeview also plans to rebuild the old ferry pier. The mayoral office said the pier would "
    "cost more than expected."
)
OTHER = [
    f"Unrelated page {i} talks about gardening, rainfall and the price of tomatoes."
    for i in range(30)
]


@pytest.fixture(autouse=True)
def _lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the hand-weighted lexical scorer's behaviours (relevance.weigh), kept as the
    baseline bench/fit_ranker.py compares with and for replays; a session ranks with the
    learned model (mining.ranker, tests/test_ranker.py)."""
    import mole_dag.mining.relevance as lexical

    monkeypatch.setattr(lexical, "LEARNED", False)


def _stats() -> TermStats:
    return TermStats.from_sentences([s.text for s in Passages(PAGE).sentences] + OTHER)


def _rank(question: str) -> list[str]:
    stats = _stats()
    page = Passages(PAGE)
    q = Query.of(question, stats)
    scored = [
        (score(q, stats, s.text, page.around(s.start, s.end, 2)).value, s.text)
        for s in page.sentences
    ]
    return [t for _, t in sorted(scored, key=lambda x: -x[0])]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who won the mayoral election in Lakeview?", AnswerType.PERSON),
        ("Which cartoonist drew the strip?", AnswerType.PERSON),
        ("How many rooms does the resort have?", AnswerType.NUMBER),
        ("What share of fans are female?", AnswerType.NUMBER),
        ("On what date did the court rule?", AnswerType.DATE),
        ("When did the pier open?", AnswerType.DATE),
        ("On which beach was the tool found?", AnswerType.PLACE),
        ("Which version was the first to support it?", AnswerType.NAME),
        ("Does coffee raise blood pressure?", AnswerType.ANY),
    ],
)
def test_answer_type(question: str, kind: AnswerType) -> None:
    assert answer_type(question) == kind


def test_answer_worded_apart_from_the_question_ranks_first() -> None:
    # Seen: "Nadia Mohamed, 27, won with 58%" was never mined: it shares no word with the
    # question; the miner kept only sentences that did.
    ranked = _rank("Who won the mayoral election in Lakeview?")
    assert ranked[0] == "Ana Ruiz, 41, won with 58 percent of the vote."


def test_a_number_question_prefers_the_sentence_with_a_number() -> None:
    ranked = _rank("What share of the vote did the winner of the Lakeview mayoral election get?")
    assert ranked[0] == "Ana Ruiz, 41, won with 58 percent of the vote."


def test_context_does_not_lift_an_unrelated_neighbour() -> None:
    stats = _stats()
    q = Query.of("Does the Lakeview ferry pier cost more than expected?", stats)
    page = Passages(PAGE)
    by_text = {
        s.text: score(q, stats, s.text, page.around(s.start, s.end, 2)).value
        for s in page.sentences
    }
    assert by_text["Tickets go on sale next month at the town hall."] == 0.0
    assert by_text["The mayoral office said the pier would cost more than expected."] > 0.3


def test_context_stays_within_its_paragraph() -> None:
    page = Passages(PAGE)
    s = next(x for x in page.sentences if x.text.startswith("The city's summer"))
    assert page.around(s.start, s.end, 2) == ["Tickets go on sale next month at the town hall."]


def test_restating_the_question_is_not_an_answer() -> None:
    stats = TermStats.from_sentences(["Who won the Lakeview mayoral election?", *OTHER])
    q = Query.of("Who won the Lakeview mayoral election?", stats)
    restated = score(q, stats, "Who won the Lakeview mayoral election?")
    answer = score(q, stats, "Ana Ruiz won the Lakeview mayoral election easily.")
    assert restated.restates and not answer.restates
    assert answer.value > restated.value


def test_scores_are_bounded_and_explained() -> None:
    stats = _stats()
    q = Query.of("Who won the mayoral election in Lakeview?", stats)
    for s in Passages(PAGE).sentences:
        r = score(q, stats, s.text, ["Lakeview mayoral election won"] * 3, "Lakeview election")
        assert 0.0 <= r.value <= 1.0
        assert r.explain().startswith(f"{r.value:.2f} = ")
    assert score(Query.of("?", stats), stats, "Anything at all here.").value == 0.0


def test_grade_blend_and_parts() -> None:
    assert blend_with_grade(0.4, None) == 0.4
    assert blend_with_grade(0.4, 3) == 0.7
    assert blend_with_grade(0.4, 0) == 0.2
    assert blend_with_grade(0.4, 9) == 0.7  # clamped, a model cannot grade past the scale
    # A part's answer covers only part of the question's words: its sub-question lifts it.
    assert combine(0.3, 0.9) == 0.6
    assert combine(0.8, 0.2) == 0.8


def test_miner_takes_the_answer_worded_apart_from_the_question() -> None:
    req = MineRequest(
        "Who won the mayoral election in Lakeview?",
        "Who won the mayoral election in Lakeview?",
        PAGE,
        "Lakeview votes",
        _stats(),
    )
    quotes = [d.quote for d in mine_sentences(req)]
    assert "Ana Ruiz, 41, won with 58 percent of the vote." in quotes
    assert "Tickets go on sale next month at the town hall." not in quotes


def test_relevance_is_stored_for_every_claim_and_queryable(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    question = "Does coffee raise blood pressure?"
    sid = create_session(store, question, Unit.TOKENS, 200_000).session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    run_session(run)
    claims = store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [sid])
    scored = store.rows("SELECT * FROM claim_relevance WHERE session_id = ?", [sid])
    assert claims > 0 and len(scored) == claims
    assert all(0 <= r["relevance"] <= 1 and r["basis"] == "lexical" for r in scored)
    # Seen: "Does coffee raise blood pressure?" had its blood-pressure claims at #15-29.
    top = store.rows(
        "SELECT text, relevance FROM claim_overview WHERE session_id = ? "
        "ORDER BY relevance DESC, claim_id LIMIT 5",
        [sid],
    )
    assert all("blood pressure" in r["text"].lower() for r in top), top
    assert "relevance " in render_trace(store, sid)
    store.close()


def test_progress_says_when_a_round_runs_follow_ups_only() -> None:
    # Seen: "round 2: planned 0 sub-questions, 0 leads", then 2 leads ran.
    from mole_dag.planner.plan import plan_progress

    assert (
        plan_progress(2, 0, 0, 2) == "round 2: no new sub-questions; running 2 follow-up leads only"
    )
    assert plan_progress(1, 3, 3, 3) == "round 1: planned 3 sub-questions, 3 leads"
    assert plan_progress(2, 1, 1, 2) == (
        "round 2: planned 1 sub-question, 1 lead, plus 1 follow-up lead"
    )


def test_a_quote_of_two_sentences_scores_as_its_best_sentence() -> None:
    """Seen (qa-pdf-dev, coin's vignette): a sentence opening with "Thus," is quoted with the
    one before it; scored whole, BM25's length normalisation put the pair below the answer
    sentence alone, and the answer fell out of the report. A quote of several sentences scores
    as its best sentence, the others its context."""
    lead = (
        "Strasser and Weber proved that the conditional distribution of linear statistics "
        "with given expectation and covariance tends to a normal distribution as the sample "
        "grows without bound in every one of the strata considered."
    )
    answer = "Thus, asymptotic p-values for maximum-type statistics are computed by mvtnorm."
    stats = TermStats.from_sentences(
        [lead, answer, *(f"Unrelated line {i} about weather and harbours." for i in range(40))]
    )
    query = Query.of(
        "Which package computes asymptotic p-values for maximum-type statistics?", stats
    )
    alone = score(query, stats, answer, [lead])
    whole = score(query, stats, f"{lead} {answer}")
    joined = score_stretch(query, stats, f"{lead} {answer}")
    assert whole.value < alone.value  # what the mechanism is for
    assert joined.value == alone.value
    assert score_stretch(query, stats, answer).value == score(query, stats, answer).value


def test_a_session_whose_question_quotes_a_title_reports_that_document_only(
    tmp_path: Path,
) -> None:
    """The relevance stage reads the quoted title against the titles of the sources read: the
    sibling's claims are stored with relevance 0 and the reason, and the report lists the
    titled document's findings only."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, title, body in (
        (
            "examples.html",
            "Sparse Graph Examples in Gizmo",
            "We simulate 500 nodes for each sparse graph in these examples. "
            "The sparse graph examples run in under a minute on a laptop.",
        ),
        (
            "gallery.html",
            "Gizmo Gallery of Sparse Graphs",
            "The gallery shows sparse graph examples with 200 simulated nodes each. "
            "Every sparse graph in the gallery is drawn with Gizmo.",
        ),
    ):
        (corpus / name).write_text(
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{body}</p></body></html>",
            encoding="utf-8",
        )
    store = Store(tmp_path / "s.duckdb")
    question = "How many nodes are simulated in the gizmo vignette 'Sparse Graph Examples'?"
    sid = create_session(store, question, Unit.TOKENS, 200_000, corpus=str(corpus)).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    rows = store.rows(
        "SELECT s.url, r.relevance, r.explanation FROM claim_relevance r "
        "JOIN claims c ON c.id = r.claim_id JOIN sources s ON s.id = c.source_id "
        "WHERE r.session_id = ?",
        [sid],
    )
    sibling = [r for r in rows if r["url"].endswith("gallery.html")]
    titled = [r for r in rows if r["url"].endswith("examples.html")]
    assert sibling and titled
    assert all(r["relevance"] == 0 and "quotes the title" in r["explanation"] for r in sibling)
    assert any(r["relevance"] > 0 for r in titled)
    report = store.scalar(
        "SELECT markdown FROM reports WHERE session_id = ? ORDER BY created_at DESC LIMIT 1", [sid]
    )
    assert "500 nodes" in report and "200 simulated nodes" not in report
    store.close()


# -- the question's setting (relevance.setting_terms) -----------------------------------------


def test_the_setting_is_what_a_question_says_before_it_asks() -> None:
    from mole_dag.mining.relevance import setting_terms

    q = "In the rotarod study that the coin paper uses, what did the 24 rats in the treatment get?"
    assert {"rotarod", "coin", "paper"} <= setting_terms(q)
    assert "rats" not in setting_terms(q) and "rat" not in setting_terms(q)
    # "According to the FAQ, to roughly what ...": the setting ends at the last comma.
    assert setting_terms("According to the FAQ, to roughly what resolution is it kept?") == {"faq"}
    assert setting_terms("What did the rats in the rotarod study get?") == frozenset()
    # A word the question also asks with is not only setting.
    assert "rotarod" not in setting_terms("In the rotarod study, what did the rotarod measure?")


SETTING_DECOY = (
    "The rotarod data that the coin package uses introduce a test of independence between the "
    "groups."
)
SETTING_ANSWER = "Each of the 24 rats in the treatment group received a muscle relaxant."
SETTING_Q = (
    "In the rotarod data that the coin package uses to introduce a test, what did the 24 rats "
    "in the treatment group receive?"
)


def _query(question: str, *sentences: str) -> tuple[Query, TermStats]:
    """The question over a page of `sentences` among forty unrelated ones."""
    other = [f"Unrelated sentence {i} about gardening, rainfall and tomatoes." for i in range(40)]
    stats = TermStats.from_sentences([*sentences, *other])
    return Query.of(question, stats), stats


def _two_scores(question: str, answer: str, decoy: str) -> tuple[float, float]:
    q, stats = _query(question, answer, decoy)
    return score(q, stats, answer).value, score(q, stats, decoy).value


def _setting_scores() -> tuple[float, float]:
    return _two_scores(SETTING_Q, SETTING_ANSWER, SETTING_DECOY)


def test_a_sentence_on_what_is_asked_outranks_one_on_the_setting() -> None:
    answer, decoy = _setting_scores()
    assert answer > decoy


def test_with_the_setting_weighted_like_the_rest_the_setting_sentence_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mole_dag.mining.relevance as relevance

    monkeypatch.setattr(relevance, "SETTING_SHARE", 1.0)
    answer, decoy = _setting_scores()
    assert answer <= decoy


# -- a question asked in the negative ----------------------------------------------------------

NEG_Q = "What can the default macOS build environment not do?"
NEG_ANSWER = "By default, the macOS environment lacks the ability to run code in parallel."
NEG_DECOY = "The default macOS environment ships with a compiler and the usual tools."


def _negation_scores() -> tuple[float, float]:
    return _two_scores(NEG_Q, NEG_ANSWER, NEG_DECOY)


def test_a_negation_is_no_cue_even_for_a_question_asked_in_the_negative() -> None:
    # Issue 30 retired the negation cue (BENCHMARKS.md, the rules switched off one at a time):
    # fitted on one DEV question, it moved no unseen one.
    answer, decoy = _negation_scores()
    assert answer <= decoy
    assert not score(*_neg_query(), NEG_ANSWER).cue


def _neg_query() -> tuple[Query, TermStats]:
    return _query(NEG_Q, NEG_ANSWER, NEG_DECOY)


def test_a_question_asked_plainly_takes_no_negation_cue() -> None:
    q, stats = _neg_query()
    plain = Query.of("What can the default macOS build environment do?", stats)
    assert not score(plain, stats, NEG_ANSWER).cue
