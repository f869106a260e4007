"""The pure parts of bench/qa.py: tokens, sentences, Okapi BM25, the metrics and the
BENCHMARKS.md section replacement. Offline; no shared folder needed."""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path

import pytest

_QA_PY = Path(__file__).resolve().parent.parent / "bench" / "qa.py"
_spec = importlib.util.spec_from_file_location("qa_bench", _QA_PY)
qa = importlib.util.module_from_spec(_spec)
sys.modules["qa_bench"] = qa  # dataclasses look their module up
_spec.loader.exec_module(qa)


def test_tokens_lowercase_without_stop_words() -> None:
    assert qa.tokens("Which version of the Mercurial tool was FIRST to support Python 3?") == [
        "version",
        "mercurial",
        "tool",
        "first",
        "support",
        "python",
        "3",
    ]


def test_sentences_split_lines_and_terminators() -> None:
    text = "First one. Second one! 3 cats? e.g. lower stays.\nNew paragraph\n\n  "
    assert qa.sentences(text) == [
        "First one.",
        "Second one!",
        "3 cats? e.g. lower stays.",
        "New paragraph",
    ]


def test_okapi_matches_the_formula() -> None:
    docs = [["cat", "sat"], ["dog", "sat", "sat", "mat"], ["bird"]]
    bm = qa.Okapi(docs)
    n, avgdl = 3, 7 / 3
    idf_sat = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    want = idf_sat * 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 4 / avgdl))
    assert bm.scores(["sat"])[1] == pytest.approx(want)
    assert bm.scores(["sat"])[2] == 0.0
    assert bm.scores(["unknown"]) == [0.0, 0.0, 0.0]


def test_okapi_rank_prefers_rare_terms_and_breaks_ties_by_order() -> None:
    docs = [["common", "x"], ["common", "rare"], ["common", "y"], ["nothing"]]
    bm = qa.Okapi(docs)
    assert bm.rank(["common", "rare"]) == [1, 0, 2]  # doc 3 scores 0 and is left out
    assert bm.rank(["common"], k=2) == [0, 1]


def test_rank_question_rank_and_precision() -> None:
    corpus = [
        ("a.html", "Mercurial 5.2 was the first release to run on Python 3."),
        ("b.html", "Python 3 support arrived in many tools."),
        ("b.html", "The Mercurial project uses Python."),
        ("c.html", "Unrelated text about cooking."),
    ]
    pat = re.compile(r"Mercurial 5\.2")
    r = qa.rank_question(
        corpus,
        "Which Mercurial version first supported Python 3?",
        lambda s: bool(pat.search(s)),
        {"a.html"},
    )
    assert r.rank == 1
    assert r.prec5 == pytest.approx(1 / 3)  # three sentences ranked, one from the relevant page
    miss = qa.rank_question(corpus, "cooking", lambda s: bool(pat.search(s)), {"a.html"})
    assert miss.rank is None and miss.prec5 == 0.0
    none = qa.rank_question(corpus, "zebra", lambda s: True, {"a.html"})
    assert none.rank is None and none.prec5 is None


def test_metrics() -> None:
    m = qa.metrics([1, 3, None, 6], [1.0, 0.5, None, 0.0])
    assert m["n"] == 4
    assert m["hit@1"] == 0.25
    assert m["hit@5"] == 0.5
    assert m["mrr"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 6) / 4)
    assert m["answer_anywhere"] == 0.75
    assert m["relevance_precision"] == pytest.approx(0.5)
    assert qa.metrics([], [])["hit@5"] is None


def test_replace_section_appends_then_replaces_only_its_own() -> None:
    doc = "# Benchmarks\n\nintro\n\n## Ledger\n\nledger text\n"
    h = "## QA (DEV set): mole vs plain BM25 (before)"
    once = qa.replace_section(doc, h, "table v1")
    assert once == doc + "\n" + h + "\n\ntable v1\n"
    twice = qa.replace_section(once, h, "table v2\n")
    assert twice == doc + "\n" + h + "\n\ntable v2\n"
    # a section in the middle is replaced up to the next '## ' heading, the rest kept
    mid = qa.replace_section(twice + "\n## Later\n\nlater text\n", h, "table v3")
    assert mid == doc + "\n" + h + "\n\ntable v3\n\n## Later\n\nlater text\n"
    # another label is another section
    other = qa.replace_section(twice, "## QA (DEV set): mole vs plain BM25 (after)", "t")
    assert "table v2" in other and other.endswith("(after)\n\nt\n")
    assert qa.replace_section("", h, "x") == h + "\n\nx\n"


def test_skips_with_a_reason_when_the_shared_folder_is_absent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert qa.main(["--qa-dir", str(tmp_path / "nope"), "--pages", str(tmp_path / "nope2")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("qa: skipped:") and "nope" in out
