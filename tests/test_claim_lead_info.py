"""The follow-up root of a claim found by several leads of the same depth (issue 14): one
answer, the same in every replay and on both backends. `arg_min(root, depth)` picked any of the
tied roots, and the root decides the per-root follow-up cap, so a replayed session sometimes
asked for follow-ups its recording never made (bench/session_bench.py's ReplayMiss)."""

from __future__ import annotations

from datetime import datetime

import pytest

from mole_dag.store import Store

NOW = datetime(2026, 1, 1)
QUOTE = "a quote long enough to pass the length floor"


def _execute(store: Store, sql: str, params: list[object]) -> None:
    with store.write() as cur:
        cur.execute(sql, params)


def _lead(store: Store, lead: str, depth: int, root: str | None) -> None:
    _execute(
        store,
        "INSERT INTO leads (id, session_id, sub_question_id, actor, query, depth, "
        "root_claim_id, created_at) VALUES (?, 's', 'q1', 'web', 'coffee', ?, ?, ?)",
        [lead, depth, root, NOW],
    )
    _execute(
        store,
        "INSERT INTO lead_sources (session_id, lead_id, sub_question_id, source_id, rank, "
        "created_at) VALUES ('s', ?, 'q1', 'src', 0, ?)",
        [lead, NOW],
    )


@pytest.mark.both_backends
@pytest.mark.parametrize("order", ["small root first", "large root first"])
def test_tied_shallowest_leads_give_the_smallest_root(store: Store, order: str) -> None:
    _execute(
        store,
        "INSERT INTO claims (id, session_id, source_id, chunk_id, sub_question_id, text, quote, "
        "quote_byte_start, quote_byte_end, created_by, created_at) "
        "VALUES ('c9', 's', 'src', 'k', 'q1', 'Coffee helps.', ?, 0, 44, 'test', ?)",
        [QUOTE, NOW],
    )
    leads = [("lead-a", 2, "claim-a"), ("lead-z", 2, "claim-z"), ("lead-deep", 3, "claim-0")]
    if order == "large root first":
        leads.reverse()
    for lead in leads:
        _lead(store, *lead)
    (row,) = store.named("claim_lead_info", {"session_id": "s"})
    assert (row["id"], row["depth"], row["root"]) == ("c9", 2, "claim-a")


@pytest.mark.both_backends
def test_a_claim_no_lead_found_has_depth_zero_and_no_root(store: Store) -> None:
    _execute(
        store,
        "INSERT INTO claims (id, session_id, source_id, chunk_id, sub_question_id, text, quote, "
        "quote_byte_start, quote_byte_end, created_by, created_at) "
        "VALUES ('c1', 's', 'elsewhere', 'k', 'q1', 'Coffee helps.', ?, 0, 44, 'test', ?)",
        [QUOTE, NOW],
    )
    _lead(store, "lead-a", 0, None)
    (row,) = store.named("claim_lead_info", {"session_id": "s"})
    assert (row["id"], row["depth"], row["root"]) == ("c1", 0, None)
