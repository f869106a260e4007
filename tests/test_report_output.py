"""The report and its scorecard: forged citations never reach a report, every metric is computed
or says why not, HTML is escaped, the views answer SQL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.evals.checks import citation_validity
from mole_dag.evals.scorecard import LabelsError, load_labels, scorecard
from mole_dag.output.html import render_html
from mole_dag.session import create_session
from mole_dag.skills.protocol import BoundSentence, Metered, WriteRequest, WrittenAnswer
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store
from mole_dag.store.models import materialize_all


@dataclass
class ForgingWriter(ExtractiveSkills):
    """A 'model' whose answer cites a source of its own and binds to a finding that is not
    there."""

    answers: list[WrittenAnswer] = field(default_factory=list)
    name = "forger"
    uses_model = True

    def write(self, req: WriteRequest, unit: Unit) -> Metered[WrittenAnswer]:
        got = WrittenAnswer(
            (
                BoundSentence("Green tea cures everything [99].", (1,)),
                BoundSentence("Green tea cures everything.", (99,)),
            )
        )
        self.answers.append(got)
        return Metered(got, cost=0, model="forger")


def _session(tmp_path: Path, corpus: Path, skills) -> tuple[Store, str]:  # type: ignore[no-untyped-def]
    store = Store(tmp_path / "r.duckdb")
    sid = create_session(
        store,
        "Does green tea affect sleep and stroke risk?",
        Unit.TOKENS,
        10_000,
        corpus=str(corpus),
    ).session_id
    run_session(Run(store, Ledger(store), skills, sid, progress=lambda m: None))
    return store, sid


def test_forged_citation_is_rejected_then_replaced(tmp_path: Path, mini_corpus: Path) -> None:
    skills = ForgingWriter()
    store, sid = _session(tmp_path, mini_corpus, skills)
    # One call, no retry (issue 10): the same prompt mostly earns the same answer, and the
    # deterministic answer replaces a rejected one, saying why.
    assert len(skills.answers) == 1
    md = store.scalar("SELECT markdown FROM reports WHERE session_id = ?", [sid])
    assert "[99]" not in md and "cures everything" not in md
    assert "answer paragraph was not used" in md
    assert "1 carries bracketed numbers or markup of its own" in md
    assert "1 names a finding that does not exist" in md
    assert citation_validity(store, sid).ok
    store.close()


def test_unsupported_citation_is_rejected_too(tmp_path: Path, mini_corpus: Path) -> None:
    # Source [1] exists but the writer attaches it to a claim of its own: the check only knows
    # numbers, so an unknown number is the forgery it can see; a number that exists but supports
    # no finding in the report is the other case.
    from mole_dag.output.citations import check_body

    res = check_body("A [1] and B [2] and C [3].", numbered={1, 2, 3}, supporting={1, 2})
    assert not res.ok and res.unsupported == (3,)


def test_scorecard_computes_every_metric_or_says_why(tmp_path: Path, mini_corpus: Path) -> None:
    store, sid = _session(tmp_path, mini_corpus, ExtractiveSkills())
    m = {x.name: x for x in scorecard(store, sid)}
    assert m["budget_overshoot_pct"].value == 0.0
    assert m["citation_accuracy_pct"].value == 100.0
    assert m["claim_integrity_pct"].value == 100.0
    assert m["reread_confirmation_pct"].value is not None
    assert m["contradiction_precision_pct"].value is None
    assert "labelled pairs file" in (m["contradiction_precision_pct"].reason or "")
    assert m["cost_per_accepted_claim"].value == 0.0  # computed: the extractive provider is free
    labels = tmp_path / "labels.json"
    labels.write_text(
        json.dumps(
            [
                {
                    "a": "Drinking green tea in the evening raises the risk of poor sleep in "
                    "adults who are sensitive to caffeine.",
                    "b": "Drinking green tea in the evening does not raise the risk of poor "
                    "sleep in adults who are sensitive to caffeine.",
                    "label": "neither",
                }
            ]
        )
    )
    m2 = {x.name: x for x in scorecard(store, sid, labels)}
    assert m2["contradiction_precision_pct"].value == 0.0  # the label says it is not one
    store.close()


def test_scorecard_on_an_empty_session_gives_reasons(tmp_path: Path) -> None:
    with Store(tmp_path / "e.duckdb") as store:
        sid = create_session(store, "q?", Unit.TOKENS, 100).session_id
        m = {x.name: x for x in scorecard(store, sid)}
        for name in (
            "citation_accuracy_pct",
            "claim_integrity_pct",
            "reread_confirmation_pct",
            "cost_per_accepted_claim",
        ):
            assert m[name].value is None and m[name].reason, name
        assert m["budget_overshoot_pct"].value == 0.0


def test_budget_overshoot_is_what_was_charged_beyond_the_total(tmp_path: Path) -> None:
    """Every other test sees 0.0; a constant would pass them. A provider that used 1300 of a
    1000-token budget overshot it by 30 %; an overrun that stays inside the total is no
    overshoot."""
    from mole_dag.core import Role

    with Store(tmp_path / "o.duckdb") as store:
        ledger = Ledger(store)
        over = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
        ledger.settle(ledger.reserve(over, Role.EXECUTOR, 800, tool="t", stage="s"), 1300)
        inside = ledger.create_session("q?", Unit.TOKENS, 10_000).session_id
        ledger.settle(ledger.reserve(inside, Role.EXECUTOR, 100, tool="t", stage="s"), 250)
        got = {
            sid: next(m for m in scorecard(store, sid) if m.name == "budget_overshoot_pct")
            for sid in (over, inside)
        }
    assert got[over].value == pytest.approx(30.0) and got[over].display == "30.0%"
    assert "overrun 500.0 tokens included" in got[over].detail
    assert got[inside].value == 0.0 and "overrun 150.0 tokens included" in got[inside].detail


def test_eval_cli_json_and_bad_labels(
    tmp_path: Path, mini_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, sid = _session(tmp_path, mini_corpus, ExtractiveSkills())
    store.close()
    db = str(tmp_path / "r.duckdb")
    assert main(["--db", db, "eval", sid, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session"] == sid and len(data["metrics"]) == 7
    bad = tmp_path / "bad.json"
    bad.write_text('[{"a": "x", "b": "y", "label": "maybe"}]')
    assert main(["--db", db, "eval", sid, "--pairs", str(bad)]) == 2
    assert "label 'maybe'" in capsys.readouterr().err


def test_labels_file_errors(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="cannot read"):
        load_labels(tmp_path / "missing.json")
    p = tmp_path / "l.jsonl"
    p.write_text(
        '{"a": "x", "b": "y", "label": "contradicts"}\n{"a": "p", "b": "q", "label": "neither"}\n'
    )
    assert len(load_labels(p)) == 2


def test_html_escapes_hostile_text() -> None:
    md = (
        "# Q <script>alert(1)</script>\n\n1. Claim <img src=x onerror=alert(1)> [1]  \n"
        "   confidence **0.5** — x\n\n## Sources\n\n[1] T — p. <javascript:alert(1)>  \n"
        "[2] T — p. <https://ok.example/a?b=1&c=2>  \n"
    )
    out = render_html(md)
    assert "<script>" not in out and "<img" not in out
    assert "&lt;script&gt;" in out
    assert 'href="javascript' not in out
    assert 'href="https://ok.example/a?b=1&amp;c=2"' in out
    assert '<a class="cite" href="#src-1">[1]</a>' in out and 'id="src-1"' in out


def test_html_links_page_citations_in_both_forms_and_corpus_files() -> None:
    # "[1] (p. 12)" as reports print a PDF's page (issue 19), "[2, p. 3]" as stored reports
    # printed it before; a corpus file's file:// URL is a link a reader opens, a file URL
    # with anything as_uri() would have quoted is not.
    md = (
        "1. Tea helps [1] (p. 12)[2]  \n2. Sleep too [2, p. 3]  \n\n## Sources\n\n"
        "[1] T — local file a b.pdf, unknown. <file:///home/u/papers/a%20b.pdf>  \n"
        "[2] T — local file c.pdf, unknown. <file:///x/c.pdf?q=1>  \n"
    )
    out = render_html(md)
    assert '<a class="cite" href="#src-1">[1]</a> (p. 12)' in out
    assert '<a class="cite" href="#src-2">[2, p. 3]</a>' in out
    assert '<a href="file:///home/u/papers/a%20b.pdf">' in out
    assert 'href="file:///x/c.pdf' not in out


def test_views_answer_sql(tmp_path: Path, mini_corpus: Path) -> None:
    store, sid = _session(tmp_path, mini_corpus, ExtractiveSkills())
    rows = materialize_all(store, count=True)
    assert set(rows) == {
        "spend_by_role_stage",
        "claim_overview",
        "publishers_per_cluster",
        "dead_ends_by_cause",
        "crossings",
        "claim_pages",
        "session_answers",
        "claim_changes",
        "watch_spend",
    }
    # Issue 21: the answered-or-not decision is queryable, one row per reported session.
    assert rows["session_answers"] == 1
    got = store.row(
        "SELECT answered, answer_basis FROM session_answers WHERE session_id = ?", [sid]
    )
    assert got is not None and got["answered"] is not None and got["answer_basis"]
    assert rows["claim_overview"] == store.scalar("SELECT count(*) FROM claims")
    multi = store.rows(
        "SELECT publishers FROM publishers_per_cluster WHERE session_id = ? AND publishers > 1",
        [sid],
    )
    assert multi  # the planted duplicate across publishers
    roles = {r["role"] for r in store.rows("SELECT role FROM spend_by_role_stage")}
    assert roles == {"planner", "executor", "verifier", "output"}
    store.close()
