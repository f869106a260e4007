"""Each search provider against a recorded answer of its API's real shape (tests/fixtures/search),
served through an httpx mock transport: what it asks for, what it makes of the answer, and how
its failures become dead-end causes without leaking a key."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import httpx
import pytest

from mole_dag.actors.fetch.ratelimit import DomainLimiter
from mole_dag.actors.search import Api, SearchFailed
from mole_dag.actors.search.arxiv import Arxiv, search_query
from mole_dag.actors.search.brave import Brave
from mole_dag.actors.search.crossref import Crossref
from mole_dag.actors.search.openalex import OpenAlex, abstract_from_index
from mole_dag.actors.search.pubmed import PubMed
from mole_dag.actors.search.searxng import SearXNG
from mole_dag.actors.search.tavily import Tavily
from mole_dag.core import DeadEndCause

FIX = Path(__file__).parent / "fixtures" / "search"
KEY = "sk-test-SECRET-0123456789"


class Recorder:
    def __init__(self, routes: dict[str, tuple[int, bytes, str]]) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        for suffix, (status, body, ctype) in self.routes.items():
            if request.url.path.endswith(suffix):
                return httpx.Response(
                    status, stream=httpx.ByteStream(body), headers={"Content-Type": ctype}
                )
        return httpx.Response(404, content=b"{}")


def api(name: str, rec: Recorder, tmp_path: Path) -> Api:
    return Api(
        name,
        0.0,
        client=httpx.Client(transport=httpx.MockTransport(rec)),
        limiter=DomainLimiter(tmp_path / "rl"),
    )


def fixture(name: str) -> bytes:
    return (FIX / name).read_bytes()


def test_searxng_parses_results_and_asks_for_json(tmp_path: Path) -> None:
    rec = Recorder({"/search": (200, fixture("searxng.json"), "application/json")})
    hits = SearXNG("http://127.0.0.1:8888/", api("searxng", rec, tmp_path)).search("coffee", 10)
    assert [h.url for h in hits] == [
        "https://www.sleepfoundation.org/nutrition/caffeine-and-sleep",
        "https://pubmed.ncbi.nlm.nih.gov/24235903/",
    ]  # the javascript: link is not a page
    assert hits[0].snippet.startswith("Caffeine is a stimulant")  # markup stripped
    assert hits[1].published == date(2013, 11, 15)
    assert all(h.content is None for h in hits)  # snippets only: pages get fetched
    req = rec.requests[0]
    assert req.url.path == "/search" and req.url.params["format"] == "json"
    assert req.url.params["q"] == "coffee"


def test_searxng_without_json_format_is_a_clear_error(tmp_path: Path) -> None:
    rec = Recorder({"/search": (403, b"Forbidden", "text/html")})
    with pytest.raises(SearchFailed) as err:
        SearXNG("http://127.0.0.1:8888", api("searxng", rec, tmp_path)).search("coffee", 10)
    assert err.value.cause == DeadEndCause.FETCH_FAILED
    assert "403" in err.value.detail


def test_brave_sends_key_in_header_and_parses_web_results(tmp_path: Path) -> None:
    rec = Recorder({"/web/search": (200, fixture("brave.json"), "application/json")})
    hits = Brave(KEY, api("brave", rec, tmp_path)).search("coffee sleep", 50)
    assert len(hits) == 2
    assert hits[0].title == "How Caffeine Affects Sleep"
    assert hits[0].publisher_name == "Johns Hopkins Medicine"
    assert hits[0].published == date(2022, 8, 8)
    req = rec.requests[0]
    assert req.headers["X-Subscription-Token"] == KEY
    assert req.url.params["count"] == "20"  # Brave's maximum
    assert KEY not in str(req.url)


def test_brave_with_no_web_section_is_no_results(tmp_path: Path) -> None:
    rec = Recorder(
        {
            "/web/search": (
                200,
                b'{"type": "search", "query": {"original": "x"}}',
                "application/json",
            )
        }
    )
    assert Brave(KEY, api("brave", rec, tmp_path)).search("x", 5) == []


def test_tavily_returns_page_text_when_it_has_it(tmp_path: Path) -> None:
    rec = Recorder({"/search": (200, fixture("tavily.json"), "application/json")})
    hits = Tavily(KEY, api("tavily", rec, tmp_path)).search("coffee sleep", 5)
    assert hits[0].content and "reduced total sleep time by more than one hour" in hits[0].content
    assert hits[1].content is None  # raw_content null: this one will be fetched
    req = rec.requests[0]
    assert req.method == "POST" and req.headers["Authorization"] == f"Bearer {KEY}"
    body = json.loads(req.content)
    assert body["include_raw_content"] is True and body["max_results"] == 5
    assert KEY not in req.content.decode()


def test_arxiv_parses_atom_entries_with_ids(tmp_path: Path) -> None:
    rec = Recorder({"/api/query": (200, fixture("arxiv.xml"), "application/atom+xml")})
    hits = Arxiv(api("arxiv", rec, tmp_path)).search("Does caffeine affect sleep?", 10)
    assert [h.arxiv_id for h in hits] == ["2107.01234v2", "2302.05555v1"]
    first = hits[0]
    assert first.url == "https://arxiv.org/abs/2107.01234v2"
    assert first.title == (
        "Modelling the Effect of Caffeine on Sleep Architecture with Wearable Data"
    )
    assert first.doi == "10.1234/sleep.2021.5678"
    assert first.published == date(2021, 7, 2)
    assert first.author == "Ada Researcher, Ben Scientist"
    assert first.content and "reduced deep sleep by 12 minutes on average." in first.content
    assert "\n\nEffects were larger" in first.content  # paragraphs kept, lines joined
    assert rec.requests[0].url.params["search_query"] == "all:caffeine AND all:affect AND all:sleep"


def test_arxiv_query_terms() -> None:
    assert search_query("What is the effect of coffee on sleep?") == (
        "all:effect AND all:coffee AND all:sleep"
    )


def test_openalex_rebuilds_abstracts_and_reads_ids(tmp_path: Path) -> None:
    rec = Recorder({"/works": (200, fixture("openalex.json"), "application/json")})
    oa = OpenAlex(api("openalex", rec, tmp_path), mailto="me@example.org")
    hits = oa.search("coffee sleep", 10)
    assert len(hits) == 2  # the retracted work is dropped
    h = hits[0]
    assert (h.doi, h.pmid, h.pmcid) == ("10.5664/jcsm.3170", "24235903", "PMC3805807")
    assert h.url == "https://doi.org/10.5664/jcsm.3170"
    assert h.content and h.content.startswith("Caffeine 400 mg taken 6 hours prior to bedtime")
    assert h.author == "Christopher Drake, Timothy Roehrs, John Shambroom et al."
    assert h.publisher_name == "Journal of Clinical Sleep Medicine"
    assert hits[1].content is None and hits[1].url == "https://books.example.org/vienna-coffee"
    assert rec.requests[0].url.params["mailto"] == "me@example.org"


def test_abstract_from_inverted_index_orders_by_position() -> None:
    assert abstract_from_index({"b": [1], "a": [0, 2]}) == "a b a"
    assert abstract_from_index(None) == ""


def test_crossref_parses_jats_abstract_and_dates(tmp_path: Path) -> None:
    rec = Recorder({"/works": (200, fixture("crossref.json"), "application/json")})
    hits = Crossref(api("crossref", rec, tmp_path)).search("coffee sleep", 10)
    h = hits[0]
    assert h.doi == "10.1016/j.smrv.2022.101632"
    assert h.url == "https://doi.org/10.1016/j.smrv.2022.101632"
    assert h.published == date(2023, 2, 1)
    assert h.publisher_name == "Sleep Medicine Reviews"
    assert h.content and "<jats" not in h.content
    assert "Caffeine reduced total sleep time by 45.3 minutes" in h.content
    assert "\n\nCaffeine should be consumed" in h.content
    assert hits[1].content is None and hits[1].author == "Coffee Historians Collective"
    assert hits[1].published == date(2001, 1, 1)


def test_pubmed_esearch_then_efetch_in_relevance_order(tmp_path: Path) -> None:
    rec = Recorder(
        {
            "/esearch.fcgi": (200, fixture("pubmed_esearch.json"), "application/json"),
            "/efetch.fcgi": (200, fixture("pubmed_efetch.xml"), "text/xml"),
        }
    )
    hits = PubMed(api("pubmed", rec, tmp_path), key=KEY, email="me@example.org").search(
        "coffee sleep", 10
    )
    assert [h.pmid for h in hits] == ["24235903", "31000001"]  # esearch order, not efetch's
    h = hits[0]
    assert (h.doi, h.pmcid) == ("10.5664/jcsm.3170", "PMC3805807")
    assert h.published == date(2013, 11, 15)
    assert h.url == "https://pubmed.ncbi.nlm.nih.gov/24235903/"
    assert h.content and "Results: Caffeine 400 mg taken 0, 3, or even 6 hours" in h.content
    assert "compared with placebo." in h.content  # inline markup flattened
    assert hits[1].content is None and hits[1].published == date(2019, 1, 1)
    assert hits[1].author == "Coffee Study Group"
    assert rec.requests[1].url.params["id"] == "24235903,31000001"
    assert rec.requests[0].url.params["tool"] == "mole-dag"


@pytest.mark.parametrize(
    ("status", "cause"),
    [
        (401, DeadEndCause.FETCH_FAILED),
        (429, DeadEndCause.RATE_LIMITED),
        (500, DeadEndCause.FETCH_FAILED),
    ],
)
def test_api_errors_become_causes_without_the_key(
    tmp_path: Path, status: int, cause: DeadEndCause
) -> None:
    rec = Recorder({"/esearch.fcgi": (status, b"{}", "application/json")})
    with pytest.raises(SearchFailed) as err:
        PubMed(api("pubmed", rec, tmp_path), key=KEY).search("coffee", 5)
    assert err.value.cause == cause
    assert KEY not in err.value.detail and KEY not in str(err.value)
    assert KEY in str(rec.requests[0].url)  # NCBI takes the key as a parameter...


def test_transport_error_names_no_url(tmp_path: Path) -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"connection refused for {request.url}")

    a = Api(
        "pubmed",
        0.0,
        client=httpx.Client(transport=httpx.MockTransport(boom)),
        limiter=DomainLimiter(tmp_path / "rl"),
    )
    with pytest.raises(SearchFailed) as err:
        PubMed(a, key=KEY).search("coffee", 5)
    assert err.value.cause == DeadEndCause.FETCH_FAILED
    assert KEY not in err.value.detail  # ...which must never reach a message


def test_garbage_answers_are_unreadable(tmp_path: Path) -> None:
    rec = Recorder(
        {
            "/api/query": (200, b"<feed><entry>", "application/atom+xml"),
            "/search": (200, b"not json", "application/json"),
        }
    )
    with pytest.raises(SearchFailed) as err:
        Arxiv(api("arxiv", rec, tmp_path)).search("coffee", 5)
    assert err.value.cause == DeadEndCause.UNREADABLE
    with pytest.raises(SearchFailed) as err:
        SearXNG("http://127.0.0.1:1", api("searxng", rec, tmp_path)).search("coffee", 5)
    assert err.value.cause == DeadEndCause.UNREADABLE


def test_xml_entities_are_not_expanded(tmp_path: Path) -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/1</id>'
        b"<title>&lol2;</title><summary>x</summary></entry></feed>"
    )
    rec = Recorder({"/api/query": (200, bomb, "application/atom+xml")})
    hits = Arxiv(api("arxiv", rec, tmp_path)).search("coffee", 5)
    assert "lollol" not in hits[0].title


def test_scholarly_ids_are_stored_on_the_source(tmp_path: Path) -> None:
    """OpenAlex's abstract becomes a provider-supplied source carrying DOI, PMID and PMCID; the
    paper, not the host, is its publisher."""
    from mole_dag.actors.fetch import Fetcher, Policy
    from mole_dag.actors.search.openalex import OpenAlex
    from mole_dag.actors.web import WebActor
    from mole_dag.core import Unit
    from mole_dag.executor.ingest import store_source
    from mole_dag.session import create_session
    from mole_dag.store import Store

    rec = Recorder({"/works": (200, fixture("openalex.json"), "application/json")})
    actor = WebActor(OpenAlex(api("openalex", rec, tmp_path)), Fetcher(Policy()))
    found = next(iter(actor.gather("coffee sleep", 1)))
    store = Store(tmp_path / "s.duckdb")
    try:
        sid = create_session(store, "q?", Unit.TOKENS, 100).session_id
        source_id, chunks = store.transact(
            lambda cur: store_source(cur, sid, "openalex", found.document)
        )  # type: ignore[union-attr]
        row = store.row("SELECT * FROM sources WHERE id = $id", {"id": source_id})
    finally:
        store.close()
    assert row and chunks >= 1
    assert (row["doi"], row["pmid"], row["pmcid"]) == (
        "10.5664/jcsm.3170",
        "24235903",
        "PMC3805807",
    )
    assert row["publisher"] == "doi:10.5664/jcsm.3170"
    assert row["source_class"] == "peer-reviewed" and row["provider_supplied"]
    assert str(row["published"]) == "2013-11-15"
