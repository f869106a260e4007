"""Issue 30, item 6: a heading or an FAQ's entry that restates the question is the page's
furniture, never a finding; a real answer that shares most of the question's words still
stands. The document below is made up for the test (a manual for an imagined tool)."""

from __future__ import annotations

from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.furniture import restates_question
from mole_dag.mining.relevance import Query, TermStats, score
from mole_dag.skills.protocol import MineRequest

QUESTION = "Why are the timestamps shifted when I export a brew log to CSV?"

ENTRY = "3. When I try to export a brew log to CSV the timestamps are shifted."
ANSWER = (
    "The export writes every time in UTC, while the log window shows it in the local "
    "time zone of the machine."
)
# An answer that shares nearly every word of the question, and adds its reason.
CLOSE_ANSWER = (
    "Timestamps are shifted on a CSV export of a brew log because the exporter converts "
    "them to UTC."
)

FAQ = "\n\n".join(
    [
        "Frequently asked questions about brewtool",
        "2. My fermentation chart is empty after an import from an older version.\n"
        "Older versions stored the readings in a separate file, which the import reads only "
        "when it sits beside the log.",
        f"{ENTRY}\n{ANSWER} Setting the export zone option to local keeps them as shown.",
        "4. When I open two logs at once the second one is read-only.\n"
        "A log is locked by the first window that opens it, so that two windows never write "
        "to it at the same time.",
    ]
)


def test_a_numbered_entry_restating_the_question_is_furniture() -> None:
    assert restates_question(ENTRY, QUESTION)
    # In the reader's voice without its number, or without its end mark: the same entry.
    assert restates_question(
        "When I try to export a brew log to CSV the timestamps shift.", QUESTION
    )
    assert restates_question("Export of a brew log to CSV shifts the timestamps", QUESTION)


def test_answers_sharing_the_questions_words_stand() -> None:
    assert not restates_question(ANSWER, QUESTION)
    assert not restates_question(CLOSE_ANSWER, QUESTION)
    # A new number is content: the value a what-question asks for.
    assert not restates_question(
        "The default priority of a matching rule is 50.",
        "What is the default priority of a matching rule?",
    )
    # A statement restating a yes/no question is its answer.
    assert not restates_question(
        "Exporting a brew log to CSV shifts the timestamps.",
        "Does exporting a brew log to CSV shift the timestamps?",
    )
    # One new word is an answer in a plain statement; only a heading's or an entry's shape
    # makes it furniture.
    assert not restates_question(
        "Timestamps are shifted when a brew log is exported to CSV on purpose.", QUESTION
    )


def test_the_entry_scores_zero_and_says_why() -> None:
    stats = TermStats.uniform([ENTRY, ANSWER, CLOSE_ANSWER])
    query = Query.of(QUESTION, stats)
    rel = score(query, stats, ENTRY)
    assert rel.value == 0.0
    assert "restates the question" in rel.explain()
    assert score(query, stats, CLOSE_ANSWER).value > 0.3


def test_the_miner_quotes_the_answer_not_the_entry() -> None:
    stats = TermStats.from_sentences(s for s in FAQ.replace("\n", " ").split(". "))
    req = MineRequest(question=QUESTION, sub_question=QUESTION, chunk=FAQ, stats=stats)
    claims = mine_sentences(req)
    quotes = [c.quote for c in claims]
    assert not any("When I try to export" in q for q in quotes), quotes
    assert any(q.startswith("The export writes every time in UTC") for q in quotes), quotes
