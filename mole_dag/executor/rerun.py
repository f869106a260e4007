"""A rerun's first reading (issue 32): every source the previous session's claims cite is read
again, and every source this session stores is set beside the previous session's copy of the
same URL.

What a re-read learns goes to `source_changes`, one row per URL:
- unchanged: the same content digest, or a 304 to a conditional request. The mining stage then
  copies the previous claims instead of mining (mole_dag.mining.mine), at no model cost;
- changed: another digest; the page is stored and mined as usual;
- gone: HTTP 404/410, or the corpus file is not there any more; nothing is stored;
- unreachable: anything else that failed (a timeout, a refused connection, robots). Nothing was
  learned, so the previous copy is carried as it was: an outage removes no finding;
- added: the previous session never read the URL.

A source the new search finds again is classified from what the executor stored; only the ones
it did not find are read here, so nothing is fetched twice in a round."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mole_dag.actors.local import LOCATOR
from mole_dag.context import Run
from mole_dag.core import Document, columns
from mole_dag.executor.ingest import store_source
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import SessionRow, fetch_all_named, fetch_named

log = logging.getLogger("mole.rerun")

UNCHANGED, CHANGED, GONE = "unchanged", "changed", "gone"
UNREACHABLE, ADDED = "unreachable", "added"
# What a server says when a page was removed, not when it failed to answer.
GONE_STATUSES = frozenset({404, 410})


@dataclass(frozen=True)
class PreviousSource:
    """A source of the previous session, as a re-read needs it (`rerun_cited_sources`)."""

    id: str
    url: str
    actor: str
    locator: str | None
    provider_supplied: bool
    content_sha256: str
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True)
class Reread:
    """What one re-read learned. `document`: the text as it reads now (changed or unchanged
    when the server sent it again); None when gone, unreachable or not modified."""

    outcome: str
    detail: str
    document: Document | None = None


def read_again(session: SessionRow, source: PreviousSource, store: Store | None) -> Reread:
    """Read `source` (of `session`) again: from the session's corpus folder, or over the web
    through the session's guarded fetcher, conditionally when the server gave validators."""
    locator = source.locator
    if not locator or source.provider_supplied:
        return Reread(UNREACHABLE, "a search provider supplied its text: it cannot be re-read")
    if locator.startswith(LOCATOR):
        return _read_file(session, locator)
    if locator.startswith(("http://", "https://")):
        return _read_page(session, store, source)
    return Reread(UNREACHABLE, f"unknown locator scheme in {locator!r}")


def _read_file(session: SessionRow, locator: str) -> Reread:
    from mole_dag.actors.extract import ExtractionError
    from mole_dag.actors.local import load_document

    root = Path(session.corpus or "").resolve()
    path = (root / locator.removeprefix(LOCATOR)).resolve()
    if root == Path("/").resolve() or not path.is_relative_to(root):
        return Reread(UNREACHABLE, "the locator points outside the session's corpus")
    if not root.is_dir():
        # The whole folder missing is the corpus moved or unmounted, not each file deleted.
        return Reread(UNREACHABLE, f"the corpus folder {root} is not there")
    if not path.is_file():
        return Reread(GONE, "the file is no longer in the corpus")
    try:
        doc = load_document(path)
    except (OSError, ExtractionError) as exc:
        return Reread(UNREACHABLE, f"could not read {locator}: {exc}")
    doc.metadata["path"] = locator.removeprefix(LOCATOR)
    doc.metadata["locator"] = locator
    return Reread(CHANGED, "", doc)  # the caller compares digests


def _read_page(session: SessionRow, store: Store | None, source: PreviousSource) -> Reread:
    # Imported here: the executor does not load the HTTP stack unless a page is read.
    from mole_dag.actors.base import DeadEnd
    from mole_dag.actors.fetch import Fetcher, FetchFailed, Policy
    from mole_dag.actors.fetch.fetcher import NotModified
    from mole_dag.actors.search_settings import load_for_session
    from mole_dag.actors.web import page_document
    from mole_dag.actors.web_registry import FETCH_LIMITS

    allow_hosts = () if store is None else load_for_session(store, session.id)[1]
    url = source.locator or source.url
    try:
        fetched = Fetcher(Policy.of(allow_hosts), FETCH_LIMITS).fetch(
            url, etag=source.etag, last_modified=source.last_modified
        )
    except NotModified:
        return Reread(UNCHANGED, "the server says it has not changed (HTTP 304)")
    except FetchFailed as exc:
        if exc.status in GONE_STATUSES:
            return Reread(GONE, f"HTTP {exc.status}")
        return Reread(UNREACHABLE, f"{exc.cause}: {exc.detail}")
    except (ValueError, OSError) as exc:
        return Reread(UNREACHABLE, f"{type(exc).__name__}: {exc}")
    got = page_document(fetched)
    if isinstance(got, DeadEnd):
        return Reread(UNREACHABLE, f"{got.cause}: {got.detail or 'no document'}")
    got.metadata.setdefault("locator", url)
    return Reread(CHANGED, "", got)


def digest(text: str) -> str:
    """A source's content digest, as ingest stores it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class RerunRead:
    reread: int = 0
    unchanged: int = 0
    changed: int = 0
    gone: int = 0
    unreachable: int = 0
    added: int = 0


def reread_previous(run: Run) -> RerunRead:
    """Read again the previous session's cited sources this session has not stored, store what
    was read, link it to a lead (so the miner takes it up or carries its claims), and classify
    every source of this session against the previous one. Idempotent: a URL already
    classified is left alone, so a resumed round reads nothing twice."""
    out = RerunRead()
    sess = run.session()
    prev_id = sess.previous_session_id
    if not prev_id:
        return out
    store, sid = run.store, run.session_id
    prev = store.one(SessionRow, q("session_get"), {"session_id": prev_id})
    done = {r["url"] for r in store.named("source_changes_urls", {"session_id": sid})}
    have = {r["url"] for r in store.named("source_urls", {"session_id": sid})}
    cited = [
        _previous(r)
        for r in store.named("rerun_cited_sources", {"session_id": prev_id})
        if r["url"] not in done and r["url"] not in have
    ]
    leads = store.named("rerun_leads", {"session_id": sid})
    reads = [(src, read_again(prev or sess, src, store)) for src in cited] if prev else []
    out.reread = len(reads)

    def write(cur: Any) -> None:
        now = utcnow()
        known = dict(cur.execute(q("source_urls"), {"session_id": sid}).fetchall())
        links: list[dict[str, Any]] = []
        for src, got in reads:
            new_id: str | None = None
            outcome, detail = got.outcome, got.detail
            if got.document is not None:
                new_id, _ = store_source(cur, sid, src.actor, got.document, known)
                same = digest(got.document.text) == src.content_sha256
                outcome = UNCHANGED if same else CHANGED
            elif outcome in (UNCHANGED, UNREACHABLE):
                # Not read now: the previous copy, carried as it was.
                new_id = _copy_source(cur, sid, src.id, known)
            if new_id is not None:
                lead = _lead_for(cur, src.id, leads)
                if lead is not None:
                    links.append(
                        {
                            "lead_id": lead["lead_id"],
                            "sub_question_id": lead["sub_question_id"],
                            "source_id": new_id,
                            # After anything a search ranked: a re-read is no search hit.
                            "rank": 1000,
                            "score": None,
                        }
                    )
            cur.execute(
                q("source_change_insert"),
                {
                    "session_id": sid,
                    "previous_session_id": prev_id,
                    "url": src.url,
                    "old_source_id": src.id,
                    "new_source_id": new_id,
                    "outcome": outcome,
                    "detail": detail or None,
                    "now": now,
                },
            )
            setattr(out, outcome, getattr(out, outcome) + 1)
        if links:
            cur.execute(
                q("lead_source_insert_many"),
                {
                    "session_id": sid,
                    "now": now,
                    **columns(links, ("lead_id", "sub_question_id", "source_id", "rank", "score")),
                },
            )
        for r in fetch_all_named(
            cur, q("rerun_unclassified"), {"session_id": sid, "previous_session_id": prev_id}
        ):
            new_id, url, old_id = r["new_source_id"], r["url"], r["old_source_id"]
            new_sha, old_sha = r["new_sha256"], r["old_sha256"]
            outcome = ADDED if old_id is None else (UNCHANGED if new_sha == old_sha else CHANGED)
            cur.execute(
                q("source_change_insert"),
                {
                    "session_id": sid,
                    "previous_session_id": prev_id,
                    "url": url,
                    "old_source_id": old_id,
                    "new_source_id": new_id,
                    "outcome": outcome,
                    "detail": None,
                    "now": now,
                },
            )
            setattr(out, outcome, getattr(out, outcome) + 1)

    store.transact(write)
    if out.reread or out.unchanged or out.changed:
        run.progress(
            f"rerun: {out.reread} cited sources read again; {out.unchanged} unchanged, "
            f"{out.changed} changed, {out.gone} gone, {out.unreachable} unreachable, "
            f"{out.added} added"
        )
    return out


def _previous(row: dict[str, Any]) -> PreviousSource:
    return PreviousSource(
        row["id"],
        row["url"],
        row["actor"],
        row.get("locator"),
        bool(row["provider_supplied"]),
        row["content_sha256"],
        row.get("etag"),
        row.get("last_modified"),
    )


def _lead_for(cur: Any, old_source_id: str, leads: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The lead a source read again is filed under: the first lead of the sub-question worded
    as the one its claims were mined for, else the first lead of the plan."""
    if not leads:
        return None
    wanted = [
        r["sub_question"]
        for r in fetch_all_named(cur, q("rerun_source_sub_questions"), {"source_id": old_source_id})
    ]
    for text in wanted:
        for lead in leads:
            if lead["sub_question"] == text:
                return lead
    return leads[0]


def _copy_source(cur: Any, sid: str, old_source_id: str, known: dict[str, str]) -> str:
    """The previous session's source, text and page map, as a source of this session."""
    from mole_dag.core import stable_id

    row = fetch_named(cur, q("source_get"), {"source_id": old_source_id})
    assert row is not None  # read from the store in this transaction's session
    if row["url"] in known:
        return known[row["url"]]
    new_id = stable_id(sid, row["url"], prefix="src-")
    params = {
        k: row.get(k)
        for k in (
            "url",
            "title",
            "publisher",
            "publisher_name",
            "author",
            "published",
            "doi",
            "pmid",
            "pmcid",
            "arxiv_id",
            "source_class",
            "actor",
            "provider_supplied",
            "content_sha256",
            "byte_length",
            "locator",
            "etag",
            "last_modified",
        )
    }
    cur.execute(q("source_insert"), {**params, "id": new_id, "session_id": sid, "now": utcnow()})
    if row.get("origin"):
        # Where its class and publisher were read from (issue 31), carried with the source.
        cur.execute(q("source_origin_set"), {"id": new_id, "origin": row["origin"]})
    chunks = fetch_all_named(cur, q("source_copy_chunks"), {"source_id": old_source_id})
    if chunks:
        cur.execute(
            q("chunk_insert_many"),
            {
                "session_id": sid,
                "source_id": new_id,
                "id": [f"{new_id}-{int(c['ordinal']):04d}" for c in chunks],
                "ordinal": [int(c["ordinal"]) for c in chunks],
                "byte_start": [int(c["byte_start"]) for c in chunks],
                "byte_end": [int(c["byte_end"]) for c in chunks],
                "text": [c["text"] for c in chunks],
            },
        )
    pages = fetch_all_named(cur, q("source_copy_pages"), {"source_id": old_source_id})
    if pages:
        cur.execute(
            q("source_pages_insert_many"),
            {
                "session_id": sid,
                "source_id": new_id,
                "page": [int(p["page"]) for p in pages],
                "byte_start": [int(p["byte_start"]) for p in pages],
                "byte_end": [int(p["byte_end"]) for p in pages],
            },
        )
    known[row["url"]] = new_id
    return new_id
