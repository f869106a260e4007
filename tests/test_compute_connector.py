"""The connector: registering and profiling a CSV file or folder, withheld columns, clear errors,
and the sandbox around the private database."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from survey_data import ROWS, row_level_markers, survey_csv  # noqa: F401 - fixture

from mole_dag.local_data import boundary, hypothesis
from mole_dag.local_data.connector import FLOOR, DataError, Dataset, _duckdb_csv_error
from mole_dag.skills.view import BINARY, GROUP, MEASURE


@pytest.fixture(scope="module")
def survey(survey_csv: Path) -> Iterator[Dataset]:  # noqa: F811
    ds = Dataset.open(survey_csv)
    yield ds
    ds.close()


def _csv(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, "utf-8")
    return path


def test_profile_of_the_survey(survey: Dataset) -> None:
    assert survey.rows == ROWS
    assert survey.name == "survey.csv"
    assert len(survey.sha256) == 64
    cols = {c.name: c for c in survey.columns}
    assert [c.name for c in survey.columns][:3] == ["respondent_id", "email", "phone"]
    withheld = {c.name: c.withheld for c in survey.columns if c.withheld}
    assert withheld == {
        "respondent_id": "identifier",
        "email": "email",
        "phone": "phone",
        "signup_date": "date",
        "notes": "free_text",
    }
    assert cols["region"].roles == (GROUP,) and cols["region"].distinct == 9
    assert MEASURE in cols["income"].roles and GROUP not in cols["income"].roles
    assert set(cols["satisfaction"].roles) == {MEASURE, GROUP}
    assert BINARY in cols["renewed"].roles and cols["renewed"].levels == (False, True)
    assert all(c.null_rate == 0.0 for c in survey.columns)
    for c in survey.columns:
        if c.withheld:
            assert c.roles == ()


def test_view_and_profile_crossing_carry_no_values(survey: Dataset) -> None:
    view = survey.view("q?", hypothesis.CATALOGUE, 6)
    crossing = boundary.profile_crossing(survey, view)
    text = crossing.envelope_json
    for marker in row_level_markers():
        assert marker not in text
    assert crossing.min_rows == ROWS
    assert {c.name for c in view.columns} == {c.name for c in survey.columns}
    # Names, types, roles, counts, null rates, withheld reasons: nothing else.
    for c in crossing.envelope["columns"]:
        assert set(c) == {"name", "type", "roles", "distinct", "null_rate", "withheld"}


def test_lookup_is_case_insensitive_like_duckdb(survey: Dataset) -> None:
    assert survey.column("EMAIL") is survey.column("email")
    assert survey.column("Email").withheld == "email"  # type: ignore[union-attr]
    assert survey.column("nope") is None


def test_sandbox_blocks_files_even_without_the_guard(survey: Dataset) -> None:
    # Defence in depth: the guard refuses these, and the database itself cannot do them.
    for sql in [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM glob('/*')",
        "COPY data TO 'leak.csv'",
        "ATTACH 'other.duckdb'",
        "INSTALL httpfs",
    ]:
        with pytest.raises(duckdb.PermissionException):
            survey.con.execute(sql)
    with pytest.raises(duckdb.CatalogException):  # no replacement scan of a file path either
        survey.con.execute("SELECT * FROM '/etc/passwd'")
    with pytest.raises(duckdb.Error):
        survey.con.execute("SET enable_external_access = true")


def test_folder_of_csvs_with_one_header(tmp_path: Path) -> None:
    rows = "".join(f"{'ab'[i % 2]},{i}\n" for i in range(10))
    _csv(tmp_path / "d" / "one.csv", "kind,value\n" + rows)
    _csv(tmp_path / "d" / "two.csv", "kind,value\n" + rows)
    _csv(tmp_path / "d" / "notes.txt", "not a csv")
    with Dataset.open(tmp_path / "d") as ds:
        assert ds.rows == 20 and len(ds.files) == 2 and ds.name == "d"


def test_types_are_sniffed_over_the_whole_file(tmp_path: Path) -> None:
    # A value that breaks the type after DuckDB's default sample must not fail the load.
    body = "a,b\n" + "".join(f"{i},x\n" for i in range(25_000)) + "n/a,y\n"
    with Dataset.open(_csv(tmp_path / "late.csv", body)) as ds:
        assert ds.column("a").type == "text"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("files", "expect"),
    [
        ({"empty.csv": ""}, "is empty"),
        ({"h.csv": "a,b\n"}, "header but no rows"),
        ({"few.csv": "a,b\n1,2\n3,4\n"}, f"no aggregate over fewer than {FLOOR} rows"),
        ({"ragged.csv": "a,b\n1,x\n2,y,SECRET-VALUE\n3,z\n"}, "number of fields"),
        (
            {"bad.csv": b"a,b\n1,caf\xe9\n2,SECRET-VALUE\n"},
            "not UTF-8: invalid byte at offset 9 (line 2)",
        ),
        ({"cut.csv": b"a,b\n1,caf\xc3"}, "ends inside a multi-byte character"),
    ],
)
def test_bad_files_get_clear_errors(
    tmp_path: Path, files: dict[str, str | bytes], expect: str
) -> None:
    for name, body in files.items():
        _csv(tmp_path / name, body)
    target = tmp_path / next(iter(files))
    with pytest.raises(DataError, match=expect.replace("(", r"\(").replace(")", r"\)")) as got:
        Dataset.open(target)
    assert "SECRET-VALUE" not in str(got.value)
    assert str(target) in str(got.value)


def test_duckdb_csv_errors_do_not_quote_the_row(tmp_path: Path) -> None:
    # DuckDB's own error quotes the offending line; the translation keeps only its number.
    p = _csv(tmp_path / "q.csv", b"a,b\n1,SECRET-VALUE \xff\n")
    with pytest.raises(duckdb.Error) as raw:
        duckdb.connect().execute("SELECT * FROM read_csv($p)", {"p": str(p)}).fetchall()
    assert "Original Line" in str(raw.value)
    err = _duckdb_csv_error(p, raw.value)
    assert "SECRET-VALUE" not in str(err) and "Original" not in str(err)
    assert str(err).startswith(f"{p} at line ") and "not UTF-8" in str(err)


def test_missing_path_and_folders_without_csv(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        Dataset.open(tmp_path / "nope.csv")
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises(DataError, match="holds no .csv files"):
        Dataset.open(tmp_path / "empty-folder")


def test_mixed_schemas_and_delimiters_in_a_folder(tmp_path: Path) -> None:
    rows = "".join(f"{i},{i}\n" for i in range(6))
    _csv(tmp_path / "m" / "a.csv", "x,y\n" + rows)
    _csv(tmp_path / "m" / "b.csv", "x,z\n" + rows)
    with pytest.raises(DataError, match=r"mixed schemas .* b\.csv differs from a\.csv") as got:
        Dataset.open(tmp_path / "m")
    assert "missing ['y']" in str(got.value) and "extra ['z']" in str(got.value)
    _csv(tmp_path / "n" / "a.csv", "x,y\n" + rows)
    _csv(tmp_path / "n" / "b.csv", "x;y\n" + rows.replace(",", ";"))
    with pytest.raises(DataError, match="mixed delimiters"):
        Dataset.open(tmp_path / "n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    p = _csv(tmp_path / "locked.csv", "a,b\n" + "1,2\n" * 6)
    p.chmod(0)
    try:
        with pytest.raises(DataError, match="cannot read"):
            Dataset.open(p)
    finally:
        p.chmod(0o600)


@pytest.mark.parametrize(
    ("header", "values", "reason"),
    [
        ("contact", [f"person{i}@example.com" for i in range(60)], "email"),
        ("mobile", [f"+1 (555) 010-{i:04d}" for i in range(60)], "phone"),
        (
            "comment",
            [f"this is a long free text comment number {i}" for i in range(60)],
            "free_text",
        ),
        ("surname", [f"Name{i}" for i in range(60)], "identifier"),
        ("customer_id", [str(1000 + i // 2) for i in range(120)], "identifier"),
        ("ticket", [str(7000 + i) for i in range(60)], "identifier"),
    ],
)
def test_identifier_like_columns_are_withheld(
    tmp_path: Path, header: str, values: list[str], reason: str
) -> None:
    body = f"kind,{header}\n" + "".join(f'{"ab"[i % 2]},"{v}"\n' for i, v in enumerate(values))
    with Dataset.open(_csv(tmp_path / "w.csv", body)) as ds:
        assert ds.column(header).withheld == reason  # type: ignore[union-attr]
        assert ds.column("kind").withheld is None  # type: ignore[union-attr]
