"""Host names as the allow-list compares them. Apart from guard.py so the search settings can
normalise hosts without importing the HTTP stack (issue 12)."""

from __future__ import annotations


def normalise_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()
