"""Claim-graph benchmark on real claims (issue 31, item 5).

    .venv/bin/python bench/claim_graph.py --data ../shared/claims-dev/climate-fever-even.jsonl \
        --out DIR [--limit N] [--judge extractive]

Reads a file in CLIMATE-FEVER's own JSON Lines format (Diggelmann et al., 2020, arXiv
2012.00614): each line a claim found on the internet and five evidence sentences from English
Wikipedia, each labelled SUPPORTS, REFUTES or NOT_ENOUGH_INFO. For each line it builds a session
in a fresh store whose claims are the claim (its own source) and the five evidence sentences
(each from its Wikipedia article as the source), then runs the project's real stages on it: the
verifier's pass (`graph.build_edges`: candidate pairing, the free rules, batching and the judge)
and the confidence stage (`confidence.score_session`). It writes

- DIR/pairs.jsonl: one line per labelled claim-evidence pair, {"claim_id", "evidence_id",
  "label", "candidate": true|false, "edge": "contradicts"|"duplicate_of"|"supersedes"|null}
  (`candidate`: the pair reached the judge or a free rule);
- DIR/summary.json: the pairing (--pairing words|meaning, as MOLE_PAIRING) and how many lines
  share a session (--lines-per-session, 1 as the issue asks; more makes the pairing choose
  among other lines' sentences too); per judge, candidate recall for SUPPORTS and REFUTES
  pairs, contradiction precision and recall (a contradiction on a REFUTES pair is right, on
  any other labelled pair wrong), the share of SUPPORTS pairs marked as disputes, the edges
  on unlabelled pairs (two evidence sentences, or across lines; counted apart), and the
  seconds it took.

Judges: `extractive` (the model-free judge). A model judge runs only where a recorded cassette
of its answers exists; none is recorded yet, so the summary says so rather than reading 0.

The claims are other people's text: read in place, never copied into the project. Use only the
even half (climate-fever-even.jsonl); the odd half is held out. Without the file this says so and
exits 0."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mole_dag.budget import Ledger  # noqa: E402
from mole_dag.context import Run  # noqa: E402
from mole_dag.core import MAX_CLAIM_CHARS, MIN_QUOTE_CHARS, Unit, stable_id  # noqa: E402
from mole_dag.session import create_session  # noqa: E402
from mole_dag.skillsets.extractive import ExtractiveSkills  # noqa: E402
from mole_dag.store import Store, q, utcnow  # noqa: E402
from mole_dag.verifier import graph  # noqa: E402
from mole_dag.verifier.confidence import score_session  # noqa: E402
from mole_dag.verifier.retriever import PAIRING_ENV, PAIRINGS, ClaimText, Pair  # noqa: E402

LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO")
PairsFn = Callable[[Sequence[ClaimText], set[str], set[Pair], int], list[Pair]]


def _source_row(sid: str, source_id: str, url: str, title: str, publisher: str) -> dict[str, Any]:
    return {
        "id": source_id,
        "session_id": sid,
        "url": url,
        "title": title,
        "publisher": publisher,
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
        "now": utcnow(),
        "locator": None,
        "etag": None,
        "last_modified": None,
    }


def seeded_run(store: Store, lines: list[dict[str, Any]]) -> tuple[Run, dict[tuple[str, str], str]]:
    """A session holding the lines' claims and evidence sentences as claims, none verified yet;
    and the store's claim id of each (claim id, "claim") and (claim id, evidence id)."""
    # The claim ids in the question: a claim text can occur twice, and the session id hashes it.
    first, last = lines[0], lines[-1]
    question = f"claims {first['claim_id']}-{last['claim_id']}: {first['claim']}"
    sid = create_session(store, question, Unit.TOKENS, 10**9).session_id
    now = utcnow()
    ids: dict[tuple[str, str], str] = {}
    rows: list[tuple[dict[str, Any], tuple[str, str], str]] = []
    for line in lines:
        cid = str(line["claim_id"])
        claim_src = stable_id(sid, "claim", cid, prefix="s-")
        url = f"https://climate-fever.invalid/claim/{cid}"
        source = _source_row(sid, claim_src, url, "claim", "climate-fever.invalid")
        rows.append((source, (cid, "claim"), str(line["claim"])))
        for ev in line["evidences"]:
            article = str(ev["article"])
            src = stable_id(sid, "wiki", article, prefix="s-")
            url = f"https://en.wikipedia.org/wiki/{quote(article.replace(' ', '_'))}"
            source = _source_row(sid, src, url, article, "wikipedia.org")
            rows.append((source, (cid, str(ev["evidence_id"])), str(ev["evidence"])))

    def write(cur: Any) -> None:
        seen: set[str] = set()
        for i, (source, key, text) in enumerate(rows):
            if len(" ".join(text.split())) < MIN_QUOTE_CHARS:
                # The store refuses a quote this short (a claim's floor): the pair cannot reach
                # the judge, and counts as missed.
                continue
            if source["id"] not in seen:
                seen.add(source["id"])
                cur.execute(q("source_insert"), source)
            claim_id = stable_id(sid, *key, prefix="c-")
            ids[key] = claim_id
            cur.execute(
                q("claim_insert"),
                {
                    "id": claim_id,
                    "session_id": sid,
                    "source_id": source["id"],
                    "chunk_id": f"bench-{i}",
                    "sub_question_id": "bench",
                    # As the miner stores it: the text capped, the quote whole.
                    "text": " ".join(text.split())[:MAX_CLAIM_CHARS],
                    "quote": text,
                    "quote_byte_start": 0,
                    "quote_byte_end": len(text.encode()),
                    "created_by": "bench",
                    "now": now,
                },
            )

    store.transact(write)
    return Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None), ids


def run_group(store: Store, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines' labelled pairs after the verifier and confidence stages, run over one
    session holding all of them."""
    run, ids = seeded_run(store, lines)
    reached: set[Pair] = set()

    def recording(real: PairsFn) -> PairsFn:
        def pairs(
            pool: Sequence[ClaimText], targets: set[str], judged: set[Pair], k: int
        ) -> list[Pair]:
            got = real(pool, targets, judged, k)
            # Shown to the judge in content order (issue 33): looked up canonically below.
            reached.update(Pair.of(p.a, p.b) for p in got)
            return got

        return pairs

    # build_edges looks both pairings up in its own module's namespace.
    with (
        mock.patch.object(graph, "candidate_pairs", recording(graph.candidate_pairs)),
        mock.patch.object(
            graph, "meaning_candidate_pairs", recording(graph.meaning_candidate_pairs)
        ),
    ):
        graph.build_edges(run)
    score_session(run)
    edges: dict[Pair, str] = {}
    for e in run.store.named("session_edges", {"session_id": run.session_id}):
        edges[Pair.of(str(e["src_claim_id"]), str(e["dst_claim_id"]))] = str(e["kind"])
    out: list[dict[str, Any]] = []
    labelled: set[Pair] = set()
    for line in lines:
        cid = str(line["claim_id"])
        claim = ids.get((cid, "claim"))
        for ev in line["evidences"]:
            evidence = ids.get((cid, str(ev["evidence_id"])))
            p = Pair.of(claim or "-", evidence or "-")
            labelled.add(p)
            out.append(
                {
                    "claim_id": line["claim_id"],
                    "evidence_id": ev["evidence_id"],
                    "label": ev["evidence_label"],
                    "candidate": p in reached,
                    "edge": edges.get(p),
                }
            )
    # Edges on pairs nobody labelled (two evidence sentences, or across lines), counted apart.
    other = Counter(kind for p, kind in edges.items() if p not in labelled)
    if other:
        out.append({"claim_id": lines[0]["claim_id"], "evidence_edges": dict(other)})
    return out


def summarise(pairs: list[dict[str, Any]], seconds: float, lines: int) -> dict[str, Any]:
    labelled = [p for p in pairs if "label" in p]
    by = {lab: [p for p in labelled if p["label"] == lab] for lab in LABELS}

    def share(xs: list[dict[str, Any]], key: str, value: Any) -> float | None:
        return round(sum(1 for p in xs if p[key] == value) / len(xs), 4) if xs else None

    contra = [p for p in labelled if p["edge"] == "contradicts"]
    right = [p for p in contra if p["label"] == "REFUTES"]
    evidence_edges: Counter[str] = Counter()
    for p in pairs:
        evidence_edges.update(p.get("evidence_edges", {}))
    return {
        "lines": lines,
        "pairs": {lab: len(xs) for lab, xs in by.items()},
        "candidate_recall": {
            "SUPPORTS": share(by["SUPPORTS"], "candidate", True),
            "REFUTES": share(by["REFUTES"], "candidate", True),
            "NOT_ENOUGH_INFO": share(by["NOT_ENOUGH_INFO"], "candidate", True),
        },
        "contradictions": len(contra),
        "contradictions_on_refutes": len(right),
        "contradiction_precision": (
            round(len(right) / len(contra), 4) if contra else "no contradiction found"
        ),
        "contradiction_recall": share(by["REFUTES"], "edge", "contradicts"),
        "supports_marked_disputes": share(by["SUPPORTS"], "edge", "contradicts"),
        "edges_on_labelled_pairs": dict(Counter(str(p["edge"]) for p in labelled)),
        "edges_between_evidence_sentences": dict(evidence_edges),
        "seconds": round(seconds, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=0, help="only the first N lines")
    ap.add_argument("--judge", choices=("extractive",), default="extractive")
    ap.add_argument(
        "--pairing",
        choices=PAIRINGS,
        default="words",
        help="how candidate pairs are chosen (MOLE_PAIRING): by words or by meaning",
    )
    ap.add_argument(
        "--lines-per-session",
        type=int,
        default=1,
        help="claims of this many lines in one session: the pairing then has to choose "
        "(at 1, a claim's five sentences are all within its cap of candidates)",
    )
    args = ap.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} not found (the claim set lives in ../shared/claims-dev)")
        return 0
    if "odd" in args.data.name:
        print("refused: the odd half of CLIMATE-FEVER is held out", file=sys.stderr)
        return 2
    lines = [json.loads(x) for x in args.data.read_text().splitlines() if x.strip()]
    if args.limit:
        lines = lines[: args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    pairs: list[dict[str, Any]] = []
    start = time.perf_counter()
    os.environ[PAIRING_ENV] = args.pairing
    n = max(1, args.lines_per_session)
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "claim-graph.duckdb")
        try:
            for i in range(0, len(lines), n):
                pairs += run_group(store, lines[i : i + n])
                if (i // n + 1) % max(1, 100 // n) == 0:
                    print(f"{i + n}/{len(lines)} lines, {time.perf_counter() - start:.0f} s")
        finally:
            store.close()
    seconds = time.perf_counter() - start
    with (args.out / "pairs.jsonl").open("w") as f:
        for p in pairs:
            if "label" in p:
                f.write(json.dumps(p) + "\n")
    summary = {
        "data": args.data.name,
        "pairing": args.pairing,
        "lines_per_session": n,
        "judges": {
            "extractive": summarise(pairs, seconds, len(lines)),
            "model": "not run: no recorded cassette of a model judge's answers on this set",
        },
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
