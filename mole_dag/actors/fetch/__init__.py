"""Fetching pages from the open web without letting a page choose where we connect, how much we
read, or how long we wait. See fetcher.py for the order of the checks.

The names below load on first use (module __getattr__): importing a submodule that needs none of
the HTTP stack (hosts.py, for the search settings) must not import httpx (issue 12)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mole_dag.actors.fetch.fetcher import Fetched, Fetcher, FetchFailed, FetchLimits
    from mole_dag.actors.fetch.guard import Policy, SSRFRefused

_LAZY = {
    "Fetched": "fetcher",
    "Fetcher": "fetcher",
    "FetchFailed": "fetcher",
    "FetchLimits": "fetcher",
    "Policy": "guard",
    "SSRFRefused": "guard",
}

__all__ = ["FetchFailed", "FetchLimits", "Fetched", "Fetcher", "Policy", "SSRFRefused"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
