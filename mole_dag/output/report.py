"""The report: findings in confidence order, citations assigned mechanically, disputes with both
sides cited, superseded findings marked, every string stripped of terminal and bidi controls.

The writer (a model, or the extractive summariser) only writes the summary, using source numbers
fixed before it runs. A summary that cites a number mapping to no source, or a source that
supports no finding, is rejected; after one retry the deterministic summary is used instead.
The report never carries a forged citation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mole_dag.budget import BudgetExhausted
from mole_dag.compute.report_section import local_data_section
from mole_dag.context import Run
from mole_dag.core import EdgeKind, Role, SessionStatus, SourceClass, stable_id
from mole_dag.llm.extractive import MADE_WITHOUT_MODEL, write_body
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.llm.skills import FindingForWriter, WriteRequest
from mole_dag.output.citations import CitationCheck, check_body, strip_reference_markers
from mole_dag.output.sanitize import one_line, strip_controls
from mole_dag.paths import reports_dir
from mole_dag.session import begin_reporting
from mole_dag.store import q, utcnow
from mole_dag.verifier.source_class import STRENGTH

log = logging.getLogger("mole.report")
STAGE = "report"
# How many findings the report lists. A guess, flagged as one: past a few dozen a reader skims,
# and the rest stay queryable in the store (sql/models/claim_overview).
MAX_FINDINGS = 30
WRITE_ATTEMPTS = 2


@dataclass
class Finding:
    number: int
    cluster_id: str
    claim_id: str
    text: str
    confidence: float
    explanation: str
    publishers: int
    source_class: str
    superseded: bool
    citations: list[int] = field(default_factory=list)
    disputed_with: list[int] = field(default_factory=list)
    superseded_by: list[int] = field(default_factory=list)


@dataclass
class ReportResult:
    report_id: str
    markdown: str
    path: Path | None
    findings: int
    citations: int
    sources: int
    writer: str
    rejected_bodies: list[str] = field(default_factory=list)
    escrow_released: int = 0
    spent: int = 0


def _select_findings(run: Run, max_findings: int) -> tuple[list[Finding], dict[str, Any]]:
    store, sid = run.store, run.session_id
    reps = store.named("report_findings", {"session_id": sid})
    members = store.named("cluster_members", {"session_id": sid})
    sources = {s["id"]: s for s in store.named("session_sources", {"session_id": sid})}
    edges = store.named("session_edges", {"session_id": sid})
    cluster_of = {m["claim_id"]: m["cluster_id"] for m in members}

    # What the graph says is what a reader most needs: both sides of every contradiction and
    # supersession, and every corroborated cluster, are listed whatever their rank; the rest
    # fill up to the cut by confidence.
    in_graph = {
        cluster_of.get(cid) for e in edges for cid in (e["src_claim_id"], e["dst_claim_id"])
    }
    chosen = [r for r in reps if r["cluster_id"] in in_graph or r["publishers"] > 1]
    chosen_ids = {r["cluster_id"] for r in chosen}
    for r in reps:
        if len(chosen) >= max(max_findings, len(chosen_ids)):
            break
        if r["cluster_id"] not in chosen_ids:
            chosen.append(r)
            chosen_ids.add(r["cluster_id"])
    rank = {r["cluster_id"]: i for i, r in enumerate(reps)}
    chosen.sort(key=lambda r: rank[r["cluster_id"]])

    findings = [
        Finding(i + 1, r["cluster_id"], r["claim_id"], strip_reference_markers(r["text"]),
                r["confidence"],
                r["explanation"], r["publishers"], r["source_class"], r["superseded"])
        for i, r in enumerate(chosen)
    ]
    by_cluster = {f.cluster_id: f for f in findings}
    # Number sources in order of first appearance, strongest class first within a finding.
    numbers: dict[str, int] = {}
    cluster_sources: dict[str, list[str]] = {}
    for m in members:
        lst = cluster_sources.setdefault(m["cluster_id"], [])
        if m["source_id"] not in lst:
            lst.append(m["source_id"])
    for f in findings:
        srcs = sorted(cluster_sources.get(f.cluster_id, []),
                      key=lambda s: (-STRENGTH[SourceClass(sources[s]["source_class"])], s))
        for s in srcs:
            if s not in numbers:
                numbers[s] = len(numbers) + 1
            if numbers[s] not in f.citations:
                f.citations.append(numbers[s])
    for e in edges:
        a = by_cluster.get(cluster_of.get(e["src_claim_id"], ""))
        b = by_cluster.get(cluster_of.get(e["dst_claim_id"], ""))
        if not a or not b or a is b:
            continue
        if e["kind"] == EdgeKind.CONTRADICTS:
            if b.number not in a.disputed_with:
                a.disputed_with.append(b.number)
            if a.number not in b.disputed_with:
                b.disputed_with.append(a.number)
        elif e["kind"] == EdgeKind.SUPERSEDES and a.number not in b.superseded_by:
            b.superseded_by.append(a.number)
    numbered = {n: sources[s] for s, n in numbers.items()}
    return findings, numbered


def _writer_request(
    question: str, findings: list[Finding], numbered: dict[int, Any]
) -> WriteRequest:
    return WriteRequest(
        question=question,
        findings=tuple(
            FindingForWriter(f.number, f.text, tuple(f.citations), f.confidence,
                             disputed=bool(f.disputed_with), superseded=f.superseded)
            for f in findings
        ),
        sources=tuple((n, f"{s['title'] or s['url']} — {s['publisher']}")
                      for n, s in sorted(numbered.items())),
    )


def _fmt_amount(amount: int, unit: str) -> str:
    if unit == "usd_micros":
        return f"${amount / 1_000_000:.4f}"
    return f"{amount} tokens"


def render(
    *,
    session: dict[str, Any],
    summary: str,
    findings: list[Finding],
    numbered: dict[int, Any],
    made_without_model: bool,
    spend_by_role: list[dict[str, Any]],
    writer_note: str | None,
    appendix: list[str] | None = None,
) -> str:
    unit = session["unit"]
    out: list[str] = [f"# {one_line(session['question'])}", ""]
    out.append(f"Session `{session['id']}` · provider `{session['provider']}` · "
               f"budget {_fmt_amount(session['total'], unit)} · "
               f"generated {utcnow():%Y-%m-%d %H:%M} UTC")
    out.append("")
    if made_without_model:
        out += [f"> {MADE_WITHOUT_MODEL}", ""]
    if writer_note:
        out += [f"> {one_line(writer_note)}", ""]
    out += ["## Summary", "", strip_controls(summary).strip(), ""]

    out += ["## Findings", ""]
    if not findings:
        out += ["No claim survived the quote check.", ""]
    for f in findings:
        cites = "".join(f"[{n}]" for n in f.citations)
        flags = []
        if f.superseded:
            by = ", ".join(f"#{n}" for n in f.superseded_by) or "a newer finding"
            flags.append(f"**superseded** by {by}")
        if f.disputed_with:
            flags.append("**disputed** by " + ", ".join(f"#{n}" for n in f.disputed_with))
        flag = f" ({'; '.join(flags)})" if flags else ""
        text = one_line(f.text)
        if f.superseded:
            text = f"~~{text}~~"
        out.append(f"{f.number}. {text} {cites}{flag}  ")
        out.append(f"   confidence **{f.confidence:.2f}** — {one_line(f.explanation)}")
    out.append("")

    disputes = sorted({tuple(sorted((f.number, o))) for f in findings for o in f.disputed_with})
    if disputes:
        by_no = {f.number: f for f in findings}
        out += ["## Disputed", ""]
        for a, b in disputes:
            fa, fb = by_no[a], by_no[b]
            out.append(f"- #{a} {one_line(fa.text)} {''.join(f'[{n}]' for n in fa.citations)}")
            out.append(f"  - versus #{b} {one_line(fb.text)} "
                       f"{''.join(f'[{n}]' for n in fb.citations)}")
        out.append("")

    sup = [f for f in findings if f.superseded]
    if sup:
        by_no = {f.number: f for f in findings}
        out += ["## Superseded", ""]
        for f in sup:
            newer = ", ".join(f"#{n} {''.join(f'[{c}]' for c in by_no[n].citations)}"
                              for n in f.superseded_by) or "a newer source"
            out.append(f"- #{f.number} {''.join(f'[{n}]' for n in f.citations)} is superseded "
                       f"by {newer}: the sources disagree and are more than a year apart.")
        out.append("")

    out += appendix or []  # e.g. the local-data section (mole_dag/compute/report_section.py)
    out += ["## Sources", ""]
    for n, s in sorted(numbered.items()):
        name = one_line(s["publisher_name"] or "")
        who = f"{name} ({s['publisher']})" if name else s["publisher"]
        date = f", {s['published']:%Y-%m-%d}" if s["published"] else ""
        title = one_line(s["title"] or s["url"])
        out.append(f"[{n}] {title} — {who}, {s['source_class']}{date}. <{one_line(s['url'])}>  ")
    out.append("")

    out += ["## Spend", ""]
    if spend_by_role:
        for r in spend_by_role:
            spent = _fmt_amount(int(r["spent"]), unit)
            out.append(f"- {r['role']}: {spent} over {r['calls']} calls")
    else:
        out.append("- no calls recorded")
    out.append("")
    return strip_controls("\n".join(out))


def write_report(
    run: Run, *, max_findings: int = MAX_FINDINGS, out_dir: Path | None = None
) -> ReportResult:
    store, sid = run.store, run.session_id
    released = begin_reporting(run)
    session = run.session()
    findings, numbered = _select_findings(run, max_findings)
    req = _writer_request(session["question"], findings, numbered)
    supporting = {n for f in findings for n in f.citations}
    unit = run.unit

    summary: str | None = None
    writer = run.skills.name
    rejected: list[str] = []
    spent = 0
    writer_note = None
    for _attempt in range(WRITE_ATTEMPTS):
        estimate = run.skills.estimate_write(req, unit)
        try:
            with run.ledger.hold(sid, Role.OUTPUT, estimate, tool=f"{run.skills.name}:write",
                                 stage=STAGE) as h:
                got = run.skills.write(req, unit)
                h.settle(got.cost, usage=got.usage, model=got.model or None)
        except BudgetExhausted as exc:
            rejected.append(f"writer not run: {exc}")
            break
        except ModelCallFailed as exc:
            rejected.append(f"writer failed: {exc}")
            break
        spent += got.cost
        check: CitationCheck = check_body(got.value, set(numbered), supporting)
        if check.ok:
            summary = got.value
            break
        rejected.append(check.explain())
        log.warning("session %s: writer body rejected: %s", sid, check.explain())
    if summary is None:
        summary = write_body(req)
        writer = "deterministic"
        if run.skills.uses_model:
            writer_note = ("The model's summary was not used (" + "; ".join(rejected)
                           + "); this summary is the deterministic one.")

    bal = run.ledger.balance(sid)
    session = run.session()
    markdown = render(
        session=session | {"spent": bal.spent},
        summary=summary,
        findings=findings,
        numbered=numbered,
        made_without_model=not run.skills.uses_model or writer == "deterministic",
        spend_by_role=run.ledger.spend_by_role(sid),
        writer_note=writer_note,
        appendix=local_data_section(store, sid),
    )
    now = utcnow()
    report_id = stable_id(sid, now.isoformat(), prefix="r-")
    directory = out_dir or reports_dir()
    path: Path | None = directory / f"{sid}.md"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown, "utf-8")
    except OSError as exc:
        log.warning("could not write the report file %s: %s", path, exc.strerror)
        path = None
    n_cites = len({n for f in findings for n in f.citations})

    def tx(cur: Any) -> None:
        cur.execute(q("report_insert"), {
            "id": report_id, "session_id": sid, "markdown": markdown,
            "path": str(path) if path else None,
            "made_without_model": not run.skills.uses_model or writer == "deterministic",
            "findings": len(findings), "citations": n_cites, "now": now})
        for n, src in sorted(numbered.items()):
            cur.execute(q("report_citation_insert"), {"report_id": report_id, "session_id": sid,
                                                      "number": n, "source_id": src["id"]})
        cur.execute(q("session_set_status"), {"status": str(SessionStatus.DONE), "now": now,
                                              "session_id": sid})

    store.transact(tx)
    run.progress(f"report: {len(findings)} findings, {len(numbered)} sources cited")
    return ReportResult(report_id, markdown, path, len(findings), n_cites, len(numbered), writer,
                        rejected, released, spent)
