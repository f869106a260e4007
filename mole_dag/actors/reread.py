"""Read a stored source again, for grounding. Local documents are re-read from the session's
corpus folder; web pages through a registered fetcher (the guarded one the web actor uses, with
its robots handling, rate limits and SSRF guard), so grounding never opens a side door."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mole_dag.actors.extract import ExtractionError
from mole_dag.actors.local import load_document


class NotRefetchable(Exception):
    """The source has no locator (a search provider supplied its text)."""


class Unreachable(Exception):
    """The source could not be read this time. Nothing was learned."""


WebRereader = Callable[[str], str]
_web: WebRereader | None = None


def register_web_rereader(fn: WebRereader | None) -> None:
    """The web actor registers its fetch -> extract path here."""
    global _web
    _web = fn


def reread(session: dict[str, Any], source: dict[str, Any]) -> str:
    """The source's extracted text as it reads now."""
    locator = source.get("locator")
    if not locator or source.get("provider_supplied"):
        raise NotRefetchable("no locator: the search provider supplied this page's text")
    if locator.startswith("corpus:"):
        root = Path(str(session.get("corpus") or "")).resolve()
        path = (root / locator.removeprefix("corpus:")).resolve()
        if root == Path("/").resolve() or not path.is_relative_to(root):
            raise Unreachable("locator points outside the session's corpus")
        try:
            return load_document(path, locator.removeprefix("corpus:")).text
        except (OSError, ExtractionError) as exc:
            raise Unreachable(f"could not read {locator}: {exc}") from None
    if locator.startswith(("http://", "https://")):
        if _web is None:
            raise Unreachable("no web fetcher is configured in this process")
        try:
            return _web(locator)
        except Exception as exc:  # a failed fetch is an outcome, not an error
            raise Unreachable(f"{type(exc).__name__}: {exc}") from None
    raise Unreachable(f"unknown locator scheme in {locator!r}")
