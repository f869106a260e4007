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


# -- issue 21: the Answer section, the decisions, the held-out halves ------------------------

_REPORT = """# Q?

Session `s` · provider `extractive` · budget 1 tokens · generated 2026-01-01 00:00 UTC

## Answer

\u201cMatt Bors drew it.\u201d [1] \u201cA second quote.\u201d [2]

## Q?

1. Matt Bors drew it. [1]
   relevance 0.50 · confidence 0.20 — x

## Sources

[1] t \u2014 p, unknown. <http://h/a.html>
"""


def _qs() -> object:
    """The pieces of the shared qa_score.py the bench uses, for a test without ../shared."""

    class QS:
        @staticmethod
        def compile_patterns(pats: list[str]) -> list[re.Pattern[str]]:
            return [re.compile(p, re.I) for p in pats]

        @staticmethod
        def matches(pats: list[re.Pattern[str]], *texts: str) -> bool:
            return any(p.search(t) for t in texts if t for p in pats)

    return QS()


def test_answer_section_and_its_citations() -> None:
    answer = qa.answer_section(_REPORT)
    assert answer.startswith("\u201cMatt Bors") and "Sources" not in answer
    assert qa.cites(answer) and not qa.cites("None of the 3 sources read answers this question.")
    assert not qa.cites("a source's own marker \\[2\\]")
    assert qa.answer_section("# no answer here") == ""


def test_decision_rows_and_their_summary() -> None:
    qs = _qs()
    hit = qa.decision_row(_REPORT, True, "b", qs.compile_patterns(["Matt Bors"]), qs)
    assert hit == {"answered": True, "basis": "b", "answer_has": True, "answer_cites": True}
    declined = qa.decision_row(
        "## Answer\n\nNone of the 2 sources read answers this question.\n", False, "why", [], qs
    )
    assert declined["answer_has"] is False and declined["answer_cites"] is False
    mole = {"D1": hit, "D2": hit | {"answer_has": False}, "D3": declined}
    una = {"U1": declined, "U2": hit}
    s = qa.decisions_summary(mole, una)
    assert s["answer@"] == pytest.approx(1 / 3)
    assert (s["false_declines"], s["n_answerable"]) == (1, 3)
    assert (s["declined"], s["quoted_as_answer"], s["n_unanswerable"]) == (1, 1, 2)
    # A store from before the decision was recorded: no figure, not a zero.
    old = {"D1": hit | {"answered": None}}
    assert qa.decisions_summary(old, {})["false_declines"] is None
    assert qa.decisions_summary(old, {})["declined"] is None


def test_halves_are_fixed_by_the_question_number() -> None:
    assert [qa.half(q) for q in ("D01", "D02", "U09", "U10", "Q30")] == [
        "odd",
        "even",
        "odd",
        "even",
        "even",
    ]


def test_held_out_picks_on_one_half_and_scores_the_other() -> None:
    sys.path.insert(0, str(_QA_PY.parent))
    import qa_replay as rp

    qs = [rp.Question(f"D0{i}", f"s{i}", True) for i in range(1, 5)] + [
        rp.Question("U01", "u1", False),
        rp.Question("U02", "u2", False),
    ]
    grid = ["a", "b"]  # settings are opaque to held_out: only their index is used
    # Setting 0 ranks the answer first on the odd half only, setting 1 on the even half only.
    results = {
        0: {
            "D01": rp.Outcome(1, True, True),
            "D03": rp.Outcome(1, True, True),
            "D02": rp.Outcome(4, False, True),
            "D04": rp.Outcome(None, False, False),
            "U01": rp.Outcome(answered=False),
            "U02": rp.Outcome(answered=True, answer_cites=True),
        },
        1: {
            "D01": rp.Outcome(3, False, True),
            "D03": rp.Outcome(2, False, True),
            "D02": rp.Outcome(1, True, True),
            "D04": rp.Outcome(1, True, True),
            "U01": rp.Outcome(answered=False),
            "U02": rp.Outcome(answered=False),
        },
    }
    picked = rp.held_out(grid, results, qs)
    by = {h.tuned_on: h for h in picked}
    assert by["odd"].setting == "a" and by["odd"].tuned["hit@1"] == 1.0
    assert by["odd"].held_out["hit@1"] == 0.0  # picked on odd, it fails the even half
    assert by["even"].setting == "b" and by["even"].held_out["hit@1"] == 0.0
    s = rp.summary([(q, results[0][q.qid]) for q in qs])
    assert s["hit@1"] == 0.5 and s["hit@5"] == 0.75 and s["false_declines"] == 1
    assert (s["declined"], s["quoted_as_answer"]) == (1, 1)


def test_replay_settings_are_the_defaults_the_ablations_and_the_grid() -> None:
    sys.path.insert(0, str(_QA_PY.parent))
    import qa_replay as rp

    from mole_dag.mining.relevance import WEIGHTS

    small = rp.settings(WEIGHTS, 0.2, full=False)
    assert small[0].weights == WEIGHTS and small[0].label(WEIGHTS) == "threshold 0.2"
    assert len(small) == 1 + len(rp.ABLATIONS)
    assert small[1].label(WEIGHTS) == "context 0, threshold 0.2"
    full = rp.settings(WEIGHTS, 0.2, full=True)
    assert len({(s.weights, s.min_coverage) for s in full}) == len(full) > len(small)


# -- issue 30: DEV, its halves and other question sets side by side --------------------------


def test_set_parts_split_dev_by_id_parity_and_keep_other_sets_whole() -> None:
    ids = ["D01", "D02", "D03", "U10"]
    assert qa.set_parts("DEV", True, ids) == [
        ("DEV all", ["D01", "D02", "D03", "U10"]),
        ("DEV A (odd ids)", ["D01", "D03"]),
        ("DEV B (even ids)", ["D02", "U10"]),
    ]
    assert qa.set_parts("qa-html-unseen", False, ["H02", "H01"]) == [
        ("qa-html-unseen", ["H01", "H02"])
    ]
    assert qa.set_name(Path("/x/qa-dev"), True, []) == "DEV"
    assert qa.set_name(Path("/y/unseen"), False, ["unseen"]) == "unseen-2"


def test_sets_table_has_a_column_per_half_and_set_and_mole_beside_bm25() -> None:
    def run(ranks: dict[str, int | None], base: dict[str, int | None]) -> dict:
        return {
            "mole": {q: {"rank": r, "report": r is not None} for q, r in ranks.items()},
            "unanswerable": {},
            "baseline": {
                v: {q: {"rank": r, "prec5": None} for q, r in base.items()}
                for v in ("all", "fetched")
            },
        }

    dev = qa.QSet("DEV", Path("dev"), True, {}, {})
    other = qa.QSet("unseen", Path("unseen"), False, {}, {})
    out = qa.html_sets_table(
        [
            (dev, [run({"D01": 1, "D02": None}, {"D01": 2, "D02": 1})]),
            (other, [run({"H01": 5}, {"H01": None})]),
        ]
    )
    lines = out.splitlines()
    assert lines[0] == (
        "| set (answerable + unanswerable) | DEV all (2) | DEV A (odd ids) (1) "
        "| DEV B (even ids) (1) | unseen (1) |"
    )
    rows = {ln.split(" | ")[0][2:]: ln.split(" | ")[1:] for ln in lines[2:]}
    assert rows["mole hit@1"] == ["50%", "100%", "0%", "0% |"]
    assert rows["BM25 over all pages hit@1"] == ["50%", "0%", "100%", "0% |"]
    assert rows["MRR, mole minus BM25 over all pages"] == ["-0.25", "+0.50", "-1.00", "+0.20 |"]
    assert "unanswerable questions declined" not in rows  # no column has any
