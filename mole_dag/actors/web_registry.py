"""Build one session's web or academic actor: its provider (with the key from config or the
environment, never from the store) over the session's fetcher (with the session's allow-list).
Kept apart from registry.py so the shared registry only dispatches by name."""

from __future__ import annotations

import logging

from mole_dag.actors import once
from mole_dag.actors.base import DeadEnd
from mole_dag.actors.fetch import Fetcher, FetchLimits, Policy
from mole_dag.actors.search import SPECS, build
from mole_dag.actors.search_settings import (
    SearchSettings,
    api_key,
    availability,
    contact_email,
    load_for_session,
    read_config,
)
from mole_dag.actors.web import WebActor, page_document
from mole_dag.core import DeadEndCause
from mole_dag.store import Store, q
from mole_dag.store.records import SessionRow

log = logging.getLogger("mole.web")
# The limits every session's fetcher gets (module-level so a test can shorten the timeouts).
FETCH_LIMITS = FetchLimits()


def web_actor_for(name: str, session: SessionRow, store: Store | None) -> WebActor | None:
    """The actor, or None (with a warning saying what to set) when its key or URL is missing."""
    searxng_url, allow_hosts = (None, ()) if store is None else load_for_session(store, session.id)
    config = read_config()
    settings = SearchSettings((name,), searxng_url, allow_hosts)
    avail = availability(settings, config)
    if name not in avail.usable:
        for note in avail.notes:
            log.warning("session %s: %s", session.id, note)
        return None
    provider = build(
        name,
        key=api_key(name, config),
        searxng_url=searxng_url,
        contact_email=contact_email(config),
    )
    sid = session.id
    known = failed = None
    if store is not None:

        def known(url: str) -> bool:
            return store.scalar(q("source_by_url"), {"session_id": sid, "url": url}) is not None

        def failed(url: str) -> DeadEnd | None:
            row = store.row(q("dead_end_by_url"), {"session_id": sid, "url": url})
            if row is None:
                return None
            return DeadEnd(DeadEndCause(row["cause"]), url, row["detail"])

    # One registry per session, shared by all its providers' actors and worker threads.
    return WebActor(
        provider,
        Fetcher(Policy.of(allow_hosts), FETCH_LIMITS),
        price_usd_micros=SPECS[name].price_usd_micros,
        known=known,
        failed=failed,
        once=once.for_session(sid),
    )


def reread_page(session: SessionRow | None, store: Store | None, url: str) -> str:
    """Fetch and extract a page again for grounding, through a fetcher with this session's
    allow-list: the same guard, robots handling and rate limits as the first read. Raises
    FetchFailed, or ValueError when the page no longer yields a document."""
    if store is not None and session is None:
        raise LookupError("the source's session is not in the store")
    allow_hosts = () if store is None or session is None else load_for_session(store, session.id)[1]
    fetched = Fetcher(Policy.of(allow_hosts), FETCH_LIMITS).fetch(url)
    got = page_document(fetched)
    if isinstance(got, DeadEnd):
        raise ValueError(f"{got.cause}: {got.detail or 'no document'}")
    return got.text
