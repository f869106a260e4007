"""The store's SQL in PostgreSQL's dialect, translated from the one source of truth in sql/.

sql/ is written for DuckDB (the embedded default). Postgres runs the same statements through
sqlglot's transpiler plus the few rewrites below, for functions Postgres 15 does not have; a
statement that truly differs lives in a per-dialect file instead (`sql/migrations/postgres/`),
which wins over the translation. Translations are cached: the pipeline issues the same few
hundred statements over and over."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp


class DialectError(ValueError):
    """A statement sqlglot cannot read: a bug in sql/ or in the caller's inline SQL."""


def _rewrite(node: exp.Expression) -> exp.Expression:
    """DuckDB functions without a Postgres twin, rewritten to what means the same there."""
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
