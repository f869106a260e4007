"""The Answer section's shape (mole_dag/output/report.py render_answer): an answer made only of
quotes is a list, one quote an item with its citation, so a quote of two sentences stays one
statement; a written answer stays a paragraph."""

from __future__ import annotations

import re

from mole_dag.output.binding import Binding
from mole_dag.output.html import render_html
from mole_dag.output.markdown import render_answer
from mole_dag.output.selection import Finding
from mole_dag.skills.protocol import BoundSentence

TWO = "Expressions made by any or all can not be converted to bool. Instead one must use is_true."
ONE = "The converter class turns the result into the storage type."


def _findings() -> list[Finding]:
    return [
        Finding(1, "k1", "c1", TWO, 0.5, "", 1, "unknown", False, citations=[1], pages={1: 2}),
        Finding(2, "k2", "c2", ONE, 0.5, "", 1, "unknown", False, citations=[2]),
    ]


def _quoted() -> Binding:
    kept = (BoundSentence(TWO, (1,)), BoundSentence(ONE, (2,)))
    return Binding(kept, 2, quoted=frozenset({0, 1}))


def test_an_answer_of_quotes_is_a_list_one_quote_an_item() -> None:
    answer = render_answer(_quoted(), _findings())
    lines = answer.split("\n")
    assert len(lines) == 2
    assert lines[0].startswith("- \u201cExpressions made") and "[1]" in lines[0]
    # Both sentences of the two-sentence quote sit in the item whose citation follows them.
    assert "to bool. Instead one must use is_true." in lines[0]
    assert lines[1].startswith("- \u201cThe converter") and lines[1].rstrip().endswith("[2]")


def test_each_cited_statement_of_the_list_holds_its_whole_quote() -> None:
    # A reader (or a scorer) that takes a list item as one statement, and a paragraph sentence
    # by sentence, finds the whole two-sentence quote before its citation.
    answer = render_answer(_quoted(), _findings())
    statements: list[str] = []
    for line in answer.split("\n"):
        if line.startswith("- "):
            statements.append(line[2:])
        else:
            statements += re.split(r"(?<=[.!?\]])\s+(?=[A-Z\u201c])", line)
    assert any("bool. Instead one must use is_true" in x and "[1]" in x for x in statements)


def test_a_written_answer_stays_a_paragraph() -> None:
    kept = (BoundSentence("Use is_true instead", (1,)), BoundSentence("It converts.", (2,)))
    answer = render_answer(Binding(kept, 2), _findings())
    assert "\n" not in answer and not answer.startswith("- ")


def test_the_list_renders_as_a_list_in_html() -> None:
    md = "# Q\n\n## Answer\n\n" + render_answer(_quoted(), _findings()) + "\n"
    page = render_html(md)
    assert page.count("<li>") == 2
