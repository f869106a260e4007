"""The web and academic actor: search -> (fetch -> extract)? -> Document.

The fetch is skipped when the provider already returned usable text (Tavily's page text, an
abstract from arXiv, OpenAlex, Crossref or PubMed); such a source is marked provider-supplied.
An academic hit with an open-access PDF is the exception (issue 19): its full text is fetched
and mined, and the abstract is the fallback when the PDF cannot be read. A fetched PDF (by its
type or its bytes) is extracted with its pages (mole_dag.actors.pdf).
Every page that cannot be used becomes a dead end with a fixed cause and the actor moves on, so
one hostile page costs its own slot and nothing else. Text leaves here only inside a Found, with
terminal-control and bidi-override characters already removed; the executor chunks it and drops
it."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from mole_dag.actors.base import DeadEnd, Found
from mole_dag.actors.extract import ExtractionError, from_html
from mole_dag.actors.fetch import Fetched, Fetcher, FetchFailed
from mole_dag.actors.once import FetchOnce, Outcome, Stored
from mole_dag.actors.pdf import PdfLimits, PdfRefused, pdf_document
from mole_dag.actors.search import Hit, Provider, SearchFailed
from mole_dag.core import DeadEndCause, Document
from mole_dag.sanitize import one_line, strip_controls

log = logging.getLogger("mole.web")

# Provider text shorter than this is a snippet, not a page: fetch instead. A guess, flagged as
# one; an abstract is typically 800-2000 characters.
MIN_PROVIDER_TEXT = 200
# Extracted text shorter than this on a page that shows signs of client-side rendering is a
# shell waiting for JavaScript, not the page. A guess, flagged as one.
JS_SHELL_MAX_TEXT = 200

_JS_SIGNS = (
    re.compile(
        rb"<noscript[^>]*>[^<]{0,400}(?:enable|requires?|turn on|need)[^<]{0,80}javascript", re.I
    ),
    re.compile(rb"(?:please|you need to|must) enable javascript", re.I),
    re.compile(
        rb"""<div[^>]+id=["'](?:root|app|__next|__nuxt|___gatsby|svelte)["'][^>]*>\s*</div>""", re.I
    ),
    re.compile(rb"<app-root[^>]*>\s*</app-root>", re.I),
)


def needs_javascript(html: str) -> bool:
    raw = html.encode("utf-8", "replace")
    return any(p.search(raw) for p in _JS_SIGNS)


def clean(text: str | None) -> str | None:
    """Controls and bidi overrides removed: they are stripped at render too, but nothing a page
    wrote in them should be stored at all."""
    if text is None:
        return None
    return strip_controls(text)


def _meta(text: str | None) -> str | None:
    return one_line(text) or None if text else None


def _name_in(url: str) -> str:
    """A fallback title for a document without one: the last segment of its URL's path."""
    from urllib.parse import unquote, urlsplit

    try:
        tail = unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])
    except ValueError:
        tail = ""
    return _meta(tail.removesuffix(".pdf").removesuffix(".PDF")) or url


def pdf_page_document(fetched: Fetched, limits: PdfLimits | None = None) -> Document | DeadEnd:
    """A fetched PDF's text with its pages, or the PDF's dead end (issue 19). The text comes out
    of the layout without controls or bidi marks (layout.clean strips what `clean` would), so the
    page offsets computed there hold for the stored text."""
    try:
        return pdf_document(fetched.data, url=fetched.url, fallback_title="", limits=limits)
    except PdfRefused as exc:
        return DeadEnd(exc.cause, fetched.url, f"PDF: {exc.detail}")


def page_document(fetched: Fetched, pdf_limits: PdfLimits | None = None) -> Document | DeadEnd:
    """Extract a fetched page, or say why it has nothing to offer. The server's validators go
    with the document (stored with the source: a rerun's re-read asks for changes only)."""
    got = _page_document(fetched, pdf_limits)
    if isinstance(got, Document):
        for key in ("etag", "last_modified"):
            value = getattr(fetched, key, None)
            if value:
                got.metadata[key] = value
    return got


def _page_document(fetched: Fetched, pdf_limits: PdfLimits | None = None) -> Document | DeadEnd:
    if fetched.is_pdf:
        return pdf_page_document(fetched, pdf_limits)
    if fetched.is_html:
        try:
            doc = from_html(fetched.text, url=fetched.url)
        except ExtractionError as exc:
            return DeadEnd(DeadEndCause.UNREADABLE, fetched.url, str(exc))
        text = (clean(doc.text) or "").strip("\n")
        if len(text.strip()) < JS_SHELL_MAX_TEXT and needs_javascript(fetched.text):
            return DeadEnd(
                DeadEndCause.JS_REQUIRED, fetched.url, "the page renders its text with JavaScript"
            )
        if not any(ch.isalnum() for ch in text):
            return DeadEnd(DeadEndCause.NO_TEXT, fetched.url, "no main text after extraction")
        return replace(
            doc,
            url=fetched.url,
            text=text,
            title=_meta(doc.title) or "",
            author=_meta(doc.author),
            publisher=_meta(doc.publisher),
        )
    text = (clean(fetched.text) or "").strip("\n")
    if not any(ch.isalnum() for ch in text):
        return DeadEnd(DeadEndCause.NO_TEXT, fetched.url, "empty text document")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    # A web text file's own front matter is not trusted: the URL is where we fetched it.
    return Document(url=fetched.url, title=_meta(first[:200]) or fetched.url, text=text)


def _with_hit(doc: Document, hit: Hit) -> Document:
    """The page's own metadata first; the search result fills what the page left out."""
    return replace(
        doc,
        title=doc.title or _meta(hit.title) or doc.url,
        author=doc.author or _meta(hit.author),
        publisher=doc.publisher or _meta(hit.publisher_name),
        published=doc.published or hit.published,
        doi=doc.doi or hit.doi,
        pmid=doc.pmid or hit.pmid,
        pmcid=doc.pmcid or hit.pmcid,
        arxiv_id=doc.arxiv_id or hit.arxiv_id,
    )


def provider_document(hit: Hit) -> Document | None:
    text = (clean(hit.content) or "").strip()
    if len(text) < MIN_PROVIDER_TEXT:
        return None
    return Document(
        url=hit.url,
        title=_meta(hit.title) or hit.url,
        text=text,
        author=_meta(hit.author),
        publisher=_meta(hit.publisher_name),
        published=hit.published,
        doi=hit.doi,
        pmid=hit.pmid,
        pmcid=hit.pmcid,
        arxiv_id=hit.arxiv_id,
        provider_supplied=True,
    )


@dataclass
class WebActor:
    """One provider with one session's fetcher. Built per session (the fetcher carries the
    session's allow-list); the HTTP pools, robots cache and rate limiter under it are shared."""

    provider: Provider
    fetcher: Fetcher
    price_usd_micros: int = 0
    # Whether this session already stored a URL (an earlier round, another process): the lead
    # links the stored copy without fetching it again (the executor's ingest keeps that copy).
    known: Callable[[str], bool] | None = None
    # How an earlier lead of this session failed on a URL, if one did: not retried.
    failed: Callable[[str], DeadEnd | None] | None = None
    # The session's in-process registry of requested URLs: leads running at the same time on
    # other worker threads wait for one fetch instead of each making their own.
    once: FetchOnce | None = None
    # Caps on reading a fetched PDF (pages, seconds, inflated bytes); the fetcher caps its bytes.
    pdf_limits: PdfLimits | None = None

    @property
    def name(self) -> str:
        return self.provider.name

    def gather(self, query: str, limit: int) -> Iterator[Found | DeadEnd]:
        try:
            hits = self.provider.search(query, limit)
        except SearchFailed as exc:
            yield DeadEnd(exc.cause, None, exc.detail)
            return
        if not hits:
            yield DeadEnd(DeadEndCause.NO_RESULTS, None, f"{self.name}: no results")
            return
        seen: set[str] = set()
        for rank, hit in enumerate(hits):
            if hit.url in seen:
                continue
            seen.add(hit.url)
            score = hit.score if hit.score is not None else 1.0 / (rank + 1)
            got = self.resolve(hit)
            if isinstance(got, DeadEnd):
                yield got
            elif isinstance(got, Document) and got.metadata.get(_PDF_CAUSE):
                # The open-access PDF could not be read: its dead end, then the abstract.
                yield DeadEnd(
                    DeadEndCause(got.metadata[_PDF_CAUSE]),
                    got.metadata.get("pdf_url"),
                    got.metadata.get(_PDF_DETAIL),
                )
                yield Found(document=got, rank=rank, score=score)
            elif isinstance(got, Stored):
                yield Found(
                    Document(url=got.url, title=_meta(hit.title) or got.url, text=""),
                    rank,
                    score,
                    linked=True,
                )
            else:
                yield Found(document=got, rank=rank, score=score)

    def resolve(self, hit: Hit) -> Outcome:
        """The hit's document, a link to the stored copy, or its dead end: fetched only if no
        lead of this session fetched (or is fetching) the URL already."""
        if self.once is None:
            return self.first_look(hit)
        for _ in range(2):
            got, fresh = self.once.resolve(hit.url, lambda: self.first_look(hit))
            if fresh:
                return got
            if isinstance(got, DeadEnd):
                return replace(got, detail=_not_retried(got.detail))
            if isinstance(got, Stored) and self.known is not None and not self.known(got.url):
                # The lead that fetched it failed before writing it: fetch it (once) again.
                self.once.forget(hit.url)
                continue
            return got
        return self.first_look(hit)

    def first_look(self, hit: Hit) -> Outcome:
        """What the store already says about the URL, else the page itself."""
        if self.known is not None and self.known(hit.url):
            return Stored(hit.url)
        if hit.pdf_url and self.known is not None and self.known(hit.pdf_url):
            return Stored(hit.pdf_url)  # the hit's full text, stored by an earlier lead
        if self.failed is not None:
            dead = self.failed(hit.url)
            if dead is not None:
                return replace(dead, detail=_not_retried(dead.detail))
        return self.document(hit)

    def full_text(self, hit: Hit) -> Document | DeadEnd:
        """An academic hit's open-access PDF, fetched through the same guard and caps as any
        page, with the hit's scholarly identity (DOI, arXiv id, PMID) kept for publisher
        counting, and the API's title."""
        assert hit.pdf_url
        try:
            fetched = self.fetcher.fetch(hit.pdf_url)
        except FetchFailed as exc:
            return DeadEnd(exc.cause, exc.url or hit.pdf_url, exc.detail)
        if not fetched.is_pdf:
            return DeadEnd(
                DeadEndCause.WRONG_TYPE,
                fetched.url,
                f"the open-access link served {fetched.media_type}, not a PDF",
            )
        got = pdf_page_document(fetched, self.pdf_limits)
        if isinstance(got, DeadEnd):
            return got
        doc = _with_hit(replace(got, title=_meta(hit.title) or got.title), hit)
        doc.metadata["landing"] = hit.url
        return doc

    def document(self, hit: Hit) -> Document | DeadEnd:
        supplied = provider_document(hit)
        if hit.pdf_url:
            full = self.full_text(hit)
            if isinstance(full, Document) or supplied is None:
                return full
            # The abstract stands in; the PDF's dead end is recorded beside it (gather).
            supplied.metadata.update(
                {
                    _PDF_CAUSE: str(full.cause),
                    _PDF_DETAIL: full.detail or "",
                    "pdf_url": full.url or hit.pdf_url,
                }
            )
            return supplied
        if supplied is not None:
            return supplied
        try:
            fetched = self.fetcher.fetch(hit.url)
        except FetchFailed as exc:
            return DeadEnd(exc.cause, exc.url or hit.url, exc.detail)
        got = page_document(fetched, self.pdf_limits)
        if isinstance(got, DeadEnd):
            return got
        return _with_hit(got, hit)


# Metadata keys of an abstract that stands in for an open-access PDF that could not be read.
_PDF_CAUSE, _PDF_DETAIL = "pdf_dead_end_cause", "pdf_dead_end_detail"


def _not_retried(detail: str | None) -> str:
    prefix = "not retried: another lead of this session failed on it"
    if detail and detail.startswith(prefix):
        return detail
    return f"{prefix}: {detail}" if detail else prefix
