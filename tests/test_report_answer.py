"""The answer-first report (issue 10): no sentence without evidence, whatever the writer says;
findings chosen and ordered by relevance; quotes shown as the source wrote them; empty reports
and banners that say what happened."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import SourceClass, Unit
from mole_dag.driver import run_session
from mole_dag.llm.retry import RetryPolicy
from mole_dag.output.binding import Dropped, bind
from mole_dag.output.citations import cited_numbers
from mole_dag.output.html import render_html
from mole_dag.output.reasons import EMPTY_PREFIX
from mole_dag.output.report import ReportResult, write_report
from mole_dag.output.selection import RELATIVE_FLOOR, choose
from mole_dag.output.wording import escape_markdown
from mole_dag.session import create_session
from mole_dag.skills.protocol import BoundSentence, WriteRequest, WrittenAnswer
from mole_dag.skillsets import skills_for
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store, utcnow
from mole_dag.store.records import FindingRow
from tests.fakes import ScriptedSkills
from tests.model_server import ModelServer, Received, Reply, SimulatedModel, claude_message
from tests.report_reader import read, section

QUESTION = "Does green tea affect sleep and stroke risk?"
Relevance = Callable[[str], float]


def _about_the_question(text: str) -> float:
    """A stand-in scorer: claims about sleep or stroke answer the question, the rest do not."""
    t = text.lower()
    return 0.9 if "stroke" in t else 0.8 if "sleep" in t else 0.05


def _research(run: Run, relevance: Relevance | None = _about_the_question) -> None:
    run_session(run, report=False)
    if relevance is not None:
        _score(run.store, run.session_id, relevance)


def _score(store: Store, sid: str, relevance: Relevance) -> None:
    """What the relevance scorer (another stage) stores: one row per claim."""
    now = utcnow()
    for c in store.rows("SELECT id, text, sub_question_id FROM claims WHERE session_id = ?", [sid]):
        r = relevance(c["text"])
        _exec(
            store,
            "INSERT OR REPLACE INTO claim_relevance VALUES "
            "(?, ?, ?, ?, ?, ?, 'lexical', NULL, 'test score', ?)",
            [c["id"], sid, r, r, r, c["sub_question_id"], now],
        )


def _exec(store: Store, sql: str, params: list[object]) -> None:
    store.transact(lambda cur: cur.execute(sql, params))


def _assert_every_statement_cited(md: str) -> None:
    reading = read(md)
    assert reading.ok, (reading.uncited, reading.dangling)


# -- a model writer that says the wrong things ---------------------------------------------------


class WriterSays(SimulatedModel):
    """The simulated Claude, except that the writer answers with `text`."""

    def __init__(self, text: str) -> None:
        super().__init__(fabricate=False, later_rounds=False)
        self.text = text

    def __call__(self, got: Received) -> Reply:
        if got.skill == "write":
            return Reply(200, claude_message(self.text, input_tokens=50, output_tokens=40))
        return super().__call__(got)


def _model_run(
    store: Store, server: ModelServer, corpus: Path, sid: str, total: int = 1_000_000
) -> Run:
    skills = skills_for("anthropic", {"anthropic": {"api_key": "k", "base_url": server.url}})
    skills.provider.policy = RetryPolicy(max_attempts=1, base_delay_s=0.0, max_delay_s=0.0)
    ledger = Ledger(store)
    ledger.create_session(
        QUESTION, Unit.USD_MICROS, total, session_id=sid, provider="anthropic", corpus=str(corpus)
    )
    return Run(store, ledger, skills, sid, progress=lambda m: None)


def _sentences(*items: tuple[str, list[object]]) -> str:
    return json.dumps({"sentences": [{"text": t, "findings": f} for t, f in items]})


BAD_ANSWERS = {
    # Prose that sounds right and is in no finding.
    "unsupported": _sentences(
        ("Green tea cures insomnia and prevents every stroke in children within a week.", [1])
    ),
    # The writer echoed its format inside a sentence.
    "raw_json": _sentences(('{"text": "Green tea lowers stroke risk", "findings": [1]}', [1])),
    # A claim of its own, bound to a finding that does not exist, or to none.
    "fabricated": _sentences(
        ("Green tea drinkers live twelve years longer.", [99]),
        ("Green tea is the healthiest drink.", []),
    ),
    # Free text with citations of its own and no JSON at all.
    "free_text": "Green tea helps with sleep [1]. It also prevents strokes [2]. Drink it daily.",
    # Its own bracketed citation inside a sentence the check would otherwise accept.
    "own_citation": _sentences(("Green tea drinkers had a lower risk of stroke [3].", [1])),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_no_sentence_without_evidence_whatever_the_writer_says(
    case: str, store: Store, mini_corpus: Path
) -> None:
    with ModelServer(WriterSays(BAD_ANSWERS[case])) as server:
        run = _model_run(store, server, mini_corpus, f"s-{case}")
        _research(run)
        rep = write_report(run)
        assert len(server.by_skill("write")) == 1
    md = rep.markdown
    _assert_every_statement_cited(md)
    answer = section(md, "Answer")
    for junk in (
        "cures insomnia",
        "twelve years",
        "healthiest",
        '"findings"',
        "Drink it daily",
        "prevents strokes",
    ):
        assert junk not in md
    assert cited_numbers(answer)  # the deterministic answer, cited
    assert rep.writer == "deterministic"
    # The banner says what the model did and why its answer is not there; it is no
    # "made without a language model" report.
    assert "without a language model" not in md
    assert "The model (`anthropic`) planned" in md and "mined" in md
    assert "answer paragraph was not used" in md and "deterministic one" in md


def test_a_supported_answer_is_printed_with_rendered_citations(
    store: Store, mini_corpus: Path
) -> None:
    with ModelServer(SimulatedModel(fabricate=False, later_rounds=False)) as server:
        run = _model_run(store, server, mini_corpus, "s-good")
        _research(run)
        rep = write_report(run)
    md = rep.markdown
    _assert_every_statement_cited(md)
    assert rep.writer == "anthropic"
    answer = section(md, "Answer")
    assert answer.startswith("According to the sources,") and cited_numbers(answer)
    assert "answer paragraph was not used" not in md


def test_a_model_answer_is_recorded_as_answered(store: Store, mini_corpus: Path) -> None:
    with ModelServer(SimulatedModel(fabricate=False, later_rounds=False)) as server:
        run = _model_run(store, server, mini_corpus, "s-answered")
        _research(run)
        rep = write_report(run)
    assert rep.answered and rep.answer_basis.startswith("the model writer (`anthropic`)")
    row = store.row("SELECT answered, answer_basis FROM reports WHERE id = ?", [rep.report_id])
    assert row == {"answered": True, "answer_basis": rep.answer_basis}


def test_a_model_writer_that_finds_no_answer_declines_and_cites_nothing(
    store: Store, mini_corpus: Path
) -> None:
    # Issue 21: with a model writer, answered-or-not is the model's to decide. It says so in
    # its JSON, and the report says the sources do not answer, cites nothing in the Answer and
    # heads the findings as related.
    with ModelServer(WriterSays('{"answered": false, "sentences": []}')) as server:
        run = _model_run(store, server, mini_corpus, "s-declined")
        _research(run)
        rep = write_report(run)
    md = rep.markdown
    _assert_every_statement_cited(md)
    answer = section(md, "Answer")
    assert answer.startswith("None of the ") and "sources read answers this question" in answer
    assert not cited_numbers(answer)
    assert not rep.answered and "the model writer (`anthropic`) found that no finding" in (
        rep.answer_basis
    )
    assert rep.writer == "anthropic" and "answer paragraph was not used" not in md
    other = ("Answer", "Disputed", "Superseded", "Local data", "Sources", "Spend")
    headings = [h for h in read(md).sections if h not in other]
    # The question's own section is "Related findings" alone (issue 33: not the title again).
    assert headings and all(h.startswith("Related findings") for h in headings)


def test_one_bad_sentence_of_three_is_dropped_and_counted(store: Store, mini_corpus: Path) -> None:
    text = _sentences(
        ("Green tea drinkers had a lower risk of stroke in a large cohort study.", [1]),
        ("The wire report said green tea drinkers had a lower risk of stroke.", [1]),
        ("Green tea doubles lifespan.", [1]),
    )
    with ModelServer(WriterSays(text)) as server:
        run = _model_run(store, server, mini_corpus, "s-partial")
        _research(run, relevance=lambda t: 0.9 if "stroke" in t else 0.0)
        rep = write_report(run)
    md = rep.markdown
    _assert_every_statement_cited(md)
    assert rep.writer == "anthropic" and "doubles lifespan" not in md
    assert "2 of the writer's 3 sentences passed the evidence check" in md
    assert "1 is not supported by the findings it names" in md


def test_writer_that_cannot_be_afforded_says_so(tmp_path: Path, mini_corpus: Path) -> None:
    @dataclass
    class DearWriter(ScriptedSkills):
        def estimate_write(self, req: WriteRequest, unit: Unit) -> int:
            return 10**9

    store = Store(tmp_path / "dear.duckdb")
    sid = create_session(store, QUESTION, Unit.TOKENS, 10_000, corpus=str(mini_corpus)).session_id
    run = Run(
        store,
        Ledger(store),
        DearWriter(judge_fn=lambda a, b, n: "neither"),
        sid,
        progress=lambda m: None,
    )
    _research(run)
    md = write_report(run).markdown
    _assert_every_statement_cited(md)
    assert "The writer could not be afforded: it needed 1000000000 tokens" in md
    assert "The model (`scripted`) judged" in md  # the only model work ScriptedSkills does
    assert "without a language model" not in md
    store.close()


# -- the binding check, unit by unit ----------------------------------------------------------


FINDINGS = {
    1: "Green tea drinkers had a lower risk of stroke in a large cohort study of 4,000 "
    "older adults.",
    2: "Drinking green tea in the evening does not raise the risk of poor sleep.",
    3: "The parser reads int(l[2]) first.",
}


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        (BoundSentence("", (1,)), Dropped.EMPTY),
        (BoundSentence("Green tea lowers stroke risk.", ()), Dropped.NO_FINDING),
        (BoundSentence("Green tea lowers stroke risk.", (1, 7)), Dropped.UNKNOWN_FINDING),
        (BoundSentence("Green tea lowers stroke risk [1].", (1,)), Dropped.OWN_MARKUP),
        # A citation with a PDF's page, in the form the report prints and in the old one, and
        # a page the writer wrote by itself (issue 19).
        (BoundSentence("Green tea lowers stroke risk [1] (p. 4).", (1,)), Dropped.OWN_MARKUP),
        (BoundSentence("Green tea lowers stroke risk [1, p. 4].", (1,)), Dropped.OWN_MARKUP),
        (BoundSentence("Green tea lowers stroke risk (p. 4).", (1,)), Dropped.OWN_MARKUP),
        (BoundSentence("Green tea lowers **stroke** risk.", (1,)), Dropped.OWN_MARKUP),
        (BoundSentence('{"text": "x", "findings": [1]}', (1,)), Dropped.RAW_JSON),
        (BoundSentence("Coffee cures migraines in teenagers.", (1,)), Dropped.UNSUPPORTED),
        (
            BoundSentence("Green tea lowered stroke risk in 9,000 older adults.", (1,)),
            Dropped.UNSUPPORTED,
        ),  # a number no finding states
        (
            BoundSentence("Green tea drinkers did not have a lower risk of stroke.", (1,)),
            Dropped.UNSUPPORTED,
        ),  # a negation no finding makes
    ],
)
def test_binding_drops_by_reason(sentence: BoundSentence, why: Dropped) -> None:
    got = bind(WrittenAnswer((sentence,)), FINDINGS, QUESTION)
    assert not got.kept and got.dropped == ((str(why), 1),)


def test_binding_keeps_paraphrase_and_verbatim_quotes() -> None:
    got = bind(
        WrittenAnswer(
            (
                BoundSentence(
                    "Older green tea drinkers had a lower stroke risk in a cohort study.", (1,)
                ),
                BoundSentence("Evening green tea does not raise the risk of poor sleep.", (2,)),
                BoundSentence(
                    "The parser reads int(l[2]) first.", (3,)
                ),  # a quote, brackets and all
            )
        ),
        FINDINGS,
        QUESTION,
    )
    assert len(got.kept) == 3 and got.enough and got.quoted == frozenset({2})


def test_too_few_kept_is_not_enough() -> None:
    got = bind(
        WrittenAnswer(
            (
                BoundSentence("Green tea lowers stroke risk.", (1,)),
                BoundSentence("Coffee is bad.", (1,)),
                BoundSentence("Nothing.", ()),
            )
        ),
        FINDINGS,
        QUESTION,
    )
    assert len(got.kept) == 1 and not got.enough


# -- choosing and ordering findings -----------------------------------------------------------


def _row(
    cluster: str,
    relevance: float,
    confidence: float,
    quote: str = "q",
    claim: str | None = None,
    section: str = "sq-1",
) -> FindingRow:
    return FindingRow(
        cluster_id=cluster,
        claim_id=claim or f"c-{cluster}",
        relevance=relevance,
        confidence=confidence,
        quote=quote,
        sub_question_id=section,
        publishers=1,
        contradictors=0,
        superseded=False,
        source_class=SourceClass.UNKNOWN,
        explanation="e",
        text=quote,
        sub_question="sq?",
        sub_question_round=1,
        sub_question_ordinal=0,
        relevance_explanation="",
    )


def test_choose_floors_each_section_by_its_own_best() -> None:
    # Seen: a two-part question had both parts mined, neither both in the report; a facet's
    # findings (a dispute about blood pressure) fell under the floor set by another facet.
    rows = [
        _row("part1-best", 0.9, 0.5, section="sq-1"),
        _row("part2-best", 0.5, 0.5, section="sq-2"),
        _row("part2-second", 0.3, 0.5, section="sq-2"),  # under 0.45, over half of 0.5
        _row("part2-junk", 0.2, 0.5, section="sq-2"),
        _row("off-topic-best", 0.4, 0.9, section="sq-3"),
    ]  # its section is under the floor
    got = [r.cluster_id for r in choose(rows, forced=set(), max_findings=30, scored=True)]
    assert got == ["part1-best", "part2-best", "part2-second"]


def test_choose_orders_by_relevance_with_floor_and_cap() -> None:
    rows = [
        _row("low-rel-high-conf", 0.2, 0.99),
        _row("best", 0.9, 0.1),
        _row("second", 0.6, 0.3),
        _row("third", 0.6, 0.2),
        _row("none", 0.0, 1.0),
        _row("at-floor", 0.9 * RELATIVE_FLOOR, 0.5),
    ]
    got = [r.cluster_id for r in choose(rows, forced=set(), max_findings=30, scored=True)]
    # 0.2 is under half the best (0.9): a confident but unrelated claim does not fill the cap.
    assert got == ["best", "second", "third", "at-floor"]
    capped = choose(rows, forced=set(), max_findings=2, scored=True)
    assert [r.cluster_id for r in capped] == ["best", "second"]
    # Graph-forced clusters (both sides of a dispute) pass the cap, but only if relevant.
    # They count towards the cap, and exceed it only when they alone would.
    forced = choose(rows, forced={"third", "low-rel-high-conf"}, max_findings=2, scored=True)
    assert [r.cluster_id for r in forced] == ["best", "third"]
    forced = choose(rows, forced={"third", "at-floor"}, max_findings=1, scored=True)
    assert [r.cluster_id for r in forced] == ["third", "at-floor"]
    # Unscored sessions rank by confidence, nothing cut.
    assert len(choose(rows, forced=set(), max_findings=30, scored=False)) == 6


def test_ties_are_broken_by_content_not_by_claim_id() -> None:
    a = _row("x", 0.5, 0.5, "B quote", claim="zzz")
    b = _row("y", 0.5, 0.5, "A quote", claim="aaa")
    positions = {"zzz": ("https://a.example/", 10), "aaa": ("https://b.example/", 0)}
    got = choose([b, a], forced=set(), max_findings=30, scored=True, positions=positions)
    assert [r.claim_id for r in got] == ["zzz", "aaa"]  # by URL first
    same_url = {"zzz": ("https://a.example/", 10), "aaa": ("https://a.example/", 0)}
    got = choose([a, b], forced=set(), max_findings=30, scored=True, positions=same_url)
    assert [r.claim_id for r in got] == ["aaa", "zzz"]  # then by quote position


def test_report_sections_follow_planner_order_and_relevance(
    tmp_path: Path, mini_corpus: Path
) -> None:
    store = Store(tmp_path / "order.duckdb")
    sid = create_session(store, QUESTION, Unit.TOKENS, 10_000, corpus=str(mini_corpus)).session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    _research(run)
    md = write_report(run).markdown
    _assert_every_statement_cited(md)
    assert "made without a language model" in md
    reading = read(md)
    assert reading.sections[0] == "Answer"
    # Irrelevant findings (relevance 0.05, under half the best) are not listed at all.
    assert "Many people enjoy green tea with meals" not in md
    assert "Water at eighty degrees" not in md
    subs = store.rows(
        "SELECT text FROM sub_questions WHERE session_id = ? ORDER BY round, ordinal", [sid]
    )
    listed = [
        s
        for s in reading.sections
        if s not in ("Answer", "Disputed", "Superseded", "Sources", "Not read", "Spend")
    ]
    # The question's own section is headed "Findings" (issue 33: not the title again).
    listed = [QUESTION if s == "Findings" else s for s in listed]
    order = [s["text"] for s in subs]
    assert listed == sorted(listed, key=order.index)
    # Numbers run on across sections; each finding is followed by its relevance line.
    numbers = [
        int(line.split(".", 1)[0])
        for line in md.splitlines()
        if line[:1].isdigit() and ". " in line
    ]
    assert numbers == list(range(1, len(numbers) + 1))
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line[:1].isdigit() and ". " in line:
            assert lines[i + 1].startswith("   relevance 0.")
    # Within a section, relevance never rises.
    for name in listed:
        rels = [
            float(x.split()[1])
            for x in section(md, "Findings" if name == QUESTION else name).splitlines()
            if x.startswith("   relevance")
        ]
        assert rels == sorted(rels, reverse=True)
    store.close()


# -- what a finding shows ---------------------------------------------------------------------


def test_escape_markdown_keeps_markers_visible() -> None:
    assert escape_markdown("int(l[2])") == "int(l\\[2\\])"
    assert escape_markdown("in adults.[7]") == "in adults.\\[7\\]"
    assert escape_markdown("a \\[b") == "a \\\\\\[b"


def test_quotes_are_shown_with_markers_escaped_never_deleted(tmp_path: Path) -> None:
    corpus = tmp_path / "code"
    corpus.mkdir()
    (corpus / "p.md").write_text(
        "---\ntitle: Parser notes\nurl: https://docs.example.org/parser\n---\n"
        "The parser reads the header field with int(l[2]) before it checks the header row "
        "of the file.[7] The header parser fails when the header field is empty.\n",
        "utf-8",
    )
    store = Store(tmp_path / "esc.duckdb")
    sid = create_session(
        store, "How does the parser read the header field?", Unit.TOKENS, 10_000, corpus=str(corpus)
    ).session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    _research(run, relevance=lambda t: 0.7)
    md = write_report(run).markdown
    assert "int(l\\[2\\])" in md and "of the file.\\[7\\]" in md
    assert 2 not in cited_numbers(md) and 7 not in cited_numbers(md)
    _assert_every_statement_cited(md)
    html = render_html(md)
    assert "int(l&#91;2&#93;)" in html
    assert 'href="#src-2"' not in html and 'href="#src-7"' not in html
    store.close()


# -- empty reports ------------------------------------------------------------------------------


def _writer_calls(store: Store, sid: str) -> int:
    return store.scalar(
        "SELECT count(*) FROM tool_calls WHERE session_id = ? AND tool LIKE '%:write'", [sid]
    )


def _empty_report(store: Store, sid: str, skills: object = None) -> ReportResult:
    run = Run(store, Ledger(store), skills or ExtractiveSkills(), sid, progress=lambda m: None)
    rep = write_report(run)
    assert rep.findings == 0 and _writer_calls(store, sid) == 0
    _assert_every_statement_cited(rep.markdown)
    assert "No finding survived the quote check" not in rep.markdown
    return rep


def test_empty_because_search_found_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "bikes"
    corpus.mkdir()
    (corpus / "b.md").write_text(
        "---\ntitle: Bikes\nurl: https://bikes.example/\n---\n"
        "Chains need oil every few hundred kilometres of riding.\n"
    )
    store = Store(tmp_path / "e1.duckdb")
    sid = create_session(
        store, "Does green tea affect sleep?", Unit.TOKENS, 10_000, corpus=str(corpus)
    ).session_id
    _research(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
    md = _empty_report(store, sid).markdown
    leads = store.scalar("SELECT count(*) FROM leads WHERE session_id = ?", [sid])
    searches = f"{leads} search" + ("es" if leads != 1 else "")
    assert f"{EMPTY_PREFIX}: nothing was found: no search returned a result ({searches})" in md
    assert f"Searches: {leads}; sources read: 0; dead ends: {leads} (no results {leads})" in md
    assert "claims discarded by the quote check: 0; claims kept: 0." in md
    store.close()


def test_empty_because_nothing_could_be_fetched(store: Store) -> None:
    sid = create_session(store, "Does green tea affect sleep?", Unit.TOKENS, 10_000).session_id
    now = utcnow()
    _exec(store, "INSERT INTO sub_questions VALUES ('sq1', ?, 1, 0, 'tea', 'tea', ?)", [sid, now])
    for i, cause in enumerate(["fetch_failed", "fetch_failed", "robots"]):
        _exec(
            store,
            "INSERT INTO leads (id, session_id, sub_question_id, actor, query, status,"
            " created_at) VALUES (?, ?, 'sq1', 'web', 'tea', 'dead', ?)",
            [f"l{i}", sid, now],
        )
        _exec(
            store,
            "INSERT INTO dead_ends (id, session_id, sub_question_id, lead_id, url, "
            "cause, created_at) VALUES (?, ?, 'sq1', ?, 'https://x.example/', ?, ?)",
            [f"d{i}", sid, f"l{i}", cause, now],
        )
    md = _empty_report(store, sid).markdown
    assert (
        f"{EMPTY_PREFIX}: nothing could be fetched: 3 dead ends (fetch failed 2, robots 1)." in md
    )


def test_empty_because_the_quote_check_discarded_everything(
    store: Store, mini_corpus: Path
) -> None:
    class Fabricates(SimulatedModel):
        def __call__(self, got: Received) -> Reply:
            if got.skill == "mine":
                return Reply(
                    200,
                    claude_message(
                        json.dumps(
                            {
                                "claims": [
                                    {
                                        "text": "Tea is magic.",
                                        "quote": "tea is magic and this sentence is in "
                                        "no page at all",
                                    }
                                ]
                            }
                        )
                    ),
                )
            return super().__call__(got)

    with ModelServer(Fabricates(later_rounds=False)) as server:
        run = _model_run(store, server, mini_corpus, "s-discard")
        _research(run, relevance=None)
        rep = _empty_report(store, "s-discard", run.skills)
    n = store.scalar("SELECT sum(n) FROM discarded_claims WHERE session_id = 's-discard'")
    s = store.scalar("SELECT count(*) FROM sources WHERE session_id = 's-discard'")
    assert n > 0
    assert (
        f"{EMPTY_PREFIX}: the miners proposed {n} claims from {s} sources, and the quote "
        f"check discarded every one (quote not found {n})"
    ) in rep.markdown
    assert not server.by_skill("write")


def test_empty_because_nothing_mined_is_relevant(tmp_path: Path, mini_corpus: Path) -> None:
    store = Store(tmp_path / "e4.duckdb")
    sid = create_session(store, QUESTION, Unit.TOKENS, 10_000, corpus=str(mini_corpus)).session_id
    _research(
        Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None),
        relevance=lambda t: 0.0,
    )
    md = _empty_report(store, sid).markdown
    m = store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [sid])
    assert (
        f"{EMPTY_PREFIX}: {m} claims passed the quote check, but none is relevant to the "
        "question (best relevance 0.00)"
    ) in md
    assert "made without a language model" in md
    store.close()


def test_choose_drops_a_source_whose_best_is_far_below_the_session_s_best() -> None:
    # Seen on qa-pdf: a question about one vignette, its report filled with a sibling
    # vignette's sentences, each at half the best, none near it.
    rows = [
        _row("answer", 0.9, 0.5),
        _row("answer-doc-second", 0.5, 0.5),  # weak, but from the source that answers
        _row("sibling-1", 0.5, 0.5),
        _row("sibling-2", 0.48, 0.5),
        _row("other-part", 0.6, 0.5, section="sq-2"),  # another source, near enough the best
    ]
    positions = {
        "c-answer": ("https://a.example/paper.pdf", 10),
        "c-answer-doc-second": ("https://a.example/paper.pdf", 900),
        "c-sibling-1": ("https://b.example/sibling.pdf", 10),
        "c-sibling-2": ("https://b.example/sibling.pdf", 500),
        "c-other-part": ("https://c.example/other.pdf", 10),
    }
    got = [
        r.cluster_id
        for r in choose(rows, forced=set(), max_findings=30, scored=True, positions=positions)
    ]
    assert got == ["answer", "other-part", "answer-doc-second"]


def test_without_a_source_floor_the_sibling_s_findings_fill_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mole_dag.output.selection as selection

    monkeypatch.setattr(selection, "SOURCE_FLOOR", 0.0)
    rows = [_row("answer", 0.9, 0.5), _row("sibling", 0.5, 0.5)]
    positions = {"c-answer": ("https://a.example/", 0), "c-sibling": ("https://b.example/", 0)}
    got = choose(rows, forced=set(), max_findings=30, scored=True, positions=positions)
    assert [r.cluster_id for r in got] == ["answer", "sibling"]
