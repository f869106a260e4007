"""Store what an actor found: the source's metadata and its chunks. The raw text itself is not
kept anywhere else; the chunks tile it exactly, which is all quote checks need."""

from __future__ import annotations

import hashlib
from typing import Any

from mole_dag.actors.local import LOCATOR
from mole_dag.actors.origin import Origin, read_origin
from mole_dag.chunk import chunk_text
from mole_dag.core import Document, SourceClass, stable_id
from mole_dag.publisher import publisher_of
from mole_dag.store import q, utcnow
from mole_dag.store.records import scalar
from mole_dag.verifier.source_class import class_of


def locator_of(doc: Document) -> str | None:
    """Where grounding can read this source again. A page a search provider supplied has no
    locator: re-fetching it would compare against different text and manufacture a mismatch."""
    if doc.provider_supplied:
        return None
    if doc.metadata.get("locator"):
        return doc.metadata["locator"]
    return doc.url if doc.url.startswith(("http://", "https://")) else None


def store_source(
    cur: Any, session_id: str, actor: str, doc: Document, known: dict[str, str] | None = None
) -> tuple[str, int]:
    """Insert the source and its chunks unless this session already has the URL. Returns the
    source id and how many chunks were written. `known`: the session's sources by URL, read
    once by a caller storing many pages (kept up to date here), instead of a query per page."""
    urls = [doc.url]
    locator = locator_of(doc)
    if locator and locator.startswith(LOCATOR) and locator != doc.url:
        # A corpus file that a store written before file:// URLs (issue 19) holds under its
        # locator, "corpus:<path>", as URL: a resumed session's same source, not a second one.
        urls.append(locator)
    for url in urls:
        if known is not None:
            have = known.get(url)
        else:
            have = scalar(cur, str, q("source_by_url"), {"session_id": session_id, "url": url})
        if have:
            return have, 0
    now = utcnow()
    ids = {"doi": doc.doi, "pmid": doc.pmid, "pmcid": doc.pmcid, "arxiv_id": doc.arxiv_id}
    source_id = stable_id(session_id, doc.url, prefix="src-")
    publisher = publisher_of(doc.url, **ids)
    source_class = class_of(doc.url, **ids)
    origin: Origin | None = None
    if doc.url.startswith("file:") and source_class == SourceClass.UNKNOWN:
        # A file in a local folder has no domain to classify it or count its publisher by:
        # both are read from the document itself (issue 31), with where each was found.
        origin = read_origin(doc)
        source_class = origin.source_class
        if origin.publisher and publisher == "local-corpus":
            publisher = origin.publisher
    data = doc.text.encode("utf-8")
    cur.execute(
        q("source_insert"),
        {
            "id": source_id,
            "session_id": session_id,
            "url": doc.url,
            "title": doc.title or None,
            "publisher": publisher,
            "publisher_name": doc.publisher,
            "author": doc.author,
            "published": doc.published,
            **ids,
            "source_class": str(source_class),
            "actor": actor,
            "provider_supplied": doc.provider_supplied,
            "content_sha256": hashlib.sha256(data).hexdigest(),
            "byte_length": len(data),
            "now": now,
            "locator": locator,
            "etag": doc.metadata.get("etag"),
            "last_modified": doc.metadata.get("last_modified"),
        },
    )
    if origin is not None:
        cur.execute(q("source_origin_set"), {"id": source_id, "origin": origin.explanation()})
    spans = chunk_text(doc.text)
    if spans:
        # One statement for the page's chunks, not one per chunk (issue 12).
        cur.execute(
            q("chunk_insert_many"),
            {
                "session_id": session_id,
                "source_id": source_id,
                "id": [f"{source_id}-{s.ordinal:04d}" for s in spans],
                "ordinal": [s.ordinal for s in spans],
                "byte_start": [s.byte_start for s in spans],
                "byte_end": [s.byte_end for s in spans],
                "text": [s.text for s in spans],
            },
        )
    if doc.pages:
        # The page map (issue 19): page n covers bytes [pages[n-1], pages[n]) of the text.
        ends = [*doc.pages[1:], len(data)]
        cur.execute(
            q("source_pages_insert_many"),
            {
                "session_id": session_id,
                "source_id": source_id,
                "page": list(range(1, len(doc.pages) + 1)),
                "byte_start": list(doc.pages),
                "byte_end": ends,
            },
        )
    if known is not None:
        known[doc.url] = source_id
    return source_id, len(spans)
