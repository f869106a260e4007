"""Mine claims from stored chunks, and keep only those whose quote is in the source verbatim.

A claim whose quote does not match is discarded here, before it reaches the store, and counted
by cause: it is not repaired downstream, it never exists. The quote is checked against the whole
source (the chunks concatenated), so a quote that straddles a chunk boundary still counts."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from mole_dag.actors.base import DeadEnd
from mole_dag.actors.quote import CollapsedText, QuoteRejected
from mole_dag.budget import FreeCallBatch
from mole_dag.context import Run
from mole_dag.core import MAX_CLAIM_CHARS, ClaimDraft, DeadEndCause, Role, columns, stable_id
from mole_dag.llm.fanout import Job, Status, fan_out
from mole_dag.mining.furniture import non_claim_reason
from mole_dag.mining.score_relevance import score_relevance, session_passages, session_stats
from mole_dag.skills.protocol import Metered, MineRequest, keep_list
from mole_dag.skills.unreadable import write_unreadable
from mole_dag.store import q, utcnow
from mole_dag.store.dead_ends import store_dead_end
from mole_dag.store.records import ChunkRow, LeadClaimsRow, LeadSourceRow, fetch_all
from mole_dag.text import plural, sentence_spans, strip_bullet

log = logging.getLogger("mole.mine")
STAGE = "mined_claims"

# What a quote found verbatim can still be, and no claim: the page's furniture. Not "question" or
# "no_verb": a model may fairly quote a clause or a noun phrase out of a sentence.
_FURNITURE = frozenset(
    {
        "markup",
        "boilerplate",
        "caption",
        "navigation",
        "download",
        "reference_entry",
        "code",
        "equation",
        "table",
        # Issue 31: what a console or a manual prints. Not "fragment": a model may fairly
        # quote part of a sentence.
        "console",
        "keywords",
        "path",
        "footnote",
    }
)
# A line this short, unpunctuated and verbless is a heading; a guess, flagged as one, and the
# same bound the extractive miner's heading rule uses.
_HEADING_WORDS = 14
# A line longer than this is a paragraph, not a heading, menu or caption line. A guess, flagged
# as one: twice the longest heading.
_PARAGRAPH_WORDS = 2 * _HEADING_WORDS


def quotes_furniture(data: bytes, start: int, end: int) -> bool:
    """Whether the quote at bytes [start, end) of the source is page furniture: the quote itself
    is furniture, or it lies on a line of its own that is a heading, a menu or a caption (the
    model quoted all or part of it). The extractive miner never proposes these; a model can."""
    quote = data[start:end].decode("utf-8", "replace")
    if non_claim_reason(quote) in _FURNITURE:
        return True
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line = data[line_start : len(data) if line_end < 0 else line_end].decode("utf-8", "replace")
    if len(line.split()) > _PARAGRAPH_WORDS:
        # A paragraph on one line (a PDF's, issue 19: its furniture rules read anywhere in it,
        # and a paper's paragraph holds citations and "(see Figure 4)"): the sentences the
        # quote spans are judged, not the whole paragraph.
        a = len(data[line_start:start].decode("utf-8", "replace"))
        b = len(data[line_start:end].decode("utf-8", "replace"))
        spans = [(x, y) for x, y in sentence_spans(line) if x < b and y > a]
        line = line[spans[0][0] : spans[-1][1]] if spans else line[a:b]
    reason = non_claim_reason(line)
    if reason in _FURNITURE:
        return True
    return reason in ("heading", "no_verb") and len(line.split()) <= _HEADING_WORDS


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
    # Of `claims`: copied from a previous session's unchanged sources, not mined (issue 32).
    carried: int = 0


def _chunk_at(chunks: list[ChunkRow], byte_pos: int) -> str:
    for ch in chunks:
        if ch.byte_start <= byte_pos < ch.byte_end:
            return ch.id
    return chunks[-1].id


@dataclass
class _Pending:
    """Rows mined but not yet written: a stage's sources are written together, in one
    transaction with their free calls, not one transaction per source (issue 12)."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    grades: list[dict[str, Any]] = field(default_factory=list)
    discarded: list[dict[str, Any]] = field(default_factory=list)
    mined: list[dict[str, Any]] = field(default_factory=list)
    dead_ends: list[tuple[DeadEnd, str, str]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # why each lost reply was lost
    # Claims copied from a previous session's unchanged source (issue 32): their provenance.
    carried: list[dict[str, Any]] = field(default_factory=list)

    def write(self, cur: Any, sid: str, created_by: str) -> None:
        now = utcnow()
        write_unreadable(cur, sid, [("mine", p) for p in self.unreadable], now)
        if self.claims:
            cur.execute(
                q("claim_insert_many"),
                {
                    "session_id": sid,
                    "created_by": created_by,
                    **columns(
                        self.claims,
                        (
                            "id",
                            "source_id",
                            "chunk_id",
                            "sub_question_id",
                            "text",
                            "quote",
                            "quote_byte_start",
                            "quote_byte_end",
                            "created_at",
                        ),
                    ),
                },
            )
        if self.grades:
            # The miner's grade is kept with the relevance row; the lexical part is scored by
            # score_relevance, once the round's claims are all in.
            cur.execute(
                q("relevance_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(
                        self.grades,
                        (
                            "claim_id",
                            "relevance",
                            "to_question",
                            "to_sub_question",
                            "sub_question_id",
                            "basis",
                            "model_grade",
                            "explanation",
                        ),
                    ),
                },
            )
        if self.discarded:
            cur.execute(
                q("discarded_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(self.discarded, ("source_id", "cause", "n")),
                },
            )
        if self.carried:
            cur.execute(
                q("carried_claim_insert_many"),
                {"session_id": sid, **columns(self.carried, ("claim_id", "previous_claim_id"))},
            )
        if self.mined:
            cur.execute(q("lead_sources_mined_many"), columns(self.mined, ("lead_id", "source_id")))
        for dead, sub_question_id, lead_id in self.dead_ends:
            store_dead_end(cur, sid, dead, sub_question_id=sub_question_id, lead_id=lead_id)

    def clear(self) -> None:
        """After the commit, not inside the transaction: Store.transact may run it again."""
        self.claims, self.grades, self.discarded, self.mined, self.dead_ends = [], [], [], [], []
        self.unreadable, self.carried = [], []


def _carry(
    store: Any,
    sid: str,
    items: list[LeadSourceRow],
    carry: dict[str, str],
    by_source: dict[str, list[ChunkRow]],
    stored: set[tuple[str, int, int]],
    pending: _Pending,
) -> None:
    """Copy the previous session's claims of each unchanged source into this session, under the
    sub-question of the first lead that found it (as mining would file them), with their
    provenance. The text is the same (same digest), so each quote sits at the same bytes; a
    quote that does not is not copied."""
    old: dict[str, list[Any]] = {}
    for r in store.named("rerun_old_claims", {"source_ids": sorted(set(carry.values()))}):
        old.setdefault(r["source_id"], []).append(r)
    now = utcnow()
    for item in items:
        chunks = by_source.get(item.source_id, [])
        data = "".join(c.text for c in chunks).encode("utf-8")
        for r in old.get(carry[item.source_id], []):
            start, end = int(r["quote_byte_start"]), int(r["quote_byte_end"])
            key = (item.source_id, start, end)
            if key in stored or data[start:end].decode("utf-8", "replace") != r["quote"]:
                continue
            stored.add(key)
            claim_id = stable_id(sid, item.source_id, str(start), str(end), prefix="c-")
            pending.claims.append(
                {
                    "id": claim_id,
                    "source_id": item.source_id,
                    "chunk_id": _chunk_at(chunks, start),
                    "sub_question_id": item.sub_question_id,
                    "text": r["text"],
                    "quote": r["quote"],
                    "quote_byte_start": start,
                    "quote_byte_end": end,
                    "created_at": now,
                }
            )
            pending.carried.append({"claim_id": claim_id, "previous_claim_id": r["id"]})
            if r["model_grade"] is not None:
                pending.grades.append(
                    {
                        "claim_id": claim_id,
                        "relevance": 0.0,
                        "to_question": 0.0,
                        "to_sub_question": 0.0,
                        "sub_question_id": item.sub_question_id,
                        "basis": "model+lexical",
                        "model_grade": int(r["model_grade"]),
                        "explanation": "not scored yet",
                    }
                )
        pending.mined.append({"lead_id": item.lead_id, "source_id": item.source_id})


def mine_claims(run: Run) -> MineResult:
    # The model-free miner's calls are free: recorded with the stage's rows (issue 12).
    with run.ledger.free_calls(run.session_id) as free:
        return _mine_claims(run, free)


def _mine_claims(run: Run, free: FreeCallBatch) -> MineResult:
    store, sid = run.store, run.session_id
    sess = run.session()
    unit = run.unit
    result = MineResult()
    work = store.many(LeadSourceRow, q("unmined_lead_sources"), {"session_id": sid})
    # A rerun's unchanged sources (issue 32): their previous claims are copied, not mined.
    carry: dict[str, str] = {}
    if work and sess.previous_session_id:
        carry = {
            r["new_source_id"]: r["old_source_id"]
            for r in store.named("rerun_carried_sources", {"session_id": sid})
        }
    to_mine = [w for w in work if w.source_id not in carry]
    # Term weights over every page read so far, so the model-free miner weighs a question word
    # by how rare it is across the session's pages, not within one chunk.
    stats = (
        session_stats(session_passages(store, sid))
        if to_mine and not run.skills.uses_model
        else None
    )
    # Where the session's claims already sit: a quote mined twice (two leads sharing a source)
    # is skipped here, in memory, instead of asking the store once per claim.
    stored = (
        {
            (r["source_id"], int(r["quote_byte_start"]), int(r["quote_byte_end"]))
            for r in store.named("claim_keys", {"session_id": sid})
        }
        if work
        else set()
    )
    pending = _Pending()
    # Every source's chunks in one query, not one query per (lead, source) pair.
    by_source: dict[str, list[ChunkRow]] = {}
    if work:
        for ch in store.many(
            ChunkRow, q("sources_chunks"), {"source_ids": sorted({w.source_id for w in work})}
        ):
            by_source.setdefault(ch.source_id, []).append(ch)
    # Every chunk's call, in plan order (work item by work item, chunk by chunk), made
    # concurrently within the session's gate; outcomes come back in this order, so what is
    # stored does not depend on which call finished first (issue 20).
    if carry:
        carried = [w for w in work if w.source_id in carry]
        _carry(store, sid, carried, carry, by_source, stored, pending)
        result.carried = len(pending.carried)
        result.claims += len(pending.carried)
    jobs: list[Job[Metered[list[ClaimDraft]]]] = []
    for item in to_mine:
        for ch in by_source.get(item.source_id, []):
            req = MineRequest(sess.question, item.sub_question, ch.text, item.title or "", stats)
            jobs.append(
                Job(
                    run.skills.estimate_mine(req, unit),
                    partial(run.skills.mine, req, unit),
                    key=stable_id(item.lead_id, item.source_id, ch.id, prefix="mine-"),
                )
            )
    # Answers are kept as they are paid for: a source is written only once all its chunks are
    # in, so a stop leaves answers of later sources in memory (issue 29: a resume after SIGTERM
    # paid for them again).
    fan = run.fan(Role.EXECUTOR, STAGE, "mine", "mining", keep=keep_list(ClaimDraft))
    outcomes = fan_out(fan, jobs)
    at = 0
    for item in to_mine:
        chunks = by_source.get(item.source_id, [])
        if not chunks:
            continue
        source_text = "".join(c.text for c in chunks)
        haystack = CollapsedText(source_text)
        drafts = []
        paid = False
        for ch in chunks:
            job, o = jobs[at], next(outcomes)
            at += 1
            if o.status == Status.NOT_SENT:
                continue  # after the budget stopped the stage: never sent
            paid = paid or job.estimate > 0
            if o.status == Status.REFUSED:
                # Stop mining, but keep what this source's chunks already yielded: those
                # calls were paid for, and their claims pass the same quote check as any other.
                result.budget_stopped = True
                pending.dead_ends.append(
                    (
                        DeadEnd(DeadEndCause.BUDGET_EXHAUSTED, detail=str(o.refusal)),
                        item.sub_question_id,
                        item.lead_id,
                    )
                )
                continue
            if o.status == Status.FAILED:
                result.failed_calls += 1
                log.warning("mining chunk %s failed: %s", ch.id, o.error)
                continue
            got = o.value
            assert got is not None
            paid = paid or got.cost > 0
            result.calls += 1
            result.spent += got.cost
            if got.unreadable:
                pending.unreadable.append(got.unreadable)
            drafts.extend(got.value)

        causes: Counter[str] = Counter()
        now = utcnow()
        data = source_text.encode("utf-8")
        for d in drafts:
            # A bullet glyph leading a list item is layout: the quote starts after it (still
            # verbatim in the source), and so does the claim's text.
            d = replace(d, text=strip_bullet(d.text), quote=strip_bullet(d.quote))
            if not d.text.strip() or not d.quote.strip():
                causes["empty"] += 1
                continue
            try:
                m = haystack.find(d.quote)
            except QuoteRejected as rej:
                causes[rej.cause] += 1
                continue
            if m is None:
                causes["quote_not_found"] += 1
                continue
            if quotes_furniture(data, m.byte_start, m.byte_end):
                causes["not_a_claim"] += 1
                continue
            key = (item.source_id, m.byte_start, m.byte_end)
            if key in stored:
                result.duplicates_skipped += 1
                continue
            stored.add(key)
            claim_id = stable_id(
                sid, item.source_id, str(m.byte_start), str(m.byte_end), prefix="c-"
            )
            pending.claims.append(
                {
                    "id": claim_id,
                    "source_id": item.source_id,
                    "chunk_id": _chunk_at(chunks, m.byte_start),
                    "sub_question_id": item.sub_question_id,
                    "text": " ".join(d.text.split())[:MAX_CLAIM_CHARS],
                    "quote": data[m.byte_start : m.byte_end].decode("utf-8"),
                    "quote_byte_start": m.byte_start,
                    "quote_byte_end": m.byte_end,
                    "created_at": now,
                }
            )
            if d.grade is not None:
                pending.grades.append(
                    {
                        "claim_id": claim_id,
                        "relevance": 0.0,
                        "to_question": 0.0,
                        "to_sub_question": 0.0,
                        "sub_question_id": item.sub_question_id,
                        "basis": "model+lexical",
                        "model_grade": min(max(int(d.grade), 0), 3),
                        "explanation": "not scored yet",
                    }
                )
            result.claims += 1
        pending.discarded += [
            {"source_id": item.source_id, "cause": cause, "n": n} for cause, n in causes.items()
        ]
        pending.mined.append({"lead_id": item.lead_id, "source_id": item.source_id})
        result.discarded.update(causes)
        result.pairs_mined += 1
        if paid:
            # Claims that cost money are written as soon as their source is done: a crash
            # must not make a resumed session pay to mine them again.
            free.write_with(lambda cur: pending.write(cur, sid, run.skills.name), store)
            pending.clear()
        if result.budget_stopped:
            break

    def finish(cur: Any) -> None:
        pending.write(cur, sid, run.skills.name)
        if not work:
            return
        # A lead whose sources yielded nothing is a dead end the planner should hear about.
        # Counted inside the transaction, so this stage's claims are seen.
        lead_ids = sorted({w.lead_id for w in work})
        for lead in fetch_all(
            cur, LeadClaimsRow, q("lead_claim_counts"), {"session_id": sid, "lead_ids": lead_ids}
        ):
            if lead.claims == 0:
                store_dead_end(
                    cur,
                    sid,
                    DeadEnd(DeadEndCause.NO_CLAIMS),
                    sub_question_id=lead.sub_question_id,
                    lead_id=lead.lead_id,
                )

    if work or len(free):
        free.write_with(finish, store)
        pending.clear()
    relevance = score_relevance(run)
    result.relevant = relevance.relevant
    failed = f", {result.failed_calls} mining calls failed" if result.failed_calls else ""
    sources = len({w.source_id for w in work})
    run.progress(
        f"mined {plural(result.claims, 'claim')} from {plural(sources, 'source')} "
        f"({sum(result.discarded.values())} discarded by the quote "
        f"check{failed}); {relevance.relevant} of the session's {relevance.claims} claims bear "
        "on the question"
    )
    return result
