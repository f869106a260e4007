"""A last line against a key reaching an MCP client.

Keys are handed to provider clients only and never stored, logged or reported (tests/test_secrets
checks that end to end). The server still passes every research-mode answer and every error
message through `redact` before it leaves, because those carry text from places it does not
write itself: a worker's log, a stored report, a library's exception. The toolkit's answers are
functions of the caller's own arguments and are not rewritten (that would break byte offsets)."""

from __future__ import annotations

import os
import re
from typing import Any

# Environment variables that hold credentials by the usual naming conventions.
_SECRET_NAME = re.compile(r"(API_KEY|APIKEY|_TOKEN|SECRET|PASSWORD|AUTH)", re.IGNORECASE)
# Shorter values are too likely to occur by chance in ordinary text to be worth replacing.
MIN_SECRET_CHARS = 8
MASK = "[redacted]"


def _config_secrets() -> list[str]:
    """api_key values in the user's config file, if it is readable."""
    try:
        from mole_dag.config import load_config

        cfg = load_config()
    except Exception:  # noqa: BLE001 - an unreadable config has no keys to hide
        return []
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, str) and _SECRET_NAME.search(str(key)):
                    found.append(value)
                else:
                    walk(value)

    walk(cfg)
    return found


def secrets() -> list[str]:
    values = [v for k, v in os.environ.items() if _SECRET_NAME.search(k)]
    values += _config_secrets()
    # Longest first, so a key that contains another is masked whole.
    return sorted({v for v in values if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def redact(text: str, known: list[str] | None = None) -> str:
    for value in secrets() if known is None else known:
        if value in text:
            text = text.replace(value, MASK)
    return text


def redact_all(value: Any, known: list[str] | None = None) -> Any:
    """`redact` applied to every string inside a JSON-like value."""
    known = secrets() if known is None else known
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, dict):
        return {k: redact_all(v, known) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(v, known) for v in value]
    return value
