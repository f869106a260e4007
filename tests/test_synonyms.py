"""Near-synonyms (mole_dag/mining/synonyms.py) and what relevance does with them: a question
asks with one word and the answer says it with another. Sentences are our own."""

from __future__ import annotations

import gzip

import pytest

import mole_dag.mining.relevance as relevance
from mole_dag.mining.relevance import Query, TermStats, score
from mole_dag.mining.synonyms import TABLE, lexicon, parse
from mole_dag.text import content_terms


def test_the_table_pairs_words_that_share_a_frequent_sense() -> None:
    lex = lexicon()
    assert "select" in lex.near_terms("choos")
    assert "approximately" in lex.near_terms("roughly")
    assert "roughly" in lex.near_terms("approximately")
    assert "class" in lex.near_terms("family")


def test_an_irregular_form_reaches_its_lemma_and_the_lemma_s_synonyms() -> None:
    lex = lexicon()
    (chosen,) = content_terms("chosen")
    assert lex.base(chosen) == "choos"
    assert {"choos", "select"} <= lex.near_terms(chosen)


def test_a_regular_plural_is_not_read_as_another_word_s_irregular_form() -> None:
    # WordNet lists "tests" as the plural of "testis"; the tests a statistician runs are tests.
    lex = lexicon()
    (tests,) = content_terms("tests")
    assert lex.base(tests) == "test"
    assert "testicl" not in lex.near_terms(tests)


def test_the_table_parses_its_own_format() -> None:
    lex = parse("# a comment\nkeep\thold maintain\n=kept\tkeep\n")
    assert lex.near_terms("kept") == {"keep", "hold", "maintain"}
    assert lex.base("kept") == "keep"
    assert lex.near_terms("unknown") == frozenset()


def test_the_shipped_table_is_gzip_with_its_licence() -> None:
    from importlib import resources

    raw = resources.files("mole_dag.data").joinpath(TABLE).read_bytes()
    head = gzip.decompress(raw)[:800].decode("utf-8")
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in head


# A paper's paragraph: the answer says "selected" where the question says "chosen"; another
# sentence shares as many of the question's exact words and holds no answer.
ANSWER = "For seasonal data the order is selected by a unit-root test on the differenced series."
DECOY = "The order of the seasonal model matters for the accuracy of forecasts from the series."
OTHER = [f"Unrelated sentence {i} about gardening, rainfall and tomatoes." for i in range(40)]
QUESTION = "How is the order chosen for seasonal series?"


def _scores() -> tuple[float, float]:
    stats = TermStats.from_sentences([ANSWER, DECOY, *OTHER])
    q = Query.of(QUESTION, stats)
    return score(q, stats, ANSWER).value, score(q, stats, DECOY).value


def test_a_sentence_that_says_the_question_s_word_another_way_ranks_first() -> None:
    answer, decoy = _scores()
    assert answer > decoy


def test_without_near_synonyms_the_decoy_ties_or_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    # The mechanism switched off: the same two sentences, and the answer no longer leads.
    monkeypatch.setattr(relevance, "NEAR_SHARE", 0.0)
    answer, decoy = _scores()
    assert answer <= decoy


def test_a_near_word_counts_less_than_the_word_itself() -> None:
    stats = TermStats.from_sentences([ANSWER, DECOY, *OTHER])
    q = Query.of(QUESTION, stats)
    said = score(q, stats, ANSWER.replace("selected", "chosen")).own
    near = score(q, stats, ANSWER).own
    assert 0 < near < said


def test_a_common_near_word_counts_no_more_than_its_own_weight() -> None:
    # "class" is on every page of an R manual; standing in for the rare "families" it adds at
    # most its own (small) weight.
    common = [f"Each S4 class {i} has methods." for i in range(40)]
    target = "The tests fall into two classes."
    stats = TermStats.from_sentences([target, *common])
    q = Query.of("Which families of tests are there?", stats)
    got = score(q, stats, target).own
    (fam,), (cls_,) = content_terms("families"), content_terms("classes")
    share = relevance.NEAR_SHARE * stats.idf(cls_) / q.total
    assert stats.idf(cls_) < stats.idf(fam)
    assert got <= score(q, stats, "The tests.").own + share + 1e-9


def test_near_words_in_the_sentences_around_count_as_context() -> None:
    stats = TermStats.from_sentences([ANSWER, DECOY, *OTHER])
    q = Query.of(QUESTION, stats)
    ev = relevance.evidence(q, stats, "It uses a test.", ["The order is selected."])
    plain = relevance.evidence(q, stats, "It uses a test.", ["The order is ."])
    assert ev.around > plain.around


def test_the_explanation_names_the_words_said_another_way() -> None:
    stats = TermStats.from_sentences([ANSWER, DECOY, *OTHER])
    q = Query.of(QUESTION, stats)
    assert '("selected" for "chosen")' in score(q, stats, ANSWER).explain()
    assert '" for "' not in score(q, stats, DECOY).explain()
