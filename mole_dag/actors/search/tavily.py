"""Tavily search. It can return the page text itself (`raw_content`): when it does, the fetch is
skipped and the source is marked provider-supplied. Needs a key (Bearer token)."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.actors.search.base import Api, Hit, SearchFailed, date_of, http_url, strip_markup
from mole_dag.core import DeadEndCause
from mole_dag.sanitize import one_line

TAVILY_URL = "https://api.tavily.com/search"


@dataclass
class Tavily:
    key: str
    api: Api
    name: str = "tavily"
    endpoint: str = TAVILY_URL

    def search(self, query: str, limit: int) -> list[Hit]:
        data = self.api.post_json(
            self.endpoint,
            {
                "query": query,
                "max_results": max(1, min(limit, 20)),
                "search_depth": "basic",
                "include_raw_content": True,
                "include_answer": False,
                "include_images": False,
            },
            headers={"Authorization": f"Bearer {self.key}"},
        )
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise SearchFailed(DeadEndCause.UNREADABLE, "tavily: no results list in the answer")
        hits: list[Hit] = []
        for r in results:
            if not isinstance(r, dict) or not (url := http_url(r.get("url"))):
                continue
            raw = r.get("raw_content")
            hits.append(
                Hit(
                    url=url,
                    title=one_line(str(r.get("title") or "")),
                    snippet=strip_markup(r.get("content")),
                    content=raw if isinstance(raw, str) and raw.strip() else None,
                    published=date_of(r.get("published_date")),
                    score=float(r["score"]) if isinstance(r.get("score"), int | float) else None,
                )
            )
            if len(hits) >= limit:
                break
        return hits
