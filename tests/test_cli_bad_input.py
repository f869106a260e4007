"""Issue 11, bad input: each case is one line on stderr and exit status 2, with the true reason
and what to do, and nothing written. Absurd budgets are refused with the stated maximum; the same
check (mole_dag.launch.check_budget) serves the CLI, mole-mcp and the Dagster launch config."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag.cli import main
from mole_dag.core import Unit
from mole_dag.launch import MAX_TOKENS, MAX_USD, LaunchError, check_budget
from mole_dag.session import BudgetSpecError, parse_budget


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


# -- budgets --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--usd", "inf", "must be a finite amount"),
        ("--usd", "-Infinity", "must be a finite amount"),
        ("--usd", "nan", "must be a finite amount"),
        ("--usd", "1e30", "over the maximum of $10,000"),
        ("--usd", "99999999999999", "over the maximum of $10,000"),
        ("--usd", "1e999999999", "over the maximum of $10,000"),
        ("--usd", "0", "must be positive"),
        ("--usd", "-0.5", "must be positive"),
        ("--tokens", "12345678901234567890123", "over the maximum of 1,000,000,000,000"),
        ("--tokens", "9" * 5000, "over the maximum of 1,000,000,000,000"),
        ("--tokens", "0", "must be positive"),
        ("--tokens", "-5", "must be positive"),
    ],
)
def test_absurd_budgets_are_refused_before_anything_is_written(
    flag: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.duckdb"
    err = _one_line_exit_2(["--db", str(db), "research", "q?", f"{flag}={value}"], capsys)
    assert message in err
    assert not db.exists()


def test_budget_at_the_ceiling_is_accepted() -> None:
    assert check_budget(str(MAX_USD), None) == (Unit.USD_MICROS, int(MAX_USD) * 1_000_000)
    assert check_budget(None, str(MAX_TOKENS)) == (Unit.TOKENS, MAX_TOKENS)
    assert check_budget(None, "1_000") == (Unit.TOKENS, 1000)
    assert check_budget("$0.50", None) == (Unit.USD_MICROS, 500_000)
    with pytest.raises(LaunchError, match="over the maximum"):
        check_budget(None, str(MAX_TOKENS + 1))
    with pytest.raises(LaunchError, match="over the maximum"):
        check_budget("10000.000001", None)


def test_dagster_launch_config_uses_the_same_check() -> None:
    # ensure_session (the `session` asset's launch config) parses its budget with parse_budget.
    for usd in ("inf", "1e30", "nan"):
        with pytest.raises(BudgetSpecError):
            parse_budget(usd, None)
    with pytest.raises(BudgetSpecError, match="over the maximum"):
        parse_budget(None, "1" * 23)


def test_tool_arguments_are_worded_without_dashes() -> None:
    with pytest.raises(LaunchError, match=r"^usd must be a finite amount"):
        check_budget("inf", None, flag="")
