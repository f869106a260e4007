"""`open_store()` picks the backend from the target, and `Store(target)` is a thin alias of it
(issue 34: the base no longer builds a subclass of itself in `__new__`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mole_dag.store import Store, StoreError, StoreMissing, open_store
from mole_dag.store.duckdb_store import DuckDBStore


def test_a_path_opens_the_duckdb_store_through_either_name(tmp_path: Path) -> None:
    path = tmp_path / "f.duckdb"
    opened = open_store(path)
    aliased = Store(path, read_only=True)
    assert type(opened) is DuckDBStore and type(aliased) is DuckDBStore
    assert aliased.read_only and not opened.read_only
    assert aliased.schema_version() == opened.schema_version() > 0
    opened.close()
    aliased.close()


def test_a_read_only_open_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreMissing):
        open_store(tmp_path / "absent.duckdb", read_only=True)
    assert not (tmp_path / "absent.duckdb").exists()


def test_a_postgres_url_without_the_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As on an install without psycopg: the Postgres backend cannot be imported.
    monkeypatch.delitem(sys.modules, "mole_dag.store.pg", raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"postgres extra \(psycopg is missing\)"):
        open_store("postgresql://nobody@127.0.0.1:1/none")
