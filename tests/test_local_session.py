"""Done-when, end to end through the `mole` CLI and the Dagster asset graph: a session with a
real-size CSV (tens of thousands of rows, small groups, a free-text column) produces gated
findings with Holm-corrected tests in its report, `mole crossings` lists exactly what left, and
nothing row-level reaches the report, the crossings or the terminal."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from survey_data import row_level_markers, survey_csv  # noqa: F401 - fixture

from mole_dag.cli import main
from mole_dag.paths import default_store_path
from mole_dag.store import Store

QUESTION = "Does income differ by region and plan, and who renews?"


@pytest.mark.both_backends
def test_research_with_data_end_to_end(
    store_target: str,
    monkeypatch: pytest.MonkeyPatch,
    dagster_home: Path,
    survey_csv: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("MOLE_DB", store_target)  # the gate and its crossings on either backend
    caplog.set_level(logging.DEBUG)
    rc = main(["research", QUESTION, "--usd", "0.50", "--data", str(survey_csv)])
    research = capsys.readouterr()
    assert rc == 0, research.err
    sid = re.search(r"^session (\S+)$", research.out, re.MULTILINE).group(1)  # type: ignore[union-attr]
    report = research.out

    # Gated findings with Holm-corrected tests, in the findings and in their own section.
    assert "## Local data" in report
    assert "Holm-corrected" in report and "| p (Holm) |" in report
    assert "Welch t-tests, Holm-corrected" in report
    assert re.search(r"In survey\.csv, the mean of income .* higher for region north", report)
    assert "data:survey.csv#" in report and "local data (local-data:" in report
    assert "other (unnamed, groups under 5)" in report  # plan: legacy + trial folded
    assert "suppressed" in report  # region: the remainder of 4 rows
    assert "mole: data survey.csv: 40000 rows" in research.err

    rc = main(["crossings", sid, "--verify"])
    crossings = capsys.readouterr()
    assert rc == 0, crossings.err
    listing = crossings.out
    assert f"session {sid}" in listing and "data    " in listing
    for template in ("mean_by_group", "proportion_by_group", "count_by_group"):
        assert f"· {template} ·" in listing
    assert "sql       SELECT" in listing and "envelope  (canonical JSON, sha256" in listing
    assert "REFUSED at gate: below_floor" in listing
    verified = re.findall(r"^verify \S+: (\w+)", listing, re.MULTILINE)
    assert verified and set(verified) == {"ok"}

    with Store(default_store_path()) as store:
        n_cross = store.scalar(
            "SELECT count(*) FROM local_crossings WHERE session_id = $s", {"s": sid}
        )
        local_edges = store.scalar(
            "SELECT count(*) FROM claim_edges e JOIN claims a ON a.id = e.src_claim_id "
            "JOIN claims b ON b.id = e.dst_claim_id JOIN sources sa ON sa.id = a.source_id "
            "JOIN sources sb ON sb.id = b.source_id WHERE e.session_id = $s "
            "AND sa.source_class = 'local' AND sb.source_class = 'local'",
            {"s": sid},
        )
        scored = store.scalar(
            "SELECT count(*) FROM confidence_scores WHERE session_id = $s "
            "AND source_class = 'local'",
            {"s": sid},
        )
    assert n_cross == listing.count(" crossing x-")
    assert local_edges == 0  # two aggregates of one dataset never contradict
    assert scored and scored > 0

    logs = "\n".join(r.getMessage() for r in caplog.records)
    for marker in row_level_markers():
        for where, text in (
            ("report", report),
            ("crossings", listing),
            ("stderr", research.err + crossings.err),
            ("logs", logs),
        ):
            assert marker not in text, (marker, where)


def test_bad_data_is_refused_before_anything_is_written(
    dagster_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(b"name,city\n" + b"Jos\xe9,Z\xfcrich\n" * 10)
    rc = main(["research", QUESTION, "--usd", "0.50", "--data", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--data:" in err and "is not UTF-8" in err and "line 2" in err
    assert not default_store_path().exists()  # nothing was written, not even the store
    rc = main(["research", QUESTION, "--usd", "0.50", "--data", str(tmp_path / "nope.csv")])
    assert rc == 2 and "does not exist" in capsys.readouterr().err


def test_crossings_of_unknown_and_data_less_sessions(
    dagster_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No store yet: a read-only command says so and creates none (issue 11).
    assert main(["crossings", "no-such-session"]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not default_store_path().exists()
    from mole_dag.core import Unit
    from mole_dag.session import create_session

    with Store(default_store_path()) as store:
        sid = create_session(store, "q?", Unit.TOKENS, 1000).session_id
    assert main(["crossings", "no-such-session"]) == 2
    assert "no session 'no-such-session'" in capsys.readouterr().err
    assert main(["crossings", sid]) == 0
    assert "no data attached" in capsys.readouterr().out
