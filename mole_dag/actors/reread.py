"""Read a stored source again, for grounding. Local documents are re-read from the session's
corpus folder; web pages through the web actor's guarded fetcher with the session's allow-list
(its robots handling, rate limits and SSRF guard), so grounding never opens a side door."""

from __future__ import annotations

from pathlib import Path

from mole_dag.actors.extract import ExtractionError
from mole_dag.actors.local import LOCATOR, load_document
from mole_dag.store import Store
from mole_dag.store.records import SessionRow, SourceRow


class NotRefetchable(Exception):
    """The source has no locator (a search provider supplied its text)."""


class Unreachable(Exception):
    """The source could not be read this time. Nothing was learned."""


def reread(session: SessionRow | None, source: SourceRow | None, store: Store | None = None) -> str:
    """The source's extracted text as it reads now (None: the row is missing)."""
    locator = source.locator if source else None
    if not locator or (source and source.provider_supplied):
        raise NotRefetchable("no locator: the search provider supplied this page's text")
    if locator.startswith(LOCATOR):
        root = Path((session.corpus if session else None) or "").resolve()
        path = (root / locator.removeprefix(LOCATOR)).resolve()
        if root == Path("/").resolve() or not path.is_relative_to(root):
            raise Unreachable("locator points outside the session's corpus")
        try:
            return load_document(path).text
        except (OSError, ExtractionError) as exc:
            raise Unreachable(f"could not read {locator}: {exc}") from None
    if locator.startswith(("http://", "https://")):
        from mole_dag.actors.fetch.fetcher import FetchFailed
        from mole_dag.actors.web_registry import reread_page

        try:
            return reread_page(session, store, locator)
        except FetchFailed as exc:  # a failed fetch is an outcome, not an error
            raise Unreachable(f"{exc.cause}: {exc.detail}") from None
        except (ValueError, OSError) as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from None
    raise Unreachable(f"unknown locator scheme in {locator!r}")
