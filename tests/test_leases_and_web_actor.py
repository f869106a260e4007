"""Leads are leased (owner, expiry, heartbeat at a third of the TTL, a sweep re-queues what a dead
worker left), and the web actor keeps going past a page it cannot use."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mole_dag.actors.base import DeadEnd, Found
from mole_dag.actors.fetch import Fetcher, FetchLimits, Policy
from mole_dag.actors.fetch.ratelimit import DomainLimiter
from mole_dag.actors.fetch.robots import RobotsCache
from mole_dag.actors.search import Hit, SearchFailed
from mole_dag.actors.web import WebActor
from mole_dag.core import DeadEndCause, LeadStatus, Unit
from mole_dag.executor import leases
from mole_dag.session import create_session
from mole_dag.store import Store, q, utcnow
from tests.fakeweb import FakeWeb, page
from tests.machine import bound

PROSE = (
    "Green tea in the evening raises the risk of poor sleep in adults who are sensitive "
    "to caffeine, the survey of four hundred nurses found."
)


def _session_with_leads(store: Store, n: int) -> str:
    sid = create_session(store, "q?", Unit.TOKENS, 1000).session_id
    now = utcnow()
    with store.write() as cur:
        cur.execute(
            q("sub_question_insert"),
            {
                "id": "sq1",
                "session_id": sid,
                "round": 1,
                "ordinal": 0,
                "text": "q?",
                "query": "q",
                "now": now,
            },
        )
        for i in range(n):
            cur.execute(
                q("lead_insert"),
                {
                    "id": f"lead-{i}",
                    "session_id": sid,
                    "sub_question_id": "sq1",
                    "actor": "local",
                    "query": "q",
                    "depth": 0,
                    "root_claim_id": None,
                    "because": None,
                    "now": now,
                },
            )
    return sid


def _lead(store: Store, lead_id: str) -> dict:
    row = store.row("SELECT * FROM leads WHERE id = $id", {"id": lead_id})
    assert row
    return row


def test_a_dead_workers_lease_lapses_and_the_sweep_requeues_it(store: Store) -> None:
    sid = _session_with_leads(store, 1)
    lease = leases.lease_next(store, sid, "worker-dead", ttl=timedelta(seconds=-1))
    assert lease and _lead(store, lease.lead_id)["status"] == "leased"
    assert leases.lease_next(store, sid, "worker-2") is None  # leased, not available
    assert leases.requeue_expired(store, sid) == 1
    row = _lead(store, lease.lead_id)
    assert row["status"] == "pending" and row["lease_owner"] is None
    again = leases.lease_next(store, sid, "worker-2")
    assert again and again.lead_id == lease.lead_id
    assert _lead(store, lease.lead_id)["attempts"] == 2
    # The dead worker's late finish is ignored: the lease is not its own any more.
    leases.finish(store, lease, LeadStatus.DONE)
    assert _lead(store, lease.lead_id)["status"] == "leased"
    leases.finish(store, again, LeadStatus.DONE)
    assert _lead(store, lease.lead_id)["status"] == "done"


# Issue 23: with a 0.6 s TTL, a heartbeat delayed past 0.4 s on a busy machine let the sweep take
# a live lease (seen once in a full `make test` under load). The TTL is now an hour, a margin no
# load reaches, the beats come every 50 ms, and "after the first TTL" is a sweep run at that
# moment (requeue_expired's `now`), not a wait for it.
MARGIN_TTL = timedelta(hours=1)


def _expiry(store: Store, lead_id: str) -> datetime:
    got = _lead(store, lead_id)["lease_expires_at"]
    assert isinstance(got, datetime)
    return got


def _beats(hb: leases.Heartbeat, n: int) -> None:
    """Until `n` beats have landed: a bound for a hang, not a timing assertion."""
    deadline = time.monotonic() + bound(120)
    while hb.beats < n and time.monotonic() < deadline:
        time.sleep(0.02)
    assert hb.beats >= n


def test_heartbeat_keeps_a_live_lease_from_being_swept(store: Store) -> None:
    sid = _session_with_leads(store, 1)
    lease = leases.lease_next(store, sid, "worker-1", ttl=MARGIN_TTL)
    assert lease
    first = _expiry(store, lease.lead_id)
    with leases.Heartbeat(store, lease, MARGIN_TTL, interval=0.05) as hb:
        _beats(hb, 3)
        assert leases.requeue_expired(store, sid) == 0
    extended = _expiry(store, lease.lead_id)
    assert extended > first
    # The moment the lease would have lapsed without its beats: the sweep leaves it.
    tick = timedelta(microseconds=1)
    assert leases.requeue_expired(store, sid, now=first + tick) == 0
    assert _lead(store, lease.lead_id)["status"] == "leased"
    # Once the extended expiry passes too (the worker died after its last beat), it is swept.
    assert leases.requeue_expired(store, sid, now=extended + tick) == 1
    assert _lead(store, lease.lead_id)["status"] == "pending"


def test_heartbeat_beats_at_a_third_of_the_ttl_by_default(store: Store) -> None:
    sid = _session_with_leads(store, 1)
    lease = leases.lease_next(store, sid, "worker-1")
    assert lease
    assert leases.Heartbeat(store, lease).interval == leases.LEASE_TTL.total_seconds() / 3
    assert leases.Heartbeat(store, lease, timedelta(seconds=90)).interval == 30


def test_one_lead_per_worker(store: Store) -> None:
    sid = _session_with_leads(store, 3)
    got = [leases.lease_next(store, sid, f"w{i}") for i in range(4)]
    assert sorted(g.lead_id for g in got if g) == ["lead-0", "lead-1", "lead-2"]
    assert got[3] is None


def test_a_round_leases_its_leads_in_one_transaction(store: Store) -> None:
    sid = _session_with_leads(store, 5)
    other = leases.lease_next(store, sid, "elsewhere")  # another process got one first
    before = store.commits
    got = leases.lease_pending(store, sid, "w-round")
    assert store.commits == before + 1
    assert other and other.lead_id not in {g.lead_id for g in got}
    assert [g.lead_id for g in got] == sorted(g.lead_id for g in got) and len(got) == 4
    assert leases.lease_pending(store, sid, "w-late") == []
    assert store.commits == before + 1  # nothing pending: a read, no transaction


def test_one_heartbeat_keeps_every_lease_of_its_owner(store: Store) -> None:
    sid = _session_with_leads(store, 3)
    got = leases.lease_pending(store, sid, "w-round", ttl=MARGIN_TTL)
    first = min(_expiry(store, g.lead_id) for g in got)
    with leases.OwnerHeartbeat(store, sid, "w-round", MARGIN_TTL, interval=0.05) as hb:
        _beats(hb, 3)
    assert all(_expiry(store, g.lead_id) > first for g in got)
    assert leases.requeue_expired(store, sid, now=first + timedelta(microseconds=1)) == 0
    assert {_lead(store, g.lead_id)["status"] for g in got} == {"leased"}


# --- the web actor --------------------------------------------------------------------------


class Listed:
    name = "stub"

    def __init__(self, hits: list[Hit] | SearchFailed) -> None:
        self.hits = hits

    def search(self, query: str, limit: int) -> list[Hit]:
        if isinstance(self.hits, SearchFailed):
            raise self.hits
        return self.hits[:limit]


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    w = FakeWeb().start()
    yield w
    w.stop()


def _fetcher(tmp_path: Path) -> Fetcher:
    return Fetcher(
        Policy.of(["127.0.0.1"]),
        FetchLimits(interval_s=0.0),
        limiter=DomainLimiter(tmp_path / "rl"),
        robots=RobotsCache(),
    )


def test_actor_yields_documents_and_dead_ends_in_rank_order(tmp_path: Path, web: FakeWeb) -> None:
    web.route("/ok", page("OK", PROSE))
    web.route("/gone", b"gone", 404)
    web.route("/ok2", page("OK 2", PROSE))
    hits = [
        Hit(web.url("/ok"), "OK"),
        Hit(web.url("/gone")),
        Hit(web.url("/ok")),
        Hit("http://169.254.169.254/"),
        Hit(web.url("/ok2"), "OK 2", doi="10.1/x"),
    ]
    items = list(WebActor(Listed(hits), _fetcher(tmp_path)).gather("q", 10))
    kinds = [(type(i).__name__, getattr(i, "cause", None)) for i in items]
    assert kinds == [
        ("Found", None),
        ("DeadEnd", DeadEndCause.FETCH_FAILED),
        ("DeadEnd", DeadEndCause.SSRF_REFUSED),
        ("Found", None),
    ]
    last = items[-1]
    assert isinstance(last, Found) and last.rank == 4 and last.document.doi == "10.1/x"


def test_provider_text_is_used_without_fetching(tmp_path: Path, web: FakeWeb) -> None:
    web.route("/paper", page("Paper", "different page text"))
    hit = Hit(web.url("/paper"), "Paper", content=PROSE + " " + PROSE, pmid="123")
    (found,) = list(WebActor(Listed([hit]), _fetcher(tmp_path)).gather("q", 5))
    assert isinstance(found, Found) and found.document.provider_supplied
    assert found.document.text.startswith(PROSE) and found.document.pmid == "123"
    assert web.seen == []


def test_provider_text_loses_its_controls(tmp_path: Path) -> None:
    hit = Hit(
        "https://example.org/p",
        "T\u202eitle\x1b[1m",
        content=f"\u202e{PROSE}\x1b]0;pwned\x07 {PROSE}",
    )
    (found,) = list(WebActor(Listed([hit]), _fetcher(tmp_path)).gather("q", 5))
    assert isinstance(found, Found)
    for bad in ("\u202e", "\x1b", "\x07"):
        assert bad not in found.document.text and bad not in found.document.title


def test_short_provider_text_is_a_snippet_and_the_page_is_fetched(
    tmp_path: Path, web: FakeWeb
) -> None:
    web.route("/page", page("Page", PROSE))
    hit = Hit(web.url("/page"), "Page", content="Too short to be the page.")
    (found,) = list(WebActor(Listed([hit]), _fetcher(tmp_path)).gather("q", 5))
    assert isinstance(found, Found) and not found.document.provider_supplied
    assert PROSE in found.document.text


def test_known_url_is_linked_not_fetched(tmp_path: Path, web: FakeWeb) -> None:
    web.route("/page", page("Page", PROSE))
    actor = WebActor(
        Listed([Hit(web.url("/page"), "Page")]), _fetcher(tmp_path), known=lambda url: True
    )
    (found,) = list(actor.gather("q", 5))
    assert isinstance(found, Found) and found.document.text == ""
    assert web.requests_to("/page") == []


def test_search_failure_and_no_results_are_dead_ends(tmp_path: Path) -> None:
    failed = list(
        WebActor(
            Listed(SearchFailed(DeadEndCause.RATE_LIMITED, "stub: HTTP 429")), _fetcher(tmp_path)
        ).gather("q", 5)
    )
    assert failed == [DeadEnd(DeadEndCause.RATE_LIMITED, None, "stub: HTTP 429")]
    (none,) = list(WebActor(Listed([]), _fetcher(tmp_path)).gather("q", 5))
    assert isinstance(none, DeadEnd) and none.cause == DeadEndCause.NO_RESULTS
