"""The store's errors, each with a message that says why and what to do, and which of DuckDB's
errors mean which: a damaged file, another process's lock, a lost race between two writers."""

from __future__ import annotations

from pathlib import Path

import duckdb

from mole_dag.diskfull import disk_full


class StoreError(RuntimeError):
    """The store cannot be used; the message says why and what to do."""


class StoreBusy(StoreError):
    """Another process held the store for longer than this one was willing to wait."""


class StoreMissing(StoreError):
    """A read-only open found no file: reading must never create a store."""


class StoreOutdated(StoreError):
    """A read-only open found a store older than this mole's schema (a writer migrates it)."""


class StoreCorrupt(StoreError):
    """The file is there but is not a readable store (truncated, overwritten, not DuckDB)."""


class StoreUnreachable(StoreError):
    """No connection to the server could be had (it is down, or restarting)."""


def corrupt_message(path: Path, why: str) -> StoreCorrupt:
    """The error for a damaged file, in one line. Callers go through `file_lock.corrupt`, which
    also remembers the file as damaged (nothing is left beside it)."""
    if "Could not read enough bytes" in why:
        why = f"truncated: {why}"
    return StoreCorrupt(
        f"{path} is not a readable mole store ({why}); restore it from a backup, or pass --db "
        "(or MOLE_DB) to use another store"
    )


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def is_corruption(exc: BaseException) -> bool:
    """DuckDB errors that mean the file itself is damaged, not that a query was wrong."""
    text = str(exc)
    return isinstance(exc, duckdb.SerializationException) or any(
        marker in text
        for marker in (
            "Could not read enough bytes",
            "not a valid DuckDB",
            "Corrupt",
            "corrupt",
            "checksum",
        )
    )


def is_lock_error(exc: BaseException) -> bool:
    """DuckDB refusing the file because another process holds its lock."""
    return "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)


def is_conflict(exc: BaseException) -> bool:
    """A DuckDB write-write conflict: another connection to the same file in this process wrote
    the row first."""
    # DuckDB reports a commit that found no room as a TransactionException too ("Failed to
    # commit: Could not write file ...: No space left on device"): not a lost race, so not
    # retried 200 times (issue 29).
    if disk_full(exc) is not None:
        return False
    return isinstance(exc, duckdb.TransactionException) or "Conflict" in str(exc)
