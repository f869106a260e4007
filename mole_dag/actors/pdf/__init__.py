"""PDFs as text with pages (issue 19): read by PDFium in a worker process under caps (reader.py,
worker.py), normalised into the text mole stores and checks quotes against (layout.py), and made
into a Document whose `pages` map every byte of the text to its page."""

from __future__ import annotations

from mole_dag.actors.pdf.layout import PdfText, normalise, page_at
from mole_dag.actors.pdf.reader import PdfLimits, PdfReader, PdfRefused, shared_reader
from mole_dag.core import DeadEndCause, Document

# Fewer letters and digits than this over the whole file: no text layer to speak of (a scan, or
# pictures with a caption). A guess, flagged as one.
MIN_TEXT_CHARS = 40

__all__ = [
    "PdfLimits",
    "PdfReader",
    "PdfRefused",
    "PdfText",
    "is_pdf",
    "page_at",
    "pdf_document",
    "read_pdf",
]


def is_pdf(data: bytes) -> bool:
    """Whether the bytes are a PDF: the `%PDF-` header within the first kilobyte (readers allow
    junk before it, and so do servers that prepend a byte-order mark or whitespace)."""
    return b"%PDF-" in data[:1024]


def read_pdf(
    data: bytes, *, limits: PdfLimits | None = None, reader: PdfReader | None = None
) -> PdfText:
    """The PDF's normalised text with its page map, or PdfRefused with the dead end's cause."""
    raw = (reader or shared_reader()).read(data, limits)
    doc = normalise(raw)
    if sum(ch.isalnum() for ch in doc.text) < MIN_TEXT_CHARS:
        n = len(raw.pages)
        raise PdfRefused(
            DeadEndCause.PDF_NO_TEXT,
            f"its {n} page{'s' if n != 1 else ''} carr{'y' if n != 1 else 'ies'} no text layer "
            "(a scanned PDF?); mole reads a PDF's text, it does no OCR",
        )
    return doc


def pdf_document(
    data: bytes,
    *,
    url: str,
    fallback_title: str,
    limits: PdfLimits | None = None,
    reader: PdfReader | None = None,
) -> Document:
    """A Document from a PDF's bytes. The title is the PDF's own (metadata or first page). No
    scholarly id is read from the text: a DOI printed on a page may be another paper's, or a
    journal's placeholder (the DEV vignettes print one), and it would merge publishers; a
    search API's ids are kept by the caller instead."""
    got = read_pdf(data, limits=limits, reader=reader)
    return Document(
        url=url,
        title=got.title or fallback_title,
        text=got.text,
        author=got.author,
        pages=got.pages,
        metadata={"format": "pdf"},
    )
