"""What differs between the store's two databases at the level of SQL, in one place: which
target names which (`dialect_of`), how a transaction begins, how a read locks the rows it reads,
and the store's SQL in PostgreSQL's dialect, translated from the one source of truth in sql/.

sql/ is written for DuckDB (the embedded default). Postgres runs the same statements through
sqlglot's transpiler plus the few rewrites below, for functions Postgres 15 does not have; a
statement that truly differs lives in a per-dialect file instead (`sql/migrations/postgres/`),
which wins over the translation. Translations are cached: the pipeline issues the same few
hundred statements over and over. sqlglot (~0.1 s to import) is loaded at the first translation,
so a store on a DuckDB file never loads it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | os.PathLike[str] | object) -> bool:
    """Whether a store target (`--db`, MOLE_DB) names a PostgreSQL database rather than a file."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


@dataclass(frozen=True)
class Dialect:
    """The statements the store's shared transaction code (store/base.py) writes differently."""

    name: str
    # How a store of this kind is named in messages.
    kind: str
    begin: str
    # Whether a SELECT can lock the rows it reads until the transaction ends. DuckDB has no FOR
    # UPDATE and needs none: its file has one writer at a time.
    row_locks: bool

    def locked(self, sql: str, of: str | None = None) -> str:
        """`sql` (a SELECT inside a write transaction) locking the rows it reads (only table
        alias `of`'s rows if given), for a read-then-write that must not interleave with another
        writer's."""
        if not self.row_locks:
            return sql
        return f"{sql} FOR UPDATE" + (f" OF {of}" if of else "")


DUCKDB = Dialect(name="duckdb", kind="a DuckDB file", begin="BEGIN TRANSACTION", row_locks=False)
POSTGRES = Dialect(name="postgres", kind="a Postgres database", begin="BEGIN", row_locks=True)


def dialect_of(target: str | os.PathLike[str]) -> Dialect:
    return POSTGRES if is_postgres_url(target) else DUCKDB


class DialectError(ValueError):
    """A statement sqlglot cannot read: a bug in sql/ or in the caller's inline SQL."""


def _rewrite(node: exp.Expression) -> exp.Expression:
    """DuckDB functions without a Postgres twin, rewritten to what means the same there."""
    import sqlglot
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        # DuckDB's strlen counts bytes; Postgres's length counts characters.
        if name == "strlen":
            return exp.Anonymous(this="octet_length", expressions=node.expressions)
    if isinstance(node, exp.ArgMin | exp.ArgMax):
        # arg_min(value, key): the value at the smallest key, rows with a NULL key ignored.
        # Postgres 15 has no arg_min; the first element of the values ordered by key is it.
        direction = "DESC" if isinstance(node, exp.ArgMax) else "ASC"
        template = sqlglot.parse_one(
            f"(array_agg(v ORDER BY k {direction} NULLS LAST) FILTER (WHERE k IS NOT NULL))[1]",
            read="postgres",
        )
        value, key = node.this, node.expression
        rewritten: exp.Expression = template.transform(
            lambda n: (value if n.name == "v" else key).copy() if isinstance(n, exp.Column) else n
        )
        return rewritten
    return node


@lru_cache(maxsize=2048)
def to_postgres(sql: str) -> tuple[str, ...]:
    """The statements of `sql` (DuckDB's dialect, `?` or `$name` parameters) in Postgres's
    dialect (`%s` / `%(name)s`). Comment-only statements (a trailing comment block) are dropped."""
    import sqlglot

    try:
        parsed = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise DialectError(f"cannot translate SQL for Postgres: {exc}") from None
    out = []
    for tree in parsed:
        if tree is None:
            continue
        text = tree.transform(_rewrite).sql(dialect="postgres", comments=False)
        if text.strip():
            out.append(text)
    return tuple(out)


def one_statement(sql: str) -> str:
    """The single statement of `sql` in Postgres's dialect."""
    stmts = to_postgres(sql)
    if len(stmts) != 1:
        raise DialectError(f"expected one SQL statement, got {len(stmts)}: {sql[:120]!r}")
    return stmts[0]
