"""Issue 33, item 3: a PDF is listed by its title, not its author's lines, when its title is
also its running head (shared-mime-info-spec.pdf was "X Desktop Group (http://www.freedesktop.org)
Thomas Leonard"); a list item's bullet glyph does not open a claim's quote ("“• dispersiontest()
tests ...”")."""

from __future__ import annotations

from pathlib import Path

from mole_dag.actors.pdf import pdf_document
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store
from mole_dag.text import strip_bullet
from tests.pdfmaker import make_pdf, prose_page

TITLE = "Shared MIME-info Database"
BODY = [
    "Many programs and desktops use the MIME system to represent the types of files.",
    "It is necessary to work out the correct MIME type for a file by its name or contents.",
]


def test_a_title_that_is_also_the_running_head_is_the_title() -> None:
    first = [
        (72.0, 740.0, TITLE, 24.0),
        (72.0, 700.0, "X Desktop Group (http://www.freedesktop.org)", 17.0),
        (72.0, 680.0, "Thomas Leonard", 17.0),
        *prose_page(BODY, top=600, size=10),
    ]
    later = [[(72.0, 770.0, TITLE, 9.0), *prose_page(BODY, top=600, size=10)] for _ in range(3)]
    doc = pdf_document(make_pdf([first, *later]), url="file:///spec.pdf", fallback_title="spec")
    assert doc.title == TITLE


def test_a_bullet_glyph_is_not_part_of_a_quote(tmp_path: Path) -> None:
    assert strip_bullet("\u2022 dispersiontest() tests overdispersion") == (
        "dispersiontest() tests overdispersion"
    )
    assert strip_bullet("-5 degrees is cold") == "-5 degrees is cold"  # a minus sign stays
    root = tmp_path / "notes"
    root.mkdir()
    (root / "tea.txt").write_text(
        "Green tea and sleep\n\n"
        "\u2022 Green tea contains theanine, which was found to improve sleep quality in a "
        "trial of ninety adults.\n"
        "\u2022 Drinking green tea in the evening raises the risk of poor sleep in adults who "
        "are sensitive to caffeine.\n",
        "utf-8",
    )
    store = Store(tmp_path / "s.duckdb")
    question = "How does green tea affect sleep in adults?"
    sid = create_session(store, question, Unit.TOKENS, 50_000, corpus=str(root)).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    claims = store.rows("SELECT text, quote FROM claims WHERE session_id = ?", [sid])
    md = store.row("SELECT markdown FROM reports WHERE session_id = ?", [sid])["markdown"]
    store.close()
    assert any("theanine" in c["quote"] for c in claims), claims
    for c in claims:
        assert not c["quote"].startswith("\u2022") and not c["text"].startswith("\u2022"), c
    assert "\u201c\u2022" not in md and "\u2022" not in md, md
