"""PDFs as text with pages (issue 19): reading through the worker under its caps, one named dead
end per kind of bad input, the normalised text (characters, hyphens, running heads, columns and
pages), and the page map."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pytest

from mole_dag.actors.pdf import PdfLimits, PdfReader, PdfRefused, page_at, pdf_document, read_pdf
from mole_dag.actors.pdf.layout import clean, normalise
from mole_dag.actors.pdf.reader import RawPage, RawPdf
from mole_dag.core import DeadEndCause
from tests.pdfmaker import encrypt, make_pdf, prose_page

HEAD = "Journal of Badger Studies"


def _paper() -> bytes:
    pages = [
        prose_page(["Badgers sleep about ten hours a day in their winter burrows."]),
        prose_page(["The median litter size of the Eurasian badger is three cubs per year."]),
        prose_page(["A third page says that setts are dug over many generations of badgers."]),
    ]
    for i, p in enumerate(pages, 1):
        p += [(72, 760, HEAD, 9), (300, 40, str(i), 9)]
    return make_pdf(pages, title="Badgers at Home")


def test_a_pdf_is_text_with_pages_and_its_title() -> None:
    doc = pdf_document(_paper(), url="corpus:b.pdf", fallback_title="b")
    assert doc.title == "Badgers at Home"
    data = doc.text.encode("utf-8")
    assert len(doc.pages) == 3 and doc.pages[0] == 0
    second = data[doc.pages[1] : doc.pages[2]].decode()
    assert "median litter size of the Eurasian badger is three cubs" in second
    assert page_at(doc.pages, data.index(b"median litter")) == 2
    assert page_at(doc.pages, data.index(b"setts are dug")) == 3
    # Running heads and page numbers are not text.
    assert HEAD not in doc.text
    assert "\n\n1\n\n" not in f"\n\n{doc.text}\n\n"


# -- one named dead end per kind of bad input ---------------------------------------------------


def _cause(data: bytes, limits: PdfLimits | None = None, reader: PdfReader | None = None) -> str:
    with pytest.raises(PdfRefused) as err:
        read_pdf(data, limits=limits, reader=reader)
    assert err.value.detail  # one clear line: what was wrong
    return str(err.value.cause)


def test_an_encrypted_pdf_is_named() -> None:
    assert _cause(encrypt(_paper())) == DeadEndCause.PDF_ENCRYPTED


@pytest.mark.parametrize(
    "damage",
    [
        lambda pdf: b"%PDF-1.4\nnot a pdf at all\n",
        lambda pdf: pdf[:200],  # truncated before the first page's content
        lambda pdf: b"%PDF-" + bytes(range(256)) * 40,
    ],
)
def test_a_corrupt_or_truncated_pdf_is_named(damage) -> None:  # type: ignore[no-untyped-def]
    assert _cause(damage(_paper())) == DeadEndCause.PDF_CORRUPT


def test_a_pdf_without_a_text_layer_is_named_as_scanned() -> None:
    with pytest.raises(PdfRefused) as err:
        read_pdf(make_pdf([[], []], graphics_only=True))
    assert err.value.cause == DeadEndCause.PDF_NO_TEXT
    assert "no text layer" in err.value.detail and "OCR" in err.value.detail


def test_a_pdf_over_the_page_cap_is_named_with_the_cap() -> None:
    with pytest.raises(PdfRefused) as err:
        read_pdf(_paper(), limits=PdfLimits(max_pages=2))
    assert err.value.cause == DeadEndCause.PDF_TOO_MANY_PAGES
    assert "3 pages" in err.value.detail and "cap of 2" in err.value.detail


def test_a_decompression_bomb_is_named() -> None:
    bomb = make_pdf(
        [prose_page(["Some text on the page that is fine to read, and more of it to be sure."])],
        extra_stream=zlib.compress(b"\0" * (16 << 20)),
    )
    assert _cause(bomb, PdfLimits(max_inflated_bytes=4 << 20)) == DeadEndCause.PDF_BOMB
    # The same file under a cap it stays below is read.
    assert read_pdf(bomb, limits=PdfLimits(max_inflated_bytes=64 << 20)).text


def test_a_reader_that_hangs_is_killed_at_the_time_cap() -> None:
    """A worker that never answers (PDFium stuck in a loop) stands in for a slow PDF: the
    parent kills it at the cap and names the cause; the next PDF gets a new worker."""
    hung = PdfReader([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert _cause(_paper(), PdfLimits(max_seconds=2), hung) == DeadEndCause.PDF_TOO_SLOW
        assert hung._proc is None  # killed, not left running
    finally:
        hung.close()
    assert read_pdf(_paper()).text  # the shared reader is unaffected


def test_a_reader_that_dies_is_a_corrupt_file_not_a_crash() -> None:
    dead = PdfReader([sys.executable, "-c", "import sys; sys.stdin.buffer.read(8); sys.exit(3)"])
    try:
        assert _cause(_paper(), reader=dead) == DeadEndCause.PDF_CORRUPT
    finally:
        dead.close()


# -- the normalised text --------------------------------------------------------------------


def test_ligatures_and_the_t1_control_characters_are_spelled_out() -> None:
    assert clean("\ufb01xed e\ufb03ciency \ufb02ow") == "fixed efficiency flow"
    # TeX's T1 fonts without a Unicode map: 0x1B ff, 0x1C fi, 0x1D fl, 0x1E ffi.
    assert clean("o\x1bers modi\x1ced \x1ductuation e\x1eciency") == (
        "offers modified fluctuation efficiency"
    )
    assert clean("\x10dating\x11 \u00adsoft") == "\u201cdating\u201d soft"


def _raw(pages: list[list[list[object]]]) -> RawPdf:
    return RawPdf([RawPage(612, 792, lines) for lines in pages], {})


def _ln(text: str, x0: float, y: float, *, x1: float = 540, hyphen: bool = False) -> list[object]:
    return [text, x0, x1, y + 8, y, 10.0, False, hyphen]


def test_line_end_hyphens_are_joined_unless_the_word_has_one() -> None:
    raw = _raw(
        [
            [
                _ln("The order selection is usually considered to be sub-", 72, 700),
                _ln("jective, while a non-standard method and a well-known one", 72, 688),
                _ln("differ; the second one is non-", 72, 676),
                _ln("standard and well-", 72, 664, x1=200),
            ]
        ]
    )
    text = normalise(raw).text
    assert "considered to be subjective," in text
    assert "is non-standard and" in text  # the document writes "non-standard" elsewhere


def test_a_larger_heading_is_not_part_of_the_lower_case_sentence_below_it() -> None:
    heading = ["3.2 Invoking asn1Coding", 72, 260, 708, 700, 14.3, False, False]
    raw = _raw(
        [
            [
                _ln("The options are listed in the table of the previous section.", 72, 730),
                heading,
                _ln(
                    "asn1Coding generates a DER encoding from a file with ASN.1 definitions",
                    72,
                    684,
                ),
                _ln("and another one with assignments.", 72, 672, x1=250),
                # A drop capital is not a heading: its paragraph goes on.
                ["T", 72, 84, 670, 650, 30.0, False, False],
                _ln("he drop capital opens this paragraph of the text.", 90, 650),
            ]
        ]
    )
    text = normalise(raw).text
    assert "3.2 Invoking asn1Coding\n\nasn1Coding generates a DER encoding" in text
    assert "T he drop capital" in text or "The drop capital" in text


def test_a_code_name_broken_after_an_underscore_is_one_word() -> None:
    raw = _raw(
        [
            [
                _ln("The maximum length this function will encode is ASN1_", 72, 700),
                _ln(
                    "MAX_LENGTH_SIZE and the buffer is at least ASN1_MAX_TL_SIZE bytes. A blank",
                    72,
                    688,
                ),
                _ln("to fill in reads ____", 72, 676),
                _ln("by hand in the form.", 72, 664, x1=200),
            ]
        ]
    )
    text = normalise(raw).text
    assert "will encode is ASN1_MAX_LENGTH_SIZE and the buffer" in text
    assert "reads ____ by hand" in text  # underscores alone are not a broken name


def test_a_sentence_split_by_a_page_break_and_a_running_head_reads_whole() -> None:
    page = [
        _ln(
            f"Filler line number {i} of this page, set at full width of the column.",
            72,
            700 - 12 * i,
        )
        for i in range(3)
    ]
    raw = _raw(
        [
            [
                _ln("Running Head 1", 72, 765, x1=200),
                *page,
                _ln("the order selection process is usually considered", 72, 600),
            ],
            [
                _ln("Running Head 2", 72, 765, x1=200),
                _ln("subjective and difficult to apply. Then more.", 72, 700, x1=300),
                *page,
            ],
            [_ln("Running Head 3", 72, 765, x1=200), *page],
        ]
    )
    doc = normalise(raw)
    assert "usually considered subjective and difficult to apply." in doc.text
    assert "Running Head" not in doc.text
    # The page map: the sentence starts on page 1 and "subjective" is on page 2.
    data = doc.text.encode()
    assert page_at(doc.pages, data.index(b"the order selection")) == 1
    assert page_at(doc.pages, data.index(b"subjective")) == 2


def test_two_columns_read_in_order_and_a_sentence_goes_on_into_the_next_column() -> None:
    left = [
        _ln(f"Left column line {i} with enough words to fill it.", 72, 700 - 12 * i, x1=290)
        for i in range(3)
    ]
    right = [
        _ln(f"Right column line {i} carries its own words too.", 320, 700 - 12 * i, x1=540)
        for i in range(3)
    ]
    raw = _raw(
        [
            [
                *left,
                _ln("By default, the operating environ-", 72, 664, x1=290, hyphen=True),
                _ln("ment lacks the ability to parallelize code.", 320, 712, x1=540),
                *right,
            ]
        ]
    )
    text = normalise(raw).text
    assert "the operating environment lacks the ability to parallelize code." in text
    assert text.index("Left column line 2") < text.index("Right column line 0")


def test_the_references_section_is_not_stored() -> None:
    raw = _raw(
        [
            [
                _ln(
                    "The method works well on every data set we tried in this study.",
                    72,
                    700,
                    x1=400,
                ),
                _ln("References", 72, 660, x1=140),
                _ln(
                    "Smith J, Doe A (2001). A paper. Journal of Things, 3(2), 1-10.",
                    72,
                    640,
                    x1=400,
                ),
            ]
        ]
    )
    text = normalise(raw).text
    assert "works well" in text and "Journal of Things" not in text and "References" not in text


# -- the real DEV PDFs (../shared, skipped without it) --------------------------------------

DEV = Path(__file__).resolve().parents[2] / "shared" / "qa-pdf-dev" / "pdfs"
needs_dev = pytest.mark.skipif(
    not DEV.is_dir(), reason=f"the DEV PDFs are not here ({DEV}): ../shared is missing"
)


def _skeleton(text: str) -> str:
    import re

    return re.sub(r"[\W_]+", "", clean(text).lower())


@needs_dev
@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        # a T1 control character for "fl" (pdftotext drops it: "generalized uctuation")
        (
            "strucchange__strucchange-intro.pdf",
            "tests from the generalized fluctuation test framework (Kuan and Hornik 1995)",
        ),
        # a hyphenated word split across the columns of a two-column page
        (
            "Rcpp__Rcpp-FAQ.pdf",
            "the macOS operating environment lacks the ability to parallelize sections of code",
        ),
        # a page break with the running header printed mid-sentence
        (
            "forecast__JSS2008.pdf",
            "the order selection process is usually considered subjective and difficult to apply.",
        ),
        # U+FB03 "ffi"
        (
            "coin__MAXtest.pdf",
            "Nonlinear MAX type tests have greater efficiency robustness properties",
        ),
    ],
)
def test_dev_pdfs_broken_sentences_come_out_whole(name: str, sentence: str) -> None:
    doc = pdf_document((DEV / name).read_bytes(), url="x", fallback_title="x")
    assert sentence in " ".join(doc.text.split())


@needs_dev
def test_dev_pdf_pages_agree_with_the_extractors_own_page_text() -> None:
    """Every paragraph of mole's text of a PDF is on the page the page map says, checked against
    PDFium's own text of that page (letters and digits only)."""
    import pypdfium2 as pdfium

    for name in ("forecast__JSS2008.pdf", "Rcpp__Rcpp-FAQ.pdf", "pscl__countreg.pdf"):
        data = (DEV / name).read_bytes()
        doc = pdf_document(data, url="x", fallback_title="x")
        pdf = pdfium.PdfDocument(data)
        own = [_skeleton(pdf[i].get_textpage().get_text_range()) for i in range(len(pdf))]
        text = doc.text.encode()
        pos, checked = 0, 0
        for para in doc.text.split("\n\n"):
            start = text.index(para.encode(), pos)
            pos = start + len(para.encode())
            words = para.split()
            if len(words) < 8:
                continue
            head = _skeleton(" ".join(words[:6]))
            page = page_at(doc.pages, start)
            assert head in own[page - 1], (name, page, para[:80])
            checked += 1
        assert checked > 20


@pytest.mark.parametrize(
    ("sentence", "cause"),
    [
        # A console prompt before the code: named as console output since issue 31.
        ("R> fit <- auto.arima(WWWusage)", "console"),
        ("#ifdef _OPENMP #include <omp.h> #endif", "code"),
        (
            "cppFunction('int fib(int n) { if (n < 2) return n; return fib(n-1) + fib(n-2); }')",
            "code",
        ),
        ("AIC = −2 log(L) + 2(p + q + P + Q + k) where k = 1 if c ̸= 0 and 0 otherwise", "equation"),
        ("4529.113 4295.305 4762.920 4171.535 4886.690 4101.2", "markup"),
        ("0.12 0.40 1.5 2.25 Total 3.1", "table"),
        ("Figure 3: Effect displays with partial residuals for the simulated data.", "caption"),
        ("Table 2. Results of the fitted models on the test set.", "caption"),
    ],
)
def test_papers_furniture_is_not_a_claim(sentence: str, cause: str) -> None:
    from mole_dag.mining.furniture import non_claim_reason

    assert non_claim_reason(sentence) == cause


@pytest.mark.parametrize(
    "sentence",
    [
        "The heuristic for choosing the cut-off points 2 and 4 is that the Pearson residuals are "
        "approximately standard normal, significant at the α = 0.05 and α = 0.0001 levels.",
        "We sample n = 5000 observations from a trivariate distribution for predictors x1 , x2 , "
        "and x3 , with uniform margins on the interval [−2, 2].",
        "The default effSources() method simply returns NULL, which corresponds to selecting all "
        "of the defaults in Table 2.",
        "Table 2 shows that the hurdle model fits the data better than the Poisson model.",
    ],
)
def test_prose_about_code_and_symbols_stays_a_claim(sentence: str) -> None:
    from mole_dag.mining.furniture import non_claim_reason

    assert non_claim_reason(sentence) is None


def test_prose_citing_papers_is_a_claim_and_a_bibliography_entry_is_not() -> None:
    from mole_dag.mining.furniture import non_claim_reason

    prose = (
        "CRAN Package trip, written by Michael Sumner (Kirkwood et al., 2006; Page et al., "
        "2006), provides a class for animal tracking data."
    )
    entry = (
        "Kirkwood R, Page B, Sumner M (2006). Trip: an R package for animal tracking data in "
        "the wild. Journal of Statistical Software, 17, 1-20."
    )
    assert non_claim_reason(prose) is None
    assert non_claim_reason(entry) == "reference_entry"


def test_a_quote_in_a_pdf_paragraph_is_judged_by_its_sentence_not_the_paragraph() -> None:
    """A PDF's paragraph is one line of the stored text. Judged whole, a paper's paragraph
    trips rules meant for a short line (here a parenthesis opening "(pa", read as a press-agency
    picture credit), and every claim quoted from it was discarded as `not_a_claim`."""
    from mole_dag.mining.furniture import non_claim_reason
    from mole_dag.mining.mine import quotes_furniture

    para = (
        "Rosenbaum (1994) proposed to compare groups by means of a coherence criterion and "
        "studied a data set of subjects who ate contaminated fish for more than three years. "
        "The coherence criterion defines a partial ordering (partially ordered sets, see "
        "Figure 4) of the observations in both groups."
    )
    data = f"Heading\n\n{para}\n\nNext paragraph.".encode()
    start = data.index(b"Rosenbaum")
    end = data.index(b"three years.") + len("three years.")
    assert non_claim_reason(para) is not None  # the rule that misfires on the whole paragraph
    assert not quotes_furniture(data, start, end)
    # A short line of its own is still judged whole: a caption quoted in part is refused.
    cap = b"Text before.\nFigure 3: Effect displays with partial residuals for the data.\nAfter."
    a = cap.index(b"Effect displays")
    assert quotes_furniture(cap, a, a + 40)
