"""The report, answer first: the question, a short answer paragraph in which every sentence is
cited, then one section per sub-question listing its findings, then disputes, superseded
findings, the local-data appendix, sources and spend.

Relevance decides what is listed and in which order; confidence keeps explaining how far each
finding can be trusted. A finding is shown in the source's own words (its stored quote), with
Markdown escaped, never with the miner's paraphrase.

No sentence without evidence: the writer (a model, or the extractive provider) returns
sentences bound to finding numbers and writes no citation; mole_dag.output.binding drops every
sentence that names no finding, an unknown one, carries markup of its own or is not supported
by what it names; the citations are rendered here from the named findings' sources. When too
few sentences survive, the deterministic answer (the most relevant findings, quoted) is used
and the report says why. With no finding there is no writer call, and the report says what
happened, with counts from the store."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mole_dag.actors.local import corpus_path, relative_to_corpus
from mole_dag.budget import BudgetExhausted, BudgetOverrun, charging
from mole_dag.context import Run
from mole_dag.core import EdgeKind, Role, SessionStatus, stable_id
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.mining import ranker, relevance
from mole_dag.mining.relevance import WEIGHTS, Weights
from mole_dag.output.answered import MIN_COVERAGE, Decision, Shown, session_decision
from mole_dag.output.binding import Binding, bind
from mole_dag.output.citations import cite
from mole_dag.output.extractive import MADE_WITHOUT_MODEL, write_body
from mole_dag.output.local_data_section import local_data_section
from mole_dag.output.unread import UnreadFile, unread_files
from mole_dag.paths import reports_dir
from mole_dag.redaction import redact_known
from mole_dag.sanitize import one_line, strip_controls
from mole_dag.skills.protocol import FindingForWriter, WriteRequest, WrittenAnswer
from mole_dag.skills.unreadable import STAGE_NAMES, write_unreadable
from mole_dag.store import q, utcnow
from mole_dag.store.records import ClusterMemberRow, EdgeRow, FindingRow, SessionRow, SourceRow
from mole_dag.verifier.source_class import STRENGTH

if TYPE_CHECKING:  # changes.py imports this module at run time
    from mole_dag.output.changes import Diff

log = logging.getLogger("mole.report")
STAGE = "report"
# How many findings the report lists. A guess, flagged as one: past a few dozen a reader skims,
# and the rest stay queryable in the store (sql/models/claim_overview).
MAX_FINDINGS = 30
# A finding is listed only if its relevance is at least this share of the best relevance in the
# session. A guess, flagged as one: relevance scores are relative to the session's pages, so an
# absolute floor would mean different things in different sessions; half the best keeps the
# findings that answer some part of the question and drops those that merely share its words.
RELATIVE_FLOOR = 0.5
# A source is listed only if its best finding is within this share of the session's best: a
# document that merely shares the question's words (a sibling vignette, another paper of the
# same package) has several findings at half the best and none near it, and they filled the
# report where the source that answers had its few. A guess, flagged as one; bench/qa_pdf.py
# measured 0.6 (relevance precision 75 -> 81 % on qa-pdf, both parts of two-document answers
# kept) against 0.7 (86 %, one two-document answer lost its second document).
SOURCE_FLOOR = 0.6
# The line that opens the answer of a report with no findings (tests and readers key on it).
EMPTY_PREFIX = "No finding to report"
ANSWER_FALLBACK = "the answer below is the deterministic one: the most relevant findings, quoted"
ANSWER_FALLBACK_DECLINED = (
    "the deterministic decision stands: no finding answers the question (the closest are below)"
)
# Headings of a report whose findings do not answer its question: they are related, not answers.
RELATED_PREFIX = "Related findings: "


@dataclass
class Finding:
    number: int
    cluster_id: str
    claim_id: str
    text: str  # the stored quote, whitespace collapsed: the source's words
    confidence: float
    explanation: str
    publishers: int
    source_class: str
    superseded: bool
    relevance: float = 0.0
    sub_question_id: str = ""
    sub_question: str = ""
    section: tuple[int, int] = (0, 0)  # the sub-question's (round, ordinal): planner order
    citations: list[int] = field(default_factory=list)
    # The page each cited source was quoted from, when it is a PDF (issue 19): number -> page.
    pages: dict[int, int] = field(default_factory=dict)
    disputed_with: list[int] = field(default_factory=list)
    superseded_by: list[int] = field(default_factory=list)
    # The newer sources that supersede this finding when their claim is not a finding of its
    # own (same cluster, or not chosen): cited as "[n]", else named (issue 33: "superseded by
    # a newer source" named none).
    newer_sources: list[str] = field(default_factory=list)


@dataclass
class Selection:
    findings: list[Finding]
    numbered: dict[int, SourceRow]  # source number -> source
    scored: bool  # anything in the session had its relevance scored
    best: float  # the best relevance in the session
    candidates: int  # cluster representatives in the store, before relevance cut them


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


# -- choosing and ordering findings ----------------------------------------------------------


def escape_markdown(text: str) -> str:
    """A source's words shown as data: a bracketed marker it carried (`[2]`, `l[2]`) must not
    read as a citation the report assigned, and is not deleted either (`int(l[2])` is code).
    Backslash first, so an escape the source wrote stays visible as written."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def rank_key(row: FindingRow, position: tuple[str, int] | None = None) -> tuple[Any, ...]:
    """Relevance, then confidence, then content: source URL, quote position, the quote. Never
    the claim id, a hash of the session id: one question researched twice orders alike."""
    url, start = position or ("", 0)
    return (
        -float(row.relevance),
        -float(row.confidence),
        url,
        start,
        " ".join(str(row.quote).split()),
        row.cluster_id,
    )


def _near(value: float, best: float, share: float) -> bool:
    """Whether a relevance is near enough the best beside it to be listed: a share of it for the
    word-overlap scores, the fitted gap for the learned ranking's probabilities."""
    if relevance.LEARNED:
        return ranker.near_best(value, best)
    return value >= share * best


def choose(
    rows: list[FindingRow],
    *,
    forced: set[str],
    max_findings: int,
    scored: bool,
    positions: dict[str, tuple[str, int]] | None = None,
) -> list[FindingRow]:
    """The cluster representatives the report lists, in rank order. Relevance decides: with
    relevance scored, a finding is eligible only if it is above 0 and within RELATIVE_FLOOR of
    the best of its section (sub-question), in a section whose best is within RELATIVE_FLOOR of
    the session's best, from a source whose best is within SOURCE_FLOOR of the session's best
    (by `positions`' URL), so unrelated claims cannot fill the cap. Both sides of a
    contradiction or a supersession (`forced`, by cluster) are listed whatever their rank, but
    only among the eligible (a source's floor excepted). Unscored sessions (no relevance rows at
    all) rank by confidence alone."""
    pos = positions or {}
    ranked = sorted(rows, key=lambda r: rank_key(r, pos.get(r.claim_id)))
    if scored:
        best = max((float(r.relevance) for r in ranked), default=0.0)
        section_best: dict[str, float] = {}
        for r in ranked:
            key = str(r.sub_question_id)
            section_best[key] = max(section_best.get(key, 0.0), float(r.relevance))
        # Within a section the floor is relative to that section's best, so one part of a
        # two-part question, or one facet of a wide one, is not crowded out by another part
        # whose words happen to score higher; a section whose best is itself under the floor
        # of the session's best is not on the question at all.
        ranked = [
            r
            for r in ranked
            if float(r.relevance) > 0
            and _near(section_best[str(r.sub_question_id)], best, RELATIVE_FLOOR)
            and _near(float(r.relevance), section_best[str(r.sub_question_id)], RELATIVE_FLOOR)
        ]

        # A source whose best finding is far below the session's best is not where the answer
        # is: its findings go, however near their own best (SOURCE_FLOOR), unless the graph
        # forces them (a side of a dispute is shown with the other). A source is its URL without
        # the fragment: the statements of one local data file (data:survey.csv#...) are one.
        def source(r: FindingRow) -> str:
            return pos.get(r.claim_id, ("", 0))[0].partition("#")[0]

        strong = {source(r) for r in ranked if _near(float(r.relevance), best, SOURCE_FLOOR)}
        ranked = [r for r in ranked if source(r) in strong or r.cluster_id in forced]
    chosen = {r.cluster_id for r in ranked if r.cluster_id in forced}
    for r in ranked:
        if len(chosen) >= max_findings:
            break
        chosen.add(r.cluster_id)
    return [r for r in ranked if r.cluster_id in chosen]


def _source_named(s: SourceRow, number: int | None) -> str:
    """A source in a line of the report: its citation when it is cited, else its title and
    publisher (and date), so a reader knows which source is meant."""
    if number is not None:
        return f"[{number}]"
    title = escape_markdown(one_line(s.title or s.url))
    date = f", {s.published:%Y-%m-%d}" if s.published else ""
    return f"“{title}” ({one_line(s.publisher_name or s.publisher)}{date})"


def _select_findings(run: Run, max_findings: int) -> Selection:
    store, sid = run.store, run.session_id
    reps = store.many(FindingRow, q("report_findings"), {"session_id": sid})
    members = store.many(ClusterMemberRow, q("cluster_members"), {"session_id": sid})
    sources = {s.id: s for s in store.many(SourceRow, q("session_sources"), {"session_id": sid})}
    edges = store.many(EdgeRow, q("session_edges"), {"session_id": sid})
    positions = {
        r["claim_id"]: (r["url"], int(r["quote_byte_start"]))
        for r in store.named("report_claim_positions", {"session_id": sid})
    }
    rel = store.named("report_relevance_scored", {"session_id": sid})[0]
    page_of = {
        r["claim_id"]: int(r["page"]) for r in store.named("claim_pages", {"session_id": sid})
    }
    scored = int(rel["scored"]) > 0
    cluster_of = {m.claim_id: m.cluster_id for m in members}

    # What the graph says a reader must see together: both sides of a contradiction or a
    # supersession. Duplicates need no forcing: they are one cluster, one finding.
    forced = {
        cluster_of.get(cid)
        for e in edges
        if e.kind in (EdgeKind.CONTRADICTS, EdgeKind.SUPERSEDES)
        for cid in (e.src_claim_id, e.dst_claim_id)
    }
    chosen = choose(
        reps,
        forced={c for c in forced if c},
        max_findings=max_findings,
        scored=scored,
        positions=positions,
    )
    rank = {r.cluster_id: i for i, r in enumerate(chosen)}
    # Sections in planner order (round, ordinal); within one, rank order. Numbers run on
    # across sections so every #n names one finding.
    chosen.sort(
        key=lambda r: (
            r.sub_question_round,
            r.sub_question_ordinal,
            r.sub_question_id,
            rank[r.cluster_id],
        )
    )
    findings = [
        Finding(
            i + 1,
            r.cluster_id,
            r.claim_id,
            one_line(r.quote),
            float(r.confidence),
            r.explanation,
            r.publishers,
            r.source_class,
            r.superseded,
            float(r.relevance),
            r.sub_question_id,
            r.sub_question,
            (r.sub_question_round, r.sub_question_ordinal),
        )
        for i, r in enumerate(chosen)
    ]
    by_cluster = {f.cluster_id: f for f in findings}
    # Number sources in order of first appearance, strongest class first within a finding.
    numbers: dict[str, int] = {}
    cluster_sources: dict[str, list[str]] = {}
    # A cluster's page in each of its sources: the page its first claim there was quoted from.
    cluster_pages: dict[tuple[str, str], int] = {}
    for m in members:
        lst = cluster_sources.setdefault(m.cluster_id, [])
        if m.source_id not in lst:
            lst.append(m.source_id)
        if m.claim_id in page_of:
            cluster_pages.setdefault((m.cluster_id, m.source_id), page_of[m.claim_id])
    for f in findings:
        srcs = sorted(
            cluster_sources.get(f.cluster_id, []),
            key=lambda s: (-STRENGTH[sources[s].source_class], sources[s].url),
        )
        for s in srcs:
            if s not in numbers:
                numbers[s] = len(numbers) + 1
            if numbers[s] not in f.citations:
                f.citations.append(numbers[s])
            page = cluster_pages.get((f.cluster_id, s))
            if page is not None:
                f.pages.setdefault(numbers[s], page)
    source_of = {m.claim_id: m.source_id for m in members}
    for e in edges:
        a = by_cluster.get(cluster_of.get(e.src_claim_id, ""))
        b = by_cluster.get(cluster_of.get(e.dst_claim_id, ""))
        if b and e.kind == EdgeKind.SUPERSEDES and (not a or a is b):
            newer = sources.get(source_of.get(e.src_claim_id, ""))
            if newer is not None:
                named = _source_named(newer, numbers.get(newer.id))
                if named not in b.newer_sources:
                    b.newer_sources.append(named)
        if not a or not b or a is b:
            continue
        if e.kind == EdgeKind.CONTRADICTS:
            if b.number not in a.disputed_with:
                a.disputed_with.append(b.number)
            if a.number not in b.disputed_with:
                b.disputed_with.append(a.number)
        elif e.kind == EdgeKind.SUPERSEDES and a.number not in b.superseded_by:
            b.superseded_by.append(a.number)
    for f in findings:
        f.disputed_with.sort()
        f.superseded_by.sort()
    numbered = {n: sources[s] for s, n in numbers.items()}
    best = max((float(r.relevance) for r in reps), default=0.0)
    return Selection(findings, numbered, scored, best, len(reps))


def _writer_request(question: str, findings: list[Finding], decision: Decision) -> WriteRequest:
    return WriteRequest(
        question=question,
        findings=tuple(
            FindingForWriter(
                f.number,
                f.text,
                f.confidence,
                f.relevance,
                f.sub_question,
                disputed=bool(f.disputed_with),
                superseded=f.superseded,
                answers=f.number in decision.answering,
                publishers=f.publishers,
            )
            for f in findings
        ),
        answered=decision.answered,
    )


def not_answered(sources: int) -> str:
    """The Answer section of a report whose findings do not answer its question: it says so,
    and cites nothing."""
    if sources == 1:
        return "The one source read does not answer this question. The closest findings are below."
    return (
        f"None of the {sources} sources read answers this question. The closest findings are below."
    )


# -- why a report is empty -------------------------------------------------------------------


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _causes(rows: Iterable[dict[str, Any]]) -> str:
    return ", ".join(f"{str(r['cause']).replace('_', ' ')} {int(r['n'])}" for r in rows)


def stop_causes(run: Run) -> list[str]:
    """What starved the session's model work, from the store, each a clause of the report's
    reason line: an overrun (which stops dispatching, so what follows reads as "budget
    exhausted" at a few per cent spent), model calls that failed, replies that could not be
    read (an answered, paid call whose answer was lost). Empty when none happened."""
    store, sid = run.store, run.session_id
    out: list[str] = []
    bal = run.ledger.balance(sid)
    if bal.overrun:
        out.append(
            "the provider reported more tokens than a call was allowed (overrun of "
            f"{_fmt_amount(bal.overrun, str(bal.unit))}), so dispatching stopped"
        )
    failed = failed_model_calls(run)
    if failed is not None:
        n, last = failed
        out.append(f"{_count(n, 'model call')} failed, their work skipped (last: {last})")
    rows = store.named("report_unreadable_replies", {"session_id": sid})
    if rows:
        lost = sum(int(r["n"]) for r in rows)
        replies = sum(max(int(r["calls"]), int(r["n"])) for r in rows)
        stages = "/".join(STAGE_NAMES.get(str(r["skill"]), str(r["skill"])) for r in rows)
        out.append(
            f"the model's replies could not be read ({lost} of {replies} {stages} "
            "replies unparseable)"
        )
    return out


def failed_model_calls(run: Run) -> tuple[int, str] | None:
    """How many model calls failed in the session and the last one's error, one line; None
    when none did. The ledger's row of a failed call keeps its error (Ledger.hold)."""
    got = run.store.named("report_failed_model_calls", {"session_id": run.session_id})[0]
    n = int(got["n"] or 0)
    if not n:
        return None
    note = str(got["last"] or "")
    # "call failed: ProviderUnavailable: ..." -> "ProviderUnavailable: ...".
    last = note.partition(": ")[2] or note
    return n, one_line(last)[:200]


def empty_reason(run: Run, sel: Selection) -> str:
    """What happened, from the store, when nothing can be listed. Each case names its own
    cause: a session whose quote check discarded nothing must never read as one that did."""
    store, sid = run.store, run.session_id
    c = store.named("session_counts", {"session_id": sid})[0]
    leads, sources, claims = int(c["leads"]), int(c["sources"]), int(c["claims"])
    discarded_rows = store.named("discarded_by_cause", {"session_id": sid})
    discarded = sum(int(r["n"]) for r in discarded_rows)
    dead = store.named("report_dead_ends", {"session_id": sid})
    dead_total = sum(int(r["n"]) for r in dead)
    if sel.candidates:
        why = (
            f"{_count(claims, 'claim')} passed the quote check, but none is relevant to "
            f"the question (best relevance {sel.best:.2f})"
        )
    elif discarded:
        why = (
            f"the miners proposed {_count(discarded, 'claim')} from "
            f"{_count(sources, 'source')}, and the quote check discarded every one "
            f"({_causes(discarded_rows)})"
        )
    elif sources:
        why = (
            f"{_count(sources, 'source')} {'was' if sources == 1 else 'were'} read, but no "
            "claim was mined from them: no passage bore on the question"
        )
    elif not leads:
        why = "no search was run: the planner proposed nothing to search for"
    elif dead and all(r["cause"] == "no_results" for r in dead):
        why = (
            "nothing was found: no search returned a result "
            f"({_count(leads, 'search', 'searches')})"
        )
    elif dead:
        why = f"nothing could be fetched: {_count(dead_total, 'dead end')} ({_causes(dead)})"
    else:
        why = f"nothing was fetched from {_count(leads, 'search', 'searches')}"
    # What stopped the model's work comes first: "budget exhausted" or "the planner proposed
    # nothing" alone hid an overrun, an outage or replies nobody could read (issue 29).
    why = "; ".join([*stop_causes(run), why])
    counts = (
        f"Searches: {leads}; sources read: {sources}; dead ends: {dead_total}"
        + (f" ({_causes(dead)})" if dead else "")
        + f"; claims discarded by the quote check: {discarded}; claims kept: {claims}."
    )
    return f"{EMPTY_PREFIX}: {why}. {counts}"


# -- banners ---------------------------------------------------------------------------------

_WORK = {
    "plan": "planned",
    "mine": "mined",
    "judge": "judged",
    "ground": "re-read claims against their sources",
    "hypothesize": "chose local-data analyses",
}


def model_work(run: Run) -> str:
    """Which work a model did in this session, from settled calls in the ledger."""
    rows = sorted(
        (
            r
            for r in run.store.named("report_model_work", {"session_id": run.session_id})
            if r["skill"] in _WORK
        ),
        key=lambda r: list(_WORK).index(r["skill"]),
    )
    if not rows:
        return f"No model call of `{run.skills.name}` was settled before the report"
    parts = [f"{_WORK[r['skill']]} ({_count(int(r['calls']), 'call')})" for r in rows]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"The model (`{run.skills.name}`) {listed} in this session"


def _fmt_amount(amount: int, unit: str) -> str:
    if unit == "usd_micros":
        return f"${amount / 1_000_000:.4f}"
    return f"{amount} tokens"


# -- rendering -------------------------------------------------------------------------------


def _cites(numbers: Iterable[int], pages: dict[int, int] | None = None) -> str:
    """Citations as printed: "[3][4]", or "[3] (p. 12) [4]" where a finding was quoted from a page
    of a PDF (issue 19): spaced once a page is among them, so each page sits after its own
    number."""
    pages = pages or {}
    numbers = list(numbers)
    parts = [cite(n, pages.get(n)) for n in numbers]
    return (" " if any(n in pages for n in numbers) else "").join(parts)


def render_answer(binding: Binding, findings: list[Finding]) -> str:
    """The answer: each kept sentence with the citations of the findings it names. A sentence
    that is a finding's quote is printed in quotation marks, escaped. An answer made only of
    quotes (the extractive answer) is a list, one quote an item: a quote of two sentences ("...
    can not be converted to bool. Instead one must use is_true ...") stays one statement with
    its citation after it, where a paragraph would run the quotes of several sources together
    and leave a reader to find where each ends. A written answer is a paragraph."""
    by_no = {f.number: f for f in findings}
    out: list[str] = []
    for i, s in enumerate(binding.kept):
        cites = list(dict.fromkeys(c for n in s.findings for c in by_no[n].citations))
        pages: dict[int, int] = {}
        for n in s.findings:
            for c, page in by_no[n].pages.items():
                pages.setdefault(c, page)
        others = sorted({d for n in s.findings for d in by_no[n].disputed_with} - set(s.findings))
        disputed = (" (disputed by " + ", ".join(f"#{d}" for d in others) + ")") if others else ""
        text = escape_markdown(one_line(s.text))
        if i in binding.quoted:
            out.append(f"\u201c{text}\u201d {_cites(cites, pages)}{disputed}")
            continue
        end = text[-1] if text[-1] in ".!?" else "."
        body = text[:-1] if text[-1] in ".!?" else text
        out.append(f"{body} {_cites(cites, pages)}{disputed}{end}")
    if out and len(binding.quoted) == len(binding.kept):
        return "\n".join(f"- {line}" for line in out)
    return " ".join(out)


def render(
    *,
    session: SessionRow,
    answer: str,
    findings: list[Finding],
    numbered: dict[int, SourceRow],
    banners: list[str],
    spend_by_role: list[dict[str, Any]],
    appendix: list[str] | None = None,
    answered: bool = True,
    why: str = "",
    preface: list[str] | None = None,
    not_read: list[UnreadFile] | None = None,
) -> str:
    """The report's Markdown. When the findings do not answer the question (`answered` False),
    the Answer section is the plain notice in `answer`, with `why` under it, and every section
    of findings is headed as related."""
    unit = session.unit
    out: list[str] = [f"# {one_line(session.question)}", ""]
    out.append(
        f"Session `{session.id}` · provider `{session.provider}` · "
        f"budget {_fmt_amount(session.total, unit)} · "
        f"generated {utcnow():%Y-%m-%d %H:%M} UTC"
    )
    out.append("")
    for b in banners:
        out += [f"> {one_line(b)}", ""]
    out += preface or []  # a rerun's "What changed since" section (mole_dag/output/changes.py)
    # One line, or the lines of a list of quotes (render_answer), each made one line.
    out += ["## Answer", "", *(one_line(line) for line in answer.split("\n")), ""]
    if why:
        out += [f"> Why: {one_line(why)}.", ""]

    sections: dict[str, list[Finding]] = {}
    for f in findings:
        sections.setdefault(f.sub_question_id, []).append(f)
    label = "" if answered else RELATED_PREFIX
    question = " ".join(session.question.split())
    for group in sections.values():
        heading = one_line(group[0].sub_question)
        # The question itself as a sub-question (always the first, often the only one): its
        # heading would repeat the title right under the Answer (issue 33).
        if heading.rstrip("?？. ").casefold() == question.rstrip("?？. ").casefold():
            out += [f"## {label.rstrip(': ') or 'Findings'}", ""]
        else:
            out += [f"## {label}{heading}", ""]
        for f in group:
            flags = []
            if f.superseded:
                by = (
                    ", ".join([*(f"#{n}" for n in f.superseded_by), *f.newer_sources])
                    or "a newer finding"
                )
                flags.append(f"**superseded** by {by}")
            if f.disputed_with:
                flags.append("**disputed** by " + ", ".join(f"#{n}" for n in f.disputed_with))
            flag = f" ({'; '.join(flags)})" if flags else ""
            text = escape_markdown(f.text)
            if f.superseded:
                text = f"~~{text}~~"
            out.append(f"{f.number}. {text} {_cites(f.citations, f.pages)}{flag}  ")
            out.append(
                f"   relevance {f.relevance:.2f} · confidence {f.confidence:.2f} — "
                f"{one_line(f.explanation)}"
            )
        out.append("")

    disputes = sorted(
        {(min(f.number, o), max(f.number, o)) for f in findings for o in f.disputed_with}
    )
    by_no = {f.number: f for f in findings}
    if disputes:
        out += ["## Disputed", ""]
        for lo, hi in disputes:
            fa, fb = by_no[lo], by_no[hi]
            out.append(f"- #{lo} {escape_markdown(fa.text)} {_cites(fa.citations, fa.pages)}")
            out.append(
                f"  - versus #{hi} {escape_markdown(fb.text)} {_cites(fb.citations, fb.pages)}"
            )
        out.append("")

    sup = [f for f in findings if f.superseded]
    if sup:
        out += ["## Superseded", ""]
        for f in sup:
            newer = (
                ", ".join(
                    [
                        *(
                            f"#{n} {_cites(by_no[n].citations, by_no[n].pages)}"
                            for n in f.superseded_by
                        ),
                        *(f"the newer source {s}" for s in f.newer_sources),
                    ]
                )
                or "a newer source"
            )
            out.append(
                f"- #{f.number} {_cites(f.citations, f.pages)} is superseded by {newer}: the "
                "sources disagree and are more than a year apart."
            )
        out.append("")

    out += appendix or []  # e.g. the local-data section (mole_dag/output/local_data_section.py)
    out += ["## Sources", ""]
    if not numbered:
        out.append("No source is cited.")
    for n, s in sorted(numbered.items()):
        name = one_line(s.publisher_name or "")
        who = f"{name} ({s.publisher})" if name else s.publisher
        local = relative_to_corpus(s.locator or s.url, session.corpus) or corpus_path(
            s.url, s.locator
        )
        link = f" <{one_line(s.url)}>"
        if local is not None:
            # A file of the corpus folder (issue 19): its path relative to the folder, and no
            # absolute file:// link (issue 33: it told readers where the author keeps files).
            who = f"local file {escape_markdown(one_line(local))}"
            link = ""
        date = f", {s.published:%Y-%m-%d}" if s.published else ""
        title = escape_markdown(one_line(s.title or local or s.url))
        out.append(f"[{n}] {title} — {who}, {s.source_class}{date}.{link}  ")
    out.append("")

    if not_read:
        # What the answer could not draw on: a reader should know the folder held more than
        # was read (issue 33). After the sources, with them: it says what was not one.
        head = f"{_count(len(not_read), 'file was', 'files were')} not read:"
        out += ["## Not read", "", head, ""]
        for u in not_read:
            out.append(f"- {escape_markdown(u.shown)}: {escape_markdown(u.reason)}")
        out.append("")

    out += ["## Spend", ""]
    if spend_by_role:
        for r in spend_by_role:
            calls = _count(int(r["calls"]), "call")
            if int(r["spent"]) == 0:
                # Nothing paid (the extractive provider, a free local model): "0 tokens over
                # 891 calls" read as a count of tokens that were never asked for (issue 33).
                out.append(f"- {r['role']}: {calls}, nothing spent")
            else:
                spent = _fmt_amount(int(r["spent"]), unit)
                out.append(f"- {r['role']}: {spent} over {calls}")
    else:
        out.append("- no calls recorded")
    out.append("")
    return strip_controls("\n".join(out))


# -- writing ---------------------------------------------------------------------------------


@dataclass
class _Written:
    binding: Binding
    writer: str
    notes: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    spent: int = 0
    answered: bool = True
    basis: str = ""


def _write(run: Run, req: WriteRequest, findings: list[Finding], decision: Decision) -> _Written:
    """One writer call (no retry: the same prompt mostly earns the same answer, and the
    deterministic answer is a good one), bound to the findings; the deterministic answer when
    the call cannot be made or too little of its answer survives. Whether the findings answer
    the question is the writer's to say: a model reads them; the model-free writer follows the
    lexical decision (mole_dag.output.answered), which also stands when a model's answer is
    not used."""
    sid, unit = run.session_id, run.unit
    texts = {f.number: f.text for f in findings}
    got: WrittenAnswer | None = None
    spent = 0
    why = ""
    budget_note = ""
    estimate = run.skills.estimate_write(req, unit)
    try:
        with (
            run.ledger.hold(
                sid, Role.OUTPUT, estimate, tool=f"{run.skills.name}:write", stage=STAGE
            ) as h,
            charging(h),
        ):
            metered = run.skills.write(req, unit)
            h.settle(metered.cost, usage=metered.usage, model=metered.model or None)
        got, spent = metered.value, metered.cost
        if metered.unreadable:
            run.store.transact(
                lambda cur: write_unreadable(cur, sid, [("write", metered.unreadable)], utcnow())
            )
    except BudgetOverrun as exc:
        why = "writer not run: a provider overran its allowance, so no further call is made"
        budget_note = (
            f"The writer could not be afforded: a provider used "
            f"{_fmt_amount(exc.overrun, exc.unit)} more than its calls were "
            "allowed, and after an overrun the session dispatches no further call"
        )
    except BudgetExhausted as exc:
        why = (
            f"writer not run: it needed {_fmt_amount(exc.requested, exc.unit)} and "
            f"{_fmt_amount(exc.available, exc.unit)} was left"
        )
        budget_note = (
            f"The writer could not be afforded: it needed "
            f"{_fmt_amount(exc.requested, exc.unit)} and "
            f"{_fmt_amount(exc.available, exc.unit)} was left"
        )
    except ModelCallFailed as exc:
        why = f"writer failed: {exc}"

    if got is not None and not got.answered:
        # The writer found that no finding answers the question: nothing to bind, nothing to
        # cite; the findings stay below as related.
        basis = (
            f"the model writer (`{run.skills.name}`) found that no finding answers the question"
            if run.skills.uses_model
            else decision.basis
        )
        return _Written(Binding((), 0), run.skills.name, [], [], spent, False, basis)
    binding = bind(got, texts, req.question) if got is not None else None
    if binding is not None and binding.enough:
        notes = []
        if binding.dropped:
            notes.append(f"The writer's answer: {binding.explain()}.")
        basis = (
            f"the model writer (`{run.skills.name}`) answered from "
            + ", ".join(f"#{n}" for n in dict.fromkeys(n for b in binding.kept for n in b.findings))
            if run.skills.uses_model
            else decision.basis
        )
        return _Written(binding, run.skills.name, notes, [], spent, True, basis)

    if binding is not None and got is not None:
        why = binding.explain()
        if got.problem:
            why = got.problem if not binding.offered else f"{got.problem}; {why}"
    log.warning("session %s: writer answer not used: %s", sid, why)
    fallback_answer = write_body(req)
    fallback = bind(fallback_answer, texts, req.question)
    declined = not fallback_answer.answered
    instead = ANSWER_FALLBACK_DECLINED if declined else ANSWER_FALLBACK
    notes = []
    if run.skills.uses_model:
        head = model_work(run)
        if budget_note:
            notes.append(f"{head}. {budget_note}, so {instead}.")
        else:
            notes.append(f"{head}. Its answer paragraph was not used ({why}), so {instead}.")
    else:
        notes.append(f"The extractive answer was not used ({why}), so {instead}.")
    return _Written(fallback, "deterministic", notes, [why], spent, not declined, decision.basis)


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
    sel = _select_findings(run, max_findings)
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
        req = _writer_request(session.question, findings, decision)
        written = _write(run, req, findings, decision)
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
        written = _Written(Binding((), 0), "none", answered=False, basis=basis)

    # What the Answer rests on (issue 32: a rerun compares evidence, not wording).
    by_no = {f.number: f for f in findings}
    answer_claims = frozenset(
        by_no[n].claim_id for s in written.binding.kept for n in s.findings if n in by_no
    )
    diff = None
    if session.previous_session_id:
        from mole_dag.output.changes import for_report, render_section

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
            from mole_dag.output.changes import write_diff

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
