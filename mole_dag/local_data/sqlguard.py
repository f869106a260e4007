"""The SQL guard: a statement runs over attached data only if sqlglot parses it as exactly one
SELECT whose outputs are aggregates or GROUP BY keys, over the registered table only.

Every statement goes through here, including the ones the templates render. The guard is an
allowlist: a construct it does not know is refused, so a DuckDB feature added next year is closed
until someone opens it on purpose. It refuses, with a reason from a fixed vocabulary:

- more than one statement (including one smuggled behind a comment), anything but a SELECT,
  set operations, CTEs, subqueries, joins, table and file functions, other tables;
- `*` (except in count(*)), window functions, functions outside a short list;
- columns that are withheld (anywhere: select list, WHERE, GROUP BY, inside count) or unknown;
- output that is a row value (a column not aggregated and not a GROUP BY key);
- an aggregate whose argument is not a plain column: `sum(CASE WHEN <one row> THEN x END)` over a
  group of a thousand rows is one row's value, so the floor on group size would not protect it;
- clauses the gate does not need: HAVING, ORDER BY, LIMIT, OFFSET, QUALIFY, SAMPLE, DISTINCT,
  GROUP BY ALL / ROLLUP / CUBE / positions.

What passes is returned canonicalised: comments dropped, every column named by its profile name
and quoted. The boundary executes that regenerated text, never the text it was given, so a
difference between sqlglot's parser and DuckDB's cannot smuggle anything through."""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from mole_dag.local_data.connector import TABLE, ColumnProfile, Dataset
from mole_dag.local_data.refusal import Reason, Refused, Stage

# Aggregates whose value is a function of many rows. MIN, MAX, FIRST, ANY_VALUE, LIST,
# STRING_AGG, MODE and quantiles other than the median return (or approach) one row's value, so
# they are not here. The ones that need a number say so.
_NUMERICAGGREGATES: tuple[type[exp.Expr], ...] = (
    exp.Sum,
    exp.Avg,
    exp.Median,
    exp.Stddev,
    exp.StddevSamp,
    exp.StddevPop,
    exp.Variance,
    exp.VariancePop,
    exp.Corr,
)
AGGREGATES: tuple[type[exp.Expr], ...] = (exp.Count, *_NUMERICAGGREGATES)
_SCALAR_FUNCTIONS: tuple[type[exp.Expr], ...] = (
    exp.Round,
    exp.Abs,
    exp.Floor,
    exp.Ceil,
    exp.Coalesce,
    exp.Lower,
    exp.Upper,
    exp.Length,
    exp.Nullif,
    exp.Greatest,
    exp.Least,
    exp.Ln,
    exp.Sqrt,
    exp.Cast,
    exp.TryCast,
    exp.Trim,
)
_OPERATORS: tuple[type[exp.Expr], ...] = (
    exp.And,
    exp.Or,
    exp.Not,
    exp.Neg,
    exp.Paren,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.IntDiv,
    exp.Mod,
    exp.Case,
    exp.If,
)
_LEAVES: tuple[type[exp.Expr], ...] = (
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Identifier,
    exp.DataType,
    exp.DataTypeParam,
    exp.Var,
)
_STRUCTURE: tuple[type[exp.Expr], ...] = (
    exp.Select,
    exp.From,
    exp.Table,
    exp.Where,
    exp.Group,
    exp.Alias,
    exp.Column,
    exp.Distinct,
    exp.Star,
)
# Function names that read files, other databases or the catalogue.
_FILE_FUNCTION_PREFIXES = (
    "read_",
    "parquet",
    "csv",
    "sniff",
    "glob",
    "query",
    "duckdb_",
    "pragma",
    "sqlite",
    "postgres",
    "mysql",
    "iceberg",
    "delta",
    "json",
    "scan",
    "arrow",
    "range",
    "generate_series",
    "unnest",
    "repeat_row",
    "which_secret",
)
# Refusal order: when a statement breaks several rules, the most fundamental one is its reason.
_PRIORITY = [
    Reason.PARSE_ERROR,
    Reason.MULTIPLE_STATEMENTS,
    Reason.SET_OPERATION,
    Reason.NOT_SELECT,
    Reason.CTE,
    Reason.SUBQUERY,
    Reason.JOIN,
    Reason.TABLE_FUNCTION,
    Reason.UNKNOWN_TABLE,
    Reason.STAR,
    Reason.WINDOW_FUNCTION,
    Reason.WITHHELD_COLUMN,
    Reason.UNKNOWN_COLUMN,
    Reason.FUNCTION_NOT_ALLOWED,
    Reason.AGGREGATE_ARGUMENT,
    Reason.ROW_VALUES,
    Reason.CLAUSE_NOT_ALLOWED,
    Reason.CONSTRUCT_NOT_ALLOWED,
]
_CLAUSES = {
    "having": "HAVING",
    "order": "ORDER BY",
    "limit": "LIMIT",
    "offset": "OFFSET",
    "qualify": "QUALIFY",
    "sample": "SAMPLE",
    "distinct": "DISTINCT",
    "into": "INTO",
    "windows": "WINDOW",
    "laterals": "LATERAL",
    "prewhere": "PREWHERE",
    "connect": "CONNECT BY",
    "match": "MATCH_RECOGNIZE",
    "kind": "SELECT AS STRUCT",
    "settings": "SETTINGS",
    "format": "FORMAT",
    "options": "OPTIONS",
    "locks": "FOR UPDATE",
    "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY",
    "sort": "SORT BY",
}


@dataclass(frozen=True)
class Guarded:
    """A statement that passed, canonicalised. `keys` and `values` are the output columns in
    select-list order, split into GROUP BY keys and aggregates."""

    statement: exp.Select
    sql: str
    keys: tuple[tuple[str, exp.Expr], ...]
    values: tuple[tuple[str, exp.Expr], ...]
    where: exp.Expr | None
    columns: tuple[str, ...]


class _Problems:
    def __init__(self) -> None:
        self.found: list[tuple[Reason, str]] = []

    def add(self, reason: Reason, detail: str) -> None:
        if (reason, detail) not in self.found:
            self.found.append((reason, detail))

    def raise_if_any(self) -> None:
        if not self.found:
            return
        reason = min((r for r, _ in self.found), key=_PRIORITY.index)
        details = [d for r, d in self.found if r == reason]
        others = sorted({str(r) for r, _ in self.found if r != reason})
        detail = "; ".join(details)
        if others:
            detail += f" (also: {', '.join(others)})"
        raise Refused(Stage.SQLGUARD, reason, detail)


def _show(text: str, limit: int = 60) -> str:
    """A requested name or snippet, shortened and on one line, for a refusal's detail. Never a
    data value: only text the request itself carried."""
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _func_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    try:
        return str(node.sql_name()).lower()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a node without a SQL name is simply unnamed
        return type(node).__name__.lower()


def _inside_aggregate(node: exp.Expr) -> exp.Expr | None:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, (*AGGREGATES, exp.Filter)):
            return parent
        parent = parent.parent
    return None


def _strip_alias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def parse_one_select(sql: str) -> exp.Expr:
    """Parse `sql` as DuckDB SQL; refuse anything but exactly one statement. Comments are not
    statements, so a trailing `-- note` passes and `/* x */; DROP TABLE data` does not."""
    try:
        parsed = sqlglot.parse(sql, read="duckdb")
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise Refused(
            Stage.SQLGUARD,
            Reason.PARSE_ERROR,
            f"not parseable as one SQL statement ({_show(first, 120)})",
        ) from None
    statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    if len(statements) != 1:
        raise Refused(
            Stage.SQLGUARD,
            Reason.MULTIPLE_STATEMENTS,
            f"{len(statements)} statements; exactly one SELECT is allowed",
        )
    return statements[0]


def guard(sql: str, dataset: Dataset) -> Guarded:
    """Check `sql` against the rules above; return it canonicalised or raise Refused."""
    root = parse_one_select(sql)
    if isinstance(root, exp.SetOperation):
        raise Refused(
            Stage.SQLGUARD,
            Reason.SET_OPERATION,
            f"{type(root).__name__.upper()} combines statements; one SELECT only",
        )
    if not isinstance(root, exp.Select):
        raise Refused(
            Stage.SQLGUARD,
            Reason.NOT_SELECT,
            f"a {type(root).__name__.upper()} statement; only SELECT is allowed",
        )
    problems = _Problems()
    _check_clauses(root, problems)
    _check_from(root, problems)
    seen_columns = _check_nodes(root, dataset, problems)
    # A loose first look at the outputs (spellings folded), so that a statement breaking
    # several rules is refused for the most fundamental one.
    _check_outputs(root, problems, loose=True)
    problems.raise_if_any()
    # The exact check runs on the canonical tree, where `Region`, `region` and `"REGION"` have
    # become one spelling.
    canonical = _canonicalise(root, dataset)
    keys, values = _check_outputs(canonical, problems)
    problems.raise_if_any()
    where = canonical.args.get("where")
    return Guarded(
        statement=canonical,
        sql=canonical.sql(dialect="duckdb"),
        keys=tuple(keys),
        values=tuple(values),
        where=where.this if where is not None else None,
        columns=tuple(sorted(seen_columns)),
    )


def _check_clauses(root: exp.Select, problems: _Problems) -> None:
    for arg, label in _CLAUSES.items():
        if root.args.get(arg):
            hint = " (the gate orders its output itself)" if arg == "order" else ""
            problems.add(Reason.CLAUSE_NOT_ALLOWED, f"{label} is not allowed{hint}")
    group = root.args.get("group")
    if group is not None:
        for arg in ("all", "rollup", "cube", "grouping_sets", "totals"):
            if group.args.get(arg):
                problems.add(
                    Reason.CLAUSE_NOT_ALLOWED,
                    f"GROUP BY {arg.upper().replace('_', ' ')} is not allowed; "
                    "name the key expressions",
                )
        for key in group.expressions:
            if isinstance(key, exp.Literal):
                problems.add(
                    Reason.CLAUSE_NOT_ALLOWED,
                    "GROUP BY by position is not allowed; name the key expressions",
                )


def _check_from(root: exp.Select, problems: _Problems) -> None:
    if root.args.get("with_") or root.args.get("with"):
        problems.add(Reason.CTE, "WITH (a common table expression) is not allowed")
    if root.args.get("joins"):
        problems.add(Reason.JOIN, "joins (including comma-separated tables) are not allowed")
    from_ = root.args.get("from_") or root.args.get("from")
    if from_ is None:
        problems.add(Reason.UNKNOWN_TABLE, f"no FROM clause; select FROM {TABLE}")
        return
    table = from_.this
    if isinstance(table, exp.Subquery):
        problems.add(Reason.SUBQUERY, "a subquery in FROM is not allowed")
        return
    if not isinstance(table, exp.Table):
        problems.add(
            Reason.TABLE_FUNCTION,
            f"FROM {_show(table.sql(dialect='duckdb'))} is not the table {TABLE}",
        )
        return
    if not isinstance(table.this, exp.Identifier):
        problems.add(
            Reason.TABLE_FUNCTION,
            f"table function {_func_name(table.this)}() is not allowed; FROM {TABLE} only",
        )
        return
    name = table.name
    if any(ch in name for ch in "/\\.:") or name.lower().endswith(("csv", "parquet", "json")):
        problems.add(Reason.TABLE_FUNCTION, f"FROM {_show(name)} reads a file; FROM {TABLE} only")
    elif name.casefold() != TABLE or table.args.get("db") or table.args.get("catalog"):
        problems.add(
            Reason.UNKNOWN_TABLE,
            f"table {_show(table.sql(dialect='duckdb'))} is not the registered table {TABLE}",
        )
    if table.args.get("alias"):
        problems.add(Reason.CONSTRUCT_NOT_ALLOWED, "a table alias is not allowed; drop it")
    for arg in ("sample", "pivots", "joins", "laterals", "version", "when", "changes"):
        if table.args.get(arg):
            problems.add(Reason.CLAUSE_NOT_ALLOWED, f"{arg.upper()} on the table is not allowed")


def _check_nodes(root: exp.Select, dataset: Dataset, problems: _Problems) -> set[str]:
    columns: set[str] = set()
    for node in root.walk():
        if node is root:
            continue
        if isinstance(node, exp.SetOperation):
            problems.add(Reason.SET_OPERATION, f"{type(node).__name__.upper()} is not allowed")
        elif isinstance(node, (exp.With, exp.CTE)):
            problems.add(Reason.CTE, "WITH (a common table expression) is not allowed")
        elif isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
            problems.add(Reason.SUBQUERY, "subqueries are not allowed")
        elif isinstance(node, (exp.Join, exp.Lateral)):
            problems.add(Reason.JOIN, "joins are not allowed")
        elif isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            problems.add(
                Reason.CLAUSE_NOT_ALLOWED,
                "ROLLUP, CUBE and GROUPING SETS are not allowed; name the key expressions",
            )
        elif isinstance(node, exp.Filter):
            problems.add(
                Reason.AGGREGATE_ARGUMENT,
                "FILTER (WHERE ...) narrows an aggregate to "
                "rows the floor does not count; use WHERE",
            )
        elif isinstance(node, exp.Window):
            problems.add(Reason.WINDOW_FUNCTION, "window functions (OVER) are not allowed")
        elif isinstance(node, exp.Star):
            if not (isinstance(node.parent, exp.Count) and node.arg_key == "this"):
                problems.add(
                    Reason.STAR,
                    "* is not allowed (except in count(*)); name the aggregates you want",
                )
        elif isinstance(node, exp.Column):
            _check_column(node, dataset, problems, columns)
        elif isinstance(node, exp.Table):
            if not isinstance(node.parent, exp.From) or node.parent.parent is not root:
                problems.add(Reason.JOIN, "a second table is not allowed")
        elif isinstance(node, AGGREGATES):
            _check_aggregate(node, dataset, problems)
        elif isinstance(node, exp.Func) and not isinstance(node, _SCALAR_FUNCTIONS + _OPERATORS):
            name = _func_name(node)
            if name.startswith(_FILE_FUNCTION_PREFIXES) or isinstance(node, exp.ReadCSV):
                problems.add(
                    Reason.TABLE_FUNCTION,
                    f"{name}() reads outside the registered table; it is not allowed",
                )
            else:
                problems.add(Reason.FUNCTION_NOT_ALLOWED, f"function {name}() is not allowed")
        elif isinstance(node, exp.Distinct):
            if not isinstance(node.parent, exp.Count):
                problems.add(Reason.CLAUSE_NOT_ALLOWED, "DISTINCT is allowed only in count()")
        elif isinstance(node, exp.In) and node.args.get("query"):
            problems.add(Reason.SUBQUERY, "IN (SELECT ...) is not allowed")
        elif not isinstance(node, _STRUCTURE + _OPERATORS + _SCALAR_FUNCTIONS + _LEAVES):
            label = type(node).__name__
            if isinstance(node, exp.Placeholder):
                label = "a parameter placeholder"
            problems.add(Reason.CONSTRUCT_NOT_ALLOWED, f"{label} is not allowed")
    return columns


def _check_column(
    node: exp.Column, dataset: Dataset, problems: _Problems, columns: set[str]
) -> None:
    if isinstance(node.this, exp.Star):
        problems.add(Reason.STAR, "* is not allowed; name the aggregates you want")
        return
    qualifier = node.table
    if qualifier and qualifier.casefold() != TABLE or node.args.get("db"):
        problems.add(
            Reason.UNKNOWN_TABLE, f"column qualifier {_show(qualifier)} is not the table {TABLE}"
        )
    col = dataset.column(node.name)
    if col is None:
        problems.add(Reason.UNKNOWN_COLUMN, f"no column {_show(node.name)} in {dataset.name}")
        return
    if col.withheld:
        problems.add(
            Reason.WITHHELD_COLUMN, f"column {_show(col.name)} is withheld ({col.withheld})"
        )
        return
    columns.add(col.name)


def _check_aggregate(node: exp.Expr, dataset: Dataset, problems: _Problems) -> None:
    name = _func_name(node)
    if _inside_aggregate(node) is not None:
        problems.add(Reason.AGGREGATE_ARGUMENT, f"{name}() nested inside another aggregate")
        return
    args = [a for a in [node.this, *node.expressions] if a is not None]
    if isinstance(node, exp.Count):
        inner = args[0] if args else None
        if isinstance(inner, exp.Star):
            return
        if isinstance(inner, exp.Distinct):
            inner_args = inner.expressions
            if len(inner_args) == 1 and isinstance(inner_args[0], exp.Column):
                return
        elif isinstance(inner, exp.Column):
            return
        problems.add(
            Reason.AGGREGATE_ARGUMENT,
            "count() takes *, a column or DISTINCT column: an expression inside an "
            "aggregate can single out one row",
        )
        return
    if isinstance(node, exp.Corr):
        args = [node.this, node.expression]
    for arg in args:
        if not isinstance(arg, exp.Column):
            problems.add(
                Reason.AGGREGATE_ARGUMENT,
                f"{name}() takes a plain column: an expression inside an aggregate "
                "(e.g. sum(CASE WHEN ... THEN x END)) can single out one row",
            )
            return
        col = dataset.column(arg.name)
        if col is not None and not col.withheld and col.type not in {"integer", "number"}:
            problems.add(
                Reason.AGGREGATE_ARGUMENT,
                f"{name}() needs a numeric column; {_show(col.name)} is {col.type}",
            )


def _contains_aggregate(node: exp.Expr) -> bool:
    return any(isinstance(n, AGGREGATES) for n in node.walk())


def _canonical_key(node: exp.Expr, loose: bool = False) -> str:
    text = _strip_alias(node).sql(dialect="duckdb", comments=False)
    return text.casefold().replace('"', "") if loose else text


def _output_name(node: exp.Expr, index: int) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    return node.sql(dialect="duckdb", comments=False) or f"col{index}"


def _check_outputs(
    root: exp.Select, problems: _Problems, *, loose: bool = False
) -> tuple[list[tuple[str, exp.Expr]], list[tuple[str, exp.Expr]]]:
    group = root.args.get("group")
    group_keys = list(group.expressions) if group is not None else []
    if group is not None and (
        group.args.get("all")
        or any(
            isinstance(k, (exp.Literal, exp.Rollup, exp.Cube, exp.GroupingSets)) for k in group_keys
        )
    ):
        return [], []  # the GROUP BY itself is refused; its outputs cannot be judged
    key_forms = {_canonical_key(k, loose): k for k in group_keys}
    keys: list[tuple[str, exp.Expr]] = []
    values: list[tuple[str, exp.Expr]] = []
    used_names: set[str] = set()
    projected_keys: set[str] = set()
    for i, proj in enumerate(root.expressions):
        bare = _strip_alias(proj)
        name = _output_name(proj, i)
        while name.casefold() in used_names:
            name = f"{name}_{i}"
        used_names.add(name.casefold())
        form = _canonical_key(bare, loose)
        if form in key_forms:
            keys.append((name, bare))
            projected_keys.add(form)
            continue
        unaggregated = [c for c in bare.find_all(exp.Column) if _inside_aggregate(c) is None]
        if unaggregated:
            problems.add(
                Reason.ROW_VALUES,
                f"output {_show(name)} is a row value: every output must be an "
                "aggregate or a GROUP BY key",
            )
            continue
        if not _contains_aggregate(bare) and not group_keys:
            problems.add(
                Reason.ROW_VALUES,
                f"output {_show(name)} would repeat once per row; aggregate something",
            )
            continue
        values.append((name, bare))
    for k in group_keys:
        if _contains_aggregate(k):
            problems.add(Reason.CONSTRUCT_NOT_ALLOWED, "an aggregate inside GROUP BY")
        elif _canonical_key(k, loose) not in projected_keys:
            problems.add(
                Reason.CONSTRUCT_NOT_ALLOWED,
                f"GROUP BY key {_show(k.sql(dialect='duckdb'))} must also be selected, "
                "so every figure is labelled",
            )
    if not root.expressions:
        problems.add(Reason.ROW_VALUES, "nothing is selected")
    return keys, values


def _canonicalise(root: exp.Select, dataset: Dataset) -> exp.Select:
    """Comments dropped, columns by their profile names, quoted and unqualified."""

    def fix(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            col: ColumnProfile | None = dataset.column(node.name)
            assert col is not None  # checked above
            return exp.column(col.name, quoted=True)
        if isinstance(node, exp.Table):
            return exp.to_table(TABLE)
        return node

    out = root.copy().transform(fix)
    for node in out.walk():
        node.comments = None
    assert isinstance(out, exp.Select)
    return out
