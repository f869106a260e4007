"""The fetcher against hostile servers on 127.0.0.1: each case is refused or contained with the
right dead-end cause. The test server is reached under the name `pages.test`, which a stand-in
resolver maps to 127.0.0.1 and the allow-list names, so a redirect or a DNS answer that points
at 127.0.0.1 by any other name is exactly what the guard must refuse."""

from __future__ import annotations

import gzip
import random
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from mole_dag.actors.fetch import Fetcher, FetchFailed, FetchLimits, Policy
from mole_dag.actors.fetch import guard as guard_mod
from mole_dag.actors.fetch.ratelimit import DomainLimiter
from mole_dag.actors.fetch.robots import ALLOW_ALL, RobotsCache
from mole_dag.actors.web import page_document
from mole_dag.core import DeadEndCause, Document
from tests.fakeweb import FakeWeb, page, repeat

PAGES = "pages.test"
PROSE = (
    "Green tea contains less caffeine than coffee, and a cup brewed for three minutes holds "
    "about thirty milligrams of it, according to the laboratory measurements."
)


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    w = FakeWeb().start()
    yield w
    w.stop()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names the stand-in resolver knows; anything else resolves as the system would."""
    table: dict[str, list[str]] = {PAGES: ["127.0.0.1"]}
    real = guard_mod.resolve

    def resolve(host: str, port: int) -> list[str]:
        got = table.get(host)
        if got is None:
            return real(host, port)
        return list(got)

    monkeypatch.setattr(guard_mod, "resolve", resolve)
    return table


def fetcher(tmp_path: Path, allow: tuple[str, ...] = (PAGES,), **limits: float) -> Fetcher:
    lim = FetchLimits(**{"interval_s": 0.0, **limits})  # type: ignore[arg-type]
    return Fetcher(
        Policy.of(allow), lim, limiter=DomainLimiter(tmp_path / "rl"), robots=RobotsCache()
    )


def refused(f: Fetcher, url: str) -> FetchFailed:
    with pytest.raises(FetchFailed) as err:
        f.fetch(url)
    return err.value


# --- the guard's address rules --------------------------------------------------------------


@pytest.mark.parametrize(
    "addr",
    [
        "127.0.0.1",
        "127.8.9.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::1",
        "fe80::1%eth0",
    ],
)
def test_non_public_addresses_are_refused(addr: str) -> None:
    assert guard_mod.refusal_reason(addr) is not None


@pytest.mark.parametrize(
    "addr", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_addresses_pass(addr: str) -> None:
    assert guard_mod.refusal_reason(addr) is None


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.org/x",
        "gopher://x/",
        "http:///nohost",
        "http://user:pw@example.org/",
    ],
)
def test_only_plain_http_urls_are_fetched(tmp_path: Path, url: str) -> None:
    assert refused(fetcher(tmp_path), url).cause == DeadEndCause.SSRF_REFUSED


# --- the happy path --------------------------------------------------------------------------


def test_allow_listed_page_is_fetched_and_decoded(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/tea", page("Tea", PROSE))
    got = fetcher(tmp_path).fetch(web.url("/tea", PAGES))
    assert got.is_html and PROSE in got.text and got.charset == "utf-8"
    doc = page_document(got)
    assert isinstance(doc, Document) and PROSE in doc.text and doc.title == "Tea"


def test_loopback_is_refused_without_the_allow_list(tmp_path: Path, web: FakeWeb) -> None:
    web.route("/tea", page("Tea", PROSE))
    err = refused(fetcher(tmp_path, allow=()), web.url("/tea"))
    assert err.cause == DeadEndCause.SSRF_REFUSED and "loopback" in err.detail
    assert web.requests_to("/tea") == []


# --- hostile: where the request goes ----------------------------------------------------------


def test_redirect_to_loopback_is_refused(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/go", b"", 302, headers={"Location": web.url("/secret")})  # 127.0.0.1 by IP
    web.route("/secret", b"internal admin page")
    err = refused(fetcher(tmp_path), web.url("/go", PAGES))
    assert err.cause == DeadEndCause.SSRF_REFUSED and "loopback" in err.detail
    assert err.url == web.url("/secret")
    assert web.requests_to("/secret") == []


def test_redirect_to_cloud_metadata_is_refused(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route(
        "/go",
        b"",
        301,
        headers={"Location": "http://169.254.169.254/latest/meta-data/iam/credentials"},
    )
    err = refused(fetcher(tmp_path), web.url("/go", PAGES))
    assert err.cause == DeadEndCause.SSRF_REFUSED and "link-local" in err.detail


def test_redirect_chain_is_bounded(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    for i in range(10):
        web.route(f"/r{i}", b"", 302, headers={"Location": f"/r{i + 1}"})
    err = refused(fetcher(tmp_path), web.url("/r0", PAGES))
    assert err.cause == DeadEndCause.FETCH_FAILED and "redirects" in err.detail
    assert len(web.requests_to("/r6")) == 0  # five redirects followed, no more


def test_dns_name_resolving_to_private_address_is_refused(
    tmp_path: Path, web: FakeWeb, dns: dict
) -> None:
    dns["intranet.evil.test"] = ["93.184.216.34", "10.0.0.7"]  # one private answer is enough
    err = refused(fetcher(tmp_path), f"http://intranet.evil.test:{web.port}/")
    assert err.cause == DeadEndCause.SSRF_REFUSED and "10.0.0.7" in err.detail


def test_dns_rebinding_between_check_and_connect_is_refused(
    tmp_path: Path, web: FakeWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-check sees a public address; the connection-time lookup gets 127.0.0.1. The
    socket must never be opened to the address nobody checked."""
    web.route("/rebind", page("Internal", PROSE))
    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"], ["127.0.0.1"]])
    monkeypatch.setattr(guard_mod, "resolve", lambda host, port: next(answers))
    f = fetcher(tmp_path, allow=())
    f.robots.put(f"http://rebind.test:{web.port}/", ALLOW_ALL)  # no robots fetch in the way
    err = refused(f, f"http://rebind.test:{web.port}/rebind")
    assert err.cause == DeadEndCause.SSRF_REFUSED
    assert web.requests_to("/rebind") == []


# --- hostile: what comes back -----------------------------------------------------------------


def test_fifty_megabyte_body_is_cut_at_the_cap(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    total = 50 * 1024 * 1024
    web.route("/huge", repeat(b"<p>" + b"a" * 65530 + b"</p>", total))
    err = refused(fetcher(tmp_path, max_bytes=1024 * 1024), web.url("/huge", PAGES))
    assert err.cause == DeadEndCause.TOO_LARGE
    time.sleep(0.2)
    assert web.bytes_sent.get("/huge", 0) < total  # streamed and abandoned, not read whole


def test_declared_oversize_is_refused_before_reading(
    tmp_path: Path, web: FakeWeb, dns: dict
) -> None:
    web.route("/big", page("Big", PROSE), headers={"Content-Length": str(50 * 1024 * 1024)})
    err = refused(fetcher(tmp_path, max_bytes=1024 * 1024), web.url("/big", PAGES))
    assert err.cause == DeadEndCause.TOO_LARGE and "declared" in err.detail


def _gzip_bomb(decoded: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1024 * 1024)
    out = [z.compress(b"<html><body><p>")]
    out += [z.compress(block) for _ in range(decoded // len(block))]
    out.append(z.flush())
    return b"".join(out)


def test_gzip_bomb_is_stopped_at_the_decoded_cap(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    bomb = _gzip_bomb(200 * 1024 * 1024)
    assert len(bomb) < 1024 * 1024  # small on the wire...
    web.route("/bomb", bomb, headers={"Content-Encoding": "gzip"})
    tracemalloc.start()
    try:
        err = refused(fetcher(tmp_path, max_bytes=2 * 1024 * 1024), web.url("/bomb", PAGES))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.cause == DeadEndCause.TOO_LARGE and "decoded" in err.detail  # ...huge decoded
    # Decompressed in bounded steps: one 64 KB chunk of this bomb inflates to ~64 MB at once.
    assert peak < 24 * 1024 * 1024


def test_gzipped_page_within_the_cap_is_decoded(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/gz", gzip.compress(page("Tea", PROSE)), headers={"Content-Encoding": "gzip"})
    got = fetcher(tmp_path).fetch(web.url("/gz", PAGES))
    assert PROSE in got.text


@pytest.mark.parametrize(
    "body",
    [
        b"\x89PNG\r\n\x1a\n" + random.Random(1).randbytes(4000),
        random.Random(2).randbytes(20000),
    ],
    ids=["png", "random-bytes"],
)
def test_binary_served_as_html_is_wrong_type(
    tmp_path: Path, web: FakeWeb, dns: dict, body: bytes
) -> None:
    web.route("/bin", body, content_type="text/html; charset=utf-8")
    err = refused(fetcher(tmp_path), web.url("/bin", PAGES))
    assert err.cause == DeadEndCause.WRONG_TYPE and "served as text/html" in err.detail


@pytest.mark.parametrize("ctype", ["text/html; charset=utf-8", "application/octet-stream"])
def test_a_pdf_body_is_fetched_as_a_pdf_whatever_its_label(
    tmp_path: Path, web: FakeWeb, dns: dict, ctype: str
) -> None:
    """Issue 19: a PDF was a wrong-type dead end; its bytes are now handed on to be read."""
    body = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"
    web.route("/bin", body, content_type=ctype)
    got = fetcher(tmp_path).fetch(web.url("/bin", PAGES))
    assert got.is_pdf and got.data == body and got.text == ""


@pytest.mark.parametrize("ctype", ["application/pdf", "application/json", "image/svg+xml"])
def test_disallowed_content_type_is_not_read(
    tmp_path: Path, web: FakeWeb, dns: dict, ctype: str
) -> None:
    web.route("/thing", b'{"text": "looks like text but is not a page"}', content_type=ctype)
    err = refused(fetcher(tmp_path), web.url("/thing", PAGES))
    assert err.cause == DeadEndCause.WRONG_TYPE and ctype in err.detail


def test_small_gzip_with_a_huge_tail_is_cut_on_the_wire(
    tmp_path: Path, web: FakeWeb, dns: dict
) -> None:
    """Bytes after the end of the gzip stream decode to nothing, so only the wire count sees
    them."""
    body = gzip.compress(page("Tea", PROSE))
    web.route(
        "/tail", lambda: iter([body] + [b"\0" * 65536] * 160), headers={"Content-Encoding": "gzip"}
    )
    err = refused(fetcher(tmp_path, max_bytes=1024 * 1024), web.url("/tail", PAGES))
    assert err.cause == DeadEndCause.TOO_LARGE and "on the wire" in err.detail


def test_malformed_html_is_contained(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    junk = (
        b"<html><head><title>Broken</title><body><div><p>"
        + PROSE.encode()
        + b"<b><i><table><tr><td>cell</b></p></div></td></span></html></body><p>"
        + b"<<<>>><!-- never closed <script>document.write('x')</scr"
    )
    web.route("/broken", junk)
    doc = page_document(fetcher(tmp_path).fetch(web.url("/broken", PAGES)))
    assert isinstance(doc, Document) and PROSE in doc.text


def test_markup_without_text_is_no_text(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/empty", b"<html><<<>>><<!-- <div></div></span></table>")
    got = page_document(fetcher(tmp_path).fetch(web.url("/empty", PAGES)))
    assert not isinstance(got, Document) and got.cause == DeadEndCause.NO_TEXT


def test_bidi_and_terminal_controls_are_stripped(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    hostile = (
        "\u202eevil reversed\u202c \x1b[2J\x1b[31mRED\x1b[0m \x07\x08 \u2066iso\u2069 "
        + PROSE
        + " \u200b\u200f\x1b]0;pwned\x07"
    )
    web.route("/bidi", page("Title \u202ewith override\x1b[1m", hostile))
    doc = page_document(fetcher(tmp_path).fetch(web.url("/bidi", PAGES)))
    assert isinstance(doc, Document)
    for bad in ("\u202e", "\u202c", "\x1b", "\x07", "\x08", "\u2066", "\u2069", "\u200b", "\u200f"):
        assert bad not in doc.text and bad not in doc.title
    assert PROSE in doc.text


def test_controls_in_plain_text_pages_are_stripped(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route(
        "/notes.txt",
        f"Notes \u202eevil\n\x1b[2J{PROSE}\x07\n".encode(),
        content_type="text/plain; charset=utf-8",
    )
    doc = page_document(fetcher(tmp_path).fetch(web.url("/notes.txt", PAGES)))
    assert isinstance(doc, Document) and PROSE in doc.text
    for bad in ("\u202e", "\x1b", "\x07"):
        assert bad not in doc.text and bad not in doc.title


def test_js_shell_is_js_required(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    shell = (
        b"<!DOCTYPE html><html><head><title>App</title></head><body>"
        b"<noscript>You need to enable JavaScript to run this app.</noscript>"
        b'<div id="root"></div><script src="/static/js/main.js"></script></body></html>'
    )
    web.route("/spa", shell)
    got = page_document(fetcher(tmp_path).fetch(web.url("/spa", PAGES)))
    assert not isinstance(got, Document) and got.cause == DeadEndCause.JS_REQUIRED


@pytest.mark.parametrize(
    ("raw", "header", "expect"),
    [
        ("Kaffee enthält Koffein, sagt die Prüfstelle.".encode("latin-1"), "iso-8859-1", "latin"),
        ("Кофе содержит кофеин, говорит лаборатория.".encode("cp1251"), None, "cp1251"),
        ("咖啡含有咖啡因，实验室说。".encode(), None, "utf-8"),
    ],
)
def test_charsets(
    tmp_path: Path, web: FakeWeb, dns: dict, raw: bytes, header: str | None, expect: str
) -> None:
    meta = b"<meta charset='windows-1251'>" if expect == "cp1251" else b""
    body = b"<html><head>" + meta + b"</head><body><p>" + raw + b"</p></body></html>"
    ctype = f"text/html; charset={header}" if header else "text/html"
    web.route("/cs", body, content_type=ctype)
    got = fetcher(tmp_path).fetch(web.url("/cs", PAGES))
    codec = {"latin": "latin-1", "cp1251": "cp1251", "utf-8": "utf-8"}[expect]
    assert raw.decode(codec) in got.text


# --- hostile: politeness and time ---------------------------------------------------------------


def test_robots_disallow_is_honoured(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/robots.txt", b"User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    web.route("/private/page", page("Private", PROSE))
    web.route("/public", page("Public", PROSE))
    f = fetcher(tmp_path)
    err = refused(f, web.url("/private/page", PAGES))
    assert err.cause == DeadEndCause.ROBOTS
    assert web.requests_to("/private/page") == []
    assert PROSE in f.fetch(web.url("/public", PAGES)).text
    assert len(web.requests_to("/robots.txt")) == 1  # cached per host


def test_robots_for_our_agent_only(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route(
        "/robots.txt",
        b"User-agent: mole-dag\nDisallow: /\n\nUser-agent: *\nAllow: /\n",
        content_type="text/plain",
    )
    web.route("/x", page("X", PROSE))
    assert refused(fetcher(tmp_path), web.url("/x", PAGES)).cause == DeadEndCause.ROBOTS


def test_robots_server_error_means_disallow(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/robots.txt", b"oops", 503, content_type="text/plain")
    web.route("/x", page("X", PROSE))
    assert refused(fetcher(tmp_path), web.url("/x", PAGES)).cause == DeadEndCause.ROBOTS
    assert web.requests_to("/x") == []


def test_slow_server_times_out(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/slow", page("Slow", PROSE), delay_s=3.0)
    err = refused(fetcher(tmp_path, read_timeout_s=0.5), web.url("/slow", PAGES))
    assert err.cause == DeadEndCause.TIMEOUT


def test_trickling_server_hits_the_total_deadline(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    def trickle() -> Iterator[bytes]:
        yield b"<html><body><p>"
        for _ in range(40):
            time.sleep(0.1)
            yield b"a"

    web.route("/trickle", trickle)
    err = refused(
        fetcher(tmp_path, read_timeout_s=1.0, total_timeout_s=1.0), web.url("/trickle", PAGES)
    )
    assert err.cause == DeadEndCause.TIMEOUT


def test_429_is_rate_limited_and_parks_the_domain(tmp_path: Path, web: FakeWeb, dns: dict) -> None:
    web.route("/busy", b"slow down", 429, headers={"Retry-After": "120"})
    web.route("/other", page("Other", PROSE))
    f = fetcher(tmp_path, max_wait_s=5.0)
    assert refused(f, web.url("/busy", PAGES)).cause == DeadEndCause.RATE_LIMITED
    err = refused(f, web.url("/other", PAGES))
    assert err.cause == DeadEndCause.RATE_LIMITED  # the site asked for two minutes' peace
    assert web.requests_to("/other") == []
