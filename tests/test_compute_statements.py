"""Finding sentences and the report section: built from the envelope only, safe to render."""

from __future__ import annotations

from pathlib import Path

from mole_dag.local_data import boundary
from mole_dag.local_data.connector import Dataset
from mole_dag.local_data.statements import MAX_CLAIM_CHARS, label, statements
from mole_dag.output.citations import cited_numbers
from mole_dag.skills.view import HypothesisChoice


def test_hostile_labels_cannot_forge_citations_or_controls(tmp_path: Path) -> None:
    labels = ["[2]", "north\u202eevil", "\x1b[31mred", "plain"]
    body = "grp,val\n" + "".join(f"{labels[i % 4]},{i % 17}\n" for i in range(80))
    p = tmp_path / "h.csv"
    p.write_text(body, "utf-8")
    with Dataset.open(p) as ds:
        c = boundary.ask_template(
            ds, HypothesisChoice("mean_by_group", {"group": "grp", "value": "val"})
        )
    lines = statements(c.envelope, "h.csv")
    assert lines
    for line in lines:
        assert cited_numbers(line) == []
        assert "\u202e" not in line and "\x1b" not in line
        assert len(line) <= MAX_CLAIM_CHARS
    assert label("[7]") == "(7)" and label(None) == "(missing)" and label(True) == "true"


def test_one_named_group_says_nothing_was_compared(tmp_path: Path) -> None:
    p = tmp_path / "one.csv"
    # a (20 rows) and b (6) are named, c (2) is suppressed; a alone would leave c to a
    # subtraction from the total, so b is suppressed too (issue 11): one named group.
    p.write_text(
        "grp,val\n"
        + "".join(f"{'a' if i < 20 else 'b' if i < 26 else 'c'},{i % 7}\n" for i in range(28)),
        "utf-8",
    )
    with Dataset.open(p) as ds:
        c = boundary.ask_template(
            ds, HypothesisChoice("mean_by_group", {"group": "grp", "value": "val"})
        )
    (headline,) = statements(c.envelope, "one.csv")
    assert "no two named groups could be compared" in headline
    assert "a remainder under 5 rows was suppressed" in headline
    assert "1 further group was suppressed" in headline


def test_many_groups_stay_under_the_claim_cap(tmp_path: Path) -> None:
    p = tmp_path / "many.csv"
    p.write_text("grp,val\n" + "".join(f"group-{i % 40:02d},{i}\n" for i in range(4000)), "utf-8")
    with Dataset.open(p) as ds:
        c = boundary.ask_template(ds, HypothesisChoice("count_by_group", {"group": "grp"}))
    (headline,) = statements(c.envelope, "many.csv")
    assert "and 32 more" in headline and len(headline) <= MAX_CLAIM_CHARS
