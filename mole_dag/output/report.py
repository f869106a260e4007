"""Writing the report: select the findings, write the Answer, render the Markdown, then save
it as a file and record it in the store with its citations, the claims its Answer rests on and
a rerun's changes, and close the session. The report reads answer first: the question, a short
answer paragraph in which every sentence is cited, then one section per sub-question listing
its findings, then disputes, superseded findings, the local-data appendix, sources and spend.

The parts, one job each: mole_dag.output.selection (which findings, in which section, numbered
how), mole_dag.output.answer_writer (the writer call, its sentences bound to the findings, the
deterministic fallback), mole_dag.output.reasons (why a report is empty or partial),
mole_dag.output.markdown (the Markdown) and mole_dag.output.wording (escaping, counts, amounts).

No sentence without evidence: the writer (a model, or the extractive provider) returns
sentences bound to finding numbers and writes no citation; mole_dag.output.binding drops every
sentence that names no finding, an unknown one, carries markup of its own or is not supported
by what it names; the citations are rendered from the named findings' sources. When too
few sentences survive, the deterministic answer (the most relevant findings, quoted) is used
and the report says why. With no finding there is no writer call, and the report says what
happened, with counts from the store."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mole_dag.context import Run
from mole_dag.core import SessionStatus, stable_id
from mole_dag.mining.relevance import WEIGHTS, Weights
from mole_dag.output.answer_writer import Written, write_answer, writer_request
from mole_dag.output.answered import MIN_COVERAGE, Shown, session_decision
from mole_dag.output.binding import Binding
from mole_dag.output.changes import Diff, for_report, render_section, write_diff
from mole_dag.output.extractive import MADE_WITHOUT_MODEL
from mole_dag.output.local_data_section import local_data_section
from mole_dag.output.markdown import render, render_answer
from mole_dag.output.reasons import empty_reason, not_answered, stop_causes
from mole_dag.output.selection import MAX_FINDINGS, select_findings
from mole_dag.output.unread import unread_files
from mole_dag.paths import reports_dir
from mole_dag.redaction import redact_known
from mole_dag.store import q, utcnow

log = logging.getLogger("mole.report")


@dataclass
class ReportResult:
    report_id: str
    markdown: str
    path: Path | None
    findings: int
    citations: int
    sources_cited: int
    writer: str
    rejected_bodies: list[str] = field(default_factory=list)  # why writer answers were not used
    escrow_released: int = 0
    spent: int = 0
    answered: bool = False
    answer_basis: str = ""
    # A rerun's difference from the session it re-runs (issue 32); None for a first run.
    changes: Diff | None = None


# The report stage's own start: here, not in session.py, because the stages sit below the driver.
def begin_reporting(run: Run) -> int:
    """Hand the escrow to the report stage (once) and put the session in `reporting`. Also the
    way back in for a finished session whose graph is materialised again."""
    released = run.ledger.release_escrow(run.session_id)
    if run.session().status == SessionStatus.DONE:
        now = utcnow()
        run.store.transact(
            lambda cur: cur.execute(
                q("session_set_status"),
                {"status": str(SessionStatus.REPORTING), "now": now, "session_id": run.session_id},
            )
        )
    return released


def write_report(
    run: Run,
    *,
    max_findings: int = MAX_FINDINGS,
    out_dir: Path | None = None,
    weights: Weights = WEIGHTS,
    min_coverage: float = MIN_COVERAGE,
) -> ReportResult:
    """Write, store and save the session's report. `weights` and `min_coverage` other than
    the defaults are for bench/qa.py's replay of stored sessions (the held-out check)."""
    store, sid = run.store, run.session_id
    released = begin_reporting(run)
    session = run.session()
    sel = select_findings(run, max_findings)
    findings, numbered = sel.findings, sel.numbered

    banners: list[str] = []
    if not run.skills.uses_model:
        banners.append(MADE_WITHOUT_MODEL)
    if not sel.scored and findings:
        banners.append(
            "Relevance was not scored in this session, so the findings are listed "
            "by confidence and some may not bear on the question."
        )
    if findings:
        causes = stop_causes(run)
        if causes:
            banners.append(f"This report is incomplete: {'; '.join(causes)}.")
        decision = session_decision(
            store,
            sid,
            session.question,
            [Shown(f.number, f.claim_id, f.cluster_id) for f in findings],
            weights=weights,
            min_coverage=min_coverage,
        )
        req = writer_request(session.question, findings, decision)
        written = write_answer(run, req, findings, decision)
        banners += written.notes
        if written.answered:
            answer, why = render_answer(written.binding, findings), ""
        else:
            counts = store.named("session_counts", {"session_id": sid})[0]
            answer = not_answered(int(counts["sources"]))
            why = written.basis
    else:
        # No finding, no writer call: there is nothing a sentence could be bound to.
        answer, why = empty_reason(run, sel), ""
        # Why, as the decision over findings would say it where it can tell from the pages
        # alone ("no source read mentions FIFA"); else that nothing was found.
        basis = session_decision(store, sid, session.question, []).basis
        if basis == "no finding to answer from":
            basis = "no finding to report"
        written = Written(Binding((), 0), "none", answered=False, basis=basis)

    # What the Answer rests on (issue 32: a rerun compares evidence, not wording).
    by_no = {f.number: f for f in findings}
    answer_claims = frozenset(
        by_no[n].claim_id for s in written.binding.kept for n in s.findings if n in by_no
    )
    diff = None
    if session.previous_session_id:
        diff = for_report(store, sid, session.previous_session_id, written.answered, answer_claims)
    bal = run.ledger.balance(sid)
    session = run.session()
    markdown = render(
        # What the session really cost: overrun is money spent too.
        session=replace(session, spent=bal.charged),
        answer=answer,
        findings=findings,
        numbered=numbered,
        banners=banners,
        spend_by_role=run.ledger.spend_by_role(sid),
        appendix=local_data_section(store, sid),
        answered=written.answered or not findings,
        why=why,
        preface=render_section(diff) if diff is not None else None,
        not_read=unread_files(store, sid, session.corpus),
    )
    # A known secret (a key a server echoed into a page or an answer) is never written: only
    # exact known values and URL passwords are masked, so a source's words stay its words.
    markdown = redact_known(markdown)
    now = utcnow()
    report_id = stable_id(sid, now.isoformat(), prefix="r-")
    directory = out_dir or reports_dir()
    target = directory / f"{sid}.md"
    path: Path | None = target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target.write_text(markdown, "utf-8")
    except OSError as exc:
        log.warning("could not write the report file %s: %s", path, exc.strerror)
        path = None
    n_cites = len({n for f in findings for n in f.citations})

    def tx(cur: Any) -> None:
        cur.execute(
            q("report_insert"),
            {
                "id": report_id,
                "session_id": sid,
                "markdown": markdown,
                "path": str(path) if path else None,
                "made_without_model": not run.skills.uses_model,
                "findings": len(findings),
                "citations": n_cites,
                "answered": written.answered,
                "answer_basis": written.basis,
                "now": now,
            },
        )
        for n, src in sorted(numbered.items()):
            cur.execute(
                q("report_citation_insert"),
                {"report_id": report_id, "session_id": sid, "number": n, "source_id": src.id},
            )
        for claim_id in sorted(answer_claims):
            cur.execute(
                q("report_answer_claim_insert"),
                {"report_id": report_id, "session_id": sid, "claim_id": claim_id},
            )
        if diff is not None:
            write_diff(cur, diff)
        # An overrun ends the session as exhausted: its report is what it had before the
        # provider broke its bound. (A provider that stopped answering never gets here: it
        # interrupts the session, and `mole resume` writes the report once it answers.)
        status = SessionStatus.EXHAUSTED if bal.overrun else SessionStatus.DONE
        reason = None
        cur.execute(
            q("session_set_status_reason"),
            {"status": str(status), "reason": reason, "now": now, "session_id": sid},
        )

    store.transact(tx)
    run.progress(f"report: {len(findings)} findings, {len(numbered)} sources cited")
    return ReportResult(
        report_id,
        markdown,
        path,
        len(findings),
        n_cites,
        len(numbered),
        written.writer,
        written.rejected,
        released,
        written.spent,
        written.answered,
        written.basis,
        diff,
    )
