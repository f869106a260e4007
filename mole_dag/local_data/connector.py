"""The connector: register a CSV file (or a folder of CSVs with one schema) in DuckDB and profile
it: columns, types, row count, distinct counts, null rates, and which columns are withheld.

The data is loaded into a private in-memory DuckDB database, never into the store. Once loaded,
that database is sandboxed: external access is switched off and the configuration locked, so even
a statement that slipped past the guard could not read another file, attach a database or write
one out. Rows stay in this process; what leaves is decided by the gate.

Errors say what is wrong and what to do, and never quote a row: DuckDB's own CSV errors print the
offending line, so they are translated, not passed on."""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from sqlglot import exp

from mole_dag.skills.view import BINARY, GROUP, MEASURE, ColumnView, ProfileView, TemplateInfo

TABLE = "data"
# The k-anonymity floor: no figure leaves that rests on fewer rows. Also a CHECK in the schema.
FLOOR = 5
# Guesses, flagged as such. A category with more levels than this is treated as an identifier:
# grouping by it would name individuals (people, addresses) in groups that pass the floor.
MAX_LEVELS = 50
# A label longer than this is prose, not a category.
MAX_LABEL_CHARS = 64
# Average length above which a string column reads as free text.
FREE_TEXT_AVG_CHARS = 30
# Share of values that must look like an email or phone number before the column is withheld:
# low on purpose, since one such value in a group label would be one too many.
PATTERN_SHARE = 0.02
READ_BLOCK = 1 << 20

_EMAIL = r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"
_PHONE = r"^\+?[0-9(][0-9 ().\-]{6,}[0-9]$"
_ID_NAME = re.compile(r"(^|[_\s-])(id|uuid|guid|ssn|key|code)$|^id[_\s-]", re.IGNORECASE)
_DELIMITERS = {",", ";", "\t", "|"}


class DataError(ValueError):
    """The data cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    duckdb_type: str
    type: str  # integer | number | text | boolean | date | other
    non_null: int
    distinct: int
    null_rate: float
    roles: tuple[str, ...]
    withheld: str | None
    # The two levels of a binary column, sorted. Internal: they reach an envelope only through
    # the gate, never through the profile view.
    levels: tuple[Any, ...] = ()

    def view(self) -> ColumnView:
        return ColumnView(
            self.name, self.type, self.roles, self.distinct, round(self.null_rate, 4), self.withheld
        )


def ident(name: str) -> str:
    """A column name as a quoted SQL identifier (for the boundary's own internal queries)."""
    return exp.to_identifier(name, quoted=True).sql(dialect="duckdb")


def _simple_type(duckdb_type: str) -> str:
    t = duckdb_type.upper()
    if t == "BOOLEAN":
        return "boolean"
    if "INT" in t:
        return "integer"
    if t in {"FLOAT", "DOUBLE", "REAL"} or t.startswith("DECIMAL"):
        return "number"
    if t == "VARCHAR":
        return "text"
    if t.startswith(("DATE", "TIMESTAMP", "TIME")):
        return "date"
    return "other"


def _check_file(path: Path, *hashers: Any) -> None:
    """Readable, non-empty, UTF-8. Hashes the bytes as it reads them."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from None
    if size == 0:
        raise DataError(f"{path} is empty; attach a CSV with a header row and data rows")
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    newlines = 0
    try:
        with path.open("rb") as fh:
            while block := fh.read(READ_BLOCK):
                for hasher in hashers:
                    hasher.update(block)
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as err:
                    bad = offset + err.start
                    line = newlines + block[: err.start].count(b"\n") + 1
                    raise DataError(
                        f"{path} is not UTF-8: invalid byte at offset {bad} (line {line}); "
                        "re-save it as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"
                    ) from None
                newlines += block.count(b"\n")
                offset += len(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise DataError(
            f"{path} is not UTF-8: it ends inside a multi-byte character; re-save it as UTF-8"
        ) from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from None


def _duckdb_csv_error(path: Path | str, exc: duckdb.Error, delim: str | None = None) -> DataError:
    """DuckDB's CSV errors quote the offending line; keep the line number, drop the content."""
    msg = str(exc)
    line = re.search(r"on Line:?\s*(\d+)", msg)
    where = f" at line {line.group(1)}" if line else ""
    counts = re.search(r"Expected Number of Columns:\s*(\d+)\s*Found:\s*(\d+)", msg)
    if counts:
        expected, found = int(counts.group(1)), int(counts.group(2))
        # DuckDB stops counting one past the expected number; count the line itself (its
        # content stays out of the message: it is the user's data).
        original = re.search(r"Original Line:\s*(.*)", msg)
        if original and delim:
            found = len(next(csv.reader([original.group(1)], delimiter=delim), []))
        what = f"expected {expected} fields (as in the header), found {found}"
    elif "Expected Number of Columns" in msg or "too many columns" in msg.lower():
        what = "a row has a different number of fields than the header"
    elif "Could not convert" in msg or "Conversion" in msg:
        what = "a value does not match the type of its column"
    elif "unicode" in msg.lower():
        what = "the file is not UTF-8"
    elif "sniff" in msg.lower() or "dialect" in msg.lower():
        what = "no consistent CSV layout (delimiter, quoting, number of fields) was found"
    else:
        what = f"it could not be read as CSV ({type(exc).__name__})"
    return DataError(f"{path}{where}: {what}; fix the file or attach another")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from None


def _files(path: Path) -> list[Path]:
    if not path.exists():
        raise DataError(f"{path} does not exist; --data takes a CSV file or a folder of CSVs")
    if path.is_file():
        return [path]
    if path.is_dir():
        try:
            found = sorted(
                p
                for p in path.iterdir()
                if p.suffix.lower() == ".csv" and not p.name.startswith(".") and p.is_file()
            )
        except OSError as exc:
            raise DataError(f"cannot list {path}: {exc.strerror}") from None
        if not found:
            raise DataError(
                f"{path} holds no .csv files; --data takes a CSV file or a folder "
                "of CSVs that share one header"
            )
        return found
    raise DataError(f"{path} is neither a file nor a folder")


@dataclass(frozen=True)
class _Sniffed:
    delimiter: str
    columns: list[dict[str, Any]]


@dataclass(frozen=True)
class _Described:
    column_name: str
    column_type: str


@dataclass(frozen=True)
class _LevelCount:
    level: Any
    n: int


def _sniff(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[str, list[str]]:
    # Imported here while the package moves of issue 13 rewrite this module's imports.
    from mole_dag.store.records import fetch_one

    try:
        row = fetch_one(
            con,
            _Sniffed,
            "SELECT Delimiter AS delimiter, Columns AS columns "
            "FROM sniff_csv($p, sample_size = -1)",
            {"p": str(path)},
        )
    except duckdb.Error as exc:
        raise _duckdb_csv_error(path, exc) from None
    assert row is not None
    delim, cols = row.delimiter, [c["name"] for c in row.columns]
    with path.open("r", encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline()
    fields = next(csv.reader([header], delimiter=delim), []) if delim in _DELIMITERS else []
    if fields and len(fields) != len(cols):
        # The sniffer read a longer row as the layout and the header as data, which ended as
        # "a header but no rows". Read it strictly by the header to get DuckDB's own account
        # of the first bad line.
        _strict_read(con, path, delim, len(fields))
    if len(cols) == 1 and any(d in header for d in ",;\t"):
        # DuckDB falls back to one column when rows disagree on their number of fields.
        raise DataError(
            f"{path}: rows do not all have the header's number of fields; "
            "fix the file or attach another"
        )
    if delim not in _DELIMITERS:
        raise DataError(f"{path}: no comma, semicolon, tab or pipe delimiter was found")
    return delim, cols


def _strict_read(con: duckdb.DuckDBPyConnection, path: Path, delim: str, width: int) -> None:
    columns = {f"c{i}": "VARCHAR" for i in range(width)}
    try:
        con.execute(
            "SELECT count(*) FROM read_csv($p, delim = $d, header = true, "
            "auto_detect = false, columns = $c)",
            {"p": str(path), "d": delim, "c": columns},
        ).fetchone()
    except duckdb.Error as exc:
        raise _duckdb_csv_error(path, exc, delim) from None


@dataclass
class Dataset:
    """Attached data, loaded and profiled. `con` is the private sandboxed database holding the
    rows in table `data`: only the boundary queries it."""

    path: Path
    name: str
    files: list[Path]
    sha256: str
    rows: int
    columns: list[ColumnProfile]
    con: duckdb.DuckDBPyConnection = field(repr=False)
    # The hash of the bytes without the file names (see open()): the query audit's key.
    content_sha256: str = ""

    @classmethod
    def open(cls, path: str | Path) -> Dataset:
        root = Path(path).expanduser().resolve()
        files = _files(root)
        hasher = hashlib.sha256()
        # The rows alone, without the file names: the key of the query audit (audit_log.py), so
        # that a renamed copy of the same data shares its record of what was answered. Each
        # file's size first, so that where one file ends and the next begins is part of it.
        content = hashlib.sha256()
        for f in files:
            hasher.update(f.name.encode("utf-8") + b"\0")
            content.update(_size(f).to_bytes(8, "big"))
            _check_file(f, hasher, content)
        con = duckdb.connect(":memory:")
        try:
            sniffed = [(f, *_sniff(con, f)) for f in files]
            first_file, delim, first_cols = sniffed[0]
            for f, d, cols in sniffed[1:]:
                if {c.casefold() for c in cols} != {c.casefold() for c in first_cols}:
                    missing = sorted(set(first_cols) - set(cols))
                    extra = sorted(set(cols) - set(first_cols))
                    raise DataError(
                        f"mixed schemas in {root}: {f.name} differs from {first_file.name} "
                        f"(missing {missing or 'none'}, extra {extra or 'none'}); a folder must "
                        "hold CSVs with one header"
                    )
                if d != delim:
                    raise DataError(
                        f"mixed delimiters in {root}: {f.name} uses {d!r}, "
                        f"{first_file.name} uses {delim!r}"
                    )
            try:
                con.execute(
                    f"CREATE TABLE {TABLE} AS SELECT * FROM read_csv($files, header = true, "
                    "delim = $delim, union_by_name = true, sample_size = -1)",
                    {"files": [str(f) for f in files], "delim": delim},
                )
            except duckdb.Error as exc:
                raise _duckdb_csv_error(root, exc) from None
            # From here on the database can reach nothing outside itself.
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            from mole_dag.store.records import scalar  # (see _sniff)

            rows = scalar(con, int, f"SELECT count(*) FROM {TABLE}") or 0
            if rows == 0:
                raise DataError(f"{root} has a header but no rows")
            if rows < FLOOR:
                raise DataError(
                    f"{root} has {rows} rows; no aggregate over fewer than {FLOOR} "
                    "rows may leave, so there is nothing to analyse"
                )
            columns = _profile(con, rows)
            if any(c.name.casefold() == "rowid" for c in columns):
                # The audit's row sets (rowsets.py) name rows by DuckDB's rowid, which a column
                # of that name would hide: better refused than silently mis-bookkept.
                raise DataError(
                    f"{root} has a column named rowid, a name DuckDB reserves for "
                    "the row's position; rename the column and attach the data again"
                )
        except BaseException:
            con.close()
            raise
        return cls(
            root,
            root.name,
            files,
            hasher.hexdigest(),
            rows,
            columns,
            con,
            content_sha256=content.hexdigest(),
        )

    def close(self) -> None:
        with contextlib.suppress(duckdb.Error):
            self.con.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def column(self, name: str) -> ColumnProfile | None:
        """Look a name up. Case-insensitive, because DuckDB resolves identifiers that way: a
        case-sensitive lookup would let "EMAIL" past a check on "email"."""
        key = name.casefold()
        for c in self.columns:
            if c.name.casefold() == key:
                return c
        return None

    @property
    def withheld(self) -> list[ColumnProfile]:
        return [c for c in self.columns if c.withheld]

    def view(
        self, question: str, templates: tuple[TemplateInfo, ...], max_choices: int
    ) -> ProfileView:
        return ProfileView(
            question,
            self.name,
            self.rows,
            tuple(c.view() for c in self.columns),
            templates,
            max_choices,
        )

    def describe(self) -> str:
        withheld = ", ".join(f"{c.name} ({c.withheld})" for c in self.withheld) or "none"
        files = f"{len(self.files)} file{'s' if len(self.files) != 1 else ''}"
        return (
            f"{self.name}: {self.rows} rows, {len(self.columns)} columns from {files}; "
            f"withheld: {withheld}"
        )


def _profile(con: duckdb.DuckDBPyConnection, rows: int) -> list[ColumnProfile]:
    # Imported here while the package moves of issue 13 rewrite this module's imports.
    from mole_dag.store.records import fetch_all, fetch_named

    described = fetch_all(con, _Described, f"DESCRIBE {TABLE}")
    # Every figure named after its column's place and what it measures, and read back by that
    # name: the column names themselves are the user's and may be anything.
    parts: list[str] = []
    for i, d in enumerate(described):
        c = ident(d.column_name)
        parts += [f"count({c}) AS non_null_{i}", f"count(DISTINCT {c}) AS distinct_{i}"]
        if _simple_type(d.column_type) == "text":
            parts += [
                f"coalesce(avg(length({c})), 0) AS avg_len_{i}",
                f"coalesce(max(length({c})), 0) AS max_len_{i}",
                f"count_if(regexp_full_match({c}, '{_EMAIL}')) AS emails_{i}",
                f"count_if(regexp_full_match({c}, '{_PHONE}')) AS phones_{i}",
            ]
    got = fetch_named(con, f"SELECT {', '.join(parts)} FROM {TABLE}")
    assert got is not None  # an aggregate without GROUP BY has one row
    out: list[ColumnProfile] = []
    for i, d in enumerate(described):
        name, dtype = d.column_name, d.column_type
        kind = _simple_type(dtype)
        non_null, distinct = int(got[f"non_null_{i}"]), int(got[f"distinct_{i}"])
        avg_len = max_len = emails = phones = 0.0
        if kind == "text":
            avg_len, max_len = float(got[f"avg_len_{i}"]), float(got[f"max_len_{i}"])
            emails, phones = float(got[f"emails_{i}"]), float(got[f"phones_{i}"])
        withheld = _withheld(name, kind, non_null, distinct, avg_len, max_len, emails, phones)
        roles: list[str] = []
        levels: tuple[Any, ...] = ()
        if withheld is None and distinct >= 2:
            if kind in {"integer", "number"}:
                roles.append(MEASURE)
            if distinct <= MAX_LEVELS and kind in {"text", "integer", "number", "boolean"}:
                roles.append(GROUP)
            if distinct == 2:
                counts = fetch_all(
                    con,
                    _LevelCount,
                    f"SELECT {ident(name)} AS level, count(*) AS n FROM {TABLE} "
                    f"WHERE {ident(name)} IS NOT NULL GROUP BY 1 ORDER BY 1",
                )
                if all(c.n >= FLOOR for c in counts):
                    roles.append(BINARY)
                    levels = tuple(c.level for c in counts)
        out.append(
            ColumnProfile(
                name,
                dtype,
                kind,
                non_null,
                distinct,
                (rows - non_null) / rows,
                tuple(roles),
                withheld,
                levels,
            )
        )
    return out


def _withheld(
    name: str,
    kind: str,
    non_null: int,
    distinct: int,
    avg_len: float,
    max_len: float,
    emails: float,
    phones: float,
) -> str | None:
    """Why a column may not be used at all, or None. Order matters: the most specific reason."""
    if kind in {"date", "other"}:
        # Dates are quasi-identifiers (a birth date, a visit date) and no template uses them.
        return "date" if kind == "date" else "unsupported_type"
    if non_null == 0:
        return None
    if kind == "text":
        if emails / non_null >= PATTERN_SHARE:
            return "email"
        if phones / non_null >= PATTERN_SHARE:
            return "phone"
        if avg_len >= FREE_TEXT_AVG_CHARS or max_len > MAX_LABEL_CHARS:
            return "free_text"
        if distinct > MAX_LEVELS:
            return "identifier"
    if kind == "integer" and distinct == non_null and non_null >= FLOOR:
        return "identifier"  # every value unique: a key, not a quantity
    if _ID_NAME.search(name.strip()) and (distinct > MAX_LEVELS or distinct > non_null / 2):
        return "identifier"
    return None
