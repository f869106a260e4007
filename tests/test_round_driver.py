"""One round driver (issue 13): mole_dag.driver owns the loop "while another round is due: run
it; then the report", with the step execution injected. The CLI (Dagster jobs), the plain-Python
path (tests, benches), the MCP worker (it runs the CLI) and the sensor (one step at a time, the
same decision) all use it; no other module loops over rounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mole_dag.driver import Interrupted, Step, drive

ROOT = Path(__file__).resolve().parent.parent


class _Script:
    """Steps that record what ran and decide from a script of next steps."""

    def __init__(
        self,
        decisions: list[Step | None],
        fail_at: str | None = None,
        interrupt_at: str | None = None,
    ) -> None:
        self.decisions = decisions
        self.ran: list[str] = []
        self.fail_at, self.interrupt_at = fail_at, interrupt_at

    def decide(self) -> Step | None:
        return self.decisions.pop(0)

    def _step(self, name: str) -> str | None:
        self.ran.append(name)
        if name == self.interrupt_at:
            raise Interrupted
        return None if name == self.fail_at else name

    def round(self) -> str | None:
        return self._step(f"round{sum(r.startswith('round') for r in self.ran) + 1}")

    def report(self) -> str | None:
        return self._step("report")


def test_rounds_while_due_then_the_report() -> None:
    s = _Script(["round", "round", "report"])
    announced: list[tuple[str, int]] = []
    got = drive(
        round=s.round,
        report=s.report,
        decide=s.decide,
        announce=lambda step, n: announced.append((step, n)),
    )
    assert s.ran == ["round1", "round2", "report"]
    assert got.rounds == ["round1", "round2"] and got.report == "report"
    assert not got.failed and got.last == "report"
    assert announced == [("round", 1), ("round", 2), ("report", 2)]


def test_first_step_given_skips_the_first_decision() -> None:
    s = _Script([])
    got = drive(round=s.round, report=s.report, decide=s.decide, first="report")
    assert s.ran == ["report"] and got.rounds == [] and got.report == "report"


def test_nothing_due_stops_before_the_report() -> None:
    # An exhausted (or finished) session: the decision is None, so no report runs.
    s = _Script(["round", None])
    got = drive(round=s.round, report=s.report, decide=s.decide)
    assert s.ran == ["round1"] and got.report is None and got.last is None
    assert not got.failed


def test_a_failed_step_stops_the_drive() -> None:
    s = _Script(["round", "round", "report"], fail_at="round2")
    got = drive(round=s.round, report=s.report, decide=s.decide)
    assert s.ran == ["round1", "round2"] and got.failed and got.report is None


def test_an_interrupt_propagates_and_nothing_more_runs() -> None:
    s = _Script(["round", "round", "report"], interrupt_at="round2")
    with pytest.raises(Interrupted):
        drive(round=s.round, report=s.report, decide=s.decide)
    assert s.ran == ["round1", "round2"]


def test_rounds_only_when_asked() -> None:
    s = _Script(["round", "report"])
    got = drive(round=s.round, report=s.report, decide=s.decide, with_report=False)
    assert s.ran == ["round1"] and got.report is None and got.last == "report"


def test_the_sensor_decides_with_the_drivers_next_step() -> None:
    import assets.driver as sensor
    import mole_dag.driver as driver

    assert sensor.next_step is driver.next_step


def _python_files() -> list[Path]:
    tops = ("mole_dag", "assets", "tests", "bench")
    return [p for top in tops for p in (ROOT / top).rglob("*.py")]


def test_no_second_round_loop() -> None:
    """The decision is defined only in the driver and the round-count test is called only there;
    no module loops `while ... round` but the driver. (Front doors call the driver's next_step
    and resume_point to decide; the sensor takes one step per tick.)"""
    own = {ROOT / "mole_dag" / "driver.py", Path(__file__).resolve()}
    deciders = re.compile(
        r"\bdef (should_run_another_round|next_step|resume_point)\b"
        r"|\bshould_run_another_round\("
    )
    loop = re.compile(r"^\s*while\b[^#\n]*\b(round|run_round|research_round)\b", re.M)
    offenders: list[str] = []
    for path in _python_files():
        if path in own:
            continue
        text = path.read_text("utf-8")
        rel = path.relative_to(ROOT)
        offenders += [f"{rel}: {m.group(0)}" for m in deciders.finditer(text)]
        offenders += [f"{rel}: {m.group(0).strip()}" for m in loop.finditer(text)]
    assert offenders == []
