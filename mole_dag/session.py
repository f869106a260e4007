"""A session's lifecycle outside any one stage: creation (with the budget and its escrow),
recovery at start (expired reservations and leases returned). Whether another round should run
is the driver's decision (mole_dag.driver)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from mole_dag import invoked
from mole_dag.actors.search_settings import (
    SearchSettings,
    save_for_session,
)
from mole_dag.budget import Balance, Ledger
from mole_dag.budget.ledger import new_session_id
from mole_dag.context import Run
from mole_dag.core import SessionStatus, Unit
from mole_dag.executor import leases
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import SessionRow

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
    previous_session_id: str | None = None,
) -> Balance:
    """`data`: a CSV file or folder for the local-data boundary, recorded with the session in
    the same transaction (validate it first: mole_dag.local_data.connector.Dataset.open).
    `previous_session_id`: the session this one re-runs (issue 32), linked in that transaction
    too, so no rerun exists unlinked."""
    if search is not None:
        # Written first, under the id the session will have: a crash in between leaves an
        # orphan settings row (harmless), never a web session without its allow-list.
        session_id = session_id or new_session_id()
        save_for_session(store, session_id, search)
    ledger = Ledger(store)

    def tx(cur: duckdb.DuckDBPyConnection) -> Balance:
        bal = ledger.create_session(
            question,
            unit,
            total,
            session_id=session_id,
            provider=provider,
            corpus=corpus,
            actors=actors,
        )
        if data:
            cur.execute(
                q("session_set_data"), {"data": data, "now": utcnow(), "session_id": bal.session_id}
            )
        if previous_session_id:
            cur.execute(
                q("session_set_previous"),
                {
                    "previous_session_id": previous_session_id,
                    "now": utcnow(),
                    "session_id": bal.session_id,
                },
            )
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


class SessionMissing(LookupError):
    pass


def session_exists(store: Store, session_id: str) -> bool:
    return store.row(q("session_get"), {"session_id": session_id}) is not None


def _same_launch(row: SessionRow, question: str, usd: str | None, tokens: str | None) -> None:
    """A launch config for a session that exists must name its question and budget: a config
    that says otherwise is refused in one line, never silently ignored."""
    from mole_dag.launch import LaunchError, check_budget, clean_question

    unit, total = check_budget(usd, tokens, "")
    # Compared as stored: the launch check removes control sequences before a question is kept.
    if clean_question(question) != clean_question(row.question):
        raise LaunchError(
            f"session {row.id!r} exists with another question ({row.question!r}); add a new "
            "partition for a new question, or give this one's question"
        )
    if (str(unit), total) != (str(row.unit), row.total):
        raise LaunchError(
            f"session {row.id!r} exists with another budget ({_amount(row.unit, row.total)}); "
            "its budget is fixed at creation"
        )


def _amount(unit: Unit | str, total: int) -> str:
    return f"${total / 1_000_000:.6f}" if str(unit) == str(Unit.USD_MICROS) else f"{total} tokens"


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
    row = store.one(SessionRow, q("session_get"), {"session_id": session_id})
    if row is not None:
        if question.strip() or usd is not None or tokens is not None:
            _same_launch(row, question, usd, tokens)
        return ledger.balance(session_id)
    if not question.strip() and usd is None and tokens is None:
        raise SessionMissing(
            f"no session {session_id!r} in {store.path}; start it with `mole research`, or "
            "launch it with config: a question and a budget (usd or tokens)"
        )
    launch = check_launch(
        question,
        usd=usd,
        tokens=tokens,
        provider=provider,
        session_id=session_id,
        corpus=corpus,
        data=data,
        search=search,
        searxng_url=searxng_url,
        allow_hosts=allow_hosts,
        note=note or log.warning,
        flag="",
    )
    bal = create_session(
        store,
        launch.question,
        launch.unit,
        launch.total,
        corpus=str(launch.corpus),
        provider=launch.provider,
        session_id=session_id,
        actors=launch.actors,
        search=launch.search,
        data=launch.data,
    )
    # Launched from Dagster: its later rounds and report are the driver sensor's to start.
    store.transact(
        lambda cur: cur.execute(
            q("session_driver_set"), {"driver": "dagster", "session_id": bal.session_id}
        )
    )
    return bal


OPEN = (SessionStatus.CREATED, SessionStatus.RUNNING, SessionStatus.REPORTING)


def stop_session(ledger: Ledger, session_id: str, status: SessionStatus, reason: str) -> bool:
    """End a session that cannot go on, before its process exits (issue 29: an error left it
    `running`, escrow held, until some later process opened the store): `interrupted` when
    `mole resume` can finish it (the provider stopped answering, a signal), `failed` when a
    stage failed. A failed session's escrow is returned: nothing will spend it. Only an open
    session is changed; False when it had ended already."""
    if ledger.balance(session_id).status not in OPEN:
        return False
    if status == SessionStatus.FAILED:
        ledger.release_escrow(session_id)
    ledger.set_status(session_id, status, " ".join(reason.split())[:500])
    return True


class RerunRefused(ValueError):
    """A rerun that cannot start; the message is one line for the user."""


def check_rerun(store: Store, previous_id: str) -> SessionRow:
    """The session to re-run, or RerunRefused: unknown, still running (its findings are not
    settled, and a rerun reads them), or not a research session."""
    row = store.one(SessionRow, q("session_get"), {"session_id": previous_id})
    if row is None:
        raise RerunRefused(f"no session {previous_id!r}; `mole sessions` lists them")
    if (row.kind or "research") != "research":
        raise RerunRefused(f"session {previous_id} is a {row.kind} session, not a question")
    if row.status in OPEN:
        raise RerunRefused(
            f"session {previous_id} is {row.status}: re-run it once it has finished "
            f"(`{invoked.command('resume', previous_id)}` finishes an interrupted one)"
        )
    return row


def create_rerun(
    store: Store, previous: SessionRow, unit: Unit, total: int, *, session_id: str | None = None
) -> Balance:
    """A new session of `previous`'s question with its provider, corpus, search providers,
    search settings and data, linked to it (issue 32), with a budget of its own."""
    from mole_dag.actors.search_settings import load_for_session

    searxng_url, allow_hosts = load_for_session(store, previous.id)
    actors = tuple(a for a in previous.actors.split(",") if a)
    return create_session(
        store,
        previous.question,
        unit,
        total,
        corpus=previous.corpus,
        provider=previous.provider,
        actors=actors,
        session_id=session_id,
        search=SearchSettings(actors, searxng_url, allow_hosts),
        data=previous.data,
        previous_session_id=previous.id,
    )
