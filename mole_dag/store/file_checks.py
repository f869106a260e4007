"""Checks of a store file before it is opened: is it there, writable, and a DuckDB file at all.

A file that is visibly not a store is refused with one line, before anything is created beside
it (a hand-over lock file, a corpus index) and before DuckDB opens it."""

from __future__ import annotations

import os
from pathlib import Path

from mole_dag.store.dialect import is_postgres_url
from mole_dag.store.errors import StoreError
from mole_dag.store.file_lock import corrupt
from mole_dag.store.shared_file import file_for

# DuckDB's file starts with a 4 KiB main header carrying "DUCK" at byte 8, then two 4 KiB database
# headers (its storage format since 0.9, read from its source: a guess flagged as one). A file
# without them is not a store, and a read-only open refuses it before DuckDB opens it. Writers
# skip this check: another process may be creating the file, briefly shorter than its headers
# (an MCP worker and a status poll raced on exactly that), and DuckDB's own open refuses a
# damaged file without writing to it (measured on truncated copies).
# Truncation cannot be judged from the length: DuckDB trims free blocks at the end of the file
# while the header still counts them, so a whole store can be shorter than its header says.
# Truncation shows as a read error when DuckDB reaches a lost block, and is reported then.
_HEADER_BYTES = 3 * 4096


def check_file(path: Path) -> None:
    """Raise StoreCorrupt if the file at `path` is visibly not a DuckDB database."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(_HEADER_BYTES)
    except OSError as exc:
        raise StoreError(f"cannot read the store {path}: {exc.strerror}") from None
    if len(head) < _HEADER_BYTES:
        raise corrupt(path, f"{size:,} bytes, too short to be a DuckDB database")
    if head[8:12] != b"DUCK":
        raise corrupt(path, "not a DuckDB database file")


def visibly_not_duckdb(path: Path) -> bool:
    """Whether a file a writer is about to open is certainly not a DuckDB database: bytes of its
    own where DuckDB's magic belongs. A file of zeros or shorter than the magic may be a store
    another process is creating this instant (see _HEADER_BYTES), so it is left to DuckDB."""
    try:
        with path.open("rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return len(head) == 12 and head[8:12] != b"DUCK" and any(head)


def refuse_if_not_duckdb(path: Path) -> None:
    if visibly_not_duckdb(path):
        raise corrupt(path, "not a DuckDB database file")


def check_target(target: str | os.PathLike[str]) -> None:
    """Refuse, without creating anything, a store path a writing command could not use: a
    folder that cannot be made or written, a file that is not writable or visibly not a store.
    Run before a command writes anything else (`mole research` caches its corpus index in the
    data folder), so such a store is one line and leaves nothing behind. A postgresql:// URL
    is the server's to judge."""
    if is_postgres_url(target):
        return
    path = Path(target).expanduser().resolve()
    if path.is_dir():
        raise StoreError(f"the store {path} is a folder, not a DuckDB file; pass --db with a file")
    # The nearest folder that exists: the store's folder, or where it would be made.
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise StoreError(
            f"cannot create the store folder {path.parent}: {folder} is not a folder; "
            "set MOLE_DB or --db to a writable path"
        )
    exists = path.exists()
    if not os.access(folder, os.W_OK | os.X_OK) or (exists and not os.access(path, os.W_OK)):
        raise StoreError(
            f"the store {path} is not writable; set MOLE_DB or --db to a writable path"
        )
    if exists:
        # Not while this process has the file open (closing our descriptor would drop DuckDB's
        # lock on it): it is a store then.
        file_for(path).unless_open(lambda: refuse_if_not_duckdb(path))
