"""What every search provider returns, and the one HTTP path they all call APIs through.

API hosts are the user's choice (a configured SearXNG, Brave's endpoint), not a page's, so they
do not go through the SSRF guard: a user's SearXNG on localhost is the common case. They do get
the shared per-host pacing, timeouts and a byte cap, and their keys never reach a log line, an
error message or the store: errors name the provider and the status, never the request."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

import httpx
import lxml.etree

from mole_dag.actors.extract import parse_date
from mole_dag.actors.fetch.body import BodyRefused, read_capped
from mole_dag.actors.fetch.fetcher import USER_AGENT, _retry_after
from mole_dag.actors.fetch.ratelimit import DomainLimiter, RateLimited, shared_limiter
from mole_dag.core import DeadEndCause
from mole_dag.publisher import host_of
from mole_dag.sanitize import one_line

# An API answer for ten results is tens of kilobytes; this only stops a broken endpoint.
MAX_API_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Hit:
    url: str
    title: str = ""
    snippet: str = ""
    # Page text or an abstract the provider returned: usable without a fetch.
    content: str | None = None
    published: date | None = None
    author: str | None = None
    publisher_name: str | None = None
    doi: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    arxiv_id: str | None = None
    score: float | None = None
    # An open-access full text the API links to as a PDF (arXiv's /pdf/, OpenAlex's
    # best_oa_location, Crossref's text-mining link, PMC's copy): fetched and mined in place of
    # the abstract when it can be read (issue 19).
    pdf_url: str | None = None


class SearchFailed(Exception):
    def __init__(self, cause: DeadEndCause, detail: str) -> None:
        super().__init__(detail)
        self.cause, self.detail = cause, detail


class Provider(Protocol):
    name: str

    def search(self, query: str, limit: int) -> list[Hit]: ...


@dataclass(frozen=True)
class ApiLimits:
    timeout_s: float = 20.0
    max_wait_s: float = 60.0
    max_bytes: int = MAX_API_BYTES


_client: httpx.Client | None = None
_client_lock = threading.Lock()


def shared_api_client() -> httpx.Client:
    """One pool for every provider and session. No proxy from the environment, for the same
    reason as the fetcher's: what runs is what the settings say."""
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(
                trust_env=False,
                follow_redirects=True,
                headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
            )
        return _client


@dataclass
class Api:
    """A provider's view of the network: its name (for messages), its pacing interval."""

    provider: str
    interval_s: float
    limits: ApiLimits = field(default_factory=ApiLimits)
    client: httpx.Client | None = None
    limiter: DomainLimiter | None = None

    def request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
    ) -> bytes:
        client = self.client or shared_api_client()
        limiter = self.limiter or shared_limiter()
        key = f"api:{host_of(url)}"
        try:
            limiter.acquire(key, self.interval_s, self.limits.max_wait_s)
        except RateLimited as exc:
            raise SearchFailed(DeadEndCause.RATE_LIMITED, f"{self.provider}: {exc}") from None
        deadline = time.monotonic() + self.limits.timeout_s
        try:
            with client.stream(
                method,
                url,
                params=params,
                headers=headers,
                json=json_body,
                timeout=self.limits.timeout_s,
            ) as resp:
                status = resp.status_code
                if status == 429:
                    wait = _retry_after(resp.headers.get("retry-after"), 60.0)
                    limiter.penalise(key, wait)
                    raise SearchFailed(
                        DeadEndCause.RATE_LIMITED,
                        f"{self.provider}: HTTP 429, retry after {wait:.0f}s",
                    )
                if status in (401, 403):
                    raise SearchFailed(
                        DeadEndCause.FETCH_FAILED,
                        f"{self.provider}: HTTP {status}: the API refused the "
                        "request; check the key or the instance's settings",
                    )
                if not 200 <= status < 300:
                    raise SearchFailed(DeadEndCause.FETCH_FAILED, f"{self.provider}: HTTP {status}")
                body = read_capped(
                    resp.iter_raw(),
                    max_bytes=self.limits.max_bytes,
                    deadline=deadline,
                    content_encoding=resp.headers.get("content-encoding", ""),
                )
                return body.data
        except BodyRefused as exc:
            raise SearchFailed(exc.cause, f"{self.provider}: {exc.detail}") from None
        except httpx.TimeoutException:
            raise SearchFailed(
                DeadEndCause.TIMEOUT, f"{self.provider}: no answer in time"
            ) from None
        except httpx.HTTPError as exc:
            # The exception text can carry the URL, and a URL can carry a key: name the type only.
            raise SearchFailed(
                DeadEndCause.FETCH_FAILED, f"{self.provider}: {type(exc).__name__}"
            ) from None

    def get_json(self, url: str, **kw: Any) -> Any:
        data = self.request("GET", url, **kw)
        return self.parse_json(data)

    def post_json(self, url: str, body: Any, **kw: Any) -> Any:
        return self.parse_json(self.request("POST", url, json_body=body, **kw))

    def parse_json(self, data: bytes) -> Any:
        try:
            return json.loads(data)
        except ValueError:
            raise SearchFailed(
                DeadEndCause.UNREADABLE, f"{self.provider}: the answer is not JSON"
            ) from None

    def get_xml(self, url: str, **kw: Any) -> lxml.etree._Element:
        return parse_xml(self.request("GET", url, **kw), self.provider)


# No entities, no DTD fetches, no network: an API answer is data, not a document to resolve.
_XML = lxml.etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
)


def parse_xml(data: bytes, provider: str) -> lxml.etree._Element:
    try:
        root = lxml.etree.fromstring(data, parser=_XML)
    except lxml.etree.XMLSyntaxError:
        raise SearchFailed(DeadEndCause.UNREADABLE, f"{provider}: the answer is not XML") from None
    if root is None:
        raise SearchFailed(DeadEndCause.UNREADABLE, f"{provider}: empty XML answer")
    return root


_TAGS = re.compile(r"<[^>]+>")


def strip_markup(text: str | None) -> str:
    """Snippets and JATS abstracts carry tags (<strong>, <jats:p>): plain text, one line."""
    if not text:
        return ""
    import html

    return one_line(html.unescape(_TAGS.sub(" ", text)))


def paragraphs(text: str | None) -> str:
    """An abstract as paragraphs: tags dropped, whitespace within a paragraph collapsed."""
    if not text:
        return ""
    import html

    text = re.sub(r"</?(?:jats:)?p\b[^>]*>", "\n\n", text)
    text = html.unescape(_TAGS.sub(" ", text))
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)


def date_of(value: Any) -> date | None:
    return parse_date(str(value)) if value else None


def clean_doi(value: str | None) -> str | None:
    if not value:
        return None
    v = value.strip()
    for prefix in (
        "https://doi.org/",
        "http://doi.org/",
        "https://dx.doi.org/",
        "http://dx.doi.org/",
        "doi:",
    ):
        if v.lower().startswith(prefix):
            v = v[len(prefix) :]
    return v.lower() or None


def authors_line(names: list[str], keep: int = 3) -> str | None:
    names = [n for n in (one_line(x) for x in names) if n]
    if not names:
        return None
    return ", ".join(names[:keep]) + (" et al." if len(names) > keep else "")


def http_url(url: object) -> str | None:
    """Only http(s) links from a search result are kept; anything else is not a page."""
    u = str(url or "").strip()
    return u if u.lower().startswith(("http://", "https://")) else None


def https(url: str | None) -> str | None:
    """arXiv's feed links its PDFs over http; the same path is served over https."""
    if url and url.startswith("http://arxiv.org/"):
        return "https://" + url.removeprefix("http://")
    return url
