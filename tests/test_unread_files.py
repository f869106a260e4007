"""Issue 33, item 2: files of a corpus folder that were not read are named in the report (its
"Not read" section, Markdown and HTML) and once each in `mole show`, by their path in the folder
and a cause in words: an empty file and a text file named .pdf are not "damaged PDFs". No
absolute file:// path of a corpus file reaches a report or `mole show`."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag.actors import local as local_mod
from mole_dag.actors.local import LocalCorpus
from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.output.html import render_html
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store
from tests import report_reader
from tests.pdfmaker import encrypt, make_pdf, prose_page
from tests.test_pdf_sources import QUESTION, tea_pdf

EXPECTED = {
    "empty.pdf": ("no_text", "empty file"),
    "fake.pdf": ("wrong_type", "not a PDF (it is text)"),
    "locked.pdf": ("pdf_encrypted", "PDF: it is encrypted with a password"),
    "scan.pdf": ("pdf_no_text", "PDF: its 1 page carries no text layer"),
    "truncated.pdf": ("pdf_corrupt", "PDF: it is damaged or truncated"),
}


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "papers"
    root.mkdir()
    (root / "tea.pdf").write_bytes(tea_pdf())
    (root / "empty.pdf").write_bytes(b"")
    (root / "truncated.pdf").write_bytes(tea_pdf()[:300])
    (root / "fake.pdf").write_text("Green tea is a drink. This file was only renamed to .pdf.\n")
    (root / "locked.pdf").write_bytes(encrypt(tea_pdf()))
    (root / "scan.pdf").write_bytes(
        make_pdf([prose_page(["Only a picture of text."])], graphics_only=True)
    )
    return root


def test_each_unread_file_has_its_own_cause(tmp_path: Path) -> None:
    local_mod._OPENED.clear()
    corpus = LocalCorpus.open(_folder(tmp_path), cache_dir=tmp_path / "index")
    got = {s.path: (s.cause, s.reason) for s in corpus.skipped}
    assert set(got) == set(EXPECTED)
    for name, (cause, reason) in EXPECTED.items():
        assert got[name][0] == cause, (name, got[name])
        assert got[name][1].startswith(reason), (name, got[name])


def test_the_report_and_mole_show_name_the_files_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _folder(tmp_path)
    db = tmp_path / "s.duckdb"
    store = Store(db)
    sid = create_session(store, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
    run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    md = store.row("SELECT markdown FROM reports WHERE session_id = ?", [sid])["markdown"]
    store.close()
    section = report_reader.section(md, "Not read")
    assert "5 files were not read:" in section, md
    for name, (_cause, reason) in EXPECTED.items():
        assert f"- {name}: {reason}" in section, section
    # The tea PDF was read, and is cited by its path in the folder, not where it lives.
    assert "local file tea.pdf" in md
    assert "file://" not in md and str(root) not in md, md
    html = render_html(md)
    assert "Not read</h2>" in html and "empty file" in html and "file://" not in html

    capsys.readouterr()
    assert main(["--db", str(db), "show", sid]) == 0
    out = capsys.readouterr().out
    assert "file://" not in out and str(root) not in out, out
    for name, (cause, reason) in EXPECTED.items():
        line = next(ln for ln in out.splitlines() if f" {name}: " in ln)
        assert line.split()[0] == cause and reason in line and line.count(name) == 1, line
