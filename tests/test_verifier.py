"""The claim graph: edges from verdicts, supersession, clusters, confidence from structure, the
confirm pass, the verification share, follow-up caps."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from fakes import ScriptedSkills

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import EdgeKind, SourceClass, Unit
from mole_dag.driver import run_round
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store
from mole_dag.verifier.clusters import clusters
from mole_dag.verifier.confidence import CORROBORATION_CEILING, ClaimNode, derive
from mole_dag.verifier.followups import ClaimInfo, propose
from mole_dag.verifier.graph import build_edges, edges_from
from mole_dag.verifier.judge import Judged, batches
from mole_dag.verifier.relations import normalize_relation
from mole_dag.verifier.retriever import ClaimText, Pair, candidate_pairs

# -- relations, pairs, batches --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("contradicts", "contradicts"),
        ("Duplicate_Of", "duplicate_of"),
        ("duplicate-of", "duplicate_of"),
        ("neither", "neither"),
        ("supports", "neither"),
        ("refines", "neither"),
        ("unrelated", "neither"),
        ("maybe", None),
    ],
)
def test_relations_normalised(raw: str, want: str | None) -> None:
    assert normalize_relation(raw) == want


def test_candidate_pairs_are_canonical_capped_and_never_rejudged() -> None:
    pool = [ClaimText(f"c{i:02d}", f"green tea lowers stroke risk study {i}") for i in range(20)]
    pairs = candidate_pairs(pool, {"c05"}, set(), k=8)
    assert len(pairs) == 8 and all(p.a < p.b for p in pairs)
    again = candidate_pairs(pool, {"c05"}, set(pairs), k=8)
    assert not set(again) & set(pairs)
    # Every claim as target: each pair appears once even when reached from both ends.
    everything = candidate_pairs(pool, {c.id for c in pool}, set(), k=8)
    assert len(everything) == len(set(everything))


def test_idf_prefers_the_rare_shared_term() -> None:
    pool = [
        ClaimText("a", "coffee raises bladder cancer risk"),
        ClaimText("b", "coffee is popular in the morning"),
        ClaimText("c", "bladder cancer risk is not raised"),
        ClaimText("d", "coffee prices rose"),
    ]
    first = candidate_pairs(pool, {"a"}, set(), k=1)
    assert first == [Pair("a", "c")]


def test_batches_of_eight() -> None:
    pairs = [Pair(f"a{i}", f"b{i}") for i in range(19)]
    assert [len(b) for b in batches(pairs, 8)] == [8, 8, 3]


# -- edges and supersession -------------------------------------------------------------------


def test_contradiction_far_apart_becomes_supersedes_newer_to_older() -> None:
    v = [
        Judged(Pair("a", "b"), "contradicts", "m"),
        Judged(Pair("c", "d"), "contradicts", "m"),
        Judged(Pair("e", "f"), "duplicate_of", "m"),
        Judged(Pair("g", "h"), "neither", "m"),
    ]
    pub = {
        "a": date(2005, 1, 1),
        "b": date(2019, 1, 1),
        "c": date(2020, 1, 1),
        "d": date(2020, 6, 1),
        "e": None,
        "f": None,
        "g": None,
        "h": None,
    }
    edges = {(e.src, e.dst, e.kind) for e in edges_from(v, pub)}
    assert edges == {
        ("b", "a", EdgeKind.SUPERSEDES),
        ("c", "d", EdgeKind.CONTRADICTS),
        ("e", "f", EdgeKind.DUPLICATE_OF),
    }


# -- clusters and confidence --------------------------------------------------------------------


def test_clusters_only_merge_duplicates() -> None:
    got = clusters(["a", "b", "c", "d"], [("b", "c"), ("c", "d")])
    assert got == [["a"], ["b", "c", "d"]]


def _node(cid: str, pub: str, cls: SourceClass = SourceClass.UNKNOWN) -> ClaimNode:
    return ClaimNode(cid, pub, cls)


def test_publishers_counted_once_and_corroboration_saturates() -> None:
    # Five pages on one site are one publisher.
    same_site = [_node(f"s{i}", "farm.example.com") for i in range(5)]
    dup = [(f"s{i}", f"s{i + 1}") for i in range(4)]
    [one] = derive(same_site, [(a, b, "duplicate_of") for a, b in dup])
    assert one.publishers == 1
    # A scraper farm of 50 publishers never reaches certainty.
    farm = [_node(f"f{i:02d}", f"site{i}.example.com") for i in range(50)]
    [many] = derive(farm, [(f"f{i:02d}", f"f{i + 1:02d}", "duplicate_of") for i in range(49)])
    assert many.publishers == 50
    assert many.confidence <= CORROBORATION_CEILING < 1.0
    assert one.confidence < many.confidence


def test_every_member_gets_the_cluster_score_and_the_strongest_class_represents() -> None:
    nodes = [
        _node("c1", "blog.example.com"),
        _node("c2", "doi:10.5555/x", SourceClass.PEER_REVIEWED),
        _node("c3", "agency.gov", SourceClass.PRIMARY),
    ]
    [s] = derive(nodes, [("c1", "c2", "duplicate_of"), ("c2", "c3", "duplicate_of")])
    assert s.members == ("c1", "c2", "c3") and s.representative == "c2"
    assert s.source_class == SourceClass.PEER_REVIEWED and s.publishers == 3
    assert "peer-reviewed" in s.explanation and "3 publishers" in s.explanation


def test_contradictors_and_supersession_and_grounding_lower_confidence() -> None:
    nodes = [
        _node("a", "one.com"),
        _node("b", "two.com"),
        _node("c", "three.com"),
        _node("d", "four.com"),
        _node("e", "five.com"),
    ]
    base = {s.cluster_id: s for s in derive(nodes, [])}
    edges = [("a", "b", "contradicts"), ("a", "c", "contradicts"), ("d", "e", "supersedes")]
    scored = {s.cluster_id: s for s in derive(nodes, edges, grounded={"b": False})}
    assert scored["a"].contradictors == 2
    assert scored["a"].confidence == pytest.approx(base["a"].confidence / 3, abs=1e-3)
    assert scored["e"].superseded and not scored["d"].superseded
    assert scored["e"].confidence < base["e"].confidence
    assert scored["b"].grounded is False and scored["b"].confidence < scored["c"].confidence
    assert "did not support" in scored["b"].explanation
    assert "superseded" in scored["e"].explanation


# -- follow-ups ---------------------------------------------------------------------------------


def _info(cid: str, depth: int = 0, root: str | None = None) -> ClaimInfo:
    return ClaimInfo(cid, f"green tea claim {cid} about stroke risk", "sq", depth, root or cid)


def test_follow_up_caps_and_order() -> None:
    claims = {c: _info(c) for c in "abcdefgh"}
    contra = [("g", "h"), ("a", "b"), ("c", "d"), ("e", "f")]
    got = propose(contra, claims, {})
    assert [f.because for f in got] == [
        "contradiction between a and b",
        "contradiction between c and d",
    ]  # per pass: 2, in order
    assert all(f.depth == 1 for f in got)
    deep = {"x": _info("x", depth=3), "y": _info("y")}
    assert propose([("x", "y")], deep, {}) == []  # depth cap 3
    assert propose([("a", "b")], claims, {"a": 3}) == []  # per root, counted across the session
    assert propose([("a", "b")], claims, {"a": 2}) != []


# -- the pass against a store -----------------------------------------------------------------


def _session(tmp_path: Path, mini_corpus: Path, skills, total: int = 100_000) -> Run:  # type: ignore[no-untyped-def]
    store = Store(tmp_path / "v.duckdb")
    sid = create_session(
        store,
        "Does green tea affect sleep and stroke risk?",
        Unit.TOKENS,
        total,
        corpus=str(mini_corpus),
    ).session_id
    return Run(store, Ledger(store), skills, sid, progress=lambda m: None)


def test_extractive_pass_finds_the_planted_graph(tmp_path: Path, mini_corpus: Path) -> None:
    run = _session(tmp_path, mini_corpus, ExtractiveSkills())
    r = run_round(run)
    assert r.edges.confirm_pass == "skipped: deterministic judge"
    assert r.edges.edges.get("contradicts") == 1 and r.edges.edges.get("supersedes") == 1
    assert r.edges.edges.get("duplicate_of", 0) >= 2
    assert len(r.edges.follow_ups) == 1  # the live contradiction, not the supersession
    assert Ledger(run.store).verify(run.session_id).ok
    run.store.close()


def _contradict_everything_similar(a: str, b: str, n: int) -> str:
    return "contradicts" if "sleep" in a and "sleep" in b else "neither"


def test_confirm_pass_keeps_only_agreed_edges(tmp_path: Path, mini_corpus: Path) -> None:
    # Second judgement of a pair disagrees with the first: no contradiction edge survives.
    seen: set[frozenset[str]] = set()

    def first_time_only(a: str, b: str, n: int) -> str:
        key = frozenset((a, b))
        if key in seen:
            return "neither"
        seen.add(key)
        return _contradict_everything_similar(a, b, n)

    flip = ScriptedSkills(judge_fn=first_time_only)
    run = _session(tmp_path, mini_corpus, flip)
    r = run_round(run)
    assert r.edges.confirm_pass == "on"
    assert r.edges.pairs_unconfirmed >= 1 and r.edges.pairs_confirmed == 0
    assert r.edges.edges.get("contradicts", 0) == 0
    # The confirm call saw the pair the other way round.
    shown = [pair for call in flip.judge_calls for pair in call]
    sleepy = [(a, b) for a, b in shown if "sleep" in a and "sleep" in b]
    assert any((b, a) in sleepy for a, b in sleepy)
    rows = run.store.rows("SELECT confirmed FROM pair_verdicts WHERE relation = 'contradicts'")
    assert rows and all(r["confirmed"] is False for r in rows)
    run.store.close()


def test_confirm_pass_agreeing_keeps_the_edge(tmp_path: Path, mini_corpus: Path) -> None:
    agree = ScriptedSkills(judge_fn=_contradict_everything_similar)
    run = _session(tmp_path, mini_corpus, agree)
    r = run_round(run)
    assert r.edges.pairs_confirmed >= 1 and r.edges.edges.get("contradicts", 0) >= 1
    assert Ledger(run.store).verify(run.session_id).ok
    run.store.close()


def test_verification_share_caps_judging_and_counts_the_skipped(
    tmp_path: Path, mini_corpus: Path
) -> None:
    # 25 % of 100 tokens is 25: two calls (estimate 15, cost 10) fit (0+15, 10+15), a third
    # (20+15) does not.
    skills = ScriptedSkills(judge_fn=lambda a, b, n: "neither", price=10, estimate_margin=5)
    run = _session(tmp_path, mini_corpus, skills, total=100)
    from mole_dag.executor import execute_leads
    from mole_dag.mining.mine import mine_claims
    from mole_dag.planner import plan_round

    plan_round(run)
    execute_leads(run)
    mine_claims(run)
    r = build_edges(run, batch_size=1)
    assert r.calls == 2 and r.pairs_skipped_budget >= 1
    spent_verifier = sum(
        x["spent"] for x in run.ledger.spend_by_role(run.session_id) if x["role"] == "verifier"
    )
    assert spent_verifier <= 25
    unverified = run.store.scalar("SELECT count(*) FROM claims WHERE NOT verified")
    assert unverified > 0  # their pairs wait for the next pass
    run.store.close()


def test_partial_batch_output_is_salvaged_and_rest_left_unjudged(
    tmp_path: Path, mini_corpus: Path
) -> None:
    skills = ScriptedSkills(judge_fn=lambda a, b, n: "neither", drop_last_verdict=True)
    run = _session(tmp_path, mini_corpus, skills)
    r = run_round(run)
    assert r.edges.pairs_unjudged >= 1 and r.edges.pairs_judged >= 1
    run.store.close()
