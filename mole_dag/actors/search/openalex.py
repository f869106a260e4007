"""OpenAlex works search. Abstracts arrive as an inverted index (word -> positions), rebuilt
here into text; a work without one is fetched from its landing page instead. DOI, PMID and
PMCID are read from `ids`. A work's open-access PDF (`best_oa_location.pdf_url`, else any open
location's) is fetched and mined in place of the abstract (issue 19)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mole_dag.actors.search.base import Api, Hit, authors_line, clean_doi, date_of, http_url
from mole_dag.core import json_object
from mole_dag.sanitize import one_line

OPENALEX_URL = "https://api.openalex.org/works"


def abstract_from_index(index: Any) -> str:
    if not isinstance(index, dict) or not index:
        return ""
    placed: dict[int, str] = {}
    for word, positions in index.items():
        if isinstance(positions, list):
            for p in positions:
                if isinstance(p, int) and 0 <= p < 100_000:
                    placed[p] = str(word)
    return " ".join(placed[i] for i in sorted(placed))


def _tail(value: Any) -> str | None:
    """OpenAlex ids are URLs; the identifier is the last path segment."""
    if not value:
        return None
    return str(value).rstrip("/").rsplit("/", 1)[-1] or None


@dataclass
class OpenAlex:
    api: Api
    mailto: str | None = None
    key: str | None = None
    name: str = "openalex"
    endpoint: str = OPENALEX_URL

    def search(self, query: str, limit: int) -> list[Hit]:
        params: dict[str, Any] = {"search": query, "per-page": max(1, min(limit, 50))}
        if self.mailto:
            params["mailto"] = self.mailto
        if self.key:
            params["api_key"] = self.key
        data = self.api.get_json(self.endpoint, params=params)
        results = data.get("results") if isinstance(data, dict) else None
        hits: list[Hit] = []
        for w in results or []:
            if not isinstance(w, dict) or w.get("is_retracted"):
                continue
            ids = json_object(w.get("ids"))
            doi = clean_doi(w.get("doi") or ids.get("doi"))
            pmid = _tail(ids.get("pmid"))
            pmc = _tail(ids.get("pmcid"))
            pmcid = f"PMC{pmc.upper().removeprefix('PMC')}" if pmc else None
            loc = json_object(w.get("primary_location"))
            source = json_object(loc.get("source"))
            url = (
                (f"https://doi.org/{doi}" if doi else None)
                or loc.get("landing_page_url")
                or w.get("id")
            )
            if not url or not str(url).lower().startswith(("http://", "https://")):
                continue
            authors = [
                a.get("author", {}).get("display_name") or ""
                for a in w.get("authorships") or []
                if isinstance(a, dict)
            ]
            abstract = abstract_from_index(w.get("abstract_inverted_index"))
            oa = [json_object(w.get("best_oa_location"))] + [
                json_object(x) for x in w.get("locations") or [] if json_object(x).get("is_oa")
            ]
            pdf = next((u for u in (http_url(x.get("pdf_url")) for x in oa) if u), None)
            hits.append(
                Hit(
                    url=str(url),
                    title=one_line(str(w.get("display_name") or w.get("title") or "")),
                    content=abstract or None,
                    published=date_of(w.get("publication_date")),
                    author=authors_line(authors),
                    publisher_name=one_line(str(source.get("display_name") or "")) or None,
                    doi=doi,
                    pmid=pmid,
                    pmcid=pmcid,
                    pdf_url=pdf,
                )
            )
            if len(hits) >= limit:
                break
        return hits
