"""API keys never reach logs, Dagster run config or metadata, reports, cassettes or the store.

Whole sessions run through the Dagster jobs (an in-process, on-disk instance) with canary keys:
one for Anthropic from the environment, one for an OpenAI-compatible server from the config
file. Then every place a key could leak is searched for them: every table of the store, every
file under the mole home (the DuckDB file and its WAL, reports, indexes) and under the Dagster
instance (run and event storage, compute logs), the serialized event log and run config, every
log record at DEBUG, stdout and stderr, and the cassette the Anthropic session recorded. The
server checks the keys were actually sent, so the search cannot pass by never using them."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import dagster as dg
import pytest
from dagster._serdes import serialize_value

from mole_dag.config import config_path
from mole_dag.core import Unit
from mole_dag.paths import default_store_path, mole_home
from mole_dag.session import create_session
from mole_dag.store import Store
from tests.model_server import ModelServer, SimulatedModel

ANTHROPIC_CANARY = "sk-ant-api03-CANARY-4e1f0c9b7d2a-do-not-leak"
OPENAI_CANARY = "sk-proj-CANARY-93bd0a1c55e2-do-not-leak"
CANARIES = (ANTHROPIC_CANARY, OPENAI_CANARY)


def _run_session(instance: dg.DagsterInstance, sid: str) -> None:
    from assets.definitions import defs
    from assets.partitions import SESSIONS

    instance.add_dynamic_partitions(SESSIONS, [sid])
    from tests.dagster_helpers import session_config

    for job in ("research_round", "research_report"):
        res = defs.resolve_job_def(job).execute_in_process(
            instance=instance,
            partition_key=sid,
            run_config=session_config(default_store_path(), sid) if job == "research_round" else {},
        )
        assert res.success


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _store_dump() -> str:
    store = Store(default_store_path())
    try:
        tables = [
            r["table_name"]
            for r in store.rows(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
            )
        ]
        assert "tool_calls" in tables and "reports" in tables
        return "\n".join(
            json.dumps(store.rows(f'SELECT * FROM "{t}"'), default=str) for t in tables
        )
    finally:
        store.close()


def test_canary_keys_never_leave_the_client(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("mole", "anthropic", "httpx", "httpx2", "httpcore", "dagster"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    tape = tmp_path / "recorded.jsonl"
    with ModelServer(SimulatedModel()) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_CANARY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("MOLE_RECORD", str(tape))
        cfg = config_path()
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(
            json.dumps(
                {
                    "openai": {
                        "api_key": OPENAI_CANARY,
                        "base_url": f"{server.url}/v1",
                        "models": {"cheap": "gpt-4o-mini", "strong": "gpt-4o"},
                    }
                }
            )
        )
        cfg.chmod(0o600)
        corpus = Path(__file__).parent / "fixtures" / "model_corpus"
        store = Store(default_store_path())
        try:
            for sid, provider in (("s-anthropic", "anthropic"), ("s-openai", "openai")):
                create_session(
                    store,
                    "Does green tea affect sleep and stroke risk?",
                    Unit.USD_MICROS,
                    500_000,
                    corpus=str(corpus),
                    provider=provider,
                    session_id=sid,
                )
        finally:
            store.close()
        (tmp_path / "dagster").mkdir()
        # Dagster writes telemetry under DAGSTER_HOME unless told not to: keep it in tmp_path.
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
        instance = dg.DagsterInstance.local_temp(
            str(tmp_path / "dagster"), overrides={"telemetry": {"enabled": False}}
        )
        try:
            _run_session(instance, "s-anthropic")
            monkeypatch.delenv("MOLE_RECORD")  # one provider per cassette
            _run_session(instance, "s-openai")
            runs = instance.get_runs()
            dagster_text = "\n".join(
                [json.dumps(r.run_config, default=str) for r in runs]
                + [serialize_value(rec) for r in runs for rec in instance.all_logs(r.run_id)]
            )
        finally:
            instance.dispose()

    # The keys were really used: the server saw each one in the requests of its session.
    sent = {v for got in server.received for v in got.headers.values()}
    assert any(ANTHROPIC_CANARY in v for v in sent)
    assert any(OPENAI_CANARY in v for v in sent)
    assert {got.path for got in server.received} == {"/v1/messages", "/v1/chat/completions"}

    # The search covers real material: metadata with the report, several runs, files, logs.
    assert len(runs) == 4
    assert "## Answer" in dagster_text and "budget_charged" in dagster_text
    out, err = capfd.readouterr()
    # The dump first: opening and closing the store checkpoints its write-ahead log into the
    # database file and deletes it, so a file listed before that vanished before it was read
    # (seen once on a busy machine: FileNotFoundError on mole.duckdb.wal).
    dumped = _store_dump()
    # Every file but the config file itself, which is where a key is meant to live.
    files = [
        p
        for p in _files_under(mole_home()) + _files_under(tmp_path / "dagster") + [tape]
        if p != config_path()
    ]
    assert any(p.suffix == ".md" for p in files) and any(p.suffix == ".duckdb" for p in files)
    places = {
        "store tables": dumped,
        "Dagster run config and event log": dagster_text,
        "log records": caplog.text + "\n".join(str(r.__dict__) for r in caplog.records),
        "stdout/stderr": out + err,
    }
    assert len(caplog.records) > 50
    for canary in CANARIES:
        for where, text in places.items():
            assert canary not in text, f"key leaked into {where}"
        for path in files:
            assert canary.encode() not in path.read_bytes(), f"key leaked into {path}"
