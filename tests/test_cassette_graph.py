"""The verifier's done-when: a cassette-replayed model session over a corpus with known
duplicates, a contradiction and a supersession across publishers gives exactly the expected
edges, clusters, publisher counts, supersession and confidence explanations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mole_dag.store import Store
from tests.record_cassette import SESSION_ID
from tests.sessions import RecordedSession

PROJECT = Path(__file__).resolve().parent.parent
WIRE = "wire report"
RAISES = "Drinking green tea in the evening raises the risk of poor sleep"
NOT_RAISE = "Drinking green tea in the evening does not raise the risk of poor sleep"
OLD = "Green tea extract is classified as a possible liver toxin"
NEW = "Green tea extract is no longer classified as a possible liver toxin"


@pytest.fixture
def replayed(cassette_session: RecordedSession) -> Iterator[Store]:
    """The shared replay of the cassette (tests/sessions.py), read-only: each test used to
    replay it again, for the same session."""
    store = cassette_session.store()
    yield store
    store.close()


def _text(store: Store, cid: str) -> str:
    return store.scalar("SELECT text FROM claims WHERE id = ?", [cid])


def test_graph_is_exactly_as_planted(replayed: Store) -> None:
    s = replayed
    edges = s.rows(
        "SELECT src_claim_id, dst_claim_id, kind, created_by FROM claim_edges WHERE session_id = ?",
        [SESSION_ID],
    )
    kinds = sorted(e["kind"] for e in edges)
    assert kinds == ["contradicts", "duplicate_of", "duplicate_of", "duplicate_of", "supersedes"]
    by_kind = {e["kind"]: e for e in edges}

    c = by_kind["contradicts"]
    assert {_text(s, c["src_claim_id"])[:60], _text(s, c["dst_claim_id"])[:60]} == {
        RAISES[:60],
        NOT_RAISE[:60],
    }
    sup = by_kind["supersedes"]
    assert _text(s, sup["src_claim_id"]).startswith(NEW)  # newer -> older
    assert _text(s, sup["dst_claim_id"]).startswith(OLD)
    for e in (e for e in edges if e["kind"] == "duplicate_of"):
        assert WIRE in _text(s, e["src_claim_id"]) and WIRE in _text(s, e["dst_claim_id"])
    # Every model-built edge passed the confirm pass; the rule-built one needed none.
    verdicts = s.rows(
        "SELECT relation, decided_by, confirmed FROM pair_verdicts "
        "WHERE session_id = ? AND relation <> 'neither'",
        [SESSION_ID],
    )
    for v in verdicts:
        assert v["confirmed"] is (None if v["decided_by"].startswith("rule:") else True)
    assert {v["decided_by"] for v in verdicts} == {"claude-haiku-4-5", "rule:identical-text"}
    # Issue 31: the model's disputes name their subject, attribute and both values, and the
    # stored rationale shows them (a supersession's says how far apart the two are instead).
    why = s.scalar(
        "SELECT rationale FROM claim_edges WHERE session_id = ? AND kind = 'contradicts'",
        [SESSION_ID],
    )
    assert why.startswith("subject: ") and "; attribute: " in why and "; values: " in why


def test_clusters_publishers_and_explanations(replayed: Store) -> None:
    s = replayed
    rows = s.rows("SELECT * FROM claim_overview WHERE session_id = ?", [SESSION_ID])
    wire = [r for r in rows if WIRE in r["text"]]
    assert len(wire) == 3 and len({r["cluster_id"] for r in wire}) == 1
    assert {r["publisher"] for r in wire} == {
        "alpha-news.com",
        "beta-health.org",
        "gamma.github.io",
    }
    assert all(r["cluster_publishers"] == 3 for r in wire)
    assert len({r["confidence"] for r in wire}) == 1  # every member gets the cluster's score
    assert wire[0]["explanation"] == "0.37 = unknown source (0.45) x 3 publishers (0.83)"

    by_start = {
        next(p for p in (RAISES, NOT_RAISE, OLD, NEW) if r["text"].startswith(p)): r
        for r in rows
        if r["text"].startswith((RAISES, NOT_RAISE, OLD, NEW))
    }
    for side in (RAISES, NOT_RAISE):
        assert by_start[side]["contradictors"] == 1
        assert "1 contradicting publisher (1/2)" in by_start[side]["explanation"]
    old, new = by_start[OLD], by_start[NEW]
    assert old["superseded"] and not new["superseded"]
    assert old["source_class"] == new["source_class"] == "primary"  # a .gov agency
    assert old["explanation"] == (
        "0.12 = primary source (0.85) x 1 publisher (0.47) x superseded by a newer claim (x0.3)"
    )
    assert new["confidence"] > old["confidence"]


def test_cassette_report_citations_resolve_and_scorecard_is_complete(replayed: Store) -> None:
    from mole_dag.evals.checks import citation_validity
    from mole_dag.evals.scorecard import scorecard

    cit = citation_validity(replayed, SESSION_ID)
    assert cit.ok and cit.citations > 0 and cit.valid == cit.citations
    metrics = {m.name: m for m in scorecard(replayed, SESSION_ID)}
    for m in metrics.values():  # every metric is a number or says why not
        assert m.value is not None or m.reason, m.name
    assert metrics["citation_accuracy_pct"].value == 100.0
    assert metrics["claim_integrity_pct"].value == 100.0
    assert metrics["budget_overshoot_pct"].value == 0.0
    assert metrics["cost_per_accepted_claim"].value > 0  # a real model was paid
