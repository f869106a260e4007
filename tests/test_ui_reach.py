"""Issue 33, item 4: in the Dagster UI every run of a session carries the `mole/session` tag
(the CLI's too, so the Runs page filters by session whichever door started it), the report is
one click from the session's partition (an observation of `session` with the report's Markdown
and its run as a link), and the driving run of a UI launch names each round's run as a link and
shows the report in its own log."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg
import pytest

from assets.definitions import defs
from tests.dagster_helpers import resources
from tests.sessions import CLI_QUESTION, RecordedSession

QUESTION = CLI_QUESTION


def _observations(instance: dg.DagsterInstance, sid: str) -> list[dict[str, object]]:
    got = instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("session"), asset_partitions=[sid]),
        limit=100,
    )
    out = []
    for rec in got.records:
        obs = rec.asset_observation
        assert obs is not None
        out.append(dict(obs.metadata))
    return out


def test_cli_runs_are_tagged_and_the_report_is_on_the_session_partition(
    cli_session: RecordedSession,
) -> None:
    """On the shared CLI session (tests/sessions.py), which this test used to run itself."""
    out = cli_session.research.out
    sid = re.search(r"^session (\S+)$", out, re.M).group(1)  # type: ignore[union-attr]
    instance = dg.DagsterInstance.from_config(str(cli_session.dagster_home))
    by_partition = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": sid}))
    by_session = instance.get_runs(filters=dg.RunsFilter(tags={"mole/session": sid}))
    assert by_partition and {r.run_id for r in by_session} == {r.run_id for r in by_partition}
    assert all(r.tags.get("mole/launched_by") == "cli" for r in by_session)
    reports = [o for o in _observations(instance, sid) if "report" in o]
    assert len(reports) == 1
    md, link = reports[0]["report"], reports[0]["report_run"]
    assert isinstance(md, dg.MarkdownMetadataValue) and QUESTION in (md.value or "")
    assert isinstance(link, dg.DagsterRunMetadataValue)
    report_run = instance.get_run_by_id(link.run_id)
    assert report_run is not None and report_run.job_name == "research_report"
    instance.dispose()
    with cli_session.store() as st:
        stored = st.scalar("SELECT markdown FROM reports WHERE session_id = ?", [sid])
    assert md.value == stored


def test_a_ui_launch_links_its_runs_and_shows_the_report_in_its_own_log(
    tmp_path: Path, mini_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "ui.duckdb"
    # The round and report runs open the definitions' own store: the same file.
    monkeypatch.setenv("MOLE_DB", str(db))
    cfg = {
        "question": QUESTION,
        "budget": {"tokens": "20000"},
        "corpus": str(mini_corpus),
        "session_id": "ui-1",
    }
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("research_session").execute_in_process(
            instance=instance,
            run_config={"ops": {"drive_session": {"config": cfg}}},
            resources=resources(db),
        )
        assert result.success
        observed = [
            dict(ev.asset_observation_data.asset_observation.metadata)
            for ev in result.all_events
            if ev.event_type_value == "ASSET_OBSERVATION"
        ]
        steps = [o["step"].value for o in observed]  # type: ignore[attr-defined]
        assert steps[-1] == "report" and set(steps[:-1]) == {"round"}, steps
        for o in observed:
            run = instance.get_run_by_id(o["run"].run_id)  # type: ignore[attr-defined]
            assert run is not None
            assert run.tags["mole/session"] == "ui-1" and run.tags["mole/launched_by"] == "ui"
        assert isinstance(observed[-1]["report"], dg.MarkdownMetadataValue)
        driving = instance.get_run_by_id(result.run_id)
        assert driving is not None and driving.tags["mole/session"] == "ui-1"
