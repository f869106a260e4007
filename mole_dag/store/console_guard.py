"""What `mole sql` agrees to run: one statement that reads the store, and nothing else (issue 29).

A read-only connection is not enough: DuckDB's read-only open still wrote `COPY ... TO` files,
exported the database, read `/etc/passwd` through read_csv and attached other databases; a
read-only PostgreSQL transaction still runs pg_read_file and lo_export. So a statement must pass
this allow-list (sqlglot, as local_data/sqlguard.py uses it) before the store is opened, and on
DuckDB the connection is sealed besides (console.py: no file access, configuration locked),
so a construct the parser reads differently from the database still cannot reach a file.

Allowed: SELECT / WITH / FROM / VALUES / set operations, DESCRIBE, SHOW, SUMMARIZE, PIVOT and
EXPLAIN of one of those. Refused: every other statement kind, more than one statement, a file
named where a table goes, and functions that read files, reach another database, run SQL given
as text, change settings or act on the server. Each refusal is one line saying what and why."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

READ_ONLY = "mole sql only reads the store"
_SAVE_ROWS = "to save rows, use --csv and redirect stdout"

# Statement kinds refused by their first keyword, with the reason (the parser is not needed to
# know that COPY copies, and sqlglot cannot parse some of these: EXPORT DATABASE).
_BY_KEYWORD: dict[str, str] = {
    "COPY": f"COPY reads or writes a file; {READ_ONLY} ({_SAVE_ROWS})",
    "EXPORT": f"EXPORT DATABASE writes files; {READ_ONLY} ({_SAVE_ROWS})",
    "IMPORT": f"IMPORT DATABASE reads files into the store; {READ_ONLY}",
    "ATTACH": f"ATTACH opens another database; {READ_ONLY}",
    "DETACH": f"DETACH changes the attached databases; {READ_ONLY}",
    "USE": f"USE changes the default database; {READ_ONLY}",
    "INSTALL": f"INSTALL downloads an extension; {READ_ONLY}",
    "FORCE": f"FORCE INSTALL downloads an extension; {READ_ONLY}",
    "LOAD": f"LOAD loads an extension; {READ_ONLY}",
    "SET": f"SET changes a setting; {READ_ONLY}, with its own settings",
    "RESET": f"RESET changes a setting; {READ_ONLY}, with its own settings",
    "PRAGMA": (
        f"PRAGMA can change settings or read files; {READ_ONLY} "
        "(for a table's columns use DESCRIBE <table>)"
    ),
    "CALL": (
        f"CALL runs a procedure or table function for its effects; {READ_ONLY} "
        "(use SELECT * FROM <function>() for one that reads)"
    ),
    "LISTEN": f"LISTEN waits for notifications; {READ_ONLY}",
    "NOTIFY": f"NOTIFY signals other sessions; {READ_ONLY}",
    "DO": f"DO runs a procedural block; {READ_ONLY}",
    "PREPARE": f"PREPARE keeps a statement in the session; {READ_ONLY}",
    "EXECUTE": f"EXECUTE runs a statement that cannot be checked; {READ_ONLY}",
    "DECLARE": f"DECLARE keeps a cursor in the session; {READ_ONLY}",
    "SECRET": f"secrets are not for mole sql; {READ_ONLY}",
}
# Statements that begin a read (what the parser then checks in full).
_READS = {"SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "DESC", "SHOW", "SUMMARIZE"}
_READS |= {"PIVOT", "UNPIVOT", "EXPLAIN", "("}
_ROOTS: tuple[type[exp.Expr], ...] = (
    exp.Select,
    exp.SetOperation,
    exp.Subquery,
    exp.Values,
    exp.Describe,
    exp.Show,
    exp.Summarize,
    exp.Pivot,
)
# EXPLAIN's options (DuckDB and PostgreSQL): what follows them is the statement explained,
# checked like any other. ANALYZE runs it, which is why it must pass too.
_EXPLAIN_OPTIONS = re.compile(
    r"^\s*EXPLAIN\s+(?:\([^)]*\)\s*|(?:ANALYZE|ANALYSE|VERBOSE)\s+)*", re.I
)
# What SHOW may name when the parser leaves it as text (PostgreSQL `SHOW search_path`, DuckDB
# `SHOW sessions`): a name, not an expression.
_SHOW_ARG = re.compile(r"^[A-Za-z_][\w.]*(?:\s+[A-Za-z_][\w.]*)*$")

# Functions refused wherever they appear, by lower-case name (DuckDB and PostgreSQL both).
_EXACT: dict[str, str] = {
    # Run SQL given as a string, which this guard cannot see into.
    **dict.fromkeys(
        (
            "query",
            "query_table",
            "json_execute_serialized_sql",
            "query_to_xml",
            "query_to_xmlschema",
            "query_to_xml_and_xmlschema",
            "cursor_to_xml",
            "cursor_to_xmlschema",
        ),
        "runs SQL given as text, which cannot be checked",
    ),
    **dict.fromkeys(
        ("glob", "sniff_csv", "pg_stat_file", "pg_logdir_ls", "delta_scan", "arrow_scan"),
        "reads files",
    ),
    **dict.fromkeys(("set_config",), "changes a setting"),
    **dict.fromkeys(("duckdb_secrets", "which_secret"), "shows secrets"),
    **dict.fromkeys(
        (
            "checkpoint",
            "force_checkpoint",
            "pg_reload_conf",
            "pg_rotate_logfile",
            "pg_terminate_backend",
            "pg_cancel_backend",
            "pg_promote",
            "pg_switch_wal",
            "pg_create_restore_point",
        ),
        "acts on the database server or file",
    ),
}
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("read_", "reads files"),  # read_csv, read_text, read_blob, read_json, read_parquet, ...
    ("parquet_", "reads files"),
    ("iceberg_", "reads files"),
    ("pg_read_", "reads server files"),  # pg_read_file, pg_read_binary_file
    ("pg_ls_", "lists server folders"),  # pg_ls_dir, pg_ls_logdir, pg_ls_waldir, ...
    ("pg_file_", "writes server files"),  # adminpack
    ("lo_", "moves large objects to or from server files"),  # lo_import, lo_export
    ("dblink", "reaches another database"),
    ("postgres_", "reaches another database"),
    ("sqlite_", "reaches another database"),
    ("mysql_", "reaches another database"),
)
# A table name DuckDB would take for a file (`FROM 'x.csv'`, `FROM "/etc/passwd"`): no table
# of the store has these characters in its name.
_FILE_LIKE = re.compile(r"[./\\:*?~]")


class Refused(Exception):
    """The statement is not a read of the store; the message says what and why, in one line."""


@contextmanager
def _quiet_parser() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to a Command; the refusal says it in one line."""
    log = logging.getLogger("sqlglot")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _dialect(postgres: bool) -> str:
    return "postgres" if postgres else "duckdb"


def _first_word(sql: str, dialect: str) -> str:
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except SqlglotError as exc:
        raise Refused(f"refused: cannot read the statement ({_short(exc)})") from None
    return tokens[0].text.upper() if tokens else ""


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _function_reason(name: str) -> str | None:
    name = name.lower()
    why = _EXACT.get(name)
    if why is None:
        why = next((w for p, w in _PREFIXES if name.startswith(p)), None)
    return why


def check(sql: str, *, postgres: bool) -> None:
    """Raise Refused unless `sql` is one statement that only reads the store."""
    dialect = _dialect(postgres)
    word = _first_word(sql, dialect)
    if not word:
        raise Refused("refused: the statement is empty")
    if word in _BY_KEYWORD:
        raise Refused(f"refused: {_BY_KEYWORD[word]}")
    if word not in _READS:
        raise Refused(
            f"refused: {word} is not a query; {READ_ONLY} and is read-only "
            "(SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)"
        )
    if word == "EXPLAIN":
        check(_EXPLAIN_OPTIONS.sub("", sql, count=1), postgres=postgres)
        return
    if postgres and re.search(r'\bU&"', sql, re.I):
        # An identifier spelled with escapes could name a refused function unseen.
        raise Refused('refused: identifiers written U&"..." cannot be checked; spell them plainly')
    try:
        with _quiet_parser():
            trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except SqlglotError as exc:
        raise Refused(f"refused: cannot read the statement ({_short(exc)})") from None
    if len(trees) != 1:
        raise Refused("refused: more than one statement; give them one at a time")
    tree = trees[0]
    if isinstance(tree, exp.Command):
        # What sqlglot leaves as text: only SHOW of a name passes.
        arg = tree.expression
        arg = arg.name if isinstance(arg, exp.Expr) else str(arg or "")
        if str(tree.this).upper() == "SHOW" and _SHOW_ARG.match(arg.strip()):
            return
        raise Refused(f"refused: {word} in this form cannot be checked as a read; {READ_ONLY}")
    if not isinstance(tree, _ROOTS):
        raise Refused(f"refused: {word} in this form is not a query; {READ_ONLY}")
    for node in tree.walk():
        if isinstance(node, exp.DML | exp.DDL | exp.Into):
            # A write inside a read (PostgreSQL's `WITH d AS (DELETE ...)`, `SELECT ... INTO`).
            raise Refused(f"refused: the statement writes to the store; {READ_ONLY} (read-only)")
        if isinstance(node, exp.Command):
            raise Refused(f"refused: part of the statement cannot be checked; {READ_ONLY}")
        if isinstance(node, exp.Func):
            name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
            why = _function_reason(name)
            if why:
                raise Refused(f"refused: {name.lower()} {why}; {READ_ONLY}")
        if isinstance(node, exp.Table) and _FILE_LIKE.search(node.name):
            raise Refused(
                f"refused: {node.name!r} names a file, not a table; {READ_ONLY} "
                "(SHOW TABLES lists its tables)"
            )
