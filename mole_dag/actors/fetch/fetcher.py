"""Fetch one page safely: SSRF guard on every hop, robots.txt, shared per-domain pacing, timeouts,
a streamed byte cap, a content-type allow-list and charset detection. Every way it can fail is a
FetchFailed carrying a dead-end cause, so the caller records a known cause and moves on."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

import httpx

from mole_dag.actors.fetch import robots as robots_mod
from mole_dag.actors.fetch.body import BodyRefused, decode_text, read_capped, sniff_binary
from mole_dag.actors.fetch.guard import (
    GuardedTransport,
    Policy,
    SSRFRefused,
    check_url,
    is_ssrf_error,
)
from mole_dag.actors.fetch.ratelimit import (
    DEFAULT_INTERVAL_S,
    DEFAULT_MAX_WAIT_S,
    DomainLimiter,
    RateLimited,
    shared_limiter,
)
from mole_dag.actors.pdf import is_pdf
from mole_dag.core import DeadEndCause
from mole_dag.publisher import host_of, registrable_domain

log = logging.getLogger("mole.fetch")
# httpx logs every request URL at INFO; some API URLs carry keys as parameters.
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpcore").setLevel(logging.WARNING)

USER_AGENT = "mole-dag/0.1 (deep-research agent; honours robots.txt)"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})
# Generic binary labels: read (under the PDF byte cap) so the bytes can say what they are, since
# servers commonly send papers as octet-stream; anything but a PDF is then a wrong-type dead end.
SNIFFED_TYPES = frozenset(
    {
        "application/octet-stream",
        "binary/octet-stream",
        "application/download",
        "application/x-download",
    }
)
ALLOWED_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES | SNIFFED_TYPES


@dataclass(frozen=True)
class FetchLimits:
    # Most article pages are well under 2 MB of HTML; 5 MB leaves room. A guess, flagged as one.
    max_bytes: int = 5 * 1024 * 1024
    # A PDF (or a body labelled as generic binary that may be one): papers with figures run to
    # tens of MB. A guess, flagged as one.
    max_pdf_bytes: int = 40 * 1024 * 1024
    max_redirects: int = 5
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 15.0
    # The whole fetch (every hop, robots.txt included) must finish within this: a server that
    # trickles one byte at a time never trips the read timeout. A guess, flagged as one.
    total_timeout_s: float = 45.0
    interval_s: float = DEFAULT_INTERVAL_S
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    # Retry-After missing on a 429: assume a minute.
    default_retry_after_s: float = 60.0


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    media_type: str
    text: str
    charset: str
    raw_bytes: int
    redirects: tuple[str, ...] = ()
    # A PDF's bytes (`text` is then empty): extracted by the caller, not decoded as text.
    data: bytes = b""
    # The server's validators, kept with the source so a later re-read can ask whether the
    # page changed (issue 32: a 304 is an unchanged page at no transfer).
    etag: str | None = None
    last_modified: str | None = None

    @property
    def is_html(self) -> bool:
        return self.media_type in HTML_TYPES

    @property
    def is_pdf(self) -> bool:
        return self.media_type == "application/pdf"


class FetchFailed(Exception):
    def __init__(
        self, cause: DeadEndCause, detail: str, url: str, *, status: int | None = None
    ) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause, self.detail, self.url = cause, detail, url
        # The HTTP status when the server answered with one: a rerun tells a page that is gone
        # (404/410) from one that could not be reached.
        self.status = status


class NotModified(Exception):
    """The server answered 304 to a conditional re-read: the page is as it was."""

    def __init__(self, url: str) -> None:
        super().__init__(f"not modified: {url}")
        self.url = url


@dataclass
class _Hop:
    status: int
    headers: httpx.Headers
    url: str
    data: bytes = b""
    raw_bytes: int = 0


def domain_key(url: str) -> str:
    """Pacing is per registrable domain: a site's many hosts share one server budget."""
    return registrable_domain(url) or host_of(url) or url


def _retry_after(value: str | None, default: float) -> float:
    if not value:
        return default
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
        return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return default


def _media_type(headers: httpx.Headers) -> tuple[str, str | None]:
    raw = headers.get("content-type", "")
    media, _, params = raw.partition(";")
    charset = None
    for p in params.split(";"):
        k, _, v = p.strip().partition("=")
        if k.strip().lower() == "charset" and v.strip():
            charset = v.strip().strip("\"'")
    return media.strip().lower(), charset


_clients: dict[Policy, httpx.Client] = {}
_clients_lock = threading.Lock()


def shared_client(policy: Policy, limits: FetchLimits) -> httpx.Client:
    """One connection pool per distinct allow-list, shared by every session with that list. A
    pool is not shared across policies: a connection opened to an allow-listed private host
    must never be reused for a session that did not allow it."""
    with _clients_lock:
        client = _clients.get(policy)
        if client is None:
            client = httpx.Client(
                transport=GuardedTransport(policy),
                follow_redirects=False,
                trust_env=False,
                headers={
                    "User-Agent": USER_AGENT,
                    "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,"
                    "*/*;q=0.1",
                    "Accept-Encoding": "gzip, deflate",
                },
            )
            _clients[policy] = client
        return client


class Fetcher:
    """Per-session (it carries the session's allow-list); everything it holds is shared."""

    def __init__(
        self,
        policy: Policy | None = None,
        limits: FetchLimits | None = None,
        *,
        limiter: DomainLimiter | None = None,
        robots: robots_mod.RobotsCache | None = None,
    ) -> None:
        self.policy = policy or Policy()
        self.limits = limits or FetchLimits()
        self.limiter = limiter or shared_limiter()
        self.robots = robots if robots is not None else robots_mod.shared_robots
        self._client = shared_client(self.policy, self.limits)

    # -- one request ------------------------------------------------------------------------

    def _pace(self, url: str, rules: robots_mod.Rules | None) -> None:
        interval = self.limits.interval_s
        delay = rules.crawl_delay() if rules else None
        if delay is not None:
            interval = max(interval, min(delay, 60.0))
        try:
            self.limiter.acquire(domain_key(url), interval, self.limits.max_wait_s)
        except RateLimited as exc:
            raise FetchFailed(DeadEndCause.RATE_LIMITED, str(exc), url) from None

    def _request(
        self,
        url: str,
        *,
        max_bytes: int,
        deadline: float,
        accept: frozenset[str] | None,
        headers: dict[str, str] | None = None,
    ) -> _Hop:
        """One GET, no redirect following. Reads the body only for a 2xx of an accepted type."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise FetchFailed(DeadEndCause.TIMEOUT, "no time left for this fetch", url)
        timeout = httpx.Timeout(
            connect=min(self.limits.connect_timeout_s, left),
            read=min(self.limits.read_timeout_s, left),
            write=min(self.limits.read_timeout_s, left),
            pool=left,
        )
        try:
            with self._client.stream("GET", url, timeout=timeout, headers=headers) as resp:
                hop = _Hop(resp.status_code, resp.headers, str(resp.url))
                if not 200 <= resp.status_code < 300:
                    return hop
                if accept is not None:
                    media, _ = _media_type(resp.headers)
                    if media and media not in accept:
                        raise FetchFailed(
                            DeadEndCause.WRONG_TYPE, f"content type {media!r} is not fetched", url
                        )
                    if media in PDF_TYPES or media in SNIFFED_TYPES:
                        max_bytes = max(max_bytes, self.limits.max_pdf_bytes)
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise FetchFailed(
                        DeadEndCause.TOO_LARGE,
                        f"declared length {declared} exceeds {max_bytes} bytes",
                        url,
                    )
                body = read_capped(
                    resp.iter_raw(),
                    max_bytes=max_bytes,
                    deadline=deadline,
                    content_encoding=resp.headers.get("content-encoding", ""),
                )
                hop.data, hop.raw_bytes = body.data, body.raw_bytes
                return hop
        except BodyRefused as exc:
            raise FetchFailed(exc.cause, exc.detail, url) from None
        except httpx.TimeoutException:
            raise FetchFailed(
                DeadEndCause.TIMEOUT, "the server did not answer in time", url
            ) from None
        except httpx.HTTPError as exc:
            if is_ssrf_error(exc):
                raise FetchFailed(
                    DeadEndCause.SSRF_REFUSED, str(exc).removeprefix("ssrf: "), url
                ) from None
            raise FetchFailed(
                DeadEndCause.FETCH_FAILED, f"{type(exc).__name__}: {exc}", url
            ) from None

    def _guard(self, url: str) -> None:
        try:
            check_url(url, self.policy)
        except SSRFRefused as exc:
            raise FetchFailed(DeadEndCause.SSRF_REFUSED, str(exc), url) from None
        except ConnectionError as exc:
            raise FetchFailed(DeadEndCause.FETCH_FAILED, str(exc), url) from None

    def _follow(
        self,
        url: str,
        *,
        max_bytes: int,
        deadline: float,
        accept: frozenset[str] | None,
        robots: bool,
        headers: dict[str, str] | None = None,
    ) -> tuple[_Hop, list[str]]:
        """GET with redirects followed by hand, each hop guarded (and robots-checked)."""
        hops: list[str] = []
        current = url
        for _ in range(self.limits.max_redirects + 1):
            self._guard(current)
            rules = self._rules(current, deadline) if robots else None
            if rules is not None and not rules.allows(current):
                raise FetchFailed(DeadEndCause.ROBOTS, "robots.txt disallows this path", current)
            self._pace(current, rules)
            hop = self._request(
                current, max_bytes=max_bytes, deadline=deadline, accept=accept, headers=headers
            )
            if hop.status in (301, 302, 303, 307, 308):
                location = hop.headers.get("location")
                if not location:
                    raise FetchFailed(
                        DeadEndCause.FETCH_FAILED, f"HTTP {hop.status} without a Location", current
                    )
                hops.append(current)
                current = urljoin(current, location.strip())
                continue
            if hop.status == 429:
                wait = _retry_after(
                    hop.headers.get("retry-after"), self.limits.default_retry_after_s
                )
                self.limiter.penalise(domain_key(current), wait)
                raise FetchFailed(
                    DeadEndCause.RATE_LIMITED, f"HTTP 429, retry after {wait:.0f}s", current
                )
            return hop, hops
        raise FetchFailed(
            DeadEndCause.FETCH_FAILED, f"more than {self.limits.max_redirects} redirects", current
        )

    # -- robots.txt --------------------------------------------------------------------------

    def _rules(self, url: str, deadline: float) -> robots_mod.Rules:
        cached = self.robots.get(url)
        if cached is not None:
            return cached
        with self.robots.lock_for(url):
            cached = self.robots.get(url)
            if cached is not None:
                return cached
            return self._fetch_rules(url, deadline)

    def _fetch_rules(self, url: str, deadline: float) -> robots_mod.Rules:
        target = robots_mod.robots_url(url)
        try:
            hop, _ = self._follow(
                target,
                max_bytes=robots_mod.MAX_ROBOTS_BYTES,
                deadline=deadline,
                accept=None,
                robots=False,
            )
        except FetchFailed as exc:
            if exc.cause == DeadEndCause.TOO_LARGE:
                # RFC 9309: parse what fits. We do not keep a truncated body, so allow all
                # rather than guess at the rules; a site that big is not hiding its pages.
                self.robots.put(url, robots_mod.ALLOW_ALL)
                return robots_mod.ALLOW_ALL
            # Unreachable: the page is not fetched, for the same reason the robots file was not.
            raise FetchFailed(exc.cause, f"robots.txt: {exc.detail}", exc.url) from None
        if 200 <= hop.status < 300:
            text = hop.data.decode("utf-8", errors="replace")
            rules = robots_mod.parse(text)
            self.robots.put(url, rules)
            return rules
        if 400 <= hop.status < 500:
            self.robots.put(url, robots_mod.ALLOW_ALL)
            return robots_mod.ALLOW_ALL
        self.robots.put(url, robots_mod.DISALLOW_ALL, robots_mod.ERROR_TTL_S)
        return robots_mod.DISALLOW_ALL

    # -- the page ----------------------------------------------------------------------------

    def fetch(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> Fetched:
        """The page. With `etag` or `last_modified` (from an earlier read) the request is
        conditional, and NotModified is raised when the server says the page has not changed."""
        deadline = time.monotonic() + self.limits.total_timeout_s
        conditional = {
            k: v for k, v in (("If-None-Match", etag), ("If-Modified-Since", last_modified)) if v
        }
        hop, hops = self._follow(
            url,
            max_bytes=self.limits.max_bytes,
            deadline=deadline,
            accept=ALLOWED_TYPES,
            robots=True,
            headers=conditional or None,
        )
        final = hop.url or url
        if hop.status == 304 and conditional:
            raise NotModified(final)
        if not 200 <= hop.status < 300:
            raise FetchFailed(
                DeadEndCause.FETCH_FAILED, f"HTTP {hop.status}", final, status=hop.status
            )
        validators: dict[str, str | None] = {
            "etag": hop.headers.get("etag") or None,
            "last_modified": hop.headers.get("last-modified") or None,
        }
        media, declared = _media_type(hop.headers)
        if is_pdf(hop.data):
            # Whatever the label says: the bytes are a PDF (issue 19), extracted by the caller.
            return Fetched(
                final,
                "application/pdf",
                "",
                "",
                hop.raw_bytes,
                tuple(hops),
                data=hop.data,
                **validators,
            )
        if media in PDF_TYPES:
            raise FetchFailed(
                DeadEndCause.WRONG_TYPE, f"served as {media} but the body is not a PDF", final
            )
        binary = sniff_binary(hop.data) or ("binary data" if media in SNIFFED_TYPES else None)
        if binary:
            raise FetchFailed(
                DeadEndCause.WRONG_TYPE, f"{binary} served as {media or 'no content type'}", final
            )
        looks_html = hop.data[:1024].lstrip().lower().startswith((b"<!doctype html", b"<html"))
        if not media:
            media = "text/html" if looks_html else "text/plain"
        try:
            text, charset = decode_text(hop.data, declared=declared, html=media in HTML_TYPES)
        except BodyRefused as exc:
            raise FetchFailed(exc.cause, exc.detail, final) from None
        return Fetched(
            final,
            media,
            text,
            charset,
            hop.raw_bytes,
            tuple(hops),
            **validators,  # type: ignore[arg-type]
        )


def scheme_ok(url: str) -> bool:
    try:
        return urlsplit(url).scheme.lower() in ("http", "https")
    except ValueError:
        return False
