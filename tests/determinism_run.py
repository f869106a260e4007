"""Run one extractive research over the demo corpus and print its stored results as JSON,
normalised for ids and timestamps (claims by source URL and quote, leads by sub-question and
query). Run as `python -m tests.determinism_run DB`, in a subprocess, so a test can compare two
runs under different PYTHONHASHSEED values and session ids (issue 10 item 6)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.paths import demo_corpus
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

QUESTION = "What are the health effects of drinking coffee?"


def _pair(a: str, b: str) -> str:
    return " ~ ".join(sorted((a, b)))


def snapshot(store: Store, sid: str) -> dict[str, Any]:
    p = {"s": sid}
    claim_key = {
        r["id"]: f"{r['url']} | {r['quote']}"
        for r in store.rows(
            "SELECT c.id, s.url, c.quote FROM claims c JOIN sources s ON s.id = c.source_id "
            "WHERE c.session_id = $s",
            p,
        )
    }
    sq_text = {
        r["id"]: r["text"]
        for r in store.rows("SELECT id, text FROM sub_questions WHERE session_id = $s", p)
    }
    lead_key = {
        r["id"]: f"{sq_text[r['sub_question_id']]} | {r['actor']} | {r['query']}"
        for r in store.rows(
            "SELECT id, sub_question_id, actor, query FROM leads WHERE session_id = $s", p
        )
    }
    out: dict[str, Any] = {}
    out["sub_questions"] = sorted(
        f"{r['round']}.{r['ordinal']} {r['text']}"
        for r in store.rows(
            "SELECT round, ordinal, text FROM sub_questions WHERE session_id = $s", p
        )
    )
    out["claims"] = sorted(
        f"{claim_key[r['id']]} | {sq_text[r['sub_question_id']]} | {r['text']}"
        for r in store.rows("SELECT id, sub_question_id, text FROM claims WHERE session_id = $s", p)
    )
    out["sources_per_lead"] = sorted(
        f"{lead_key[r['lead_id']]} -> {r['rank']} {r['url']} mined={r['mined']}"
        for r in store.rows(
            "SELECT ls.lead_id, ls.rank, ls.mined, s.url FROM lead_sources ls "
            "JOIN sources s ON s.id = ls.source_id WHERE ls.session_id = $s",
            p,
        )
    )
    out["sources"] = sorted(
        f"{r['url']} {r['publisher']} {r['source_class']} {r['content_sha256']}"
        for r in store.rows(
            "SELECT url, publisher, source_class, content_sha256 FROM sources "
            "WHERE session_id = $s",
            p,
        )
    )
    # Symmetric relations are stored in canonical id order (ids hash the session id): compare
    # them as unordered pairs. `supersedes` has a direction (newer -> older) and keeps it.
    out["edges"] = sorted(
        f"{r['kind']}: "
        + (
            f"{claim_key[r['src_claim_id']]} -> {claim_key[r['dst_claim_id']]}"
            if r["kind"] == "supersedes"
            else _pair(claim_key[r["src_claim_id"]], claim_key[r["dst_claim_id"]])
        )
        for r in store.rows(
            "SELECT kind, src_claim_id, dst_claim_id FROM claim_edges WHERE session_id = $s", p
        )
    )
    out["verdicts"] = sorted(
        f"{r['relation']} {r['confirmed']}: "
        + _pair(claim_key[r["a_claim_id"]], claim_key[r["b_claim_id"]])
        for r in store.rows(
            "SELECT relation, confirmed, a_claim_id, b_claim_id FROM "
            "pair_verdicts WHERE session_id = $s",
            p,
        )
    )
    scores = store.rows("SELECT * FROM confidence_scores WHERE session_id = $s", p)
    out["confidence"] = sorted(
        f"{claim_key[r['claim_id']]} = {r['confidence']:.6f} pubs={r['publishers']} "
        f"contra={r['contradictors']} sup={r['superseded']} grounded={r['grounded']} "
        f"rep={r['representative']} "
        f"| {r['explanation']}"
        for r in scores
    )
    members: dict[str, list[str]] = {}
    for r in scores:
        members.setdefault(r["cluster_id"], []).append(claim_key[r["claim_id"]])
    out["clusters"] = sorted(" + ".join(sorted(m)) for m in members.values())
    out["relevance"] = sorted(
        f"{claim_key[r['claim_id']]} = {r['relevance']:.6f} -> {sq_text[r['sub_question_id']]}"
        for r in store.rows(
            "SELECT claim_id, relevance, sub_question_id FROM claim_relevance "
            "WHERE session_id = $s",
            p,
        )
    )
    out["dead_ends"] = sorted(
        f"{lead_key.get(r['lead_id'] or '', '-')} {r['cause']} {r['url']}"
        for r in store.rows("SELECT lead_id, cause, url FROM dead_ends WHERE session_id = $s", p)
    )
    report = store.row("SELECT markdown, findings, citations FROM reports WHERE session_id = $s", p)
    out["report"] = (
        None
        if report is None
        else {
            # Byte for byte apart from ids and timestamps (issue 10 item 6).
            "markdown": re.sub(
                r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC",
                "generated <time>",
                report["markdown"].replace(sid, "<session>"),
            ),
            "findings": report["findings"],
            "citations": report["citations"],
        }
    )
    return out


def main(db: str) -> None:
    store = Store(Path(db))
    sid = create_session(
        store, QUESTION, Unit.USD_MICROS, 500_000, corpus=str(demo_corpus())
    ).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    json.dump(snapshot(store, sid), sys.stdout, indent=1, sort_keys=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1])
