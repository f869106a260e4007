"""SearXNG: the JSON API of a self-hosted metasearch instance (`/search?format=json`; the
instance must list `json` in `search.formats`). Links and snippets: pages are fetched."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.actors.search.base import Api, Hit, SearchFailed, date_of, http_url, strip_markup
from mole_dag.core import DeadEndCause
from mole_dag.sanitize import one_line


@dataclass
class SearXNG:
    base_url: str
    api: Api
    name: str = "searxng"

    def search(self, query: str, limit: int) -> list[Hit]:
        data = self.api.get_json(
            self.base_url.rstrip("/") + "/search",
            params={"q": query, "format": "json", "pageno": 1},
        )
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise SearchFailed(
                DeadEndCause.UNREADABLE,
                "searxng: no results list in the answer (is `json` enabled in "
                "the instance's search.formats?)",
            )
        hits: list[Hit] = []
        for r in data["results"]:
            if not isinstance(r, dict) or not (url := http_url(r.get("url"))):
                continue
            hits.append(
                Hit(
                    url=url,
                    title=one_line(str(r.get("title") or "")),
                    snippet=strip_markup(r.get("content")),
                    published=date_of(r.get("publishedDate")),
                    score=float(r["score"]) if isinstance(r.get("score"), int | float) else None,
                )
            )
            if len(hits) >= limit:
                break
        return hits
