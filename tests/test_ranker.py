"""The learned ranking (mole_dag/mining/ranker.py): a sentence's relevance from general features
weighed by a model fitted outside this project's question sets (mole_dag/data/ranker_weights.json,
made by bench/fit_ranker.py). Sentences of our own."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

import mole_dag.mining.ranker as ranker
from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.passages import Passages
from mole_dag.mining.relevance import Query, TermStats, score
from mole_dag.skills.protocol import MineRequest

PAGE = (
    "Coffee has been studied for decades by researchers in many countries. People who drank "
    "three to four cups a day had a lower risk of death over the study period. The cafe on the "
    "corner opens at seven and sells pastries.\n\n"
    "The stadium was rebuilt in 1990 after a fire destroyed the old stand."
)
OTHER = [f"Unrelated page {i} talks about gardening, rainfall and tomatoes." for i in range(30)]


@pytest.fixture(autouse=True)
def _learned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The learned ranking is opt-in (MOLE_RANKING=learned); these tests turn it on."""
    import mole_dag.mining.relevance as relevance

    monkeypatch.setattr(relevance, "LEARNED", True)


def _stats() -> TermStats:
    return TermStats.from_sentences([s.text for s in Passages(PAGE).sentences] + OTHER)


def test_the_weights_say_what_fitted_them() -> None:
    data = json.loads(resources.files("mole_dag.data").joinpath("ranker_weights.json").read_text())
    assert "WikiQA" in data["fitted_on"] and "fit_ranker.py" in data["command"]
    assert set(data["weights"]) == set(ranker.FEATURES)
    m = ranker.model()
    # Fitted, not set by hand: meaning counts, and a restatement counts against a sentence.
    assert m.weights["meaning"] > 0 and m.weights["restates"] < 0
    assert 0 < m.mine_floor < m.answer_floor < 1


def test_an_answer_in_other_words_outranks_an_unrelated_sentence() -> None:
    stats = _stats()
    q = Query.of("How many cups of coffee a day are linked to lower mortality?", stats)
    answer = score(q, stats, "People who drank three to four cups a day had a lower risk of death.")
    unrelated = score(q, stats, "The cafe on the corner opens at seven and sells pastries.")
    assert answer.value > unrelated.value
    assert "meaning" in answer.explain()


def test_the_explanation_names_what_decided() -> None:
    stats = _stats()
    q = Query.of("How many cups of coffee a day lower the risk of death?", stats)
    r = score(q, stats, "People who drank 3 to 4 cups a day had a lower risk of death.")
    assert r.explain().startswith(f"{r.value:.2f} = ")
    assert "meaning 0." in r.decided and "words 0." in r.decided
    assert "a number, as asked" in r.decided


def test_a_restatement_ranks_below_the_answer() -> None:
    question = "Why is a warning issued when the plot uses a log axis?"
    stats = TermStats.from_sentences(
        [question, "The default panel function does not accept a log scale.", *OTHER]
    )
    q = Query.of(question, stats)
    restated = score(q, stats, "A warning is issued when the plot uses a log axis.")
    # Caught before the learned ranking weighs it (furniture.restates_question, issue 30 item
    # 6): a heading that restates the question scores 0 and says so.
    assert restated.restates and "restates the question" in restated.explain()
    answer = score(
        q,
        stats,
        "The warning comes from the default panel function, which does not accept a log axis.",
    )
    assert answer.value > restated.value


def test_the_miner_reads_meaning() -> None:
    req = MineRequest(
        "How many cups of coffee a day lower the risk of death?", "", PAGE, "Coffee", _stats()
    )
    quotes = [d.quote for d in mine_sentences(req)]
    assert any("three to four cups" in x for x in quotes), quotes
    assert not any("stadium" in x for x in quotes), quotes


def test_unreadable_weights_are_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "ranker_weights.json"
    broken.write_text('{"intercept": 1')  # cut off

    class Files:
        def joinpath(self, name: str) -> Path:
            return tmp_path / name

    monkeypatch.setattr(ranker.resources, "files", lambda _pkg: Files())
    ranker.model.cache_clear()
    try:
        with pytest.raises(ranker.RankerWeightsError) as got:
            ranker.model()
        assert "\n" not in str(got.value) and "fit_ranker.py" in str(got.value)
    finally:
        ranker.model.cache_clear()


def test_vectors_are_kept_for_the_next_session(tmp_path: Path) -> None:
    """A second session over the same texts embeds nothing (the vectors are on disk)."""
    texts = ["Coffee is brewed from roasted beans.", "Tea leaves are steeped in hot water."]
    ranker.warm(texts)
    ranker.keep()
    folder = ranker.vectors().folder
    assert any(folder.iterdir())
    from mole_dag.meaning.store import VectorCache

    again = VectorCache(folder, embed=lambda _t: pytest.fail("embedded again"))
    assert again.get_many(texts).shape == (2, 384)


def test_the_report_keeps_what_the_model_rates_near_the_best() -> None:
    """The learned ranking's probabilities are cut by the fitted log-odds gap, not by half the
    best: 0.02 beside 0.1 is a near tie to the model, 0.0005 beside 0.1 is not."""
    from mole_dag.output.selection import RELATIVE_FLOOR, choose
    from tests.test_report_answer import _row

    gap = ranker.model().report_gap
    assert 0 < gap < 20  # fitted, in log-odds
    rows = [_row("best", 0.1, 0.5), _row("near", 0.02, 0.5), _row("far", 0.0005, 0.5)]
    assert RELATIVE_FLOOR * 0.1 > 0.02  # the ratio floor would cut "near"
    got = [r.cluster_id for r in choose(rows, forced=set(), max_findings=30, scored=True)]
    assert got == ["best", "near"]
    assert ranker.near_best(0.02, 0.1) and not ranker.near_best(0.0005, 0.1)


def test_fused_is_the_mean_of_the_word_score_and_the_learned_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MOLE_RANKING=fused (issue 30): a claim's score is the mean of the two, with nothing
    fitted, and its explanation names both; without the setting it is the word score alone."""
    import mole_dag.mining.relevance as relevance

    stats = _stats()
    q = Query.of("How many cups of coffee a day are linked to lower mortality?", stats)
    sentence = "People who drank three to four cups a day had a lower risk of death."
    learned = score(q, stats, sentence)
    monkeypatch.setattr(relevance, "LEARNED", False)
    words = score(q, stats, sentence)
    assert abs(words.value - learned.value) > 0.05
    doc = relevance.document_terms([sentence], "")
    args = (q, stats, sentence, [], "", relevance.WEIGHTS, doc, ())
    assert relevance.score_stretch(*args).value == words.value
    fused = relevance.score_stretch(*args, fused=True)
    assert fused.value == round((words.value + learned.value) / 2, 4)
    assert "word score" in fused.explain() and "meaning 0." in fused.explain()


@pytest.mark.parametrize("ranking", ["fused", "learned"])
def test_the_stored_basis_says_what_scored_the_claims(
    ranking: str, tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """claim_relevance.basis names the ranking that scored each claim (migration 0032): it
    read 'lexical' under MOLE_RANKING=learned or fused too. The table's CHECK still refuses
    anything else."""
    import duckdb

    import mole_dag.mining.relevance as relevance
    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.core import Unit
    from mole_dag.driver import run_session
    from mole_dag.session import create_session
    from mole_dag.skillsets.extractive import ExtractiveSkills
    from mole_dag.store import Store

    monkeypatch.setenv("MOLE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(relevance, "LEARNED", ranking == "learned")
    monkeypatch.setattr(relevance, "FUSED", ranking == "fused")
    store = Store(tmp_path / "s.duckdb")
    try:
        q = "Does green tea affect sleep?"
        sid = create_session(store, q, Unit.TOKENS, 50_000, corpus=str(mini_corpus)).session_id
        run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda _m: None))
        bases = {r["basis"] for r in store.rows("SELECT DISTINCT basis FROM claim_relevance")}
        assert bases == {ranking}
        # ... and it is what scored them: each explanation is that ranking's.
        said = {r["explanation"] for r in store.rows("SELECT explanation FROM claim_relevance")}
        mark = "mean of the word score" if ranking == "fused" else "meaning 0."
        assert said and all(mark in e for e in said if "restates" not in e), said
        with pytest.raises(duckdb.ConstraintException):
            store.transact(
                lambda cur: cur.execute(
                    "UPDATE claim_relevance SET basis = 'guessed' WHERE session_id = ?", [sid]
                )
            )
    finally:
        store.close()
