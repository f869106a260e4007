"""Search providers by name: what each needs to run (a key, an instance URL), how fast it may be
asked (per-host pacing shared machine-wide), and what one query costs."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mole_dag.actors.search.base import Api, Hit, Provider, SearchFailed

# The providers and their HTTP stack (httpx, lxml: ~0.5 s at import) load on first use, not
# when a session without web search names its actors or settings read the provider names
# (issue 12). `from mole_dag.actors.search import Api` still works, through __getattr__.
_LAZY = {
    "Api": "base",
    "Hit": "base",
    "Provider": "base",
    "SearchFailed": "base",
    "Arxiv": "arxiv",
    "Brave": "brave",
    "Crossref": "crossref",
    "OpenAlex": "openalex",
    "PubMed": "pubmed",
    "SearXNG": "searxng",
    "Tavily": "tavily",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


@dataclass(frozen=True)
class Spec:
    name: str
    needs_key: bool = False
    needs_url: bool = False
    # Environment variables a key may come from, in order (config's `keys.<name>` comes first).
    key_env: tuple[str, ...] = ()
    # Seconds between two queries to the provider's host, across every session on the machine.
    interval_s: float = 1.0
    # Price of one query in micro-USD, reserved on the ledger before the query is sent. Guesses
    # from the providers' published pay-as-you-go prices, flagged as such; a free plan is
    # charged anyway, which overstates spend rather than hiding it.
    price_usd_micros: int = 0


SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        # Self-hosted: the user's own instance paces its upstream engines.
        Spec("searxng", needs_url=True, interval_s=0.0),
        # ~$5 per 1000 queries; 1 query/s on the entry plan.
        Spec(
            "brave",
            needs_key=True,
            key_env=("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY"),
            interval_s=1.0,
            price_usd_micros=5_000,
        ),
        # One credit per basic search, ~$0.008 per credit pay-as-you-go.
        Spec(
            "tavily",
            needs_key=True,
            key_env=("TAVILY_API_KEY",),
            interval_s=0.5,
            price_usd_micros=8_000,
        ),
        # arXiv asks for no more than one request every three seconds.
        Spec("arxiv", interval_s=3.0),
        # OpenAlex allows 10 requests/s; a key is optional.
        Spec("openalex", key_env=("OPENALEX_API_KEY",), interval_s=0.2),
        # Crossref's public pool is generous; one per second is polite.
        Spec("crossref", interval_s=1.0),
        # NCBI: 3 requests/s without a key, 10 with one (see pubmed_interval).
        Spec("pubmed", key_env=("NCBI_API_KEY",), interval_s=0.34),
    )
}

SEARCH_PROVIDERS = tuple(SPECS)


def build(
    name: str, *, key: str | None, searxng_url: str | None, contact_email: str | None
) -> Provider:
    from mole_dag.actors.search.arxiv import Arxiv
    from mole_dag.actors.search.base import Api
    from mole_dag.actors.search.brave import Brave
    from mole_dag.actors.search.crossref import Crossref
    from mole_dag.actors.search.openalex import OpenAlex
    from mole_dag.actors.search.pubmed import PubMed
    from mole_dag.actors.search.searxng import SearXNG
    from mole_dag.actors.search.tavily import Tavily

    spec = SPECS[name]
    interval = spec.interval_s
    if name == "pubmed" and key:
        interval = 0.1
    api = Api(name, interval)
    if name == "searxng":
        assert searxng_url, "searxng needs an instance URL"
        return SearXNG(searxng_url, api)
    if name == "brave":
        assert key
        return Brave(key, api)
    if name == "tavily":
        assert key
        return Tavily(key, api)
    if name == "arxiv":
        return Arxiv(api)
    if name == "openalex":
        return OpenAlex(api, mailto=contact_email, key=key)
    if name == "crossref":
        return Crossref(api, mailto=contact_email)
    if name == "pubmed":
        return PubMed(api, key=key, email=contact_email)
    raise KeyError(name)


__all__ = ["SEARCH_PROVIDERS", "SPECS", "Api", "Hit", "Provider", "SearchFailed", "Spec", "build"]
