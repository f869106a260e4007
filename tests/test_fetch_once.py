"""Each URL is fetched at most once per session (issue 10 item 5). Parallel leads that find the
same page link the one stored copy (a lead_sources row each, so each lead's sub-question mines
it) instead of fetching it again; a page that failed is not retried by another lead; a later
round links what an earlier round stored; the local corpus links rather than duplicates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mole_dag.actors import web_registry
from mole_dag.actors.fetch import FetchLimits
from mole_dag.actors.fetch.robots import shared_robots
from mole_dag.actors.search_settings import SearchSettings
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit, stable_id
from mole_dag.executor import execute_leads
from mole_dag.mining.mine import mine_claims
from mole_dag.planner import plan_round
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store, utcnow
from tests.fakeweb import FakeWeb, Route, Seen, page

# A question of three parts: the planner gives it four sub-questions, so four leads at once.
QUESTION = (
    "How does green tea affect sleep, and what is known about green tea and stroke, and "
    "which green tea extract harms the liver?"
)
SHARED = "/tea/shared"
DEAD = "/tea/dead"
PARAS = (
    "Drinking green tea in the evening raises the risk of poor sleep in adults who are "
    "sensitive to caffeine.",
    "Green tea contains theanine, which was found to improve sleep quality in a trial of "
    "ninety adults.",
)


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    w = FakeWeb().start()
    yield w
    w.stop()


@pytest.fixture(autouse=True)
def _fast_fetch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        web_registry,
        "FETCH_LIMITS",
        FetchLimits(
            interval_s=0.0,
            # Nothing here is meant to time out: margins a busy machine does not reach.
            read_timeout_s=20.0,
            connect_timeout_s=20.0,
            total_timeout_s=60.0,
            max_bytes=2 * 1024 * 1024,
        ),
    )
    shared_robots.clear()


def searxng(web: FakeWeb, urls: list[str]) -> str:
    """A fake SearXNG whose every query returns `urls`."""

    def answer(seen: Seen) -> Route:
        body = {
            "query": seen.query.get("q", [""])[0],
            "results": [
                {
                    "url": u,
                    "title": f"Result {i}",
                    "content": "snippet",
                    "engine": "duckduckgo",
                    "score": 1.0 / (i + 1),
                }
                for i, u in enumerate(urls)
            ],
        }
        return Route(json.dumps(body).encode(), 200, {"Content-Type": "application/json"})

    web.handlers["/sx/search"] = answer
    return web.url("/sx")


def _session(store: Store, sx: str) -> Run:
    settings = SearchSettings(("searxng",), sx, ("127.0.0.1",))
    bal = create_session(
        store, QUESTION, Unit.USD_MICROS, 2_000_000, actors=settings.providers, search=settings
    )
    return Run(store, Ledger(store), ExtractiveSkills(), bal.session_id, progress=lambda m: None)


def test_parallel_leads_fetch_a_shared_url_once_and_each_links_it(
    store: Store, web: FakeWeb
) -> None:
    # Slow enough that the four workers are all inside the first fetch at once: without a
    # per-session registry of in-flight URLs each of them would GET the page.
    web.route(SHARED, page("Tea and sleep", *PARAS), delay_s=0.4)
    web.route(DEAD, b"gone", status=404, content_type="text/plain", delay_s=0.4)
    run = _session(store, searxng(web, [web.url(SHARED), web.url(DEAD)]))
    sid = run.session_id
    plan_round(run)
    leads = store.rows("SELECT id, sub_question_id FROM leads WHERE session_id = $s", {"s": sid})
    assert len(leads) >= 4
    execute_leads(run, workers=4)

    assert len(web.requests_to(SHARED)) == 1
    assert len(web.requests_to(DEAD)) == 1
    sources = store.rows("SELECT id, url FROM sources WHERE session_id = $s", {"s": sid})
    assert [s["url"] for s in sources] == [web.url(SHARED)]
    links = store.rows(
        "SELECT lead_id, sub_question_id, source_id FROM lead_sources WHERE session_id = $s",
        {"s": sid},
    )
    assert {(x["lead_id"], x["sub_question_id"]) for x in links} == {
        (x["id"], x["sub_question_id"]) for x in leads
    }
    assert {x["source_id"] for x in links} == {sources[0]["id"]}
    # Every lead hears about the dead page (the planner counts causes per sub-question), but
    # only one of them asked for it.
    dead = store.rows(
        "SELECT lead_id, cause FROM dead_ends WHERE session_id = $s AND url = $u",
        {"s": sid, "u": web.url(DEAD)},
    )
    assert {d["lead_id"] for d in dead} == {x["id"] for x in leads}
    assert {d["cause"] for d in dead} == {"fetch_failed"}

    # Mining sees the one source once per lead, under that lead's sub-question.
    mine_claims(run)
    mined = store.rows(
        "SELECT lead_id FROM lead_sources WHERE session_id = $s AND mined", {"s": sid}
    )
    assert {m["lead_id"] for m in mined} == {x["id"] for x in leads}
    assert store.scalar("SELECT count(*) FROM claims WHERE session_id = $s", {"s": sid}) >= 2


def test_a_later_round_links_what_an_earlier_round_stored(store: Store, web: FakeWeb) -> None:
    web.route(SHARED, page("Tea and sleep", *PARAS))
    web.route(DEAD, b"gone", status=404, content_type="text/plain")
    run = _session(store, searxng(web, [web.url(SHARED), web.url(DEAD)]))
    sid = run.session_id
    plan_round(run)
    execute_leads(run, workers=4)
    assert len(web.requests_to(SHARED)) == 1 and len(web.requests_to(DEAD)) == 1
    # A follow-up lead in a later round, as the planner adds them.
    sq = store.scalar(
        "SELECT id FROM sub_questions WHERE session_id = $s ORDER BY id LIMIT 1", {"s": sid}
    )
    lead_id = stable_id(sq, "searxng", "follow up", prefix="lead-")
    store.transact(
        lambda cur: cur.execute(
            "INSERT INTO leads (id, session_id, sub_question_id, actor, query, depth, created_at) "
            "VALUES (?, ?, ?, 'searxng', 'follow up', 1, ?)",
            [lead_id, sid, sq, utcnow()],
        )
    )
    # A new process has no in-memory registry: the store alone must say what was done.
    from mole_dag.actors import once

    once.forget(sid)
    execute_leads(run, workers=2)
    assert len(web.requests_to(SHARED)) == 1 and len(web.requests_to(DEAD)) == 1
    assert store.scalar("SELECT count(*) FROM lead_sources WHERE lead_id = $l", {"l": lead_id}) == 1
    assert (
        store.scalar(
            "SELECT count(*) FROM dead_ends WHERE lead_id = $l AND url = $u",
            {"l": lead_id, "u": web.url(DEAD)},
        )
        == 1
    )


def test_local_corpus_links_a_document_two_leads_find(store: Store, mini_corpus: Path) -> None:
    bal = create_session(store, QUESTION, Unit.USD_MICROS, 500_000, corpus=str(mini_corpus))
    run = Run(store, Ledger(store), ExtractiveSkills(), bal.session_id, progress=lambda m: None)
    sid = run.session_id
    plan_round(run)
    execute_leads(run, workers=4)
    dup = store.scalar(
        "SELECT count(*) - count(DISTINCT url) FROM sources WHERE session_id = $s", {"s": sid}
    )
    assert dup == 0
    shared = store.rows(
        "SELECT source_id, count(DISTINCT lead_id) AS n FROM lead_sources WHERE session_id = $s "
        "GROUP BY source_id HAVING count(DISTINCT lead_id) > 1",
        {"s": sid},
    )
    assert shared, "some document was found by more than one lead, and linked to each"
