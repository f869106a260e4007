"""arXiv's API (an Atom feed). Each entry carries its abstract, with the arXiv id and, for
published versions, the DOI, and links its PDF: the full text is fetched from there and mined
(issue 19), the abstract (provider-supplied: no fetch) being the fallback."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mole_dag.actors.search.base import (
    Api,
    Hit,
    authors_line,
    clean_doi,
    date_of,
    http_url,
    https,
    paragraphs,
)
from mole_dag.sanitize import one_line

ARXIV_URL = "https://export.arxiv.org/api/query"
NS = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}
_ID = re.compile(r"arxiv\.org/abs/(.+)$")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_STOP = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "which",
        "who",
        "why",
        "with",
    }
)
# arXiv's query language ANDs field terms; more than a handful of them rarely matches anything.
MAX_TERMS = 6


def search_query(query: str) -> str:
    words: list[str] = []
    for w in _WORD.findall(query):
        lw = w.lower()
        if lw not in _STOP and len(lw) > 1 and lw not in words:
            words.append(lw)
    return " AND ".join(f"all:{w}" for w in words[:MAX_TERMS]) or f"all:{query.strip()}"


@dataclass
class Arxiv:
    api: Api
    name: str = "arxiv"
    endpoint: str = ARXIV_URL

    def search(self, query: str, limit: int) -> list[Hit]:
        root = self.api.get_xml(
            self.endpoint,
            params={
                "search_query": search_query(query),
                "start": 0,
                "max_results": max(1, limit),
                "sortBy": "relevance",
            },
        )
        hits: list[Hit] = []
        for entry in root.iterfind("a:entry", NS):
            raw_id = (entry.findtext("a:id", "", NS) or "").strip()
            m = _ID.search(raw_id)
            if not m:
                continue  # arXiv reports query errors as an entry without an abs id
            arxiv_id = m.group(1)
            abstract = paragraphs(entry.findtext("a:summary", "", NS))
            pdf = (
                next(
                    (
                        ln.get("href")
                        for ln in entry.iterfind("a:link", NS)
                        if ln.get("title") == "pdf" or ln.get("type") == "application/pdf"
                    ),
                    None,
                )
                or f"https://arxiv.org/pdf/{arxiv_id}"
            )
            hits.append(
                Hit(
                    url=f"https://arxiv.org/abs/{arxiv_id}",
                    title=one_line(entry.findtext("a:title", "", NS) or ""),
                    content=abstract or None,
                    published=date_of(entry.findtext("a:published", "", NS)),
                    author=authors_line(
                        [a.findtext("a:name", "", NS) or "" for a in entry.iterfind("a:author", NS)]
                    ),
                    publisher_name="arXiv",
                    doi=clean_doi(entry.findtext("arxiv:doi", None, NS)),
                    arxiv_id=arxiv_id,
                    pdf_url=https(http_url(pdf)),
                )
            )
            if len(hits) >= limit:
                break
        return hits
