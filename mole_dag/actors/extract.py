"""Turn a document's bytes into text and metadata.

HTML goes through trafilatura (main text, title, author, date) with scholarly identifiers read
from the citation meta tags journals publish; Markdown and plain text may carry a front-matter
block of `key: value` lines. The text returned here is what chunks tile and quotes are checked
against, so nothing downstream may alter it.

HTML text is rebuilt from trafilatura's structured body rather than its txt output: that output
ends every block with a single newline, so a heading ran into the sentence after it and a list
item into the next one. Here each heading, paragraph, list item, table row and quote is a block
of its own, and blocks are joined by a blank line, which both the chunker's paragraph cut and the
sentence splitter treat as a boundary. Plain text only: no list dashes, no heading marks."""

from __future__ import annotations

import html as htmllib
import logging
import re
from datetime import date
from typing import TYPE_CHECKING

from mole_dag.core import Document

if TYPE_CHECKING:
    from lxml.etree import _Element

# trafilatura and lxml.html are imported where HTML is read, not here: they cost ~0.25 s at
# import, and Markdown, plain text and a warm corpus index never need them (issue 12).

log = logging.getLogger("mole.extract")
logging.getLogger("trafilatura").setLevel(logging.ERROR)
logging.getLogger("htmldate").setLevel(logging.ERROR)

_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"'<>]+)", re.IGNORECASE)

# Meta tags that name a paper, as Highwire/Google Scholar and Dublin Core define them.
_META_IDS = {
    "citation_doi": "doi",
    "dc.identifier": "doi",
    "prism.doi": "doi",
    "citation_pmid": "pmid",
    "citation_pmcid": "pmcid",
    "citation_arxiv_id": "arxiv_id",
}


class ExtractionError(ValueError):
    """The content could not be read as a document."""


def parse_date(value: str | None) -> date | None:
    if not value:
        return None
    m = _DATE.search(value)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    m = _FRONT.match(text)
    if not m:
        return {}, text
    meta: dict[str, str] = {}
    for line in m.group(1).splitlines():
        if ":" in line:
            key, _, value = line.partition(":")
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return meta, text[m.end() :]


# A Markdown document's first line as a level-1 heading ("# Title"): its title by convention.
_MD_TITLE = re.compile(r"\A\s*#[ \t]+(?P<title>[^\n]*?\S)[ \t#]*(?:\n|\Z)")


def from_plain(
    text: str, *, fallback_url: str, fallback_title: str, markdown: bool = False
) -> Document:
    """A text or Markdown document. Its title: the front matter's, else (Markdown) a level-1
    heading on its first line, else the fallback (the file name)."""
    meta, body = split_front_matter(text)
    doi = meta.get("doi")
    heading = _MD_TITLE.match(body) if markdown else None
    return Document(
        url=meta.get("url") or (f"https://doi.org/{doi}" if doi else fallback_url),
        title=meta.get("title") or (heading.group("title") if heading else fallback_title),
        text=body.strip("\n"),
        publisher=meta.get("publisher"),
        author=meta.get("author"),
        published=parse_date(meta.get("published") or meta.get("date")),
        doi=doi,
        pmid=meta.get("pmid"),
        pmcid=meta.get("pmcid"),
        arxiv_id=meta.get("arxiv") or meta.get("arxiv_id"),
    )


def _scholarly_ids(html: str) -> dict[str, str]:
    import lxml.etree
    import lxml.html

    found: dict[str, str] = {}
    try:
        tree = lxml.html.fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return found
    for el in tree.iterfind(".//meta"):
        name = (el.get("name") or el.get("property") or "").strip().lower()
        field = _META_IDS.get(name)
        content = (el.get("content") or "").strip()
        if not field or not content or field in found:
            continue
        if field == "doi":
            m = _DOI.search(content)
            if not m:
                continue
            content = m.group(1).rstrip(".,;")
        found[field] = content
    return found


# Tags of trafilatura's internal (TEI-like) body that start and end a block of their own.
_BLOCKS = frozenset(
    {
        "body",
        "div",
        "p",
        "head",
        "list",
        "item",
        "table",
        "row",
        "quote",
        "figure",
        "note",
        "graphic",
    }
)
# Text whose line breaks are the author's (code, preformatted quotes): kept as lines.
_PREFORMATTED = frozenset({"code", "quote"})
# Code is a block when it stands between blocks (a listing), inline inside running text.
_INLINE_HOSTS = frozenset({"p", "head", "item", "cell"})
_CELL_SEP = " | "
_BLOCK_SEP = "\n\n"
_FLOW_SPACE = re.compile(r"\s+")


class _Blocks:
    """Collects the text of the current block and closes it into a list of plain-text blocks."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self.buf: list[str] = []

    def add(self, text: str | None, *, pre: bool) -> None:
        if text:
            # In running HTML text a newline is only whitespace (the browser shows a space);
            # only <br> (lb) and preformatted text break a line.
            self.buf.append(text if pre else _FLOW_SPACE.sub(" ", text))

    def close(self) -> None:
        from trafilatura.utils import sanitize  # loaded by from_html already

        raw = "".join(self.buf)
        self.buf = []
        block = sanitize(raw) if raw.strip() else None
        if block:
            self.done.append(htmllib.unescape(block))


def _walk(el: _Element, out: _Blocks, pre: bool = False) -> None:
    tag = el.tag if isinstance(el.tag, str) else ""
    parent = el.getparent()
    is_block = tag in _BLOCKS or (
        tag == "code" and (parent is None or parent.tag not in _INLINE_HOSTS)
    )
    # Preformatting reaches inline children, not a paragraph nested in a blockquote.
    inner = tag in _PREFORMATTED or (pre and not is_block)
    if is_block:
        out.close()
    elif tag == "lb":
        out.buf.append("\n")
    elif tag == "cell" and el.getprevious() is not None:
        # Cells of a row stay one block (a row reads as a record), separated as trafilatura's
        # txt output separated them.
        out.buf.append(_CELL_SEP)
    out.add(el.text, pre=inner)
    for child in el:
        _walk(child, out, inner)
    if is_block:
        out.close()
    # A tail is the parent's text that follows this element.
    out.add(el.tail, pre=pre)


def body_text(body: _Element | None) -> str:
    """Plain text of trafilatura's body, one block per heading, paragraph, list item, table row
    or quote, blocks separated by a blank line."""
    if body is None:
        return ""
    out = _Blocks()
    _walk(body, out)
    out.close()
    return _BLOCK_SEP.join(out.done)


def from_html(html: str, *, url: str | None = None, fallback_title: str = "") -> Document:
    """Extract the main text and metadata of an HTML page. Empty text is returned as such: the
    caller decides whether that is `no_text` or `js_required`."""
    import trafilatura

    try:
        doc = trafilatura.bare_extraction(
            html, url=url, with_metadata=True, include_comments=False, include_tables=True
        )
    except Exception as exc:  # trafilatura raises assorted lxml errors on hostile markup
        raise ExtractionError(f"could not parse HTML: {type(exc).__name__}") from None
    data = doc.as_dict() if doc is not None and hasattr(doc, "as_dict") else (doc or {})
    ids = _scholarly_ids(html)
    body = getattr(doc, "body", None)
    # Older trafilatura returned a dict without the tree: fall back to its txt output.
    text = body_text(body) if body is not None else (data.get("text") or "").strip("\n")
    page_url = url or data.get("url") or ""
    return Document(
        url=page_url,
        title=(data.get("title") or fallback_title or "").strip(),
        text=text,
        publisher=data.get("sitename"),
        author=data.get("author"),
        published=parse_date(data.get("date")),
        doi=ids.get("doi"),
        pmid=ids.get("pmid"),
        pmcid=ids.get("pmcid"),
        arxiv_id=ids.get("arxiv_id"),
    )
