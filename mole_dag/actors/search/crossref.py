"""Crossref works search. Abstracts, when a publisher deposited one, are JATS XML and become
the source text; without one the DOI's landing page is fetched (each redirect guarded). A PDF
the publisher marks for text mining (`link`, intended-application text-mining) is fetched and
mined in place of the abstract (issue 19)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from mole_dag.actors.search.base import (
    Api,
    Hit,
    authors_line,
    clean_doi,
    http_url,
    paragraphs,
)
from mole_dag.sanitize import one_line

CROSSREF_URL = "https://api.crossref.org/works"


def _first(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value or "")


def _issued(item: dict[str, Any]) -> date | None:
    for key in ("published-print", "published-online", "issued", "created"):
        parts = (item.get(key) or {}).get("date-parts") if isinstance(item.get(key), dict) else None
        if parts and isinstance(parts, list) and parts[0] and parts[0][0]:
            p = [int(x) for x in parts[0] if isinstance(x, int)] + [1, 1]
            try:
                return date(p[0], p[1], p[2])
            except ValueError:
                continue
    return None


@dataclass
class Crossref:
    api: Api
    mailto: str | None = None
    name: str = "crossref"
    endpoint: str = CROSSREF_URL

    def search(self, query: str, limit: int) -> list[Hit]:
        params: dict[str, Any] = {
            "query": query,
            "rows": max(1, min(limit, 40)),
            "select": "DOI,title,author,issued,published-print,published-online,abstract,URL,"
            "container-title,publisher,type,link",
        }
        if self.mailto:
            params["mailto"] = self.mailto
        data = self.api.get_json(self.endpoint, params=params)
        msg = data.get("message") if isinstance(data, dict) else None
        items = msg.get("items") if isinstance(msg, dict) else None
        hits: list[Hit] = []
        for it in items or []:
            if not isinstance(it, dict) or not (doi := clean_doi(it.get("DOI"))):
                continue
            authors = [
                " ".join(x for x in (a.get("given"), a.get("family")) if x) or a.get("name", "")
                for a in it.get("author") or []
                if isinstance(a, dict)
            ]
            abstract = paragraphs(it.get("abstract"))
            links = [x for x in it.get("link") or [] if isinstance(x, dict)]
            mining = [x for x in links if x.get("intended-application") == "text-mining"]
            pdf = next(
                (
                    http_url(x.get("URL"))
                    for x in sorted(
                        mining, key=lambda x: x.get("content-type") != "application/pdf"
                    )
                    if x.get("content-type") in ("application/pdf", "unspecified")
                ),
                None,
            )
            hits.append(
                Hit(
                    url=f"https://doi.org/{doi}",
                    title=one_line(_first(it.get("title"))),
                    content=abstract or None,
                    published=_issued(it),
                    author=authors_line(authors),
                    publisher_name=one_line(
                        _first(it.get("container-title")) or str(it.get("publisher") or "")
                    )
                    or None,
                    doi=doi,
                    pdf_url=pdf,
                )
            )
            if len(hits) >= limit:
                break
        return hits
