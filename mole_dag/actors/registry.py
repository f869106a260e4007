"""Build the actors a session names. Shared state (an index, connection pools, rate limiters)
is cached per process; per-session state is not kept in actors at all."""

from __future__ import annotations

import threading

from mole_dag.actors.base import Actor
from mole_dag.actors.local import LocalCorpus, SessionCorpus
from mole_dag.actors.search import SEARCH_PROVIDERS
from mole_dag.paths import demo_corpus
from mole_dag.store import Store, q
from mole_dag.store.records import SessionRow

_lock = threading.Lock()
_corpora: dict[str, LocalCorpus] = {}


class UnknownActor(ValueError):
    pass


def local_corpus(path: str) -> LocalCorpus:
    with _lock:
        corpus = _corpora.get(path)
        if corpus is None or not corpus.is_current():
            corpus = LocalCorpus.open(path)
            _corpora[path] = corpus
        return corpus


def actors_for(session: SessionRow, store: Store | None = None) -> dict[str, Actor]:
    names = [a.strip() for a in (session.actors or "local").split(",") if a.strip()]
    out: dict[str, Actor] = {}
    for name in names:
        if name == "local":
            corpus = local_corpus(session.corpus or str(demo_corpus()))
            recorded = None
            if store is not None:
                sid = session.id

                def recorded(url: str, sid: str = sid, store: Store = store) -> bool:
                    row = store.row(q("dead_end_by_url"), {"session_id": sid, "url": url})
                    return row is not None

            out[name] = SessionCorpus(corpus, session.id, recorded)
        elif name in SEARCH_PROVIDERS:
            # Web and academic search (issue 4): built per session, shared pools underneath.
            # The web stack is imported only for a session that searches the web (issue 12).
            from mole_dag.actors.web_registry import web_actor_for

            actor = web_actor_for(name, session, store)
            if actor is not None:
                out[name] = actor
        else:
            raise UnknownActor(f"unknown search provider {name!r}")
    return out


def forget_cached() -> None:
    """Drop cached indexes (tests that rewrite a corpus folder)."""
    with _lock:
        _corpora.clear()
