"""Which findings the report lists, in which section and order, and how they and their sources
are numbered. Relevance decides what is listed and in which order; both sides of a
contradiction or a supersession are listed together; sections follow the planner's order and
numbers run on across them, so every #n names one finding. Read from the store as typed records
(Finding, Selection) for the answer and the rendering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mole_dag.context import Run
from mole_dag.core import EdgeKind
from mole_dag.mining import ranker, relevance
from mole_dag.output.wording import escape_markdown
from mole_dag.sanitize import one_line
from mole_dag.store import q
from mole_dag.store.records import ClusterMemberRow, EdgeRow, FindingRow, SourceRow
from mole_dag.verifier.source_class import STRENGTH

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
    # Why it ranks where it does (claim_relevance.explanation, "question: 0.62 = ..."): the
    # features that decided, shown beside the confidence's reasons (issue 30, item 2).
    relevance_explanation: str = ""


@dataclass
class Selection:
    findings: list[Finding]
    numbered: dict[int, SourceRow]  # source number -> source
    scored: bool  # anything in the session had its relevance scored
    best: float  # the best relevance in the session
    candidates: int  # cluster representatives in the store, before relevance cut them


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


def select_findings(run: Run, max_findings: int) -> Selection:
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
            relevance_explanation=r.relevance_explanation or "",
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
