"""Tests for mole_dag.publisher and mole_dag.verifier.source_class."""

from __future__ import annotations

import socket

import pytest

from mole_dag import publisher as publisher_mod
from mole_dag.core import SourceClass
from mole_dag.publisher import (
    _extractor,
    host_of,
    paper_key,
    public_suffix,
    publisher_of,
    registrable_domain,
)
from mole_dag.verifier.source_class import STRENGTH, class_of, weight


def test_github_pages_users_are_separate_publishers() -> None:
    a = publisher_of("https://alice.github.io/post")
    b = publisher_of("https://bob.github.io/post")
    assert a == "alice.github.io"
    assert b == "bob.github.io"
    assert a != b


def test_co_uk_sites_are_separate_and_not_co_uk() -> None:
    bbc = publisher_of("https://www.bbc.co.uk/news/health-1")
    guardian = publisher_of("https://theguardian.co.uk/science/tea")
    assert bbc == "bbc.co.uk"
    assert guardian == "theguardian.co.uk"
    assert bbc != guardian
    assert "co.uk" not in {bbc, guardian}
    assert public_suffix("https://www.bbc.co.uk/") == "co.uk"


def test_subdomains_of_one_site_are_one_publisher() -> None:
    assert publisher_of("https://news.example.com/a") == publisher_of("https://www.example.com/b")


def test_host_normalisation() -> None:
    assert host_of("HTTPS://WWW.BBC.CO.UK./x") == "www.bbc.co.uk"
    assert host_of("www.example.com/path") == "www.example.com"
    assert host_of("http://[::1") == ""  # malformed IPv6 literal: no host, no exception
    assert publisher_of("HTTPS://WWW.BBC.CO.UK./x") == "bbc.co.uk"


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1/x", "http://localhost:8000/", "http://intranet/"]
)
def test_no_public_suffix_falls_back_to_host(url: str) -> None:
    assert registrable_domain(url) is None
    assert publisher_of(url) == host_of(url)


def test_local_corpus_files_are_one_publisher() -> None:
    # A corpus file's URL is its file:// URI (issue 19); stores from before hold "corpus:<path>".
    assert publisher_of("file:///home/u/papers/a.md") == "local-corpus"
    assert publisher_of("file:///srv/x/dir/b%20c.txt") == "local-corpus"
    assert publisher_of("corpus:a.md") == publisher_of("corpus:dir/b.txt") == "local-corpus"


def test_lookalike_government_host_is_not_government() -> None:
    url = "https://nih.gov.attacker.example/paper"
    assert class_of(url) == SourceClass.UNKNOWN
    assert registrable_domain(url) != "nih.gov"
    assert publisher_of(url) != "nih.gov"
    url2 = "https://nih.gov.attacker.com/paper"
    assert class_of(url2) == SourceClass.UNKNOWN
    assert publisher_of(url2) == "attacker.com"


def test_doi_urls_with_different_dois_are_different_publishers() -> None:
    a = publisher_of("https://doi.org/10.5555/abc", doi="10.5555/abc")
    b = publisher_of("https://doi.org/10.5555/xyz", doi="10.5555/xyz")
    assert a == "doi:10.5555/abc"
    assert b == "doi:10.5555/xyz"
    assert a != b
    assert "doi.org" not in {a, b}


@pytest.mark.parametrize(
    "form",
    [
        "https://doi.org/10.5555/ABC",
        "doi:10.5555/abc",
        "10.5555/Abc",
        "DOI:10.5555/ABC",
        "  10.5555/abc  ",
    ],
)
def test_doi_case_and_prefix_normalised(form: str) -> None:
    assert paper_key(doi=form) == "doi:10.5555/abc"
    assert publisher_of("https://example.com/", doi=form) == "doi:10.5555/abc"


@pytest.mark.parametrize(
    "form",
    [
        "http://doi.org/10.5555/abc",
        "https://dx.doi.org/10.5555/abc",
        "http://dx.doi.org/10.5555/ABC",
    ],
)
def test_doi_resolver_url_variants_normalised(form: str) -> None:
    assert paper_key(doi=form) == "doi:10.5555/abc"


@pytest.mark.parametrize("arxiv", ["2101.00001", "2101.00001v1", "2101.00001v12", "2101.00001V2"])
def test_arxiv_version_dropped(arxiv: str) -> None:
    assert paper_key(arxiv_id=arxiv) == "arxiv:2101.00001"
    assert publisher_of("https://arxiv.org/abs/" + arxiv, arxiv_id=arxiv) == "arxiv:2101.00001"


def test_arxiv_old_style_id() -> None:
    assert paper_key(arxiv_id="hep-th/9901001v3") == "arxiv:hep-th/9901001"


def test_arxiv_prefix_normalised() -> None:
    assert paper_key(arxiv_id="arXiv:2101.00001v2") == "arxiv:2101.00001"


def test_paper_key_strongest_identifier_first() -> None:
    assert paper_key(doi="10.1/x", pmid="123", pmcid="PMC9", arxiv_id="2101.1") == "doi:10.1/x"
    assert paper_key(pmid=" 123 ", pmcid="PMC9") == "pmid:123"
    assert paper_key(pmcid="pmc9") == paper_key(pmcid="PMC9") == "pmc:9"
    assert paper_key() is None
    assert paper_key(doi="", pmid="") is None


def test_class_of_identifiers() -> None:
    assert class_of("https://example.com/x", doi="10.1/x") == SourceClass.PEER_REVIEWED
    assert class_of("https://example.com/x", pmid="1") == SourceClass.PEER_REVIEWED
    assert class_of("https://example.com/x", pmcid="PMC1") == SourceClass.PEER_REVIEWED
    assert class_of("https://example.com/x", arxiv_id="2101.00001") == SourceClass.PRIMARY


@pytest.mark.parametrize(
    ("url", "cls"),
    [
        ("https://www.cdc.gov/tea", SourceClass.PRIMARY),
        ("https://health.nih.gov/x", SourceClass.PRIMARY),
        ("https://www.gov.uk/guidance", SourceClass.PRIMARY),
        ("https://www.who.int/news", SourceClass.PRIMARY),
        ("https://arxiv.org/abs/2101.00001", SourceClass.PRIMARY),
        ("https://www.bbc.co.uk/news", SourceClass.SECONDARY),
        ("https://www.reuters.com/world", SourceClass.SECONDARY),
        ("https://en.wikipedia.org/wiki/Tea", SourceClass.SECONDARY),
        ("https://www.nature.com/articles/x", SourceClass.PEER_REVIEWED),
        ("https://theguardian.co.uk/a", SourceClass.UNKNOWN),
        ("https://random-blog.example.com/", SourceClass.UNKNOWN),
        ("https://alice.github.io/", SourceClass.UNKNOWN),
        ("http://127.0.0.1/", SourceClass.UNKNOWN),
        ("corpus:notes.md", SourceClass.UNKNOWN),
        ("file:///home/u/papers/notes.md", SourceClass.UNKNOWN),
        ("", SourceClass.UNKNOWN),
    ],
)
def test_class_of_domains(url: str, cls: SourceClass) -> None:
    assert class_of(url) == cls


def test_weights_follow_strength_order() -> None:
    ordered = sorted(SourceClass, key=lambda c: -STRENGTH[c])
    ws = [weight(c) for c in ordered]
    assert ws == sorted(ws, reverse=True)
    assert ordered[0] == SourceClass.PEER_REVIEWED and ordered[-1] == SourceClass.UNKNOWN


def test_works_offline_with_fresh_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    with socket.socket() as probe, pytest.raises(OSError):
        probe.connect(("192.0.2.1", 80))  # the guard is live
    attempts.clear()
    _extractor.cache_clear()
    try:
        assert publisher_mod._extractor.cache_info().currsize == 0
        assert publisher_of("https://alice.github.io/x") == "alice.github.io"
        assert publisher_of("https://bob.github.io/x") == "bob.github.io"
        assert publisher_of("https://www.bbc.co.uk/news") == "bbc.co.uk"
        assert publisher_of("https://theguardian.co.uk/a") == "theguardian.co.uk"
        assert class_of("https://nih.gov.attacker.example/paper") == SourceClass.UNKNOWN
        assert class_of("https://www.cdc.gov/x") == SourceClass.PRIMARY
        assert class_of("https://www.bbc.co.uk/news") == SourceClass.SECONDARY
        assert public_suffix("https://example.co.jp/") == "co.jp"
        assert _extractor.cache_info().currsize == 1
    finally:
        _extractor.cache_clear()
    assert attempts == []
