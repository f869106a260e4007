"""One name, one number (issue 13 item 6): a limit the schema enforces is one Python constant
(mole_dag.core) whose value is the CHECK's; the dead-end causes the code can write are the ones
the schema admits; an asset's metadata calls a library field by the field's own name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mole_dag.core import MAX_CLAIM_CHARS, MIN_QUOTE_CHARS, DeadEndCause
from mole_dag.store import Store

ROOT = Path(__file__).resolve().parent.parent


def _checks(store: Store, table: str) -> str:
    """The CHECK constraints of `table` as the applied schema has them (after every migration)."""
    rows = store.rows(
        "SELECT constraint_text FROM duckdb_constraints() "
        "WHERE table_name = ? AND constraint_type = 'CHECK'",
        [table],
    )
    return "\n".join(r["constraint_text"] for r in rows)


def test_the_claim_cap_is_the_schemas(store: Store) -> None:
    got = re.findall(r"length\(\"?text\"?\) <= (\d+)", _checks(store, "claims"))
    assert [int(n) for n in got] == [MAX_CLAIM_CHARS]


def test_the_quote_minimum_is_the_schemas(store: Store) -> None:
    got = re.findall(
        r"regexp_replace\(\"?trim\"?\(\"?quote\"?\).*?\) >= (\d+)", _checks(store, "claims")
    )
    assert [int(n) for n in got] == [MIN_QUOTE_CHARS]


def test_dead_end_causes_are_the_schemas(store: Store) -> None:
    text = next(c for c in _checks(store, "dead_ends").splitlines() if "cause" in c)
    assert set(re.findall(r"'(\w+)'", text)) == {str(c) for c in DeadEndCause}


def _python_files() -> list[Path]:
    return [p for top in ("mole_dag", "assets") for p in (ROOT / top).rglob("*.py")]


@pytest.mark.parametrize("name", ["MAX_CLAIM_CHARS", "MIN_QUOTE_CHARS"])
def test_each_limit_is_defined_once(name: str) -> None:
    defined = [
        p.relative_to(ROOT).as_posix()
        for p in _python_files()
        if re.search(rf"^{name}\s*[:=]", p.read_text("utf-8"), re.M)
    ]
    assert defined == ["mole_dag/core.py"]


def test_no_claim_cap_written_as_a_number() -> None:
    # `[:600]` was a fourth copy of the cap in the miner.
    found = [
        p.relative_to(ROOT).as_posix()
        for p in _python_files()
        if re.search(rf"\[:\s*{MAX_CLAIM_CHARS}\]", p.read_text("utf-8"))
    ]
    assert found == []


def test_asset_metadata_keys_are_the_library_field_names() -> None:
    """`"pairs_settled_by_rule": res.pairs_decided_free` gave one number two names. A key taken
    straight from a result's field is that field's name (assets use stage_metadata.fields_of)."""
    pair = re.compile(r"\"(\w+)\":\s*(?:res|rec|done|bal|result)\.(\w+)\b(?!\s*[(\[.])")
    renamed = [
        f"{p.relative_to(ROOT)}: {k} <- {f}"
        for p in (ROOT / "assets").rglob("*.py")
        for k, f in pair.findall(p.read_text("utf-8"))
        if k != f
    ]
    assert renamed == []


def test_fields_of_refuses_a_name_the_result_does_not_have() -> None:
    from dataclasses import dataclass

    from mole_dag.stage_metadata import fields_of

    @dataclass
    class _Result:
        clusters: int

    with pytest.raises(AttributeError):
        fields_of(_Result(3), "clusters", "not_a_field")
    assert fields_of(_Result(3), "clusters") == {"clusters": 3}
