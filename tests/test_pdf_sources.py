"""PDFs where a user meets them (issue 19): PDF links from a web search (were "wrong type" dead
ends), a corpus folder of papers (was refused), an academic hit's open-access full text (was the
abstract only); pages in citations, the trace and the claims; named dead ends in `mole show`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mole_dag.actors import corpus_files, web_registry
from mole_dag.actors import local as local_mod
from mole_dag.actors.fetch import Fetcher, FetchLimits, Policy
from mole_dag.actors.fetch.robots import shared_robots
from mole_dag.actors.local import LocalCorpus, SessionCorpus
from mole_dag.actors.pdf import page_at
from mole_dag.actors.quote import find_quote
from mole_dag.actors.reread import reread
from mole_dag.actors.search.arxiv import Arxiv
from mole_dag.actors.search.crossref import Crossref
from mole_dag.actors.search.openalex import OpenAlex
from mole_dag.actors.search.pubmed import PubMed
from mole_dag.actors.search_settings import SearchSettings
from mole_dag.actors.web import WebActor
from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import DeadEnd, Document, Unit
from mole_dag.driver import run_session
from mole_dag.executor import execute_leads
from mole_dag.executor.ingest import store_source
from mole_dag.mining.mine import mine_claims
from mole_dag.output.html import render_html
from mole_dag.output.report import write_report
from mole_dag.output.trace import render_trace
from mole_dag.planner import plan_round
from mole_dag.publisher import publisher_of
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store, q
from mole_dag.store.records import SessionRow, SourceRow
from tests import report_reader
from tests.fakeweb import FakeWeb, Route, Seen
from tests.pdfmaker import encrypt, make_pdf, prose_page
from tests.test_search_providers import Recorder, api, fixture

QUESTION = "How does green tea affect sleep in adults?"
PAGE_ONE = [
    "This report is about tea drinking habits in several countries of Europe and Asia.",
    "It was written for a general audience of readers with an interest in beverages.",
]
PAGE_TWO = [
    "Drinking green tea in the evening raises the risk of poor sleep in adults who are "
    "sensitive to caffeine.",
    "Green tea contains theanine, which was found to improve sleep quality in a trial of "
    "ninety adults.",
]


def tea_pdf(title: str = "Green Tea and Sleep") -> bytes:
    return make_pdf([prose_page(PAGE_ONE), prose_page(PAGE_TWO)], title=title)


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
            interval_s=0.0, read_timeout_s=5.0, connect_timeout_s=5.0, total_timeout_s=20.0
        ),
    )
    shared_robots.clear()


def _searxng(web: FakeWeb, urls: list[str]) -> str:
    def answer(seen: Seen) -> Route:
        body = {
            "query": seen.query.get("q", [""])[0],
            "results": [
                {"url": u, "title": f"Result {i}", "content": "snippet", "engine": "x"}
                for i, u in enumerate(urls)
            ],
        }
        return Route(json.dumps(body).encode(), 200, {"Content-Type": "application/json"})

    web.handlers["/sx/search"] = answer
    return web.url("/sx")


def _claims_are_on_their_pages(store: Store, sid: str, pdf_pages: dict[int, str]) -> int:
    """Every claim's quote is in its source's stored text (the chunks), and the claim's page is
    the page of the made PDF whose text holds the quote."""
    rows = store.rows(
        "SELECT c.id, c.source_id, c.quote, c.quote_byte_start, c.quote_byte_end "
        "FROM claims c WHERE c.session_id = ?",
        [sid],
    )
    pages = {r["claim_id"]: r["page"] for r in store.named("claim_pages", {"session_id": sid})}
    for r in rows:
        text = "".join(
            x["text"]
            for x in store.rows(
                "SELECT text FROM chunks WHERE source_id = ? ORDER BY ordinal", [r["source_id"]]
            )
        )
        m = find_quote(text, r["quote"])
        assert m is not None and m.byte_start == r["quote_byte_start"]
        page = pages[r["id"]]
        assert " ".join(r["quote"].split()) in " ".join(pdf_pages[page].split()), (page, r)
    return len(rows)


def test_pdf_links_from_a_web_search_are_read_once_each_with_pages(
    store: Store, web: FakeWeb
) -> None:
    pdf = tea_pdf()
    web.route("/p/a.pdf", pdf, content_type="application/pdf", delay_s=0.3)
    web.route("/p/b", tea_pdf("Tea Two"), content_type="application/octet-stream")
    web.route("/p/c.html", tea_pdf("Tea Three"), content_type="text/html")  # sniffed
    web.route("/p/locked.pdf", encrypt(pdf), content_type="application/pdf")
    urls = [web.url(p) for p in ("/p/a.pdf", "/p/b", "/p/c.html", "/p/locked.pdf")]
    settings = SearchSettings(("searxng",), _searxng(web, urls), ("127.0.0.1",))
    question = (
        "How does green tea affect sleep, and what is known about theanine and sleep, and "
        "which adults are sensitive to caffeine?"
    )
    bal = create_session(
        store, question, Unit.TOKENS, 200_000, actors=settings.providers, search=settings
    )
    run = Run(store, Ledger(store), ExtractiveSkills(), bal.session_id, progress=lambda m: None)
    sid = run.session_id
    plan_round(run)
    execute_leads(run, workers=4)

    for path in ("/p/a.pdf", "/p/b", "/p/c.html", "/p/locked.pdf"):
        assert len(web.requests_to(path)) == 1, path  # the same URL is fetched once
    sources = store.rows("SELECT id, url, title FROM sources WHERE session_id = ?", [sid])
    assert {s["title"] for s in sources} == {"Green Tea and Sleep", "Tea Two", "Tea Three"}
    n_pages = store.rows(
        "SELECT source_id, count(*) AS n FROM source_pages WHERE session_id = ? GROUP BY source_id",
        [sid],
    )
    assert sorted(r["n"] for r in n_pages) == [2, 2, 2]
    dead = store.rows("SELECT DISTINCT url, cause FROM dead_ends WHERE session_id = ?", [sid])
    assert {(d["url"], d["cause"]) for d in dead} >= {(urls[3], "pdf_encrypted")}
    assert not [d for d in dead if d["cause"] == "wrong_type"]

    mine_claims(run)
    texts = {1: " ".join(PAGE_ONE), 2: " ".join(PAGE_TWO)}
    assert _claims_are_on_their_pages(store, sid, texts) >= 2


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "papers"
    (root / "sub").mkdir(parents=True)
    (root / "tea.pdf").write_bytes(tea_pdf())
    (root / "sub" / "other.pdf").write_bytes(
        make_pdf([prose_page(["Badgers sleep about ten hours a day in their winter burrows."])])
    )
    (root / "locked.pdf").write_bytes(encrypt(tea_pdf()))
    (root / "notes.md").write_text("# Notes\n\nCoffee is not tea, and tea is not coffee.\n")
    return root


def _file_urls(root: Path) -> dict[str, str]:
    """The source URL of each file of the folder: its absolute file:// URI."""
    real = root.resolve()
    return {str(p.relative_to(real)): p.as_uri() for p in real.rglob("*") if p.is_file()}


def _reopen(root: Path, cache: Path) -> LocalCorpus:
    """Open the corpus as a new process would: nothing remembered in memory."""
    local_mod._OPENED.clear()
    return LocalCorpus.open(root, cache_dir=cache)


def test_a_folder_of_pdfs_is_indexed_incrementally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = _folder(tmp_path), tmp_path / "index"
    read: list[str] = []
    real = corpus_files.pdf_document

    def spy(data: bytes, **kw):  # type: ignore[no-untyped-def]
        read.append(kw["url"])
        return real(data, **kw)

    monkeypatch.setattr(corpus_files, "pdf_document", spy)
    corpus = _reopen(root, cache)
    url = _file_urls(root)
    assert sorted(read) == [url["locked.pdf"], url["sub/other.pdf"], url["tea.pdf"]]
    assert corpus.index.extracted == 4
    tea = next(d for d in corpus.documents if d.url == url["tea.pdf"])
    assert tea.title == "Green Tea and Sleep" and len(tea.pages) == 2
    assert [s.cause for s in corpus.skipped] == ["pdf_encrypted"]

    # A second index of the unchanged folder extracts nothing.
    read.clear()
    again = _reopen(root, cache)
    assert read == [] and again.index.extracted == 0
    assert next(d for d in again.documents if d.url == url["tea.pdf"]).pages == tea.pages

    # Touched, not changed (the digest says so): still nothing. One file changed, one added:
    # those two only. The bad PDF is not tried again either.
    os.utime(root / "tea.pdf", ns=(1, 1))
    assert _reopen(root, cache).index.extracted == 0 and read == []
    (root / "sub" / "other.pdf").write_bytes(
        make_pdf([prose_page(["Badgers dig setts that are used by many generations of them."])])
    )
    (root / "new.txt").write_text("Fresh text about tea and biscuits for the afternoon.\n")
    changed = _reopen(root, cache)
    assert changed.index.extracted == 2 and read == [url["sub/other.pdf"]]
    assert any("setts" in d.text for d in changed.documents)

    # A session hears about the unreadable PDF once, by its named cause.
    actor = SessionCorpus(changed, "s-1")
    first = [x for x in actor.gather("tea sleep", 5) if isinstance(x, DeadEnd)]
    second = [x for x in actor.gather("tea sleep", 5) if isinstance(x, DeadEnd)]
    assert [(d.cause, d.url) for d in first] == [("pdf_encrypted", url["locked.pdf"])]
    assert second == []


def test_a_corpus_session_cites_pdf_pages_everywhere(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    store = Store(tmp_path / "s.duckdb")
    sid = create_session(store, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    md = store.row("SELECT markdown FROM reports WHERE session_id = ?", [sid])["markdown"]
    # A finding quoted from page 2 of tea.pdf cites "[n] (p. 2)": the number alone in its
    # brackets, as every reader of "[n]" takes it; the source is listed by its title and its
    # path in the folder, and not linked by its file:// URL (issue 33: a shared report told
    # its readers where the author keeps files).
    m = re.search(r"\[(\d+)\] \(p\. 2\)", md)
    assert m, md
    n = m.group(1)
    tea = _file_urls(root)["tea.pdf"]
    line = rf"^\[{n}\] Green Tea and Sleep — local file tea\.pdf, unknown\.  $"
    assert re.search(line, md, re.M), md
    assert "file://" not in md
    assert report_reader.read(md).ok, report_reader.read(md)
    html = render_html(md)
    assert f'<a class="cite" href="#src-{n}">[{n}]</a> (p. 2)' in html
    assert "file://" not in html
    assert re.search(r"c-[0-9a-f]+ \(p\. 2\)", render_trace(store, sid))
    texts = {1: " ".join(PAGE_ONE), 2: " ".join(PAGE_TWO)}
    pages = {r["claim_id"]: r["page"] for r in store.named("claim_pages", {"session_id": sid})}
    tea_claims = store.rows(
        "SELECT c.id, c.quote FROM claims c JOIN sources s ON s.id = c.source_id "
        "WHERE c.session_id = ? AND s.url = ?",
        [sid, tea],
    )
    assert tea_claims
    for c in tea_claims:
        assert " ".join(c["quote"].split()) in texts[pages[c["id"]]]
    store.close()


def test_a_corpus_files_url_is_its_file_uri(tmp_path: Path) -> None:
    # Was "corpus:a.pdf" for both folders' a.pdf: one URL for two files, whose path no reader
    # could match against a file name ("corpus:a.pdf" has no "/a.pdf" in it) or open.
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        root.mkdir()
        (root / "a.pdf").write_bytes(tea_pdf())
    (one / "my paper.pdf").write_bytes(tea_pdf("Spaced"))
    urls = {
        root.name: sorted(d.url for d in _reopen(root, tmp_path / "index").documents)
        for root in (one, two)
    }
    assert urls == {
        "one": [(one.resolve() / "a.pdf").as_uri(), (one.resolve() / "my paper.pdf").as_uri()],
        "two": [(two.resolve() / "a.pdf").as_uri()],
    }
    a_one, spaced = urls["one"]
    assert a_one != urls["two"][0] and a_one.startswith("file:///")
    assert urlsplit(a_one).path.endswith("/a.pdf")
    assert urlsplit(spaced).path.endswith("/my%20paper.pdf")  # RFC 8089, percent-quoted
    assert publisher_of(a_one) == publisher_of(spaced) == "local-corpus"


SCORER = Path(__file__).resolve().parents[2] / "shared" / "qa-dev" / "qa_score.py"


@pytest.mark.skipif(not SCORER.exists(), reason=f"{SCORER} is not here: ../shared is missing")
def test_the_shared_scorer_reads_a_pdf_corpus_session(tmp_path: Path) -> None:
    """The benchmark's scorer, run as it is: it finds citations as "[n]" and a relevant source
    by the file name at the end of its URL's path. Read 0 on both before: "[1, p. 2]" is no
    citation to it, and "corpus:tea.pdf" no file."""
    root = _folder(tmp_path)
    db = tmp_path / "s.duckdb"
    store = Store(db)
    sid = create_session(store, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    store.close()
    qa = {
        "id": "T1",
        "question": QUESTION,
        "answer": "theanine improves sleep quality",
        "patterns": ["theanine", "poor sleep"],
        "relevant_pages": ["tea.pdf"],
    }
    (tmp_path / "qa.jsonl").write_text(json.dumps(qa) + "\n", "utf-8")
    (tmp_path / "map.tsv").write_text(f"qid\tsession\nT1\t{sid}\n", "utf-8")
    out = tmp_path / "scores.json"
    got = subprocess.run(
        [sys.executable, str(SCORER), "--db", str(db), "--map", str(tmp_path / "map.tsv")]
        + ["--qa", str(tmp_path / "qa.jsonl"), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr
    (r,) = json.loads(out.read_text("utf-8"))["questions"]
    assert r["fetched"] and r["fetched_pages"] == ["tea.pdf"], r
    assert r["report"] and r["rank"] == 1, r
    assert r["n_findings"] >= 1 and r["prec"] == 1.0, r


def test_a_store_from_before_file_urls_still_renders_rereads_and_resumes(
    tmp_path: Path,
) -> None:
    """Sources stored with "corpus:<path>" URLs (before issue 19's file URLs) are listed by
    their path, read again from the folder, and not stored a second time by a resumed session;
    the dead end it recorded for a file is not recorded again."""
    root = _folder(tmp_path)
    store = Store(tmp_path / "s.duckdb")
    sid = create_session(store, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    run_session(run)
    # What such a store holds: the URL was the locator.
    store.transact(
        lambda cur: cur.execute(
            "UPDATE sources SET url = locator WHERE session_id = ? AND locator LIKE 'corpus:%'",
            [sid],
        )
    )
    store.transact(
        lambda cur: cur.execute(
            "UPDATE dead_ends SET url = 'corpus:locked.pdf' WHERE session_id = ? "
            "AND url LIKE 'file:%'",
            [sid],
        )
    )
    md = write_report(run).markdown
    listed = r"^\[\d+\] Green Tea and Sleep — local file tea\.pdf, unknown\.  $"
    assert re.search(listed, md, re.M), md
    session = store.one(SessionRow, q("session_get"), {"session_id": sid})
    sources = store.many(SourceRow, q("session_sources"), {"session_id": sid})
    tea = next(x for x in sources if x.url == "corpus:tea.pdf")
    assert tea.publisher == "local-corpus"
    assert "theanine" in reread(session, tea, store)

    corpus = _reopen(root, tmp_path / "index")
    doc = next(d for d in corpus.documents if d.url.endswith("/tea.pdf"))
    again = store.transact(lambda cur: store_source(cur, sid, "local", doc))
    known = {x.url: x.id for x in sources}
    assert again == (tea.id, 0) == store_source(None, sid, "local", doc, known)
    assert len(store.many(SourceRow, q("session_sources"), {"session_id": sid})) == len(sources)

    def recorded(url: str) -> bool:
        return store.row(q("dead_end_by_url"), {"session_id": sid, "url": url}) is not None

    local_mod._REPORTED.clear()  # a new process: only the store knows what was recorded
    actor = SessionCorpus(corpus, sid, recorded)
    assert [x for x in actor.gather("tea sleep", 5) if isinstance(x, DeadEnd)] == []
    store.close()


def test_mole_show_names_the_pdf_dead_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _folder(tmp_path)
    db = tmp_path / "s.duckdb"
    store = Store(db)
    sid = create_session(store, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    store.close()
    capsys.readouterr()
    assert main(["--db", str(db), "show", sid]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^dead ends .*pdf_encrypted 1", out, re.M), out
    assert re.search(
        r"^  pdf_encrypted +locked\.pdf: PDF: it is encrypted with a password$", out, re.M
    )


# -- academic full text -------------------------------------------------------------------------

FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <entry>
    <id>http://arxiv.org/abs/2401.00001v1</id>
    <published>2024-01-02T00:00:00Z</published>
    <title>Green Tea and Sleep</title>
    <summary>We study tea. The abstract says only that tea was studied in a cohort of adults
    over several years, with several outcomes measured at home by the participants, and that
    the full results, tables and methods are in the paper itself, not in this abstract.</summary>
    <author><name>Ada Researcher</name></author>
    <arxiv:doi>10.1234/tea.2024.1</arxiv:doi>
    <link href="http://arxiv.org/abs/2401.00001v1" rel="alternate" type="text/html"/>
    <link title="pdf" href="{pdf}" rel="related" type="application/pdf"/>
  </entry>
</feed>"""


def _arxiv_actor(web: FakeWeb, pdf_path: str) -> WebActor:
    web.route(
        "/api/query",
        FEED.replace("{pdf}", web.url(pdf_path)).encode(),
        content_type="application/atom+xml",
    )
    provider = Arxiv(
        api("arxiv", Recorder({}), Path(os.environ.get("MOLE_HOME", "/tmp"))),
        endpoint=web.url("/api/query"),
    )
    provider.api.client = None  # the real HTTP client, against the fake server
    fetcher = Fetcher(Policy.of(["127.0.0.1"]), FetchLimits(interval_s=0.0))
    return WebActor(provider, fetcher)


def test_an_arxiv_hit_is_mined_from_its_pdf_with_its_identity(web: FakeWeb) -> None:
    web.route("/pdf/2401.00001v1", tea_pdf(), content_type="application/pdf")
    got = list(_arxiv_actor(web, "/pdf/2401.00001v1").gather("green tea sleep", 5))
    assert len(got) == 1 and not isinstance(got[0], DeadEnd)
    doc: Document = got[0].document
    assert not doc.provider_supplied and doc.url == web.url("/pdf/2401.00001v1")
    assert "theanine, which was found to improve sleep quality" in doc.text
    assert len(doc.pages) == 2
    assert (doc.arxiv_id, doc.doi, doc.title) == (
        "2401.00001v1",
        "10.1234/tea.2024.1",
        "Green Tea and Sleep",
    )
    assert publisher_of(doc.url, doi=doc.doi, arxiv_id=doc.arxiv_id) == publisher_of(
        "https://arxiv.org/abs/2401.00001v1", doi=doc.doi, arxiv_id=doc.arxiv_id
    )


def test_the_abstract_is_the_fallback_and_the_pdf_dead_end_is_recorded(web: FakeWeb) -> None:
    web.route("/pdf/2401.00001v1", encrypt(tea_pdf()), content_type="application/pdf")
    got = list(_arxiv_actor(web, "/pdf/2401.00001v1").gather("green tea sleep", 5))
    dead = [g for g in got if isinstance(g, DeadEnd)]
    found = [g for g in got if not isinstance(g, DeadEnd)]
    assert [(d.cause, d.url) for d in dead] == [("pdf_encrypted", web.url("/pdf/2401.00001v1"))]
    assert found[0].document.provider_supplied and "cohort of adults" in found[0].document.text


DEV_PDF = (
    Path(__file__).resolve().parents[2] / "shared" / "qa-pdf-dev" / "pdfs" / "forecast__JSS2008.pdf"
)


@pytest.mark.skipif(not DEV_PDF.exists(), reason=f"{DEV_PDF} is not here: ../shared is missing")
def test_a_real_dev_pdf_served_as_a_hits_pdf_link(web: FakeWeb) -> None:
    web.route("/pdf/2401.00001v1", DEV_PDF.read_bytes(), content_type="application/pdf")
    (found,) = list(_arxiv_actor(web, "/pdf/2401.00001v1").gather("arima forecasting", 5))
    doc = found.document
    sentence = (
        "For non-seasonal data, we consider ARIMA(p, d, q) models where d is selected based on "
        "successive KPSS unit-root tests (Kwiatkowski, Phillips, Schmidt, and Shin 1992)."
    )
    assert sentence in doc.text
    assert page_at(doc.pages, doc.text.encode().index(sentence.encode())) == 10
    assert doc.arxiv_id == "2401.00001v1"


def test_openalex_crossref_and_pubmed_hits_name_their_open_access_pdf(tmp_path: Path) -> None:
    oa = json.loads(fixture("openalex.json"))
    oa["results"][0]["best_oa_location"] = {"pdf_url": "https://europepmc.org/x.pdf", "is_oa": True}
    rec = Recorder({"/works": (200, json.dumps(oa).encode(), "application/json")})
    hits = OpenAlex(api("openalex", rec, tmp_path)).search("coffee sleep", 10)
    assert [h.pdf_url for h in hits] == ["https://europepmc.org/x.pdf", None]

    cr = json.loads(fixture("crossref.json"))
    cr["message"]["items"][0]["link"] = [
        {
            "URL": "https://pub.example/x.xml",
            "content-type": "text/xml",
            "intended-application": "text-mining",
        },
        {
            "URL": "https://pub.example/x.pdf",
            "content-type": "application/pdf",
            "intended-application": "text-mining",
        },
        {
            "URL": "https://pub.example/sim.pdf",
            "content-type": "application/pdf",
            "intended-application": "similarity-checking",
        },
    ]
    rec = Recorder({"/works": (200, json.dumps(cr).encode(), "application/json")})
    hits = Crossref(api("crossref", rec, tmp_path)).search("coffee sleep", 10)
    assert [h.pdf_url for h in hits] == ["https://pub.example/x.pdf", None]
    assert "link" in rec.requests[0].url.params["select"]

    rec = Recorder(
        {
            "/esearch.fcgi": (200, fixture("pubmed_esearch.json"), "application/json"),
            "/efetch.fcgi": (200, fixture("pubmed_efetch.xml"), "text/xml"),
        }
    )
    hits = PubMed(api("pubmed", rec, tmp_path)).search("coffee sleep", 10)
    assert hits[0].pmcid == "PMC3805807"
    assert hits[0].pdf_url == "https://europepmc.org/articles/PMC3805807?pdf=render"
    assert hits[1].pdf_url is None


def test_arxiv_names_the_pdf_link_of_each_entry(tmp_path: Path) -> None:
    rec = Recorder({"/api/query": (200, fixture("arxiv.xml"), "application/atom+xml")})
    hits = Arxiv(api("arxiv", rec, tmp_path)).search("caffeine sleep", 10)
    assert hits[0].pdf_url == "https://arxiv.org/pdf/2107.01234v2"
