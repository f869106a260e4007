"""Issue 29, item 9: a question has a stated length limit, refused in one line with exit 2 before
anything is written (the CLI, mole-mcp and the Dagster launch config all pass check_launch), and
terminal control sequences in a question never become search words ("31m", "0m", an OSC title's
"pwned")."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import build_parser, main
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.launch import MAX_QUESTION_CHARS, LaunchError, check_launch
from mole_dag.planner import plan_round
from mole_dag.session import create_session, ensure_session, session_exists
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

# Colour, an OSC window title ending in BEL, a screen clear, a bidi override and a C1 control.
ESCAPED = "\x1b[31mcoffee\x1b[0m \x1b]0;pwned\x07effects on \u202eeeffoc\u202c sleep\x1b[2J\x9b?"
FRAGMENTS = ("31m", "0m", "2J", "pwned", "\x1b", "\u202e", "\x9b")


def test_a_question_over_the_limit_is_refused_in_one_line_with_nothing_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "q.duckdb"
    question = "Why " + "very " * (MAX_QUESTION_CHARS // 5) + "long?"
    assert len(question) > MAX_QUESTION_CHARS
    code = main(["--db", str(db), "research", question, "--tokens", "5000"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert f"at most {MAX_QUESTION_CHARS:,} characters" in err
    # The refusal names the length, it does not echo the question back.
    assert len(err) < 300
    assert not db.exists()
    # The one check every front door passes (mole-mcp's research tool and the Dagster launch
    # config call check_launch too).
    with pytest.raises(LaunchError, match="at most"):
        check_launch(question, usd=None, tokens="5000")
    # The Dagster launch config's way in (the `session` asset) writes nothing either.
    store = Store(str(tmp_path / "ui.duckdb"))
    try:
        with pytest.raises(LaunchError, match="at most"):
            ensure_session(store, "s-ui", question=question, tokens="5000")
        assert not session_exists(store, "s-ui")
    finally:
        store.close()
    # Exactly at the limit is accepted.
    at_limit = ("w " * MAX_QUESTION_CHARS)[: MAX_QUESTION_CHARS - 1] + "?"
    assert len(at_limit) == MAX_QUESTION_CHARS
    assert check_launch(at_limit, usd=None, tokens="5000").question == at_limit


def test_the_limit_is_stated_in_research_help() -> None:
    research = build_parser()._subparsers._group_actions[0].choices["research"]  # type: ignore[union-attr]
    assert f"{MAX_QUESTION_CHARS:,} characters" in " ".join(research.format_help().split())


def test_a_question_is_stored_without_its_control_sequences() -> None:
    got = check_launch(ESCAPED, usd=None, tokens="5000").question
    assert got == "coffee effects on eeffoc sleep?"
    # A question that is nothing but escapes is an empty question.
    with pytest.raises(LaunchError, match="empty"):
        check_launch("\x1b[31m\x1b]0;x\x07", usd=None, tokens="5000")


def _queries(store: Store, sid: str) -> list[str]:
    subs = store.rows(
        "SELECT text || ' ' || query AS q FROM sub_questions WHERE session_id = $s", {"s": sid}
    )
    leads = store.rows("SELECT query AS q FROM leads WHERE session_id = $s", {"s": sid})
    return [str(r["q"]) for r in subs + leads]


@pytest.mark.parametrize("through_launch", [True, False])
def test_control_sequences_never_reach_a_search_query(
    store: Store, mini_corpus: Path, through_launch: bool
) -> None:
    # through_launch: the question as every front door stores it. Otherwise a question stored
    # as it was typed (a store from before the check, a direct library call): the planner
    # cleans what it plans from all the same.
    if through_launch:
        question = check_launch(ESCAPED, usd=None, tokens="5000").question
        sid = create_session(store, question, Unit.TOKENS, 5000, corpus=str(mini_corpus))
        sid_str = sid.session_id
    else:
        sid_str = (
            Ledger(store)
            .create_session(ESCAPED, Unit.TOKENS, 5000, session_id="s-raw", corpus=str(mini_corpus))
            .session_id
        )
    run = Run(store, Ledger(store), ExtractiveSkills(), sid_str, progress=lambda m: None)
    plan_round(run)
    queries = _queries(store, sid_str)
    assert queries, "the planner planned nothing"
    for text in queries:
        for bad in FRAGMENTS:
            assert bad not in text, (bad, text)
    assert any("coffee" in t and "sleep" in t for t in queries), queries
