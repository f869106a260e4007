"""Tests for mole_dag.actors.bm25 (ranking) and mole_dag.actors.local (the folder corpus)."""

from __future__ import annotations

import json
import logging
import math
import os
from collections import Counter
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mole_dag.actors.corpus_files as corpus_files
import mole_dag.actors.corpus_index as corpus_index
import mole_dag.actors.local as local_mod
from mole_dag.actors.base import DeadEnd, Found
from mole_dag.actors.bm25 import BM25, K1, B
from mole_dag.actors.local import CorpusError, LocalCorpus
from mole_dag.core import DeadEndCause
from mole_dag.text import terms

# --- BM25 --------------------------------------------------------------------------------------


def test_bm25_rare_term_ranks_first() -> None:
    docs = [
        ["tea", "health", "study", "tea"],
        ["tea", "sleep", "caffeine", "tea", "health"],
        ["tea", "health", "catechin", "study"],  # the only one with the rare term
        ["coffee", "health", "study"],
    ]
    bm = BM25.build(docs)
    top = bm.top(["tea", "catechin"], 4)
    assert top[0][0] == 2
    assert all(s > 0 for _, s in top)
    assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)
    assert bm.idf("catechin") > bm.idf("tea") > 0


def test_bm25_unknown_terms_and_empty() -> None:
    bm = BM25.build([["a", "b"], ["c"]])
    assert bm.top(["zzz"], 5) == []
    assert bm.scores([]) == [0.0, 0.0]
    empty = BM25.build([])
    assert empty.n == 0
    assert empty.scores(["a"]) == []
    assert empty.top(["a"], 3) == []


def test_bm25_top_k_and_tie_break_by_index() -> None:
    bm = BM25.build([["x", "y"], ["x", "y"], ["x", "y"], ["z"]])
    assert [i for i, _ in bm.top(["x"], 2)] == [0, 1]
    assert len(bm.top(["x"], 10)) == 3


def test_bm25_shorter_document_scores_higher_for_same_tf() -> None:
    bm = BM25.build([["tea"] + ["filler"] * 50, ["tea", "filler"], ["other"]])
    scores = bm.scores(["tea"])
    assert scores[1] > scores[0] > 0
    assert scores[2] == 0


def test_bm25_duplicate_query_terms_count_once() -> None:
    bm = BM25.build([["tea", "sleep"], ["tea"], ["coffee"]])
    assert bm.scores(["tea", "tea", "tea"]) == bm.scores(["tea"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdefg"), max_size=12), min_size=1, max_size=8),
    st.lists(st.sampled_from("abcdefgh"), max_size=5),
    st.integers(0, 10),
)
def test_bm25_property(docs: list[list[str]], query: list[str], k: int) -> None:
    bm = BM25.build(docs)
    scores = bm.scores(query)
    assert len(scores) == len(docs)
    for doc, s in zip(docs, scores, strict=True):
        assert s >= 0
        assert (s > 0) == bool(set(doc) & set(query))
    top = bm.top(query, k)
    assert len(top) <= k
    assert [i for i, _ in top] == [
        i
        for i, _ in sorted(
            ((i, s) for i, s in enumerate(scores) if s > 0), key=lambda p: (-p[1], p[0])
        )
    ][:k]


def _reference_scores(docs: list[list[str]], query: list[str]) -> list[float]:
    """The formula as the first, hand-written index computed it (a scan of every document per
    query term): the oracle the postings-list index must agree with (issue 14)."""
    n = len(docs)
    if not n:
        return []
    freqs = [Counter(d) for d in docs]
    df: Counter[str] = Counter()
    for f in freqs:
        df.update(f.keys())
    avgdl = sum(len(d) for d in docs) / n or 1.0
    out = [0.0] * n
    for term in dict.fromkeys(query):
        if term not in df:
            continue
        idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        for i, f in enumerate(freqs):
            tf = f.get(term)
            if tf:
                norm = K1 * (1 - B + B * len(docs[i]) / avgdl)
                out[i] += idf * tf * (K1 + 1) / (tf + norm)
    return out


def _reference_top(docs: list[list[str]], query: list[str], k: int) -> list[tuple[int, float]]:
    ranked = sorted(
        ((i, s) for i, s in enumerate(_reference_scores(docs, query)) if s > 0),
        key=lambda p: (-p[1], p[0]),
    )
    return ranked[:k]


def test_bm25_matches_the_reference_formula_on_a_few_documents() -> None:
    docs = [
        ["coffee", "liver", "cirrhosis", "risk", "coffee"],
        ["coffee", "sleep", "caffeine", "anxiety"],
        ["tea", "sleep", "caffeine"],
        ["coffee", "liver", "cirrhosis", "risk", "coffee"],  # a duplicate: an exact tie
        ["liver", "enzyme", "study"] + ["filler"] * 20,
        [],
        ["caffeine"],
    ]
    bm = BM25.build(docs)
    for query in (
        ["coffee", "liver"],
        ["caffeine", "sleep"],
        ["liver"],
        ["cirrhosis", "coffee", "coffee"],
        ["unknown"],
        [],
    ):
        for k in (1, 2, 3, 10):
            got = bm.top(query, k)
            want = _reference_top(docs, query, k)
            assert [i for i, _ in got] == [i for i, _ in want], (query, k)
            assert [s for _, s in got] == [s for _, s in want]
        assert bm.scores(query) == _reference_scores(docs, query)
    # The duplicate ties with the first and comes after it (corpus order).
    assert [i for i, _ in bm.top(["coffee", "liver"], 2)] == [0, 3]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), max_size=10), min_size=1, max_size=30),
    st.lists(st.sampled_from("abcdefg"), max_size=4),
    st.integers(0, 12),
)
def test_bm25_top_k_equals_the_reference(docs: list[list[str]], query: list[str], k: int) -> None:
    """Small alphabets make many equal scores, so this checks the tie-break at the k-th place
    (the top-k selection keeps every candidate tied with the k-th best) as well as the order."""
    got = BM25.build(docs).top(query, k)
    want = _reference_top(docs, query, k)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == [s for _, s in want]


# --- corpus fixtures ---------------------------------------------------------------------------

MD = """---
title: "Volcanic ash and jet engines"
url: https://www.aviation-safety.example.org/ash
published: 2019-07-04
doi: 10.4242/ash.2019.7
publisher: Aviation Safety Review
author: R. Pilot
---
Volcanic ash melts inside the hot section of a jet engine and coats the turbine blades with
glass, which can stall the engine within minutes of exposure.
"""

TXT = """---
title: Sourdough starter notes
date: 2021-02-03
---
A sourdough starter is a culture of wild yeast and lactobacilli kept alive with flour and
water. Feeding the starter twice a day keeps the yeast active and the bread rising well.
"""

PLAIN = """Tidal power plants turn the rise and fall of the sea into electricity. Barrages hold
back water at high tide and release it through turbines as the tide falls again.
"""

HTML = """<!DOCTYPE html>
<html><head><title>Migrating monarch butterflies</title>
<link rel="canonical" href="https://www.nature-notes.example.com/monarchs">
<meta property="article:published_time" content="2020-04-15">
<meta name="citation_doi" content="10.1234/monarch.2020.15">
</head><body><article><h1>Migrating monarch butterflies</h1>
<p>Monarch butterflies migrate thousands of kilometres from Canada to central Mexico every
autumn, navigating with a time-compensated sun compass in their antennae.</p>
<p>The overwintering colonies gather in oyamel fir forests high in the mountains, where the
cool air slows the butterflies' metabolism until spring.</p>
<p>Conservation groups count the colonies each winter to estimate the size of the eastern
population and track its decline over the decades.</p>
</article></body></html>
"""

LATIN1_DE = (
    "Die Straße führt über die Brücke zum Schloß. Müller und Größe sind häufige Wörter "
    "im Deutschen, außerdem schöne Grüße aus München.\n"
)
LATIN1_FR = (
    "Le café crème est servi très chaud dans la brasserie. La crème brûlée est "
    "délicieuse après le dîner, et le gâteau à la française aussi.\n"
)


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "ash.md").write_text(MD, "utf-8")
    (root / "sub" / "sourdough.txt").write_text(TXT, "utf-8")
    (root / "tides.txt").write_text(PLAIN, "utf-8")
    (root / "monarchs.html").write_text(HTML, "utf-8")
    (root / "german.txt").write_bytes(LATIN1_DE.encode("latin-1"))
    (root / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "ignored.pdf").write_bytes(b"%PDF-1.4 not indexed")
    (root / ".hidden.md").write_text("Hidden notes about tidal barrages and turbines.", "utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "notes.txt").write_text("Tidal barrages in a hidden folder.", "utf-8")
    return root


def _open(root: Path, tmp_path: Path) -> LocalCorpus:
    return LocalCorpus.open(root, cache_dir=tmp_path / "idx")


def _by_path(c: LocalCorpus) -> dict[str, object]:
    return {d.metadata["path"]: d for d in c.documents}


# --- LocalCorpus.open errors ------------------------------------------------------------------


def test_open_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        _open(tmp_path / "nope", tmp_path)


def test_open_file_path(tmp_path: Path) -> None:
    f = tmp_path / "doc.md"
    f.write_text("Some text about tea and sleep.", "utf-8")
    with pytest.raises(CorpusError, match="not a folder"):
        _open(f, tmp_path)


def test_open_empty_folder(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusError, match=r"no \.pdf, \.html, \.md or \.txt"):
        _open(empty, tmp_path)


def test_open_folder_with_only_unsupported_files(tmp_path: Path) -> None:
    root = tmp_path / "pdfs"
    root.mkdir()
    (root / "a.pdf").write_bytes(b"%PDF")  # a PDF now (issue 19), but a broken one
    (root / "b.docx").write_bytes(b"PK\x03\x04")
    (root / ".hidden.md").write_text("hidden text", "utf-8")
    with pytest.raises(CorpusError, match=r"all 1 documents were skipped \(pdf_corrupt: 1\)"):
        _open(root, tmp_path)


def test_open_folder_with_only_unreadable_documents(tmp_path: Path) -> None:
    root = tmp_path / "bin"
    root.mkdir()
    (root / "a.txt").write_bytes(b"\x00\x01\x02binary")
    (root / "b.md").write_text("---\ntitle: empty\n---\n\n", "utf-8")
    with pytest.raises(
        CorpusError,
        match=r"all 2 documents were skipped \(not text \(binary content\): 1, "
        r"no text after extraction: 1\)",
    ):
        _open(root, tmp_path)
    assert not (tmp_path / "idx").exists() or not list((tmp_path / "idx").glob("*.json"))


def test_corpus_error_is_value_error() -> None:
    assert issubclass(CorpusError, ValueError)


# --- documents --------------------------------------------------------------------------------


def test_files_found_and_skipped(corpus_dir: Path, tmp_path: Path) -> None:
    c = _open(corpus_dir, tmp_path)
    paths = set(_by_path(c))
    assert paths == {"ash.md", "sub/sourdough.txt", "tides.txt", "monarchs.html", "german.txt"}
    # A PDF is read now (issue 19); this one is broken, and named so.
    assert [(s.path, s.reason, s.cause) for s in c.skipped] == [
        ("binary.txt", "not text (binary content)", "wrong_type"),
        (
            "ignored.pdf",
            "PDF: it is damaged or truncated (Failed to load document (PDFium: Data format "
            "error).)",
            "pdf_corrupt",
        ),
    ]
    assert c.root == corpus_dir.resolve()


def test_front_matter_parsed_and_removed(corpus_dir: Path, tmp_path: Path) -> None:
    doc = _by_path(_open(corpus_dir, tmp_path))["ash.md"]
    assert doc.url == "https://www.aviation-safety.example.org/ash"
    assert doc.title == "Volcanic ash and jet engines"
    assert doc.published == date(2019, 7, 4)
    assert doc.doi == "10.4242/ash.2019.7"
    assert doc.publisher == "Aviation Safety Review"
    assert doc.author == "R. Pilot"
    assert doc.text.startswith("Volcanic ash melts")
    assert "---" not in doc.text
    assert "title:" not in doc.text and "publisher:" not in doc.text


def test_front_matter_date_key_and_fallback_url(corpus_dir: Path, tmp_path: Path) -> None:
    docs = _by_path(_open(corpus_dir, tmp_path))
    sour = docs["sub/sourdough.txt"]
    assert sour.title == "Sourdough starter notes"
    assert sour.published == date(2021, 2, 3)
    # A file's URL is its file:// URI (issue 19; was "corpus:sub/sourdough.txt").
    assert sour.url == (corpus_dir.resolve() / "sub" / "sourdough.txt").as_uri()
    assert sour.text.startswith("A sourdough starter")
    tides = docs["tides.txt"]
    assert tides.title == "tides"  # the file stem
    assert tides.url == (corpus_dir.resolve() / "tides.txt").as_uri()
    assert tides.published is None and tides.doi is None
    assert tides.text == PLAIN.strip("\n")


def test_html_metadata(corpus_dir: Path, tmp_path: Path) -> None:
    doc = _by_path(_open(corpus_dir, tmp_path))["monarchs.html"]
    assert doc.title == "Migrating monarch butterflies"
    assert doc.url == "https://www.nature-notes.example.com/monarchs"
    assert doc.published == date(2020, 4, 15)
    assert doc.doi == "10.1234/monarch.2020.15"
    assert "time-compensated sun compass" in doc.text
    assert "<p>" not in doc.text


def test_html_without_canonical_gets_its_file_url(tmp_path: Path) -> None:
    root = tmp_path / "h"
    root.mkdir()
    (root / "page.htm").write_text(
        HTML.replace(
            '<link rel="canonical" href="https://www.nature-notes.example.com/monarchs">', ""
        ),
        "utf-8",
    )
    doc = _open(root, tmp_path).documents[0]
    assert doc.url == (root.resolve() / "page.htm").as_uri()
    assert doc.metadata["locator"] == "corpus:page.htm"  # where grounding reads it again


def test_latin1_text_is_read(corpus_dir: Path, tmp_path: Path) -> None:
    doc = _by_path(_open(corpus_dir, tmp_path))["german.txt"]
    assert doc.text == LATIN1_DE.strip("\n")


def test_latin1_french_text_decoded_correctly(tmp_path: Path) -> None:
    root = tmp_path / "fr"
    root.mkdir()
    (root / "fr.txt").write_bytes(LATIN1_FR.encode("latin-1"))
    doc = _open(root, tmp_path).documents[0]
    assert doc.text == LATIN1_FR.strip("\n")


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    root = tmp_path / "bom"
    root.mkdir()
    (root / "a.md").write_bytes("\ufeff---\ntitle: With BOM\n---\nBody text here.".encode())
    doc = _open(root, tmp_path).documents[0]
    assert doc.title == "With BOM"
    assert doc.text == "Body text here."


# --- search -----------------------------------------------------------------------------------


def test_search_ranks_rare_terms_first(corpus_dir: Path, tmp_path: Path) -> None:
    c = _open(corpus_dir, tmp_path)
    hits = c.search("turbine blades glass", 3)
    assert hits[0][0].metadata["path"] == "ash.md"
    hits = c.search("sourdough yeast", 3)
    assert hits[0][0].metadata["path"] == "sub/sourdough.txt"
    hits = c.search("monarch butterflies migrate", 3)
    assert hits[0][0].metadata["path"] == "monarchs.html"
    # The title is indexed too.
    assert c.search("Sourdough starter notes", 1)[0][0].metadata["path"] == "sub/sourdough.txt"


def test_search_limit_and_no_match(corpus_dir: Path, tmp_path: Path) -> None:
    c = _open(corpus_dir, tmp_path)
    assert len(c.search("the water turbines", 1)) == 1
    assert c.search("quantum chromodynamics", 5) == []


def test_gather(corpus_dir: Path, tmp_path: Path) -> None:
    c = _open(corpus_dir, tmp_path)
    got = list(c.gather("tidal barrages turbines", 5))
    assert all(isinstance(g, Found) for g in got)
    assert got[0].document.metadata["path"] == "tides.txt"
    assert [g.rank for g in got] == list(range(len(got)))
    none = list(c.gather("quantum chromodynamics", 5))
    assert len(none) == 1 and isinstance(none[0], DeadEnd)
    assert none[0].cause == DeadEndCause.NO_RESULTS


# --- cache ------------------------------------------------------------------------------------


def _fail_build(root: Path) -> None:
    raise AssertionError("build_index called although the cache is fresh")


def test_index_cached_and_reused(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _open(corpus_dir, tmp_path)
    caches = list((tmp_path / "idx").glob("corpus-*.json"))
    assert len(caches) == 1
    payload = json.loads(caches[0].read_text("utf-8"))
    assert payload["version"] == local_mod.INDEX_VERSION

    monkeypatch.setattr(local_mod, "build_index", _fail_build)
    second = _open(corpus_dir, tmp_path)
    assert [d.url for d in second.documents] == [d.url for d in first.documents]
    assert [d.published for d in second.documents] == [d.published for d in first.documents]
    assert [(s.path, s.reason) for s in second.skipped] == [
        (s.path, s.reason) for s in first.skipped
    ]
    assert second.search("turbine blades glass", 1)[0][0].metadata["path"] == "ash.md"


def test_touching_a_file_triggers_rebuild(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _open(corpus_dir, tmp_path)
    target = corpus_dir / "tides.txt"
    st_ = target.stat()
    os.utime(target, ns=(st_.st_atime_ns, st_.st_mtime_ns + 5_000_000_000))
    calls: list[Path] = []
    real = local_mod.build_index

    def counting(
        root: Path, previous: local_mod.CorpusIndex | None = None
    ) -> local_mod.CorpusIndex:
        calls.append(root)
        return real(root, previous)

    monkeypatch.setattr(local_mod, "build_index", counting)
    _open(corpus_dir, tmp_path)
    assert len(calls) == 1
    _open(corpus_dir, tmp_path)  # the rebuilt index was cached again
    assert len(calls) == 1


def test_modifying_a_file_triggers_rebuild_with_new_content(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _open(corpus_dir, tmp_path)
    target = corpus_dir / "tides.txt"
    old = target.stat().st_mtime_ns
    target.write_text(PLAIN + "Geothermal springs heat the zeolite caverns.\n", "utf-8")
    os.utime(target, ns=(old + 7_000_000_000, old + 7_000_000_000))
    c = _open(corpus_dir, tmp_path)
    assert c.search("zeolite caverns", 1)[0][0].metadata["path"] == "tides.txt"


def test_adding_and_removing_files_triggers_rebuild(corpus_dir: Path, tmp_path: Path) -> None:
    _open(corpus_dir, tmp_path)
    (corpus_dir / "new.md").write_text("Axolotls regrow their limbs completely.", "utf-8")
    c = _open(corpus_dir, tmp_path)
    assert c.search("axolotls regrow limbs", 1)[0][0].metadata["path"] == "new.md"
    (corpus_dir / "new.md").unlink()
    c = _open(corpus_dir, tmp_path)
    assert c.search("axolotls regrow limbs", 1) == []


def test_corrupt_or_old_cache_is_rebuilt(corpus_dir: Path, tmp_path: Path) -> None:
    _open(corpus_dir, tmp_path)
    cache = next((tmp_path / "idx").glob("corpus-*.json"))
    cache.write_text("{not json", "utf-8")
    assert len(_open(corpus_dir, tmp_path).documents) == 5
    payload = json.loads(cache.read_text("utf-8"))
    payload["version"] = -1
    cache.write_text(json.dumps(payload), "utf-8")
    assert len(_open(corpus_dir, tmp_path).documents) == 5
    assert json.loads(cache.read_text("utf-8"))["version"] == local_mod.INDEX_VERSION


def test_default_cache_dir_under_mole_home(corpus_dir: Path) -> None:
    LocalCorpus.open(corpus_dir)
    home = Path(os.environ["MOLE_HOME"])
    assert list((home / "index").glob("corpus-*.json"))


def test_a_cache_from_other_indexing_code_is_rebuilt(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: a demo-corpus cache written before a tokenizer change (INDEX_VERSION unchanged)
    kept its old terms, so the planner planned other facets than a fresh index gives and the
    demo lost its superseded finding. The cache now names the code that built it."""
    _open(corpus_dir, tmp_path)
    calls: list[Path] = []
    real = local_mod.build_index

    def counting(
        root: Path, previous: local_mod.CorpusIndex | None = None
    ) -> local_mod.CorpusIndex:
        calls.append(root)
        return real(root, previous)

    monkeypatch.setattr(local_mod, "build_index", counting)
    _open(corpus_dir, tmp_path)
    assert calls == []  # same code, same files: the cache stands
    monkeypatch.setattr(corpus_index, "_INDEXER_VERSION", "another-version")
    _open(corpus_dir, tmp_path)
    assert len(calls) == 1


def test_the_cache_names_the_pdf_reader_that_made_its_text() -> None:
    """A PDF's stored text is made by the PDF reader's layout rules (headings, hyphens, running
    heads): an index cached across a change to them kept the old text, since only this module,
    the text tools and HTML extraction were digested."""
    import mole_dag.actors.pdf.layout as layout
    import mole_dag.actors.pdf.reader as reader
    import mole_dag.actors.pdf.worker as worker

    sources = {Path(p).resolve() for p in local_mod.indexer_sources()}
    for mod in (layout, reader, worker, corpus_index, corpus_files):
        assert Path(str(mod.__file__)).resolve() in sources, mod.__name__


def test_the_cache_write_does_not_copy_the_index(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's own documents go to the JSON encoder: `asdict(index)` deep-copied every
    document and term list first (3.3 s of 12.1 s at 10k documents, and a second index in
    memory). The terms go as one string a document."""
    dumped: list[dict[str, object]] = []
    real = corpus_index.json.dumps

    def spy(obj: dict[str, object], **kw: object) -> str:
        dumped.append(obj)
        return real(obj, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(corpus_index.json, "dumps", spy)
    c = _open(corpus_dir, tmp_path)
    dumped = [d for d in dumped if isinstance(d, dict) and "docs" in d]  # not a PDF request
    assert len(dumped) == 1
    assert dumped[0]["docs"] is c.index.docs
    assert dumped[0]["fingerprint"] is c.index.fingerprint
    assert dumped[0]["terms"] == [" ".join(t) for t in c.index.terms]


def test_the_cache_format(corpus_dir: Path, tmp_path: Path) -> None:
    """What `asdict` wrote before (INDEX_VERSION 3), except the terms: one space-separated
    string a document (4), read back into the same lists; and each file's entry as a list
    (path, size, mtime, digest, document, skipped) for the incremental index (5, issue 19); a
    document's URL its file:// URI (6)."""
    from dataclasses import asdict, astuple

    c = _open(corpus_dir, tmp_path)
    cache = next((tmp_path / "idx").glob("corpus-*.json"))
    want = asdict(c.index) | {"version": 6}
    want["terms"] = [" ".join(t) for t in c.index.terms]
    want["files"] = [list(astuple(f)) for f in c.index.files]
    del want["extracted"]
    assert local_mod.INDEX_VERSION == 6
    assert json.loads(cache.read_text("utf-8")) == json.loads(json.dumps(want))
    local_mod._OPENED.clear()
    assert _open(corpus_dir, tmp_path).index.terms == c.index.terms


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_a_term_never_holds_whitespace(text: str) -> None:
    """The cache joins a document's terms with spaces and splits them back."""
    for t in terms(text):
        assert t and t.split() == [t]


def _rebuilt_once(
    corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, n_docs: int = 5
) -> list[logging.LogRecord]:
    """Opens the corpus again: it must be built exactly once and search; returns the lines
    logged."""
    calls: list[Path] = []
    real = local_mod.build_index

    def counting(
        root: Path, previous: local_mod.CorpusIndex | None = None
    ) -> local_mod.CorpusIndex:
        calls.append(root)
        return real(root, previous)

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mole.local"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(local_mod, "build_index", counting)
        local_mod._OPENED.clear()  # not the copy this process remembers: the file
        c = _open(corpus_dir, tmp_path)
    assert len(calls) == 1
    assert len(c.documents) == n_docs
    assert c.search("turbine blades glass", 1)[0][0].metadata["path"] == "ash.md"
    return [r for r in caplog.records if r.name == "mole.local"]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (b"{not json", "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2, 3]", "not an index"),
        (b"\xff\xfe\x00garbage", "UnicodeDecodeError"),
        (b'{"version": %d}' % local_mod.INDEX_VERSION, "missing or wrong field"),
    ],
)
def test_a_corrupt_cache_is_rebuilt_with_one_warning(
    corpus_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: bytes,
    why: str,
) -> None:
    _open(corpus_dir, tmp_path)
    cache = next((tmp_path / "idx").glob("corpus-*.json"))
    cache.write_bytes(damage)
    records = _rebuilt_once(corpus_dir, tmp_path, caplog)
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    msg = records[0].getMessage()
    assert str(cache) in msg and why in msg and "rebuilding it" in msg
    assert json.loads(cache.read_text("utf-8"))["version"] == local_mod.INDEX_VERSION


def test_a_cache_with_a_broken_document_is_rebuilt_not_a_crash(
    corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Well-formed JSON, the right fingerprint, one document that is not a Document: this used
    to raise TypeError out of LocalCorpus.open."""
    _open(corpus_dir, tmp_path)
    cache = next((tmp_path / "idx").glob("corpus-*.json"))
    payload = json.loads(cache.read_text("utf-8"))
    payload["docs"][0] = {"no such field": 1}
    cache.write_text(json.dumps(payload), "utf-8")
    records = _rebuilt_once(corpus_dir, tmp_path, caplog)
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "unreadable (TypeError" in records[0].getMessage()


def test_a_stale_cache_is_rebuilt_with_one_line_saying_why(
    corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _open(corpus_dir, tmp_path)
    target = corpus_dir / "tides.txt"
    st_ = target.stat()
    os.utime(target, ns=(st_.st_atime_ns, st_.st_mtime_ns + 5_000_000_000))
    (corpus_dir / "new.md").write_text("Axolotls regrow their limbs completely.", "utf-8")
    (corpus_dir / "german.txt").unlink()
    (corpus_dir / "german2.txt").write_bytes(LATIN1_DE.encode("latin-1"))
    records = _rebuilt_once(corpus_dir, tmp_path, caplog, n_docs=6)
    assert [(r.levelno, r.getMessage().split(" is ", 1)[1]) for r in records] == [
        (logging.INFO, "out of date (1 changed, 2 added, 1 removed); rebuilding it")
    ]


def test_each_distinct_term_is_one_string_cold_and_warm(corpus_dir: Path, tmp_path: Path) -> None:
    """A token kept as its own string object was most of a large corpus's memory; the index
    keeps one object per distinct term, whether built or read from the cache."""

    def one_object_per_term(c: LocalCorpus) -> bool:
        flat = [t for doc in c.index.terms for t in doc]
        return len(flat) > len(set(flat)) == len({id(t) for t in flat})

    assert one_object_per_term(_open(corpus_dir, tmp_path))
    local_mod._OPENED.clear()  # read the cache file, not this process's copy
    warm = _open(corpus_dir, tmp_path)
    assert one_object_per_term(warm)
    assert warm.search("turbine blades glass", 1)[0][0].metadata["path"] == "ash.md"


def test_a_cache_with_terms_of_the_wrong_shape_is_rebuilt(
    corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _open(corpus_dir, tmp_path)
    cache = next((tmp_path / "idx").glob("corpus-*.json"))
    payload = json.loads(cache.read_text("utf-8"))
    for bad in (["a", "list"], 5, None):
        payload["terms"][0] = bad
        cache.write_text(json.dumps(payload), "utf-8")
        records = _rebuilt_once(corpus_dir, tmp_path, caplog)
        assert len(records) == 1 and records[0].levelno == logging.WARNING
        assert "unreadable" in records[0].getMessage()


def test_a_markdown_files_title_is_its_first_heading(tmp_path: Path) -> None:
    """A Markdown document's title is its front matter's, else the level-1 heading on its
    first line, else its file name; a plain-text file's "# ..." line is text, not a title."""
    from mole_dag.actors.local import load_document

    (tmp_path / "examples.md").write_text("# Sparse Graph Examples\n\nWe simulate 500 nodes.\n")
    (tmp_path / "fm.md").write_text("---\ntitle: From Front Matter\n---\n# A Heading\n\nText.\n")
    (tmp_path / "later.md").write_text("Some text first.\n\n# Not The Title\n")
    (tmp_path / "notes.txt").write_text("# Just A Line\n\nText.\n")
    assert load_document(tmp_path / "examples.md").title == "Sparse Graph Examples"
    assert load_document(tmp_path / "fm.md").title == "From Front Matter"
    assert load_document(tmp_path / "later.md").title == "later"
    assert load_document(tmp_path / "notes.txt").title == "notes"
