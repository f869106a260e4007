"""What every `mole` command shares: the exit statuses, the one-line user-facing error, opening
the store, amounts as printed, and the progress lines on stderr."""

from __future__ import annotations

import logging
import sys

from mole_dag.paths import default_store_path
from mole_dag.sanitize import escape_controls

EXIT_USAGE = 2
EXIT_FAILED = 1
# The model provider stopped answering: try again later (sysexits' EX_TEMPFAIL).
EXIT_UNAVAILABLE = 75


class CliError(Exception):
    """A one-line, user-facing error."""


def fmt(amount: int, unit: str) -> str:
    return f"${amount / 1_000_000:.6f}" if unit == "usd_micros" else f"{amount} tokens"


class EscapingFormatter(logging.Formatter):
    """Progress lines quote leads and titles taken from pages: controls shown as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(super().format(record))


def open_store(wait: bool = True, *, read_only: bool = False):  # noqa: ANN202
    """`read_only` for every command that only reads: it never creates a store (a typo in
    --db is an error, not a new empty store) and never writes to one (not even a damaged one)."""
    from mole_dag.store import StoreError, open_store

    try:
        return open_store(
            default_store_path(),
            lock_wait_s=None if wait else 0.0,
            on_wait=lambda m: print(f"mole: {m}", file=sys.stderr),
            read_only=read_only,
        )
    except StoreError as exc:
        raise CliError(str(exc)) from None


def progress_to_stderr(quiet: bool) -> None:
    log = logging.getLogger("mole.progress")
    log.setLevel(logging.INFO)
    log.propagate = False
    # Replaced on every call: a handler kept from an earlier command in the same process (tests,
    # `resume` after `research`) would write to a stderr that may be gone.
    for old in list(log.handlers):
        log.removeHandler(old)
    if not quiet:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(EscapingFormatter("  · %(message)s"))
        log.addHandler(h)
    logging.getLogger("mole").setLevel(logging.WARNING)
