"""Who published a source: the entity whose independent word counts once.

eTLD+1 from the public suffix list (tldextract's bundled snapshot: no network at run time), never
the last two labels: that shortcut merges bbc.co.uk with theguardian.co.uk as "co.uk" and splits
nothing that the list treats as separate, such as alice.github.io and bob.github.io. Scholarly
sources are counted by paper, because every DOI resolves through one host (doi.org) and counting
hosts would make all papers one publisher."""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

import tldextract


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # suffix_list_urls=() and cache_dir=None: use the snapshot shipped inside the package only.
    return tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
    )


def host_of(url: str) -> str:
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    except ValueError:
        return ""
    return host.rstrip(".").lower()


def registrable_domain(url_or_host: str) -> str | None:
    """eTLD+1, or None when the host has no public suffix (an IP, localhost, an unlisted TLD)."""
    host = host_of(url_or_host)
    if not host:
        return None
    got = _extractor()(host)
    return got.top_domain_under_public_suffix or None


def public_suffix(url_or_host: str) -> str | None:
    host = host_of(url_or_host)
    return (_extractor()(host).suffix or None) if host else None


_ARXIV_VERSION = re.compile(r"v\d+$")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", re.IGNORECASE)
_ARXIV_PREFIX = re.compile(r"^(?:https?://arxiv\.org/abs/|arxiv:)", re.IGNORECASE)


def paper_key(
    doi: str | None = None,
    pmid: str | None = None,
    pmcid: str | None = None,
    arxiv_id: str | None = None,
) -> str | None:
    """The identity of a paper, strongest identifier first."""
    if doi:
        return "doi:" + _DOI_PREFIX.sub("", doi.strip()).lower()
    if pmid:
        return "pmid:" + pmid.strip()
    if pmcid:
        return "pmc:" + pmcid.strip().upper().removeprefix("PMC")
    if arxiv_id:
        return "arxiv:" + _ARXIV_VERSION.sub("", _ARXIV_PREFIX.sub("", arxiv_id.strip()).lower())
    return None


def publisher_of(
    url: str,
    *,
    doi: str | None = None,
    pmid: str | None = None,
    pmcid: str | None = None,
    arxiv_id: str | None = None,
) -> str:
    """The publisher key a source counts under."""
    paper = paper_key(doi, pmid, pmcid, arxiv_id)
    if paper:
        return paper
    if url.startswith(("file:", "corpus:")):
        # A local file with no stated origin (its file:// URL, or "corpus:<path>" in a store
        # written before those): all such files count as one publisher, the user.
        return "local-corpus"
    domain = registrable_domain(url)
    if domain:
        return domain
    host = host_of(url)
    return host or url
