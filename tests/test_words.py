"""Issue 33, item 7: words a user reads. Numbers take the noun's number ("1 sub-question",
"1 lead", "1 follow-up lead"); a round whose leads found only sources the session had says so
before mining says how many it mined from; the question's own section does not repeat the
title; an extractive report's Spend does not count tokens nobody asked for; `--corpus` says
PDFs are read."""

from __future__ import annotations

import re
from pathlib import Path

from mole_dag.budget import Ledger
from mole_dag.cli import build_parser
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.planner.plan import plan_progress
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store
from mole_dag.text import plural
from tests import report_reader


def test_plurals() -> None:
    assert plural(1, "lead") == "1 lead" and plural(2, "lead") == "2 leads"
    assert plan_progress(1, 1, 1, 1) == "round 1: planned 1 sub-question, 1 lead"
    assert plan_progress(2, 2, 3, 4) == (
        "round 2: planned 2 sub-questions, 3 leads, plus 1 follow-up lead"
    )
    assert (
        plan_progress(3, 0, 0, 1) == "round 3: no new sub-questions; running 1 follow-up lead only"
    )


def test_corpus_help_names_pdfs() -> None:
    research = build_parser()._subparsers._group_actions[0].choices["research"]  # type: ignore[union-attr]
    helps = {a.dest: a.help or "" for a in research._actions}
    assert ".pdf" in helps["corpus"]


def test_an_extractive_session_reads_right(tmp_path: Path, mini_corpus: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    question = "Does green tea affect sleep?"
    sid = create_session(store, question, Unit.TOKENS, 50_000, corpus=str(mini_corpus)).session_id
    lines: list[str] = []
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lines.append))
    md = store.row("SELECT markdown FROM reports WHERE session_id = ?", [sid])["markdown"]
    store.close()
    said = "\n".join(lines)
    assert " 1 sub-questions" not in said and " 1 leads" not in said, said
    assert re.search(r"executed \d+ leads?: ", said), said
    # Nothing was paid: no "0 tokens over 891 calls".
    spend = report_reader.section(md, "Spend")
    assert "0 tokens" not in spend and "nothing spent" in spend, spend
    # Each finding says why it ranks where it does, beside its confidence (issue 30, item 2).
    lines = [line for line in md.splitlines() if line.startswith("   relevance ")]
    assert lines and all("; relevance to the question: " in line for line in lines), lines
    assert "question terms in the sentence" in lines[0], lines[0]
    # The title is not repeated as the first section's heading.
    assert f"## {question}" not in md, md
    sup = report_reader.section(md, "Superseded")
    if sup:
        assert "a newer source:" not in sup and "superseded by" in sup, sup
