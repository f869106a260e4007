"""Issue 12: a session launched from the Dagster UI is checked and recorded like one from
`mole research` (one launch check, the corpus as an absolute path), the README's launch config
works as pasted, and the UI's metadata says what unit an amount is in and which status is
current."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import pytest
import yaml

from assets.definitions import defs
from assets.maintenance import regrounding
from assets.partitions import SESSIONS
from assets.research import ALL_ASSETS, ROUND_ASSETS
from mole_dag.config import config_path
from mole_dag.core import Role, Unit
from mole_dag.launch import LaunchError, check_launch
from mole_dag.paths import PROJECT_ROOT, demo_corpus
from mole_dag.session import create_session
from mole_dag.store import Store
from mole_dag.store.models import materialize_all
from tests.dagster_helpers import metadata as _metadata
from tests.dagster_helpers import resources as _resources
from tests.dagster_helpers import session_config


def readme_launch_config() -> dict:
    """The YAML block docs/dagster-ui.md tells a user to paste (the README's "From Dagster"
    section until issue 34 moved it there)."""
    text = (PROJECT_ROOT / "docs" / "dagster-ui.md").read_text("utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "the Dagster UI page should hold exactly one launch config"
    return yaml.safe_load(blocks[0])


def test_readme_launch_config_works_as_pasted_and_records_the_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As pasted into the launchpad of `research_session`: no corpus named, so the demo corpus,
    recorded as an absolute path; the UI was started from some other folder, and the report's
    re-reads (grounding) still find their files."""
    cfg = readme_launch_config()
    assert set(cfg["ops"]["drive_session"]["config"]) == {"question", "budget"}
    elsewhere = tmp_path / "started-here"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    db = tmp_path / "readme.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("research_session").execute_in_process(
            instance=instance, run_config=cfg, resources=_resources(db)
        )
        assert result.success
        event = instance.get_latest_materialization_event(dg.AssetKey("report"))
        assert event and event.asset_materialization
        rep = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    assert rep["grounding_checked"] > 0
    assert rep["grounding_confirmed"] == rep["grounding_checked"], rep
    assert rep["grounding_unreachable"] == 0
    with Store(db) as st:
        assert st.scalar("SELECT corpus FROM sessions") == str(demo_corpus())
        assert st.scalar("SELECT unit FROM sessions") == "usd_micros"


def _openai_without_prices() -> None:
    cfg = config_path()
    cfg.parent.mkdir(parents=True, exist_ok=True)
    # Never contacted: the launch is refused before any call.
    cfg.write_text(
        json.dumps(
            {
                "openai": {
                    "base_url": "http://127.0.0.1:9/v1",
                    "models": {"cheap": "llama3.1:8b", "strong": "llama3.1:70b"},
                }
            }
        )
    )
    cfg.chmod(0o600)


@pytest.mark.parametrize("case", ["session_id", "unpriced", "corpus", "budget"])
def test_ui_launch_refuses_what_the_cli_refuses_in_the_same_words(
    tmp_path: Path, case: str
) -> None:
    sid, launch = "ui-ok", {"question": "Is green tea good for sleep?", "usd": "0.10"}
    budget = {"usd": "0.10"}
    if case == "session_id":
        sid = "bad id!"
    elif case == "unpriced":
        _openai_without_prices()
        launch["provider"] = "openai"
    elif case == "corpus":
        launch["corpus"] = str(tmp_path / "missing")
    else:
        launch["usd"] = "-1"
        budget = {"usd": "-1"}
    with pytest.raises(LaunchError) as expected:
        check_launch(
            launch["question"],
            usd=launch["usd"],
            tokens=launch.get("tokens"),
            provider=launch.get("provider"),
            corpus=launch.get("corpus"),
            session_id=sid,
            flag="",
        )
    db = tmp_path / "refused.duckdb"
    Store(db).close()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        result = dg.materialize(
            ALL_ASSETS[:1],
            instance=instance,
            partition_key=sid,
            resources=_resources(db),
            raise_on_error=False,
            run_config={
                "ops": {
                    "session": {
                        "config": {
                            **{k: v for k, v in launch.items() if k not in ("usd", "tokens")},
                            "budget": budget,
                        }
                    }
                }
            },
        )
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        assert failure.step_failure_data.user_failure_data.description == str(expected.value)
        # No empty partition left in the UI's list for a session that does not exist (issue 33).
        assert not instance.has_dynamic_partition(SESSIONS, sid)
    with Store(db) as st:
        assert st.scalar("SELECT count(*) FROM sessions") == 0, "a refused launch writes nothing"


def _walk_money(md: dict, asset: str) -> None:
    """No amount without its unit: the ledger's integers are named *_usd (dollars) or
    *_tokens; nothing like `escrow_released 75000`."""
    amounts = re.compile(r"(^|_)(spent|total|escrow|held|overrun|available|released)(_|$)")
    for key, value in md.items():
        if amounts.search(key) and isinstance(value, int | float) and not isinstance(value, bool):
            assert key.endswith(("_usd", "_tokens")), f"{asset}.{key} = {value!r} has no unit"
            if key.endswith("_usd"):
                assert isinstance(value, float) and value < 1, f"{asset}.{key} = {value!r}"


def test_metadata_names_units_and_the_current_status(tmp_path: Path, mini_corpus: Path) -> None:
    db = tmp_path / "usd.duckdb"
    with Store(db) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.USD_MICROS, 500_000, corpus=str(mini_corpus)
        ).session_id
    from assets.checks import ALL_CHECKS

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SESSIONS, [sid])
        result = dg.materialize(
            [*ALL_ASSETS, *ALL_CHECKS],
            instance=instance,
            partition_key=sid,
            resources=_resources(db),
            run_config=session_config(db, sid),
        )
        assert result.success
        for asset in (
            "session",
            "sub_questions",
            "fetched_chunks",
            "mined_claims",
            "local_findings",
            "claim_edges",
            "confidence_scores",
            "report",
        ):
            _walk_money(_metadata(result, asset), asset)
        for ev in result.all_events:
            if ev.event_type_value == "ASSET_CHECK_EVALUATION":
                data = ev.asset_check_evaluation_data
                _walk_money({k: v.value for k, v in data.metadata.items()}, data.check_name)
        sess, rep = _metadata(result, "session"), _metadata(result, "report")
    assert sess["budget_total_usd"] == 0.5 and sess["budget_escrow_usd"] == 0.075
    assert rep["escrow_released_usd"] == 0.075
    # The session asset's last materialisation is from the round's start; it says so, and
    # the report, written last, carries the status the session finished with.
    assert "status" not in sess and sess["status_at_round_start"] in ("created", "running")
    assert rep["status"] == "done"


def test_spend_by_role_stage_names_its_unit(store: Store) -> None:
    from mole_dag.budget import Ledger

    ledger = Ledger(store)
    tok = ledger.create_session("q?", Unit.TOKENS, 10_000).session_id
    usd = ledger.create_session("q?", Unit.USD_MICROS, 500_000).session_id
    for sid, amount in ((tok, 1200), (usd, 75_000)):
        res = ledger.reserve(sid, Role.PLANNER, amount, tool="t", stage="plan")
        ledger.settle(res, amount)
    materialize_all(store)
    rows = {
        r["session_id"]: r
        for r in store.rows("SELECT session_id, unit, spent, usd FROM spend_by_role_stage")
    }
    assert rows[tok]["unit"] == "tokens" and rows[tok]["spent"] == 1200
    assert rows[tok]["usd"] is None  # a token session has no price
    assert rows[usd]["unit"] == "usd_micros" and rows[usd]["spent"] == 75_000
    assert float(rows[usd]["usd"]) == 0.075


def test_regrounding_selected_with_a_session_partition_opens_no_session(
    tmp_path: Path, mini_corpus: Path
) -> None:
    """`--select '*' --partition <sid>` puts the unpartitioned regrounding in the run: it must
    not open (and pay from) a maintenance session each time."""
    db = tmp_path / "star.duckdb"
    with Store(db) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 10_000, corpus=str(mini_corpus)
        ).session_id
    local = dg.Definitions(assets=[*ROUND_ASSETS, regrounding], resources=_resources(db))
    with dg.instance_for_test() as instance:
        # Resolved inside the instance: Dagster keeps a process-wide state storage that, outside
        # it, may still point at an earlier test's (collected) instance.
        job = local.resolve_implicit_global_asset_job_def()
        instance.add_dynamic_partitions(SESSIONS, [sid])
        result = job.execute_in_process(
            instance=instance, partition_key=sid, run_config=session_config(db, sid)
        )
        assert result.success
        assert not result.asset_materializations_for_node("regrounding")
    with Store(db) as st:
        assert st.scalar("SELECT count(*) FROM sessions") == 1


def test_readme_selects_only_the_research_group() -> None:
    """docs/another-round.md's Dagster command (the README's until issue 34)."""
    text = (PROJECT_ROOT / "docs" / "another-round.md").read_text("utf-8")
    selects = re.findall(r"--select\s+'([^']+)'", text)
    assert selects, "the page shows a --select example"
    graph = defs.resolve_asset_graph()
    research = {
        k.to_user_string()
        for k in defs.resolve_all_asset_keys()
        if graph.get(k).group_name == "research"
    }
    assert "regrounding" not in research
    for sel in selects:
        chosen = {
            k.to_user_string()
            for k in dg.AssetSelection.from_coercible(sel.split(",")).resolve(graph)
        }
        assert chosen and chosen <= research, (sel, chosen - research)
