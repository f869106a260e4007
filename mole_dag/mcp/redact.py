"""A last line against a key reaching an MCP client.

Keys are handed to provider clients only, and what mole writes passes through
mole_dag.redaction (tests/test_secrets checks that end to end). The server still passes every
research-mode answer and every error message through `redact` before it leaves, because those
carry text from places it does not write itself: a worker's log, a stored report, a library's
exception. The toolkit's answers are functions of the caller's own arguments and are not
rewritten (that would break byte offsets)."""

from __future__ import annotations

from typing import Any

from mole_dag import redaction

MASK = redaction.MASK


def secrets() -> list[str]:
    return redaction.known_secrets()


def redact(text: str, known: list[str] | None = None) -> str:
    return redaction.redact(text, tuple(known or ()))


def redact_all(value: Any, known: list[str] | None = None) -> Any:
    """`redact` applied to every string inside a JSON-like value."""
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, dict):
        return {k: redact_all(v, known) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(v, known) for v in value]
    return value
