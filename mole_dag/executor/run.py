"""Run a session's pending leads: one lead per worker, a bounded pool, leases with heartbeats.

Shared across workers: the store, the ledger, the actors' indexes and connection pools. Not
shared: anything about a lead's findings, which go straight to the store under that lead's
session id, so two sessions running at once cannot cross-attribute sources or claims."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from threading import Lock

from mole_dag.actors import once
from mole_dag.actors.base import Actor, DeadEnd, Found
from mole_dag.actors.registry import actors_for
from mole_dag.budget import BudgetExhausted
from mole_dag.context import Run
from mole_dag.core import DeadEndCause, LeadStatus, Role, Unit
from mole_dag.executor import leases
from mole_dag.executor.ingest import store_dead_end, store_source
from mole_dag.store import q, utcnow

log = logging.getLogger("mole.executor")
STAGE = "fetched_chunks"
# Documents taken per lead. A guess, flagged as one: the top few BM25 hits carry nearly all of
# the relevant text in a focused corpus, and each extra document costs a mining call per chunk.
RESULTS_PER_LEAD = 10
DEFAULT_WORKERS = 4


@dataclass
class ExecResult:
    leads_run: int = 0
    sources: int = 0
    chunks: int = 0
    dead_ends: int = 0
    requeued: int = 0
    failed: int = 0
    lead_ids: list[str] = field(default_factory=list)


def _run_lead(run: Run, actor: Actor, lease: leases.Lease, result: ExecResult, lock: Lock) -> None:
    sid = run.session_id
    # Searching the local index is free, but it is still a call: it goes through the ledger so
    # call counts and spend by stage are complete. Paid search providers reserve their price
    # (a USD price: a token budget does not pay for searches).
    price = int(getattr(actor, "price_usd_micros", 0)) if run.unit == Unit.USD_MICROS else 0
    with run.ledger.hold(sid, Role.EXECUTOR, price, tool=f"search:{actor.name}",
                         stage=STAGE) as h:
        items = list(actor.gather(lease.query, RESULTS_PER_LEAD))
        h.settle(price)
    now = utcnow()

    def write(cur) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
        n_src = n_chunks = n_dead = 0
        for item in items:
            if isinstance(item, DeadEnd):
                store_dead_end(cur, sid, item, sub_question_id=lease.sub_question_id,
                               lead_id=lease.lead_id)
                n_dead += 1
                continue
            assert isinstance(item, Found)
            if item.linked:
                # A stand-in for a source this session stored earlier: link it, never insert it.
                got = cur.execute(q("source_by_url"),
                                  {"session_id": sid, "url": item.document.url}).fetchone()
                if got is None:
                    log.warning("lead %s: linked source %s is not stored", lease.lead_id,
                                item.document.url)
                    continue
                source_id, chunks = got[0], 0
            else:
                source_id, chunks = store_source(cur, sid, actor.name, item.document)
            n_src += 1 if chunks else 0
            n_chunks += chunks
            cur.execute(q("lead_source_insert"), {
                "session_id": sid, "lead_id": lease.lead_id,
                "sub_question_id": lease.sub_question_id, "source_id": source_id,
                "rank": item.rank, "score": item.score, "now": now})
        return n_src, n_chunks, n_dead

    n_src, n_chunks, n_dead = run.store.transact(write)
    with lock:
        result.sources += n_src
        result.chunks += n_chunks
        result.dead_ends += n_dead


def _worker(run: Run, actors: dict[str, Actor], result: ExecResult, lock: Lock) -> None:
    owner = leases.new_owner()
    while True:
        lease = leases.lease_next(run.store, run.session_id, owner)
        if lease is None:
            return
        actor = actors.get(lease.actor)
        status = LeadStatus.DONE
        try:
            if actor is None:
                raise LookupError(f"no actor {lease.actor!r} configured for this session")
            with leases.Heartbeat(run.store, lease):
                _run_lead(run, actor, lease, result, lock)
        except BudgetExhausted as exc:
            status = LeadStatus.DEAD
            run.store.transact(lambda cur, e=exc, lease=lease: store_dead_end(
                cur, run.session_id, DeadEnd(DeadEndCause.BUDGET_EXHAUSTED, detail=str(e)),
                sub_question_id=lease.sub_question_id, lead_id=lease.lead_id))
        except Exception as exc:  # one bad lead must not lose the others
            log.warning("lead %s failed: %s", lease.lead_id, exc)
            status = LeadStatus.DEAD
            with lock:
                result.failed += 1
            run.store.transact(lambda cur, e=exc, lease=lease: store_dead_end(
                cur, run.session_id,
                DeadEnd(DeadEndCause.FETCH_FAILED, detail=f"{type(e).__name__}: {e}"),
                sub_question_id=lease.sub_question_id, lead_id=lease.lead_id))
        leases.finish(run.store, lease, status)
        with lock:
            result.leads_run += 1
            result.lead_ids.append(lease.lead_id)
        run.progress(f"lead {lease.query!r} via {lease.actor}: {status}")


def execute_leads(run: Run, workers: int = DEFAULT_WORKERS) -> ExecResult:
    result = ExecResult()
    result.requeued = leases.requeue_expired(run.store, run.session_id)
    actors = actors_for(run.session(), run.store)
    lock = Lock()
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="lead") as pool:
        futures = [pool.submit(_worker, run, actors, result, lock) for _ in range(max(1, workers))]
        for f in futures:
            f.result()
    # Every page this round fetched is stored now: the registry keeps where, not the text.
    once.settle(run.session_id)
    result.lead_ids.sort()
    run.progress(
        f"executed {result.leads_run} leads: {result.sources} new sources, "
        f"{result.chunks} chunks, {result.dead_ends} dead ends"
    )
    return result
