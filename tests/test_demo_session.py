"""The bundled demo, as `make demo` runs it (plain pipeline, same stages): every citation in its
report resolves, the planted duplicate, contradictions and supersession are found, and the
scorecard is complete against the demo's labelled pairs."""

from __future__ import annotations

from pathlib import Path

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.evals.checks import citation_validity
from mole_dag.evals.scorecard import scorecard
from mole_dag.llm.extractive import ExtractiveSkills
from mole_dag.paths import PROJECT_ROOT, demo_corpus
from mole_dag.pipeline import run_session
from mole_dag.session import create_session
from mole_dag.store import Store


def test_demo_report_and_scorecard(tmp_path: Path) -> None:
    store = Store(tmp_path / "demo.duckdb")
    sid = create_session(store, "What are the health effects of drinking coffee?",
                         Unit.USD_MICROS, 500_000, corpus=str(demo_corpus())).session_id
    _, done = run_session(Run(store, Ledger(store), ExtractiveSkills(), sid,
                              progress=lambda m: None))
    md = done.report.markdown
    assert "made without a language model" in md
    assert "## Disputed" in md and "## Superseded" in md
    kinds = {r["kind"] for r in store.rows("SELECT kind FROM claim_edges")}
    assert kinds == {"contradicts", "duplicate_of", "supersedes"}
    assert store.scalar("SELECT max(publishers) FROM publishers_per_cluster") >= 3
    cit = citation_validity(store, sid)
    assert cit.ok and cit.citations > 0
    labels = PROJECT_ROOT / "examples" / "demo-labels.json"
    metrics = {m.name: m for m in scorecard(store, sid, labels)}
    for m in metrics.values():
        assert m.value is not None or m.reason, m.name
    assert metrics["citation_accuracy_pct"].value == 100.0
    assert metrics["contradiction_precision_pct"].value is not None
    store.close()
