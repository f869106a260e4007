"""Issue 31, item 6: confidence from the document itself over a local folder. A local file's
source class is read from its front matter (a journal's masthead or a statement that it was
published in one, a conference line, a DOI, an arXiv id, a manual or an FAQ, a vignette) and its
publisher from its authors (the PDF's metadata, else its first page), so a journal paper and an
FAQ differ and two groups' papers are two publishers; `mole trace` says where each came from.
The documents are written for this test."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag.actors.origin import read_origin
from mole_dag.core import Document, SourceClass, Unit
from mole_dag.executor.ingest import store_source
from mole_dag.output.trace import render_trace
from mole_dag.session import create_session
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import SourceRow

BODY = (
    "\n\n1 Introduction\n\nThe pumpkin package fits growth curves to field counts. "
    "See Miller (2001), doi:10.1000/other.paper, in the Journal of Vegetable Science, "
    "Volume 3.\n"
)


def _doc(title: str, front: str, author: str | None = None, name: str = "p.pdf") -> Document:
    return Document(
        url=f"file:///papers/{name}",
        title=title,
        text=f"{title}\n{front}{BODY}",
        author=author,
    )


@pytest.mark.parametrize(
    ("front", "title", "cls", "basis"),
    [
        (
            "JVS Journal of Vegetable Science March 2011, Volume 12, Issue 4. Ana Ortiz "
            "Example University\nAbstract\nWe fit curves.",
            "Growth Curves of Pumpkins",
            SourceClass.PEER_REVIEWED,
            "journal line",
        ),
        (
            "Ana Ortiz Example University\nAbstract\nThis paper has been published in the "
            "Journal of Vegetable Science and describes the package.",
            "Growth Curves of Pumpkins",
            SourceClass.PEER_REVIEWED,
            "published in 'Journal of Vegetable Science'",
        ),
        (
            "Ana Ortiz\nIn Proceedings of the Ninth Conference on Field Data, 2019.",
            "Growth Curves of Pumpkins",
            SourceClass.PEER_REVIEWED,
            "conference line",
        ),
        (
            "Ana Ortiz\ndoi: 10.5555/pumpkin.2020.7\nAbstract\nWe fit curves.",
            "Growth Curves of Pumpkins",
            SourceClass.PEER_REVIEWED,
            "DOI 10.5555/pumpkin.2020.7",
        ),
        (
            "Ana Ortiz\narXiv:2101.01234v2 [stat.ME]\nAbstract\nWe fit curves.",
            "Growth Curves of Pumpkins",
            SourceClass.PRIMARY,
            "arXiv preprint 2101.01234v2",
        ),
        (
            "Ana Ortiz and Ben Lund\nThis document answers questions.",
            "pumpkin FAQ",
            SourceClass.PRIMARY,
            "'FAQ' in its title",
        ),
        (
            "Ana Ortiz\nThis vignette shows how to fit growth curves with the package.",
            "Fitting growth curves",
            SourceClass.PRIMARY,
            "package vignette",
        ),
        ("Ana Ortiz\nSome notes on growth curves.", "Notes", SourceClass.UNKNOWN, "no journal"),
    ],
)
def test_the_class_is_read_from_the_front_matter(
    front: str, title: str, cls: SourceClass, basis: str
) -> None:
    got = read_origin(_doc(title, front))
    assert got.source_class == cls
    assert basis in got.class_basis


def test_a_journal_or_doi_in_the_body_is_another_papers() -> None:
    # BODY names a journal with its volume and a DOI, after the introduction begins.
    got = read_origin(_doc("Notes", "Ana Ortiz\nSome notes on growth curves."))
    assert got.source_class == SourceClass.UNKNOWN


def test_publishers_are_the_authors() -> None:
    a = read_origin(_doc("A", "Ana Ortiz and Ben Lund\nExample University\n"))
    b = read_origin(_doc("B", "Ben Lund, Ana Ortiz\nExample University\n"))
    c = read_origin(_doc("C", "Chen Wei and Dora Mayer\nOther Institute\n"))
    assert a.publisher == b.publisher == "authors:lund,ortiz"
    assert c.publisher == "authors:mayer,wei"
    assert "Ana Ortiz" in a.publisher_basis and "first page" in a.publisher_basis


def test_metadata_authors_come_first_and_markers_are_not_names() -> None:
    meta = read_origin(_doc("A", "Someone Else\n", author="Ana Ortiz, Ben Lund"))
    assert meta.publisher == "authors:lund,ortiz" and "metadata" in meta.publisher_basis
    marked = read_origin(
        _doc("A", "Ana Ortiza and Ben Lundb\na https://ortiz.example; b https://lund.example\n")
    )
    assert marked.publisher == "authors:lund,ortiz"


def test_no_author_leaves_the_folder_publisher() -> None:
    got = read_origin(_doc("A", "\n"))
    assert got.publisher is None and "no author found" in got.publisher_basis


def test_a_stored_local_source_carries_its_origin_and_trace_shows_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    sid_ = create_session(
        store, "How do pumpkin growth curves behave?", Unit.TOKENS, 10**6
    ).session_id
    paper = _doc(
        "Growth Curves of Pumpkins",
        "Ana Ortiz Example University\nAbstract\nThis paper has been published in the "
        "Journal of Vegetable Science.",
        name="paper.pdf",
    )
    faq = _doc(
        "pumpkin FAQ", "Chen Wei and Dora Mayer\nThis document answers questions.", name="faq.pdf"
    )
    store.transact(lambda cur: [store_source(cur, sid_, "local", d) for d in (paper, faq)])
    rows = {r.url: r for r in store.many(SourceRow, q("session_sources"), {"session_id": sid_})}
    assert rows[paper.url].source_class == SourceClass.PEER_REVIEWED
    assert rows[faq.url].source_class == SourceClass.PRIMARY
    assert rows[paper.url].publisher == "authors:ortiz"
    assert rows[faq.url].publisher == "authors:mayer,wei"
    # Trace lists a source once it has a claim: give each one.
    store.transact(
        lambda cur: [
            cur.execute(
                q("claim_insert"),
                {
                    "id": f"c-{i}",
                    "session_id": sid_,
                    "source_id": rows[d.url].id,
                    "chunk_id": "x",
                    "sub_question_id": "x",
                    "text": "The pumpkin package fits growth curves to field counts.",
                    "quote": "The pumpkin package fits growth curves to field counts.",
                    "quote_byte_start": 0,
                    "quote_byte_end": 10,
                    "created_by": "test",
                    "now": utcnow(),
                },
            )
            for i, d in enumerate((paper, faq))
        ]
    )
    trace = render_trace(store, sid_)
    assert "peer-reviewed: states it was published in 'Journal of Vegetable Science'" in trace
    assert "primary: documentation by its makers ('FAQ' in its title)" in trace
    assert "publisher: authors Chen Wei, Dora Mayer (from its first page)" in trace
    store.close()
