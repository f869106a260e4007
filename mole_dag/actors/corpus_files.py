"""The files of a local corpus: which kinds are read, the size caps, and reading one file into
a document (PDF, HTML, Markdown or plain text), or saying in a few words why it cannot be read;
and a corpus file's URL and its path relative to the folder, which reports print."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mole_dag.actors.extract import ExtractionError, from_html, from_plain
from mole_dag.actors.pdf import PdfLimits, PdfRefused, pdf_document
from mole_dag.core import DeadEndCause, Document

HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".rst"}
MARKDOWN_SUFFIXES = {".md", ".markdown"}
PDF_SUFFIXES = {".pdf"}
SUFFIXES = HTML_SUFFIXES | TEXT_SUFFIXES | PDF_SUFFIXES
# A guess, flagged as one: a local document larger than this is almost certainly not prose.
MAX_FILE_BYTES = 8 * 1024 * 1024
# PDFs carry fonts and figures: a paper with plots runs to tens of MB. A guess, flagged as one.
MAX_PDF_BYTES = 64 * 1024 * 1024
# The caps a PDF in a corpus is read under (module-level so a test can lower them).
PDF_LIMITS = PdfLimits()


class CorpusFileError(ExtractionError):
    """A file of the corpus that cannot be read, with its dead-end cause; the message is the
    reason a reader is shown ("empty file")."""

    def __init__(self, cause: DeadEndCause, reason: str) -> None:
        super().__init__(reason)
        self.cause = cause


class CorpusPdfError(CorpusFileError):
    """A PDF in the corpus that cannot be read, with its dead-end cause."""

    def __init__(self, cause: DeadEndCause, detail: str) -> None:
        super().__init__(cause, f"PDF: {detail}")


# The PDF format puts its header ("%PDF-") within the first 1024 bytes; a file named .pdf
# without one is some other kind of file, and says so, rather than reading as a damaged PDF.
PDF_HEADER_WITHIN = 1024


def _not_a_pdf(raw: bytes) -> str | None:
    """Why a file named .pdf is no PDF at all, or None when it has a PDF header."""
    if b"%PDF" in raw[:PDF_HEADER_WITHIN]:
        return None
    head = raw[:4096]
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
            return "not a PDF (it is text)"
        except UnicodeDecodeError as exc:
            if exc.start >= len(head) - 3:  # a character cut by the 4 KB window
                return "not a PDF (it is text)"
    return "not a PDF (no PDF header)"


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(raw))
    if not matches:
        raise ExtractionError("not text in any encoding we can detect")
    # Short Western text often ties between several single-byte code pages; among the equally
    # good guesses prefer windows-1252, which is what "latin-1" means on the web (WHATWG).
    best_key = min((m.percent_chaos, -m.percent_coherence) for m in matches)
    tied = [m for m in matches if (m.percent_chaos, -m.percent_coherence) == best_key]
    pick = next((m for m in tied if m.encoding == "cp1252"), tied[0])
    return str(pick)


# How a source of the corpus is read again: "corpus:" and its path relative to the session's
# corpus folder (reread.py resolves it there, and nowhere else). Sources stored before issue 19's
# file URLs also have it as their URL.
LOCATOR = "corpus:"


def file_url(path: Path) -> str:
    """A corpus file's source URL: the file's absolute `file://` URI (RFC 8089, percent-quoted).
    A reader can open it from the report, a scorer matches its file name at the end of the URL's
    path, and two folders' "a.pdf" are two sources, not one."""
    return path.absolute().as_uri()


def corpus_path(url: str, locator: str | None) -> str | None:
    """The path of a corpus file relative to its folder, from its source's URL and locator
    (a `file://` URL, or a `corpus:` one from a store written before); None for any other
    source."""
    if not url.startswith(("file:", LOCATOR)):
        return None
    for where in (locator, url):
        if where and where.startswith(LOCATOR):
            return where.removeprefix(LOCATOR)
    return unquote(urlsplit(url).path)


def relative_to_corpus(url: str, corpus: str | None) -> str | None:
    """A corpus file's path relative to the session's corpus folder, from its `file://` URL
    (or a `corpus:` one): what reports and `mole show` print, so a shared report does not say
    where its author keeps files. None for any other URL."""
    if url.startswith(LOCATOR):
        return url.removeprefix(LOCATOR)
    if not url.startswith("file:") or not corpus:
        return None
    for folder in (Path(corpus), Path(corpus).resolve()):
        root = file_url(folder).rstrip("/") + "/"
        if url.startswith(root):
            return unquote(url.removeprefix(root))
    return None


def load_document(path: Path, raw: bytes | None = None) -> Document:
    """The document in a corpus file, its URL the file's (unless it names its own). Raises
    ExtractionError (PdfRefused for a PDF, with its dead-end cause) when it cannot be read."""
    raw = path.read_bytes() if raw is None else raw
    fallback_url = file_url(path)
    if path.suffix.lower() in PDF_SUFFIXES:
        other = _not_a_pdf(raw)
        if other is not None:
            raise CorpusFileError(DeadEndCause.WRONG_TYPE, other)
        try:
            return pdf_document(raw, url=fallback_url, fallback_title=path.stem, limits=PDF_LIMITS)
        except PdfRefused as exc:
            raise CorpusPdfError(exc.cause, exc.detail) from None
    if b"\x00" in raw[:4096]:
        raise CorpusFileError(DeadEndCause.WRONG_TYPE, "not text (binary content)")
    text = _decode(raw)
    if path.suffix.lower() in HTML_SUFFIXES:
        doc = from_html(text, fallback_title=path.stem)
        if not doc.url:
            doc.url = fallback_url
        return doc
    return from_plain(
        text,
        fallback_url=fallback_url,
        fallback_title=path.stem,
        markdown=path.suffix.lower() in MARKDOWN_SUFFIXES,
    )


def corpus_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if name.startswith(".") or p.suffix.lower() not in SUFFIXES:
                continue
            out.append(p)
    return out
