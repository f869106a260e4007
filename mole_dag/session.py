"""A session's lifecycle outside any one stage: creation (with the budget and its escrow),
recovery at start (expired reservations and leases returned), and whether another round should
run."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from mole_dag.actors.search_settings import (
    SearchSettings,
    SettingsError,
    availability,
    read_config,
    resolve_settings,
    save_for_session,
)
from mole_dag.budget import Balance, Ledger
from mole_dag.budget.ledger import new_session_id
from mole_dag.context import Run
from mole_dag.core import SessionStatus, Unit
from mole_dag.executor import leases
from mole_dag.store import Store, q, utcnow

# Rounds are plan -> execute -> mine -> verify -> score. A guess, flagged as one: the budget is
# the real bound; this one stops a planner that keeps finding work from looping forever.
MAX_ROUNDS = 4
log = logging.getLogger("mole.session")


class BudgetSpecError(ValueError):
    pass


def parse_budget(usd: str | None, tokens: str | None) -> tuple[Unit, int]:
    """Exactly one of usd and tokens; no default. USD becomes integer micro-dollars. The rules
    (finite, positive, under a stated ceiling) live in mole_dag.launch.check_budget, so the
    command line, mole-mcp, the Dagster launch config and re-grounding's run config refuse the
    same budgets."""
    from mole_dag.launch import LaunchError, check_budget

    try:
        return check_budget(usd, tokens)
    except LaunchError as exc:
        raise BudgetSpecError(str(exc)) from None


def create_session(
    store: Store,
    question: str,
    unit: Unit,
    total: int,
    *,
    corpus: str | None = None,
    provider: str = "extractive",
    actors: tuple[str, ...] = ("local",),
    session_id: str | None = None,
    search: SearchSettings | None = None,
    data: str | None = None,
) -> Balance:
    """`data`: a CSV file or folder for the local-data boundary, recorded with the session in
    the same transaction (validate it first: mole_dag.compute.connector.Dataset.open)."""
    if search is not None:
        # Written first, under the id the session will have: a crash in between leaves an
        # orphan settings row (harmless), never a web session without its allow-list.
        session_id = session_id or new_session_id()
        save_for_session(store, session_id, search)
    ledger = Ledger(store)

    def tx(cur) -> Balance:  # type: ignore[no-untyped-def]
        bal = ledger.create_session(
            question, unit, total, session_id=session_id, provider=provider, corpus=corpus,
            actors=actors,
        )
        if data:
            cur.execute(q("session_set_data"), {"data": data, "now": utcnow(),
                                                "session_id": bal.session_id})
        return bal

    return store.transact(tx)


@dataclass(frozen=True)
class Recovery:
    reservations_expired: int
    leases_requeued: int


def recover(run: Run) -> Recovery:
    """What a process does before touching a session: return abandoned holds and leases."""
    expired = run.ledger.expire_stale()
    requeued = leases.requeue_expired(run.store, run.session_id)
    return Recovery(expired, requeued)


def should_run_another_round(run: Run) -> bool:
    sess = run.session()
    if sess.status not in (SessionStatus.CREATED, SessionStatus.RUNNING):
        return False
    if sess.rounds >= MAX_ROUNDS:
        return False
    pending = int(run.store.scalar(q("pending_leads_count"), {"session_id": run.session_id}) or 0)
    if pending == 0:
        return False
    return run.ledger.balance(run.session_id).available > 0


class SessionMissing(LookupError):
    pass


def ensure_session(
    store: Store,
    session_id: str,
    *,
    question: str = "",
    usd: str | None = None,
    tokens: str | None = None,
    corpus: str | None = None,
    provider: str | None = None,
    search: list[str] | None = None,
    searxng_url: str | None = None,
    allow_hosts: list[str] | None = None,
    note: Callable[[str], None] | None = None,
    data: str | None = None,
) -> Balance:
    """The session row for a partition: found, or created from launch config (the UI path).
    A new session goes through mole_dag.launch.check_launch, the check `mole research` and
    mole-mcp use, so the UI refuses the same input in the same words (raises LaunchError,
    worded for config keys: "usd", not "--usd") and records what they record: the provider
    resolved (MOLE_PROVIDER, else the config file's, else extractive) and the corpus as an
    absolute path (the demo corpus when none is named), so a later re-read finds its files
    whatever folder the UI was started from."""
    from mole_dag.launch import check_launch

    ledger = Ledger(store)
    if store.row(q("session_get"), {"session_id": session_id}) is not None:
        return ledger.balance(session_id)
    if not question.strip():
        raise SessionMissing(
            f"no session {session_id!r} in {store.path}; start it with `mole research`, or "
            "launch the `session` asset with config: question and one of usd / tokens"
        )
    launch = check_launch(question, usd=usd, tokens=tokens, provider=provider,
                          session_id=session_id, corpus=corpus, data=data, search=search,
                          searxng_url=searxng_url, allow_hosts=allow_hosts,
                          note=note or log.warning, flag="")
    bal = create_session(store, launch.question, launch.unit, launch.total,
                         corpus=str(launch.corpus), provider=launch.provider,
                         session_id=session_id, actors=launch.actors, search=launch.search,
                         data=launch.data)
    # Launched from Dagster: its later rounds and report are the driver sensor's to start.
    store.transact(lambda cur: cur.execute(q("session_driver_set"),
                                           {"driver": "dagster", "session_id": bal.session_id}))
    return bal


def begin_reporting(run: Run) -> int:
    """Hand the escrow to the report stage (once) and put the session in `reporting`. Also the
    way back in for a finished session whose graph is materialised again."""
    released = run.ledger.release_escrow(run.session_id)
    if run.session().status == SessionStatus.DONE:
        now = utcnow()
        run.store.transact(lambda cur: cur.execute(q("session_set_status"), {
            "status": str(SessionStatus.REPORTING), "now": now, "session_id": run.session_id}))
    return released


def usable_search(
    *,
    search: list[str] | None,
    searxng_url: str | None,
    allow_hosts: list[str] | None,
    note: Callable[[str], None] | None = None,
) -> tuple[SearchSettings, tuple[str, ...]]:
    """Flags (or launch config) over the user's config; providers missing a key or URL are
    skipped with a note. Raises SettingsError when nothing usable is left."""
    config = read_config()
    settings = resolve_settings(config, search=search, searxng_url=searxng_url,
                                allow_hosts=allow_hosts)
    avail = availability(settings, config)
    for line in avail.notes:
        (note or log.warning)(line)
    if not avail.usable:
        raise SettingsError("no usable search provider: " + "; ".join(avail.notes))
    return settings, avail.usable


def resume_point(run: Run) -> str:
    """Where an interrupted session picks up: the report if it had reached it; a round if work
    was left half done (pending leads, fetched sources not yet mined) or another round is due;
    else the report."""
    sess = run.session()
    if sess.escrow_released or sess.status == SessionStatus.REPORTING:
        return "report"
    if sess.rounds == 0:
        return "round"
    pending = int(run.store.scalar(q("pending_leads_count"), {"session_id": run.session_id}) or 0)
    unmined = run.store.named("unmined_lead_sources", {"session_id": run.session_id})
    if (pending or unmined) and run.ledger.balance(run.session_id).available > 0:
        return "round"
    return "round" if should_run_another_round(run) else "report"


def next_step(run: Run) -> str | None:
    """What a session needs next: "round", "report", or None (finished, or not startable)."""
    sess = run.session()
    if sess.status in (SessionStatus.DONE, SessionStatus.FAILED, SessionStatus.ABANDONED,
                       SessionStatus.EXHAUSTED, SessionStatus.INTERRUPTED):
        return None
    if sess.status == SessionStatus.REPORTING:
        return "report"
    if sess.rounds == 0 or should_run_another_round(run):
        return "round"
    return "report"
