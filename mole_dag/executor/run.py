"""Run a session's pending leads: one lead per worker, a bounded pool, leases with heartbeats.

Shared across workers: the store, the ledger, the actors' indexes and connection pools. Not
shared: anything about a lead's findings, which go straight to the store under that lead's
session id, so two sessions running at once cannot cross-attribute sources or claims."""

from __future__ import annotations

import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from mole_dag.actors import once
from mole_dag.actors.base import Actor, DeadEnd, Found
from mole_dag.actors.registry import actors_for
from mole_dag.budget import BudgetExhausted, FreeCallBatch
from mole_dag.context import Run
from mole_dag.core import DeadEndCause, LeadStatus, Role, Unit, columns
from mole_dag.executor import leases
from mole_dag.executor.ingest import store_source
from mole_dag.store import q, utcnow
from mole_dag.store.dead_ends import store_dead_end
from mole_dag.text import plural

log = logging.getLogger("mole.executor")
STAGE = "fetched_chunks"
# Documents taken per lead. A guess, flagged as one: the top few BM25 hits carry nearly all of
# the relevant text in a focused corpus, and each extra document costs a mining call per chunk.
RESULTS_PER_LEAD = 10
DEFAULT_WORKERS = 4
# How long finished leads wait to be written with others. Long enough that a local-corpus
# round (well under a second) is one transaction, short enough that a crash in a slow web round
# loses a few seconds of fetching. A guess, flagged as one.
FLUSH_AFTER_S = 5.0


class _NoActor(LookupError):
    pass


# The outside world failing, by module and class name: a lead's honest `fetch_failed`. Looked up
# only in modules already loaded (an exception of theirs means they are), so the executor does
# not import httpx or the fetcher itself (tests/test_import_cost.py). OSError covers sockets,
# files and TimeoutError. Anything else that escapes an actor is a bug: `internal_error`.
_FETCH_ERRORS = (
    ("httpx", ("HTTPError", "InvalidURL", "StreamError")),
    ("mole_dag.actors.fetch.fetcher", ("FetchFailed",)),
    ("mole_dag.actors.search.base", ("SearchFailed",)),
    ("mole_dag.actors.extract", ("ExtractionError",)),
    ("mole_dag.actors.local", ("CorpusError",)),
)


def is_fetch_error(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, _NoActor)):
        return True
    for module, names in _FETCH_ERRORS:
        mod = sys.modules.get(module)
        if mod is not None and isinstance(exc, tuple(getattr(mod, n) for n in names)):
            return True
    return False


@dataclass
class ExecResult:
    leads_run: int = 0
    new_sources: int = 0
    # Sources the leads found that the session had stored already (an earlier round's, or
    # another lead's): mined for these leads too, but not new (issue 33: "0 new sources" and
    # then "mined 13 claims from 17 distinct sources" read as a contradiction).
    found_again: int = 0
    new_chunks: int = 0
    # The distinct sources behind the two counts above (a source two leads found is one).
    new_ids: set[str] = field(default_factory=set)
    seen_ids: set[str] = field(default_factory=set)
    dead_ends: int = 0
    leases_requeued: int = 0
    failed_leads: int = 0
    # Of failed_leads: bugs (DeadEndCause.INTERNAL_ERROR), not fetch errors.
    internal_errors: int = 0
    lead_ids: list[str] = field(default_factory=list)


@dataclass
class _Outcome:
    """What one lead found, waiting to be written with the leads that finished near it."""

    lease: leases.Lease
    actor: str
    items: list[Found | DeadEnd]
    status: LeadStatus
    dead: DeadEnd | None = None
    failed: bool = False
    internal: bool = False


class _Writer:
    """Writes finished leads' findings, their lease ends and the stage's free calls together,
    one transaction for many leads (issue 12: a transaction per lead, per search call and per
    lease end). A lead whose search cost money, or findings older than FLUSH_AFTER_S (a slow
    web round), are written at once, so a crash loses little that was paid for or waited on."""

    def __init__(self, run: Run, free: FreeCallBatch, result: ExecResult, lock: Lock) -> None:
        self.run, self.free, self.result, self.lock = run, free, result, lock
        self._pending: list[_Outcome] = []
        self._since: float | None = None
        self._mutex = Lock()

    def add(self, outcome: _Outcome, *, urgent: bool) -> None:
        with self._mutex:
            self._pending.append(outcome)
            if self._since is None:
                self._since = time.monotonic()
            due = urgent or time.monotonic() - self._since >= FLUSH_AFTER_S
        if due:
            self.flush()

    def flush(self) -> None:
        with self._mutex:
            batch, self._pending, self._since = self._pending, [], None
        if not batch and not len(self.free):
            return

        def write(cur: Any) -> list[tuple[set[str], set[str], int, int]]:
            known = dict(
                cur.execute(q("source_urls"), {"session_id": self.run.session_id}).fetchall()
            )
            links: list[dict[str, Any]] = []
            counts = [self._write(cur, o, known, links) for o in batch]
            if links:
                cur.execute(
                    q("lead_source_insert_many"),
                    {
                        "session_id": self.run.session_id,
                        "now": utcnow(),
                        **columns(
                            links, ("lead_id", "sub_question_id", "source_id", "rank", "score")
                        ),
                    },
                )
            return counts

        try:
            counts, _ = self.free.write_with(write, self.run.store)
        except BaseException:
            with self._mutex:
                self._pending[:0] = batch
            raise
        with self.lock:
            for new_ids, seen_ids, n_chunks, n_dead in counts:
                self.result.new_ids |= new_ids
                self.result.seen_ids |= seen_ids
                self.result.new_sources = len(self.result.new_ids)
                self.result.found_again = len(self.result.seen_ids - self.result.new_ids)
                self.result.new_chunks += n_chunks
                self.result.dead_ends += n_dead

    def _write(
        self, cur: Any, o: _Outcome, known: dict[str, str], links: list[dict[str, Any]]
    ) -> tuple[set[str], set[str], int, int]:
        sid, lease = self.run.session_id, o.lease
        new_ids: set[str] = set()
        seen_ids: set[str] = set()
        n_chunks = n_dead = 0
        for item in o.items:
            if isinstance(item, DeadEnd):
                store_dead_end(
                    cur, sid, item, sub_question_id=lease.sub_question_id, lead_id=lease.lead_id
                )
                n_dead += 1
                continue
            if item.linked:
                # A stand-in for a source this session stored earlier: link it, never insert it.
                got = known.get(item.document.url)
                if got is None:
                    log.warning(
                        "lead %s: linked source %s is not stored", lease.lead_id, item.document.url
                    )
                    continue
                source_id, chunks = got, 0
            else:
                source_id, chunks = store_source(cur, sid, o.actor, item.document, known)
            (new_ids if chunks else seen_ids).add(source_id)
            n_chunks += chunks
            # Written with the batch's other links, in one statement, after its sources.
            links.append(
                {
                    "lead_id": lease.lead_id,
                    "sub_question_id": lease.sub_question_id,
                    "source_id": source_id,
                    "rank": item.rank,
                    "score": item.score,
                }
            )
        if o.dead is not None:
            store_dead_end(
                cur, sid, o.dead, sub_question_id=lease.sub_question_id, lead_id=lease.lead_id
            )
            # Counted like the dead ends a search returned: the progress line and the report
            # read the same table.
            n_dead += 1
        leases.finish_in(cur, lease, o.status)
        return new_ids, seen_ids, n_chunks, n_dead


def _run_lead(
    run: Run,
    actors: dict[str, Actor],
    lease: leases.Lease,
    result: ExecResult,
    lock: Lock,
    writer: _Writer,
) -> None:
    sid = run.session_id
    actor = actors.get(lease.actor)
    items: list[Found | DeadEnd] = []
    price = 0
    outcome = _Outcome(lease, lease.actor, items, LeadStatus.DONE)
    try:
        if actor is None:
            # A session naming a search provider this process cannot build: the outside
            # configuration, not a bug here.
            raise _NoActor(f"no actor {lease.actor!r} configured for this session")
        # Searching the local index is free, but it is still a call: it goes through the
        # ledger so call counts and spend by stage are complete. Paid search providers reserve
        # their price (a USD price: a token budget does not pay for searches).
        price = int(getattr(actor, "price_usd_micros", 0)) if run.unit == Unit.USD_MICROS else 0
        with run.ledger.hold(
            sid, Role.EXECUTOR, price, tool=f"search:{actor.name}", stage=STAGE
        ) as h:
            items.extend(actor.gather(lease.query, RESULTS_PER_LEAD))
            h.settle(price)
    except BudgetExhausted as exc:
        items.clear()
        outcome.status = LeadStatus.DEAD
        outcome.dead = DeadEnd(DeadEndCause.BUDGET_EXHAUSTED, detail=str(exc))
    except Exception as exc:  # one bad lead must not lose the others
        items.clear()
        outcome.status = LeadStatus.DEAD
        outcome.failed = True
        if is_fetch_error(exc):
            log.warning("lead %s failed: %s", lease.lead_id, exc)
            cause = DeadEndCause.FETCH_FAILED
        else:
            # A bug, not the weather: its traceback goes to the log, and the dead end says so.
            log.exception("lead %s: internal error", lease.lead_id)
            cause = DeadEndCause.INTERNAL_ERROR
            outcome.internal = True
        outcome.dead = DeadEnd(cause, detail=f"{type(exc).__name__}: {exc}")
    with lock:
        result.failed_leads += 1 if outcome.failed else 0
        result.internal_errors += 1 if outcome.internal else 0
        result.leads_run += 1
        result.lead_ids.append(lease.lead_id)
    writer.add(outcome, urgent=price > 0)
    run.progress(f"lead {lease.query!r} via {lease.actor}: {outcome.status}")


def execute_leads(run: Run, workers: int = DEFAULT_WORKERS) -> ExecResult:
    result = ExecResult()
    sid = run.session_id
    result.leases_requeued = leases.requeue_expired(run.store, sid)
    owner = leases.new_owner()
    # The round's leads are leased in one transaction and kept alive by one heartbeat; the
    # workers take them in plan order.
    taken = leases.lease_pending(run.store, sid, owner)
    if taken:
        actors = actors_for(run.session(), run.store)
        lock = Lock()
        with run.ledger.free_calls(sid) as free, leases.OwnerHeartbeat(run.store, sid, owner):
            writer = _Writer(run, free, result, lock)
            try:
                with ThreadPoolExecutor(
                    max_workers=max(1, workers), thread_name_prefix="lead"
                ) as pool:
                    futures = [
                        pool.submit(_run_lead, run, actors, lease, result, lock, writer)
                        for lease in taken
                    ]
                    for f in futures:
                        f.result()
            finally:
                # Whatever finished is written, even when a worker raised (an interrupt).
                writer.flush()
    # Every page this round fetched is stored now: the registry keeps where, not the text.
    once.settle(sid)
    # A rerun (issue 32): the previous session's cited sources the search did not bring back
    # are read again, and every source is set beside its previous copy.
    if run.session().previous_session_id:
        from mole_dag.executor.rerun import reread_previous

        reread_previous(run)
    result.lead_ids.sort()
    again = f" ({result.found_again} found again)" if result.found_again else ""
    run.progress(
        f"executed {plural(result.leads_run, 'lead')}: "
        f"{plural(result.new_sources, 'new source')}{again}, "
        f"{plural(result.new_chunks, 'chunk')}, {plural(result.dead_ends, 'dead end')}"
    )
    return result
