"""Mine claims from stored chunks, and keep only those whose quote is in the source verbatim.

A claim whose quote does not match is discarded here, before it reaches the store, and counted
by cause: it is not repaired downstream, it never exists. The quote is checked against the whole
source (the chunks concatenated), so a quote that straddles a chunk boundary still counts."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mole_dag.actors.base import DeadEnd
from mole_dag.actors.quote import CollapsedText, QuoteRejected
from mole_dag.budget import BudgetExhausted
from mole_dag.context import Run
from mole_dag.core import DeadEndCause, Role, stable_id
from mole_dag.executor.ingest import store_dead_end
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.llm.skills import MineRequest
from mole_dag.mining.score_relevance import score_relevance, session_passages, session_stats
from mole_dag.store import q, utcnow

log = logging.getLogger("mole.mine")
STAGE = "mined_claims"


@dataclass
class MineResult:
    pairs_mined: int = 0
    calls: int = 0
    claims: int = 0
    duplicates_skipped: int = 0
    discarded: Counter[str] = field(default_factory=Counter)
    budget_stopped: bool = False
    spent: int = 0
    # Model calls that failed after their retries (or answered with nothing): the chunk yields
    # no claims, the session goes on.
    failed_calls: int = 0
    # Claims of the whole session with a relevance above zero, after this round's re-scoring.
    relevant: int = 0


def _chunk_at(chunks: list[dict[str, Any]], byte_pos: int) -> str:
    for ch in chunks:
        if ch["byte_start"] <= byte_pos < ch["byte_end"]:
            return str(ch["id"])
    return str(chunks[-1]["id"])


def mine_claims(run: Run) -> MineResult:
    store, sid = run.store, run.session_id
    sess = run.session()
    unit = run.unit
    result = MineResult()
    work = store.named("unmined_lead_sources", {"session_id": sid})
    # Term weights over every page read so far, so the model-free miner weighs a question word
    # by how rare it is across the session's pages, not within one chunk.
    stats = session_stats(session_passages(store, sid)) if work and not run.skills.uses_model \
        else None
    for item in work:
        chunks = store.named("source_chunks", {"source_id": item["source_id"]})
        if not chunks:
            continue
        source_text = "".join(c["text"] for c in chunks)
        haystack = CollapsedText(source_text)
        drafts = []
        try:
            for ch in chunks:
                req = MineRequest(sess["question"], item["sub_question"], ch["text"],
                                  item["title"] or "", stats)
                estimate = run.skills.estimate_mine(req, unit)
                try:
                    with run.ledger.hold(sid, Role.EXECUTOR, estimate,
                                         tool=f"{run.skills.name}:mine", stage=STAGE) as h:
                        got = run.skills.mine(req, unit)
                        h.settle(got.cost, usage=got.usage, model=got.model or None)
                except ModelCallFailed as exc:
                    result.failed_calls += 1
                    log.warning("mining chunk %s failed: %s", ch["id"], exc)
                    continue
                result.calls += 1
                result.spent += got.cost
                drafts.extend(got.value)
        except BudgetExhausted as exc:
            # Stop mining, but keep what this source's chunks already yielded: those calls
            # were paid for, and their claims pass the same quote check as any other.
            result.budget_stopped = True
            store.transact(lambda cur, e=exc, item=item: store_dead_end(
                cur, sid, DeadEnd(DeadEndCause.BUDGET_EXHAUSTED, detail=str(e)),
                sub_question_id=item["sub_question_id"], lead_id=item["lead_id"]))

        accepted = []
        causes: Counter[str] = Counter()
        for d in drafts:
            if not d.text.strip() or not d.quote.strip():
                causes["empty"] += 1
                continue
            try:
                match = haystack.find(d.quote)
            except QuoteRejected as rej:
                causes[rej.cause] += 1
                continue
            if match is None:
                causes["quote_not_found"] += 1
                continue
            accepted.append((d, match))
        now = utcnow()

        def write(cur: Any, item: dict[str, Any] = item, accepted: list = accepted,
                  causes: Counter[str] = causes, source_text: str = source_text,
                  chunks: list[dict[str, Any]] = chunks, now: Any = now) -> tuple[int, int]:
            added = skipped = 0
            for d, m in accepted:
                exists = cur.execute(q("claim_exists"), {
                    "session_id": sid, "source_id": item["source_id"],
                    "quote_byte_start": m.byte_start, "quote_byte_end": m.byte_end}).fetchone()[0]
                if exists:
                    skipped += 1
                    continue
                text = " ".join(d.text.split())[:600]
                quote = source_text.encode("utf-8")[m.byte_start:m.byte_end].decode("utf-8")
                claim_id = stable_id(sid, item["source_id"], str(m.byte_start), str(m.byte_end),
                                     prefix="c-")
                cur.execute(q("claim_insert"), {
                    "id": claim_id,
                    "session_id": sid, "source_id": item["source_id"],
                    "chunk_id": _chunk_at(chunks, m.byte_start),
                    "sub_question_id": item["sub_question_id"], "text": text, "quote": quote,
                    "quote_byte_start": m.byte_start, "quote_byte_end": m.byte_end,
                    "created_by": run.skills.name, "now": now})
                if d.grade is not None:
                    # The miner's grade is kept with the relevance row; the lexical part is
                    # scored below, once the round's claims are all in.
                    cur.execute(q("relevance_insert"), {
                        "claim_id": claim_id, "session_id": sid, "relevance": 0.0,
                        "to_question": 0.0, "to_sub_question": 0.0,
                        "sub_question_id": item["sub_question_id"], "basis": "model+lexical",
                        "model_grade": min(max(int(d.grade), 0), 3),
                        "explanation": "not scored yet", "now": now})
                added += 1
            for cause, n in causes.items():
                cur.execute(q("discarded_insert"), {"session_id": sid,
                            "source_id": item["source_id"], "cause": cause, "n": n, "now": now})
            cur.execute(q("lead_source_mined"), {"lead_id": item["lead_id"],
                                                 "source_id": item["source_id"]})
            return added, skipped

        added, skipped = store.transact(write)
        result.claims += added
        result.duplicates_skipped += skipped
        result.discarded.update(causes)
        result.pairs_mined += 1
        if result.budget_stopped:
            break

    # A lead whose sources yielded nothing is a dead end the planner should hear about.
    if work:
        lead_ids = sorted({w["lead_id"] for w in work})
        counts = store.named("lead_claim_counts", {"session_id": sid, "lead_ids": lead_ids})
        empty = [c for c in counts if c["claims"] == 0]
        if empty:
            def note(cur: Any) -> None:
                for c in empty:
                    store_dead_end(cur, sid, DeadEnd(DeadEndCause.NO_CLAIMS),
                                   sub_question_id=c["sub_question_id"], lead_id=c["lead_id"])
            store.transact(note)
    relevance = score_relevance(run)
    result.relevant = relevance.relevant
    failed = f", {result.failed_calls} mining calls failed" if result.failed_calls else ""
    sources = len({w["source_id"] for w in work})
    run.progress(
        f"mined {result.claims} claims from {sources} distinct source"
        f"{'s' if sources != 1 else ''} ({sum(result.discarded.values())} discarded by the quote "
        f"check{failed}); {relevance.relevant} of the session's {relevance.claims} claims bear "
        "on the question"
    )
    return result
