"""A PDF's lines (worker.py) made into the text mole stores: paragraphs, pages kept.

Everything here decides what the stored text is, and the quote check is byte-exact against it,
so it runs once, at extraction, never later. In order:

- characters: ligatures (U+FB00-FB06) spelled out; the control characters TeX's T1 fonts
  show when a PDF carries no Unicode map for them (0x1B ff, 0x1C fi, 0x1D fl, 0x1E ffi, 0x1F ffl,
  0x10/0x11 curly double quotes, 0x15/0x16 dashes) mapped to what they draw; other controls,
  soft hyphens and zero-width characters dropped.
- running headers, footers and page numbers: a line in the top or bottom band of a page that
  recurs (digits masked) on several pages, or that is only a page number, is not text.
- paragraphs: lines are joined with a space into paragraphs, which are separated by a blank line.
  A break needs evidence (a short line that ends a sentence, a vertical gap, a change of font
  size or of monospace, an indent after a full stop); a move to the next column or page without a
  sentence end is the same paragraph going on, so a sentence split by a column or a page break
  (with the running header between) reads whole. A heading set larger than the text ends its
  paragraph even when the text below opens in lower case. Monospace lines (code) keep their line
  breaks.
- hyphenation: a word broken at a line's end is joined; the hyphen stays only when the document
  writes the word with one elsewhere (or the parts say it is a compound: a capital, a digit). A
  code name broken after an underscore is joined too.
- the references section is left out: a bibliography is not claims, and a quote cannot come
  from text that is not stored.

Each rule is a heuristic over typeset papers; the thresholds are guesses, flagged as such, and
measured on the DEV PDFs (bench/pdf_extract_bench.py)."""

from __future__ import annotations

import bisect
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from mole_dag.actors.pdf.reader import RawPdf
from mole_dag.sanitize import strip_controls

_CHARS = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
    # TeX's T1 (Cork) encoding, shown as control characters when a font has no Unicode map.
    "\x10": "\u201c",
    "\x11": "\u201d",
    "\x12": "\u201e",
    "\x13": "\u00ab",
    "\x14": "\u00bb",
    "\x15": "\u2013",
    "\x16": "\u2014",
    "\x19": "\u0131",
    "\x1b": "ff",
    "\x1c": "fi",
    "\x1d": "fl",
    "\x1e": "ffi",
    "\x1f": "ffl",
    "\t": " ",
    "\u00a0": " ",
}
# Beyond what sanitize.strip_controls removes (every stored text is stripped of those): soft
# hyphens and the noncharacters PDFium uses as marks.
_DROP = re.compile("[\u00ad\ufffe\uffff]")
_TRANS = str.maketrans(_CHARS)
_MULTISPACE = re.compile(r" {2,}")

# The share of a page's height at its top and bottom where running heads and folios sit. A
# guess, flagged as one: typeset margins are 1-1.5 in of an 11 in page.
BAND = 0.1
# A banded line recurring on this many pages (and this share of them) is a running head.
REPEAT_PAGES, REPEAT_SHARE = 3, 0.25
_FOLIO = re.compile(
    r"\A(?:page\s+)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*\d{1,4})?\Z", re.IGNORECASE
)
_TERMINAL = re.compile(r"[.!?:][\"')\]\u201d\u2019]*\Z")
_WORD_END = re.compile(r"([^\W\d_]+)-\Z")
_WORD_START = re.compile(r"\A([^\W\d_]+)")
_WORDS = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_REFERENCES = re.compile(
    r"\A(?:\d{1,2}\.?\s+|[A-Z]\.\s+)?(?:references|bibliography|literature cited|works cited|"
    r"references and notes)\Z",
    re.IGNORECASE,
)
_AFTER_REFERENCES = re.compile(r"\A(?:[A-Z]\.?\s+)?(?:appendix|appendices|supplementary)\b", re.I)


@dataclass
class Line:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    mono: bool
    hyphen: bool
    page: int  # 0-based


@dataclass(frozen=True)
class PdfText:
    text: str
    # UTF-8 byte offset in `text` where each page starts, page 1 first.
    pages: tuple[int, ...]
    title: str
    author: str | None


def clean(text: str) -> str:
    """A line's characters as a reader sees them (see the module docstring)."""
    text = strip_controls(text.translate(_TRANS)).replace("\n", " ")
    return _MULTISPACE.sub(" ", _DROP.sub("", text)).strip()


def _lines(raw: RawPdf) -> list[Line]:
    out = []
    for p, page in enumerate(raw.pages):
        for text, x0, x1, top, bottom, size, mono, hyphen in page.lines:
            t = clean(str(text))
            if t:
                out.append(
                    Line(t, x0, x1, top, bottom, float(size) or 1.0, bool(mono), bool(hyphen), p)
                )
    return out


def _mask(text: str) -> str:
    return " ".join(re.sub(r"\d+", "#", text.lower()).split())


def drop_running_heads(raw: RawPdf, lines: list[Line]) -> list[Line]:
    """Lines in the top or bottom band of their page that recur on several pages, or that are
    a page number alone."""

    def banded(ln: Line) -> bool:
        h = raw.pages[ln.page].height or 792.0
        return ln.top > h * (1 - BAND) or ln.bottom < h * BAND

    pages_of: dict[str, set[int]] = {}
    for ln in lines:
        if banded(ln):
            pages_of.setdefault(_mask(ln.text), set()).add(ln.page)
    n_pages = len(raw.pages)
    # A short document's running head is on every page; a single page has none to tell.
    need = max(min(REPEAT_PAGES, n_pages), REPEAT_SHARE * n_pages) if n_pages > 1 else 2
    recurring = {k for k, v in pages_of.items() if len(v) >= need}
    return [
        ln
        for ln in lines
        if not (banded(ln) and (_mask(ln.text) in recurring or _FOLIO.match(ln.text)))
    ]


class _Vocabulary:
    """The document's words, to decide whether a hyphen at a line's end is the word's own."""

    def __init__(self, lines: list[Line]) -> None:
        self.plain: set[str] = set()
        self.hyphenated: set[str] = set()
        for ln in lines:
            words = _WORDS.findall(ln.text)
            if ln.hyphen or ln.text.endswith("-"):
                words = words[:-1]  # the broken word is what is being decided
            for w in words:
                lw = w.lower()
                (self.hyphenated if "-" in lw else self.plain).add(lw)

    def keeps_hyphen(self, left: str, right: str) -> bool:
        a = _WORD_END.search(left + "-")
        b = _WORD_START.match(right)
        if not a or not b:
            return True  # a number, a symbol: "X-1", "2-"
        wa, wb = a.group(1), b.group(1)
        joined, compound = (wa + wb).lower(), f"{wa}-{wb}".lower()
        if compound in self.hyphenated and joined not in self.plain:
            return True
        if joined in self.plain:
            return False
        return wb[0].isupper() or (len(wa) == 1 and wa.isupper())


# A line ending inside an identifier: a letter or digit, then underscores.
_SPLIT_IDENTIFIER = re.compile(r"[A-Za-z0-9]_+\Z")


def _ends_sentence(text: str) -> bool:
    return bool(_TERMINAL.search(text))


def _starts_lower(text: str) -> bool:
    return text[:1].islower()


@dataclass
class _Para:
    parts: list[str]
    pages: list[tuple[int, int]]  # (page, char offset in the paragraph where it starts)
    mono: bool
    length: int = 0

    def add(self, sep: str, text: str, page: int) -> None:
        if self.parts:
            self.parts.append(sep)
            self.length += len(sep)
        if not self.pages or self.pages[-1][0] != page:
            self.pages.append((page, self.length))
        self.parts.append(text)
        self.length += len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


class _Geometry:
    """What a line is measured against: the body font size, the usual distance between lines,
    and each page's column edges."""

    def __init__(self, raw: RawPdf, lines: list[Line]) -> None:
        sizes: Counter[float] = Counter()
        for ln in lines:
            sizes[round(ln.size * 2) / 2] += len(ln.text)
        self.body = sizes.most_common(1)[0][0] if sizes else 10.0
        steps = [
            a.bottom - b.bottom
            for a, b in zip(lines, lines[1:], strict=False)
            if a.page == b.page
            and abs(a.size - self.body) < 1
            and abs(b.size - self.body) < 1
            and 0 < a.bottom - b.bottom < 3 * self.body
        ]
        self.step = statistics.median(steps) if steps else 1.2 * self.body
        self._rights: dict[int, list[tuple[float, float]]] = {}
        for ln in lines:
            self._rights.setdefault(ln.page, []).append((ln.x0, ln.x1))
        self._width = {i: p.width or 612.0 for i, p in enumerate(raw.pages)}
        self._cache: dict[tuple[int, int], float] = {}

    def column_right(self, ln: Line) -> float:
        """Where lines starting near this one end, at most: the column's right edge (the 90th
        percentile, so one wide formula does not move it). Cached per page and start."""
        key = (ln.page, round(ln.x0))
        got = self._cache.get(key)
        if got is None:
            near = sorted(
                x1
                for x0, x1 in self._rights.get(ln.page, [])
                if abs(x0 - ln.x0) < 0.2 * self._width[ln.page]
            )
            got = self._cache[key] = near[int(0.9 * (len(near) - 1))] if near else ln.x1
        return got

    def short(self, ln: Line) -> bool:
        return ln.x1 < self.column_right(ln) - 2 * self.body


def _heading(ln: Line, geo: _Geometry) -> bool:
    """A line set larger than the body text and not ending a sentence; more than a letter or
    two, which would be a drop capital."""
    return ln.size > 1.12 * geo.body and len(ln.text.strip()) > 2 and not _ends_sentence(ln.text)


def _breaks(prev: Line, cur: Line, geo: _Geometry) -> bool:  # noqa: PLR0911
    """Whether `cur` starts a new paragraph after `prev`."""
    if prev.mono != cur.mono:
        return True
    goes_on = _starts_lower(cur.text) and not _ends_sentence(prev.text)
    d = prev.bottom - cur.bottom
    if cur.page != prev.page or d < -0.3 * max(prev.size, cur.size):
        # The next column or page (or a float): the paragraph goes on unless the sentence ended.
        if prev.mono:
            return True
        return _ends_sentence(prev.text) or (geo.short(prev) and not goes_on)
    if prev.mono:
        return d > 1.6 * geo.step
    if abs(cur.size - prev.size) > 0.12 * geo.body and (not goes_on or _heading(prev, geo)):
        # A heading set larger than the text below it ends there even when the text opens in
        # lower case ("3.2 Invoking asn1Coding" / "asn1Coding generates ..."): no sentence
        # runs from a heading's size into the body's.
        return True
    if d > 1.45 * geo.step + 0.5 and not goes_on:
        return True
    if geo.short(prev) and (_ends_sentence(prev.text) or not _starts_lower(cur.text)):
        return not goes_on
    return _ends_sentence(prev.text) and cur.x0 > prev.x0 + 0.6 * geo.body


def merge_fragments(lines: list[Line]) -> list[Line]:
    """Pieces of one printed line that PDFium returns as lines of their own (a superscript, a
    subscript, a formula's parts) joined back: the next piece starts right of this one, close
    by, at about the same height."""
    out: list[Line] = []
    for ln in lines:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.page == ln.page
            and not prev.hyphen
            and prev.mono == ln.mono
            and -1.0 <= ln.x0 - prev.x1 < 2 * max(prev.size, ln.size)
            and ln.bottom < prev.top + 0.3 * prev.size
            and ln.top > prev.bottom - 0.3 * prev.size
        ):
            gap = "" if ln.x0 - prev.x1 < 0.15 * prev.size else " "
            # The line keeps the main text's size and baseline, not the superscript's.
            main = prev if prev.size >= ln.size else ln
            out[-1] = Line(
                prev.text + gap + ln.text,
                prev.x0,
                ln.x1,
                max(prev.top, ln.top),
                main.bottom,
                main.size,
                prev.mono,
                ln.hyphen,
                prev.page,
            )
            continue
        out.append(ln)
    return out


def paragraphs(raw: RawPdf, lines: list[Line]) -> list[_Para]:
    lines = merge_fragments(lines)
    geo = _Geometry(raw, lines)
    vocab = _Vocabulary(lines)
    out: list[_Para] = []
    prev: Line | None = None
    for ln in lines:
        if prev is None or _breaks(prev, ln, geo):
            out.append(_Para([], [], ln.mono))
            out[-1].add("", ln.text, ln.page)
        else:
            para = out[-1]
            if para.mono:
                para.add("\n", ln.text, ln.page)
            elif prev.hyphen or (prev.text.endswith("-") and _starts_lower(ln.text)):
                # The hyphen that broke the word: PDFium drops it (and marks the line), other
                # extractors keep it; either way it is decided here.
                last = para.parts[-1].removesuffix("-")
                hyphen = "-" if vocab.keeps_hyphen(last, ln.text) else ""
                para.length += len(last) + len(hyphen) - len(para.parts[-1])
                para.parts[-1] = last + hyphen
                para.add("", ln.text, ln.page)
            elif _SPLIT_IDENTIFIER.search(prev.text) and ln.text[:1].isalnum():
                # A code name broken after an underscore ("ASN1_" / "MAX_LENGTH_SIZE"): one
                # word again, as a hyphenated one is.
                para.add("", ln.text, ln.page)
            else:
                para.add(" ", ln.text, ln.page)
        prev = ln
    return out


def drop_references(paras: list[_Para]) -> list[_Para]:
    """The paragraphs minus the references section (from its heading to an appendix, if any)."""
    out: list[_Para] = []
    skipping = False
    for p in paras:
        head = " ".join(p.text.split())
        if _REFERENCES.match(head):
            skipping = True
            continue
        if skipping and len(head) < 80 and _AFTER_REFERENCES.match(head):
            skipping = False
        if not skipping:
            out.append(p)
    return out


_JUNK_TITLE = re.compile(r"\A(?:untitled|microsoft word\s*-|.*\.(?:dvi|tex|docx?|pdf)\Z)", re.I)


def title_of(raw: RawPdf, lines: list[Line]) -> str:
    """The PDF's own Title when it reads as one, else the largest type on the first page's
    upper half (a paper's title), else ""."""
    meta = " ".join(raw.meta.get("Title", "").split())
    if len(meta) >= 4 and not _JUNK_TITLE.match(meta):
        return meta[:300]
    first = [ln for ln in lines if ln.page == 0]
    if not first:
        return ""
    h = raw.pages[0].height or 792.0
    top = [ln for ln in first if ln.bottom > h * 0.4 and any(c.isalpha() for c in ln.text)]
    if not top:
        return ""
    biggest = max(ln.size for ln in top)
    body = Counter(round(ln.size) for ln in first).most_common(1)[0][0]
    if biggest < 1.15 * body:
        return ""
    parts = []
    for ln in first:
        if abs(ln.size - biggest) < 0.5 and ln.bottom > h * 0.4:
            parts.append(ln.text.removesuffix("-") if ln.hyphen else ln.text)
        elif parts:
            break
    return " ".join(" ".join(parts).split())[:300]


def normalise(raw: RawPdf) -> PdfText:
    every = _lines(raw)
    lines = drop_running_heads(raw, every)
    paras = drop_references(paragraphs(raw, lines))
    pieces: list[str] = []
    starts: dict[int, int] = {}  # page -> character offset in the text
    pos = 0
    for i, p in enumerate(paras):
        if i:
            pieces.append("\n\n")
            pos += 2
        for page, off in p.pages:
            starts.setdefault(page, pos + off)
        pieces.append(p.text)
        pos += p.length
    text = "".join(pieces)
    # Pages with no text of their own (a figure, a blank) start where the next page does.
    char_starts: list[int] = []
    nxt = len(text)
    for page in range(len(raw.pages) - 1, -1, -1):
        nxt = min(starts.get(page, nxt), nxt)
        char_starts.append(nxt)
    char_starts.reverse()
    if char_starts:
        char_starts[0] = 0
    author = " ".join(raw.meta.get("Author", "").split()) or None
    # The title is looked for among all the first page's lines: a document whose running head
    # is its own title (a spec, a manual) has that title dropped from its text as a running
    # head, and the author's lines below it were taken for the title (issue 33).
    return PdfText(text, _bytes(text, char_starts), title_of(raw, every), author)


def _bytes(text: str, offsets: list[int]) -> tuple[int, ...]:
    out = []
    last_c = last_b = 0
    for c in offsets:
        last_b += len(text[last_c:c].encode("utf-8"))
        last_c = c
        out.append(last_b)
    return tuple(out)


def page_at(pages: tuple[int, ...] | list[int], byte_pos: int) -> int:
    """The 1-based page that byte `byte_pos` of the text is on."""
    return max(bisect.bisect_right(list(pages), byte_pos), 1)
