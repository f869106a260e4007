"""Fetch each URL at most once per session (issue 10 item 5: parallel leads fetched the same page
up to five times, about +28 s on one host).

A per-session, in-process registry of requested URLs. The first lead to ask for a URL owns it and
fetches; a lead that asks while the fetch is in flight waits on a condition for the owner's
outcome instead of fetching too; a lead that asks afterwards gets the outcome at once. Outcomes
are a document (not yet known to be stored: the owner's lead writes it at the end of its lead, so
a waiter hands the same document to the store, whose URL check then links the stored copy), a
link to a stored source (after the round, or found in the store), or a dead end (not retried).

Keys are the URL exactly as the store keys sources (`sources.url`, the `source_by_url` query
compares strings as they are), so an in-memory hit and a store hit agree. The registry only
spares work within one process; the store checks the web actor makes before claiming a URL cover
earlier rounds and other processes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from mole_dag.actors.base import DeadEnd
from mole_dag.core import Document

# Sessions whose registries a long-lived process (MCP server, Dagster daemon) keeps. Evicting
# one costs only speed: the store still says what was stored or failed. A guess, flagged as one.
MAX_SESSIONS = 64


@dataclass(frozen=True)
class Stored:
    """The URL's source is in the store under `url` (which differs from the requested URL after
    a redirect)."""

    url: str


Outcome = Document | DeadEnd | Stored


class FetchOnce:
    """One session's registry. Thread-safe; waiters never own a URL while they wait, so the
    wait-for graph has no cycles (an owner finishes its URL before it asks for another)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._done: dict[str, Outcome] = {}
        self._in_flight: set[str] = set()

    def resolve(self, url: str, produce: Callable[[], Outcome]) -> tuple[Outcome, bool]:
        """The outcome for `url`, and whether this call produced it. `produce` runs at most once
        per URL at a time across threads; if it raises, the URL is released and one waiter
        produces it instead."""
        with self._cond:
            while True:
                got = self._done.get(url)
                if got is not None:
                    return got, False
                if url not in self._in_flight:
                    self._in_flight.add(url)
                    break
                self._cond.wait()
        try:
            outcome = produce()
        except BaseException:
            with self._cond:
                self._in_flight.discard(url)
                self._cond.notify_all()
            raise
        with self._cond:
            self._in_flight.discard(url)
            self._done[url] = outcome
            # After a redirect the page is also known by where it ended up: a lead whose search
            # returned the final URL links it too instead of fetching it again.
            final = outcome.url
            if final and final != url and final not in self._in_flight:
                self._done.setdefault(final, outcome)
            self._cond.notify_all()
        return outcome, True

    def forget(self, url: str) -> None:
        """Drop one outcome (a stored link whose source turned out missing), so it is redone."""
        with self._cond:
            self._done.pop(url, None)

    def settle(self) -> None:
        """After a round every document is stored (or its lead failed): keep only where it is,
        so the registry does not hold page text across rounds."""
        with self._cond:
            for url, got in list(self._done.items()):
                if isinstance(got, Document):
                    self._done[url] = Stored(got.url)


_lock = threading.Lock()
_sessions: OrderedDict[str, FetchOnce] = OrderedDict()


def for_session(session_id: str) -> FetchOnce:
    with _lock:
        reg = _sessions.get(session_id)
        if reg is None:
            reg = _sessions[session_id] = FetchOnce()
            while len(_sessions) > MAX_SESSIONS:
                _sessions.popitem(last=False)
        else:
            _sessions.move_to_end(session_id)
        return reg


def settle(session_id: str) -> None:
    with _lock:
        reg = _sessions.get(session_id)
    if reg is not None:
        reg.settle()


def forget(session_id: str) -> None:
    """Drop a session's registry (as a new process would start without one)."""
    with _lock:
        _sessions.pop(session_id, None)
