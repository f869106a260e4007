"""Brave Search API (web search). Links and snippets: pages are fetched. Needs a key
(`X-Subscription-Token`)."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.actors.search.base import Api, Hit, date_of, http_url, strip_markup
from mole_dag.core import json_object
from mole_dag.sanitize import one_line

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"


@dataclass
class Brave:
    key: str
    api: Api
    name: str = "brave"
    endpoint: str = BRAVE_URL

    def search(self, query: str, limit: int) -> list[Hit]:
        data = self.api.get_json(
            self.endpoint,
            params={"q": query, "count": max(1, min(limit, 20))},
            headers={"Accept": "application/json", "X-Subscription-Token": self.key},
        )
        web = data.get("web") if isinstance(data, dict) else None
        results = web.get("results") if isinstance(web, dict) else None
        if results is None:
            return []  # Brave omits `web` when nothing matched
        hits: list[Hit] = []
        for r in results:
            if not isinstance(r, dict) or not (url := http_url(r.get("url"))):
                continue
            profile = json_object(r.get("profile"))
            hits.append(
                Hit(
                    url=url,
                    title=strip_markup(r.get("title")),
                    snippet=strip_markup(r.get("description")),
                    published=date_of(r.get("page_age")),
                    publisher_name=one_line(str(profile.get("name") or "")) or None,
                )
            )
            if len(hits) >= limit:
                break
        return hits
