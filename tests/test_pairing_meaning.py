"""Issue 31, item 2: candidate pairs by meaning. With MOLE_PAIRING=meaning a claim's candidates
are the claims nearest to it in meaning (the shipped sentence model), so a refutation worded
apart reaches the judge where the words' pairing spends the same slot on a sentence about
something else that shares more word shapes ("along the coast ... for a decade"); the cap per
claim and the verifier's batching stay as they are. Sentences written for this test."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store, q, utcnow
from mole_dag.verifier import graph
from mole_dag.verifier.retriever import (
    PAIRING_ENV,
    ClaimText,
    Pair,
    candidate_pairs,
    meaning_candidate_pairs,
    pairing,
)

CLAIM = ClaimText("c0", "Seal numbers along the coast have been going up for a decade.")
WORDED_APART = ClaimText("c1", "Fewer harbour seals were counted each year since 2014.")
OTHERS = [
    ClaimText("c2", "The coastal railway reopened after the storm damage was repaired."),
    ClaimText("c3", "Along the coast, ten new cafes opened for a decade of tourists."),
    ClaimText("c4", "Wind turbines supply a third of the region's electricity."),
]
POOL = [CLAIM, WORDED_APART, *OTHERS]


def test_the_pairing_is_words_unless_meaning_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PAIRING_ENV, raising=False)
    assert pairing() == "words"
    monkeypatch.setenv(PAIRING_ENV, "meaning")
    assert pairing() == "meaning"
    monkeypatch.setenv(PAIRING_ENV, "nonsense")
    assert pairing() == "words"


def test_meaning_meets_what_words_miss_within_the_same_cap() -> None:
    by_words = candidate_pairs(POOL, {CLAIM.id}, set(), k=1)
    by_meaning = meaning_candidate_pairs(POOL, {CLAIM.id}, set(), k=1)
    assert Pair.of(CLAIM.id, WORDED_APART.id) not in by_words
    assert by_meaning == [Pair.of(CLAIM.id, WORDED_APART.id)]
    # The cap holds, judged pairs are not offered again, and the order is deterministic.
    assert len(meaning_candidate_pairs(POOL, {c.id for c in POOL}, set(), k=2)) <= 2 * len(POOL)
    judged = {Pair.of(CLAIM.id, WORDED_APART.id)}
    assert Pair.of(CLAIM.id, WORDED_APART.id) not in meaning_candidate_pairs(
        POOL, {CLAIM.id}, judged, k=2
    )
    assert meaning_candidate_pairs(POOL, {CLAIM.id}, set(), k=3) == meaning_candidate_pairs(
        POOL, {CLAIM.id}, set(), k=3
    )
    # A pool smaller than the cap: every other claim, never the claim with itself.
    every = meaning_candidate_pairs(POOL, {c.id for c in POOL}, set(), k=8)
    assert all(p.a < p.b for p in every) and len(every) == len(POOL) * (len(POOL) - 1) // 2


def test_the_verifier_pairs_by_meaning_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "p.duckdb")
    sid = create_session(store, "Are seal numbers rising?", Unit.TOKENS, 10**6).session_id
    now = utcnow()

    def write(cur: object) -> None:
        for i, c in enumerate(POOL):
            src = f"s-{i}"
            cur.execute(  # type: ignore[attr-defined]
                q("source_insert"),
                {
                    "id": src,
                    "session_id": sid,
                    "url": f"https://site{i}.example/",
                    "title": c.id,
                    "publisher": f"site{i}.example",
                    "publisher_name": None,
                    "author": None,
                    "published": None,
                    "doi": None,
                    "pmid": None,
                    "pmcid": None,
                    "arxiv_id": None,
                    "source_class": "unknown",
                    "actor": "web",
                    "provider_supplied": False,
                    "content_sha256": "0" * 64,
                    "byte_length": 1,
                    "now": now,
                    "locator": None,
                    "etag": None,
                    "last_modified": None,
                },
            )
            cur.execute(  # type: ignore[attr-defined]
                q("claim_insert"),
                {
                    "id": c.id,
                    "session_id": sid,
                    "source_id": src,
                    "chunk_id": "x",
                    "sub_question_id": "x",
                    "text": c.text,
                    "quote": c.text,
                    "quote_byte_start": 0,
                    "quote_byte_end": len(c.text.encode()),
                    "created_by": "test",
                    "now": now,
                },
            )

    store.transact(write)
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    monkeypatch.setenv(PAIRING_ENV, "meaning")
    got = graph.build_edges(run, max_candidates=1)
    judged = {
        Pair(r["a_claim_id"], r["b_claim_id"])
        for r in store.named("judged_pairs", {"session_id": sid})
    }
    assert Pair.of(CLAIM.id, WORDED_APART.id) in judged
    assert got.pairs_retrieved <= len(POOL)
    store.close()
