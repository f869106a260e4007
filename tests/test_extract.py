"""HTML extraction keeps block boundaries: a heading, a list item, a table row and a paragraph
each come out as a block of their own, separated by a blank line, in plain text (no list dashes,
no heading marks), with the page's metadata as before."""

from __future__ import annotations

from datetime import date

from mole_dag.actors.extract import from_html
from mole_dag.text import sentence_spans

_FILLER = (
    "The survey team walked the whole valley twice over the summer and counted every "
    "nesting pair it could find along the river banks and the old stone walls."
)

PAGE = f"""<!doctype html><html><head><title>Valley birds</title>
<meta name="citation_doi" content="10.1234/birds.2020.7">
<meta name="citation_publication_date" content="2020-05-04">
</head><body><article>
<h1>Valley birds</h1>
<p>{_FILLER}</p>
<h2>Short-term effects</h2>
<p>In people who watch birds,
the heart rate falls. The count rose in
May 2020 after the dry spring.</p>
<ul><li>Swallows returned early</li><li>Herons stayed all winter</li></ul>
<table><tr><td>Species</td><td>Pairs</td></tr><tr><td>Heron</td><td>14</td></tr></table>
<p>First line<br>Second line of the address</p>
<p>{_FILLER}</p>
</article></body></html>"""


def test_blocks_are_separated_by_a_blank_line() -> None:
    text = from_html(PAGE).text
    blocks = text.split("\n\n")
    assert "Short-term effects" in blocks
    assert "Swallows returned early" in blocks
    assert "Herons stayed all winter" in blocks
    assert "Heron | 14" in blocks


def test_text_is_plain() -> None:
    text = from_html(PAGE).text
    assert "#" not in text
    assert "- Swallows" not in text
    assert "<" not in text and "*" not in text


def test_source_line_breaks_inside_a_paragraph_are_spaces_and_br_is_a_line() -> None:
    text = from_html(PAGE).text
    # Hard-wrapped HTML source is one paragraph: the browser shows spaces, so does the text.
    assert "In people who watch birds, the heart rate falls." in text
    assert "rose in May 2020 after" in text
    assert "First line\nSecond line of the address" in text


def test_heading_is_its_own_sentence() -> None:
    text = from_html(PAGE).text
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    assert "Short-term effects" in sentences
    assert "In people who watch birds, the heart rate falls." in sentences


def test_metadata_is_unchanged() -> None:
    doc = from_html(PAGE, url="https://example.org/birds")
    assert doc.title == "Valley birds"
    assert doc.doi == "10.1234/birds.2020.7"
    assert doc.url == "https://example.org/birds"
    assert doc.published == date(2020, 5, 4)


def test_preformatted_code_keeps_its_lines() -> None:
    page = (
        f"<html><body><article><p>{_FILLER}</p><pre><code>x = 1\ny = 2</code></pre>"
        f"<p>{_FILLER}</p></article></body></html>"
    )
    text = from_html(page).text
    assert "x = 1\ny = 2" in text


def test_entities_are_unescaped() -> None:
    page = (
        f"<html><body><article><p>{_FILLER}</p><p>Salt &amp; pepper cost 3 &lt; 4 "
        f"euros.</p></article></body></html>"
    )
    assert "Salt & pepper cost 3 < 4 euros." in from_html(page).text
