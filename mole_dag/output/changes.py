"""What changed between two sessions of one question (issue 32), by meaning and evidence.

Per finding (a cluster representative of the old or the new session):
- same: the new session holds its counterpart: the claim carried from it, the same quote
  (whitespace and case aside), or the same statement in new wording (a duplicate by words and
  figures); or its source was read again and still holds the quote. Counted, not listed;
- removed: its source was read again and no longer holds the quote ("vanished"), or is gone
  (404/410, a deleted corpus file), with the cause. A source that could not be reached, or was
  not read again, removes nothing: nothing was learned;
- changed: a removed-by-vanishing finding and a new one about the same thing (most of their
  words shared) with a different value: a figure, a date, a named outcome. Both quotes;
- new: a finding with no counterpart in the old session and whose quote the old session's copy
  of its source did not already hold (a page re-mined for a timestamp is not new findings).

Only material changes count: whitespace, retrieval dates, the order findings come in and their
wording are not changes. Plain Python over typed records; `load_side` and `source_outcomes` read
them from the store, `compute` decides, `as_json` / `render_section` show, `write_diff` stores."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mole_dag.output.wording import escape_markdown
from mole_dag.sanitize import one_line
from mole_dag.store import Store, q, utcnow
from mole_dag.text import terms, words

# Content-word overlap above which two claims say the same thing (with the same figures), and
# above which, with the figures or a few words differing, they say it about the same thing with
# another value. Guesses, flagged as such; the verifier's extractive judge uses 0.8 for
# duplicates too.
SAME_OVERLAP = 0.8
CHANGED_OVERLAP = 0.5
# A confidence move a reader should hear about (the figure).
CONFIDENCE_SHIFT = 0.1

_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
# Dates and times in a page's text: a page whose only change is one of these (a "last updated"
# line, a build stamp) did not change materially.
_STAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp]\.?[Mm]\.?)?"
    r"|\d{1,2}\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{4}"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}"
)


@dataclass(frozen=True)
class ClaimSide:
    """One claim of a session as the diff reads it (`changes_claims`)."""

    claim_id: str
    text: str
    quote: str
    url: str
    page: int | None
    finding: bool  # a cluster representative: what a report can show
    cluster_id: str | None
    confidence: float | None
    explanation: str | None
    carried_from: str | None  # the previous session's claim it was copied from


@dataclass(frozen=True)
class SessionSide:
    """A session's side of a diff: its claims, the text of each source it read (by URL), and
    what its report decided."""

    session_id: str
    question: str
    created_at: datetime
    answered: bool | None
    answer_claims: frozenset[str]
    claims: tuple[ClaimSide, ...]
    texts: dict[str, str]
    digests: dict[str, str]

    @property
    def findings(self) -> list[ClaimSide]:
        return [c for c in self.claims if c.finding]


@dataclass(frozen=True)
class SourceOutcome:
    """What the new session learned of a URL the old one read (`source_changes`)."""

    url: str
    outcome: str  # unchanged | changed | gone | unreachable | added
    detail: str | None = None


@dataclass(frozen=True)
class Change:
    kind: str  # new | removed | changed
    old: ClaimSide | None
    new: ClaimSide | None
    why: str = ""


@dataclass(frozen=True)
class Shift:
    finding: ClaimSide
    old: float
    new: float
    why: str


@dataclass
class Diff:
    old: str
    new: str
    question: str
    old_date: datetime
    answer_changed: bool
    answered: tuple[bool | None, bool | None]
    changes: list[Change] = field(default_factory=list)
    same: int = 0
    sources_added: list[str] = field(default_factory=list)
    sources_removed: list[str] = field(default_factory=list)
    sources_changed: list[str] = field(default_factory=list)
    sources_unreachable: list[str] = field(default_factory=list)
    shifts: list[Shift] = field(default_factory=list)

    def of(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def material(self) -> bool:
        """Whether anything a reader must hear about moved (an unreachable source teaches
        nothing, so it alone is not material)."""
        return bool(
            self.answer_changed
            or self.changes
            or self.shifts
            or self.sources_added
            or self.sources_removed
            or self.sources_changed
        )


# -- deciding -----------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def material_text(text: str) -> str:
    """A page's text with what is not a material change taken out: whitespace collapsed, dates
    and times masked."""
    return _STAMP.sub("<date>", " ".join(text.split()))


def _split(text: str) -> tuple[frozenset[str], frozenset[str]]:
    ts = terms(text)
    return (
        frozenset(t for t in ts if not _NUMBER.match(t)),
        frozenset(t for t in ts if _NUMBER.match(t)),
    )


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def same_statement(a: str, b: str) -> bool:
    """The same statement, perhaps in other words: the same quote, or most content words and
    exactly the same figures shared."""
    if _norm(a) == _norm(b):
        return True
    wa, na = _split(a)
    wb, nb = _split(b)
    return na == nb and _overlap(wa, wb) >= SAME_OVERLAP


def value_change(old: str, new: str) -> tuple[float, str] | None:
    """How closely `new` restates `old` with another value, and what differs ("12 → 15"); None
    when they are not about the same thing, or nothing but wording differs."""
    wo, no = _split(old)
    wn, nn = _split(new)
    score = _overlap(wo, wn)
    if score < CHANGED_OVERLAP:
        return None
    if no != nn:
        gone, came = sorted(no - nn), sorted(nn - no)
        return score, f"{', '.join(gone) or '(none)'} → {', '.join(came) or '(none)'}"
    lo, ln = words(old), words(new)
    gone_w = [w for w in lo if w not in set(ln)]
    came_w = [w for w in ln if w not in set(lo)]
    if not gone_w and not came_w:
        return None
    return score, f"{' '.join(gone_w) or '(none)'} → {' '.join(came_w) or '(none)'}"


def _in_text(quote: str, text: str | None) -> bool:
    return text is not None and _norm(quote) in _norm(text)


def derived_outcomes(old: SessionSide, new: SessionSide) -> dict[str, SourceOutcome]:
    """For two sessions not linked by a rerun: what the new session's reading says of each URL
    the old one read. A URL the new one did not read has no outcome (nothing learned)."""
    out = {}
    for url, sha in old.digests.items():
        if url in new.digests:
            out[url] = SourceOutcome(url, "unchanged" if new.digests[url] == sha else "changed")
    return out


def compute(
    old: SessionSide, new: SessionSide, outcomes: dict[str, SourceOutcome] | None = None
) -> Diff:
    """The difference from `old` to `new`. `outcomes`: what a rerun learned of each URL
    (source_changes); without it, derived from the digests of the URLs both sessions read."""
    if outcomes is None:
        outcomes = derived_outcomes(old, new)
    by_carried = {c.carried_from: c for c in new.claims if c.carried_from}
    by_quote: dict[str, ClaimSide] = {}
    for c in new.claims:
        by_quote.setdefault(_norm(c.quote), c)

    def counterpart(f: ClaimSide, among: tuple[ClaimSide, ...] | list[ClaimSide]) -> Any:
        got = by_carried.get(f.claim_id) or by_quote.get(_norm(f.quote))
        if got is not None:
            return got
        return next((c for c in among if same_statement(f.quote, c.quote)), None)

    diff = Diff(
        old.session_id,
        new.session_id,
        new.question,
        old.created_at,
        answer_changed=False,
        answered=(old.answered, new.answered),
    )
    matched: dict[str, ClaimSide] = {}  # old claim id -> its new counterpart
    vanished: list[ClaimSide] = []
    for f in old.findings:
        got = counterpart(f, new.claims)
        outcome = outcomes.get(f.url)
        if got is not None:
            matched[f.claim_id] = got
            diff.same += 1
        elif outcome is None or outcome.outcome in ("unchanged", "unreachable", "added"):
            # Not read again, or read and the same, or not reached: nothing says it moved.
            diff.same += 1 if outcome is not None and outcome.outcome == "unchanged" else 0
        elif outcome.outcome == "gone":
            cause = f"source gone: {outcome.detail or 'no longer there'}"
            diff.changes.append(Change("removed", f, None, cause))
        elif _in_text(f.quote, new.texts.get(f.url)):
            diff.same += 1  # the page changed elsewhere; it still says this
        else:
            vanished.append(f)

    old_claims = tuple(old.claims)
    old_by_quote = {_norm(c.quote) for c in old.claims}
    carried_ids = {c.claim_id for c in old.claims}
    fresh: list[ClaimSide] = []
    for g in new.findings:
        if g.carried_from in carried_ids or _norm(g.quote) in old_by_quote:
            continue
        if any(same_statement(c.quote, g.quote) for c in old_claims):
            continue
        if _in_text(g.quote, old.texts.get(g.url)):
            continue  # the old copy of the page said it already: not new
        fresh.append(g)

    # A vanished finding and a fresh one about the same thing: one change with both values.
    # Best pairs first; a finding takes part in one change at most.
    pairs = []
    for i, f in enumerate(vanished):
        for j, g in enumerate(fresh):
            got = value_change(f.quote, g.quote)
            if got is not None:
                pairs.append((-got[0], f.url != g.url, i, j, got[1]))
    used_old: set[int] = set()
    used_new: set[int] = set()
    for _score, _elsewhere, i, j, why in sorted(pairs):
        if i in used_old or j in used_new:
            continue
        used_old.add(i)
        used_new.add(j)
        diff.changes.append(Change("changed", vanished[i], fresh[j], why))
    for i, f in enumerate(vanished):
        if i not in used_old:
            cause = "vanished: the source was read again and no longer holds the quote"
            diff.changes.append(Change("removed", f, None, cause))
    for j, g in enumerate(fresh):
        if j not in used_new:
            diff.changes.append(Change("new", None, g))
    diff.changes.sort(key=lambda c: (c.kind, _where(c)))

    # Confidence moves of findings that stayed.
    for f in old.findings:
        kept = matched.get(f.claim_id)
        if kept is None or f.confidence is None or kept.confidence is None or not kept.finding:
            continue
        if abs(kept.confidence - f.confidence) >= CONFIDENCE_SHIFT - 1e-9:
            diff.shifts.append(Shift(kept, f.confidence, kept.confidence, kept.explanation or ""))

    diff.answer_changed = _answer_changed(old, new, matched)
    gone = {o.url for o in outcomes.values() if o.outcome == "gone"}
    cited = {c.url for c in old.claims}
    diff.sources_removed = sorted(gone & cited)
    diff.sources_unreachable = sorted(
        o.url for o in outcomes.values() if o.outcome == "unreachable" and o.url in cited
    )
    diff.sources_changed = sorted(
        o.url
        for o in outcomes.values()
        if o.outcome == "changed"
        and o.url in cited
        and (
            o.url not in old.texts
            or o.url not in new.texts
            or material_text(old.texts[o.url]) != material_text(new.texts[o.url])
        )
    )
    diff.sources_added = sorted(
        {c.new.url for c in diff.changes if c.new is not None and c.new.url not in old.texts}
    )
    return diff


def _where(c: Change) -> tuple[str, str]:
    side = c.old or c.new
    assert side is not None
    return side.url, _norm(side.quote)


def _answer_changed(old: SessionSide, new: SessionSide, matched: dict[str, ClaimSide]) -> bool:
    """Answered and not answered differ, or the Answer rests on other evidence: an old answer
    claim without a counterpart in the new Answer's clusters, or the reverse. Wording is not
    compared: a writer that says the same thing in other words changed nothing."""
    if old.answered is None or new.answered is None:
        return False  # a session without a report has no answer to compare
    if old.answered != new.answered:
        return True
    if not old.answered:
        return False
    cluster = {c.claim_id: c.cluster_id or c.claim_id for c in new.claims}
    new_clusters = {cluster.get(cid, cid) for cid in new.answer_claims}
    mapped = set()
    by_id = {c.claim_id: c for c in old.claims}
    for cid in old.answer_claims:
        got = matched.get(cid)
        if got is None and cid in by_id:
            f = by_id[cid]
            got = next((c for c in new.claims if same_statement(f.quote, c.quote)), None)
        if got is None:
            return True
        mapped.add(cluster.get(got.claim_id, got.claim_id))
    return mapped != new_clusters


# -- reading the store -------------------------------------------------------------------------


class DiffRefused(ValueError):
    """Two sessions that cannot be compared; the message is one line for the user."""


def load_side(
    store: Store,
    session_id: str,
    *,
    answered: bool | None = None,
    answer_claims: frozenset[str] | None = None,
) -> SessionSide:
    """A session's side, its answer from its latest report unless given (a report being
    written compares itself before it is stored)."""
    sess = store.row(q("session_get"), {"session_id": session_id})
    if sess is None:
        raise DiffRefused(f"no session {session_id!r}; `mole sessions` lists them")
    claims = tuple(
        ClaimSide(
            r["claim_id"],
            r["text"],
            r["quote"],
            r["url"],
            None if r["page"] is None else int(r["page"]),
            bool(r["representative"]),
            r["cluster_id"],
            None if r["confidence"] is None else float(r["confidence"]),
            r["explanation"],
            r["carried_from"],
        )
        for r in store.rows(q("changes_claims"), {"session_id": session_id})
    )
    parts: dict[str, list[str]] = {}
    digests: dict[str, str] = {}
    for r in store.rows(q("changes_source_texts"), {"session_id": session_id}):
        digests[r["url"]] = r["content_sha256"]
        parts.setdefault(r["url"], []).append(r["text"] or "")
    if answered is None:
        rep = store.row(q("changes_report"), {"session_id": session_id})
        if rep is not None:
            answered = rep["answered"]
            answer_claims = frozenset(
                r["claim_id"]
                for r in store.rows(q("changes_answer_claims"), {"report_id": rep["id"]})
            )
    return SessionSide(
        session_id,
        sess["question"],
        sess["created_at"],
        answered,
        answer_claims or frozenset(),
        claims,
        {url: "".join(p) for url, p in parts.items()},
        digests,
    )


def source_outcomes(store: Store, old: str, new: str) -> dict[str, SourceOutcome] | None:
    """What a rerun learned of each URL; None when `new` is not a rerun of `old`."""
    rows = store.rows(q("changes_source_outcomes"), {"session_id": new, "previous_session_id": old})
    if not rows:
        return None
    return {r["url"]: SourceOutcome(r["url"], r["outcome"], r["detail"]) for r in rows}


def diff_sessions(store: Store, old: str, new: str) -> Diff:
    """`mole diff OLD NEW`: any two sessions of one question. Raises DiffRefused (one line)
    for an unknown id or two different questions."""
    a, b = load_side(store, old), load_side(store, new)
    # As the launch cleans a question before it is stored (mole_dag.launch.clean_question).
    if one_line(a.question) != one_line(b.question):
        raise DiffRefused(
            f"sessions {old} and {new} ask different questions ({a.question!r} and "
            f"{b.question!r}); a diff compares two sessions of one question"
        )
    return compute(a, b, source_outcomes(store, old, new))


# -- showing and storing ---------------------------------------------------------------------


def _finding(c: ClaimSide) -> dict[str, Any]:
    return {"text": c.text, "quote": one_line(c.quote), "source": c.url, "page": c.page}


def as_json(diff: Diff) -> dict[str, Any]:
    """The shape `mole diff --json` prints (issue 32)."""
    return {
        "old": diff.old,
        "new": diff.new,
        "question": diff.question,
        "answer_changed": diff.answer_changed,
        "findings": {
            "new": [_finding(c.new) for c in diff.of("new") if c.new],
            "removed": [{**_finding(c.old), "cause": c.why} for c in diff.of("removed") if c.old],
            "changed": [
                {"old": _finding(c.old), "new": _finding(c.new), "why": c.why}
                for c in diff.of("changed")
                if c.old and c.new
            ],
            "same": diff.same,
        },
        "sources": {
            "added": diff.sources_added,
            "removed": diff.sources_removed,
            "changed": diff.sources_changed,
            "unreachable": diff.sources_unreachable,
        },
        "confidence_shifts": [
            {**_finding(s.finding), "old": round(s.old, 2), "new": round(s.new, 2), "why": s.why}
            for s in diff.shifts
        ],
    }


def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def render_section(diff: Diff) -> list[str]:
    """The report's "What changed since <old id> (<date>)" section, as Markdown lines."""

    def quoted(c: ClaimSide) -> str:
        page = f" (p. {c.page})" if c.page else ""
        return f"\u201c{escape_markdown(one_line(c.quote))}\u201d <{one_line(c.url)}>{page}"

    out = [f"## What changed since {diff.old} ({diff.old_date:%Y-%m-%d})", ""]
    was, now = diff.answered
    flip = ""
    if was is not None and now is not None and was != now:
        flip = " It was answered before; now it is not." if was else " It is answered now."
    if not diff.material:
        out += [
            f"Nothing material changed: {_n(diff.same, 'finding is', 'findings are')} the "
            "same"
            + (
                f"; {_n(len(diff.sources_unreachable), 'source', 'sources')} could not "
                "be read again (nothing learned)"
                if diff.sources_unreachable
                else ""
            )
            + ".",
            "",
        ]
        return out
    out.append(
        ("The answer changed." if diff.answer_changed else "The answer did not change.") + flip
    )
    out.append("")
    out.append(
        f"Findings: {len(diff.of('new'))} new, {len(diff.of('removed'))} removed, "
        f"{len(diff.of('changed'))} changed, {diff.same} the same. Sources: "
        f"{len(diff.sources_added)} added, {len(diff.sources_removed)} removed, "
        f"{len(diff.sources_changed)} changed, {len(diff.sources_unreachable)} unreachable."
    )
    out.append("")
    for c in diff.of("changed"):
        assert c.old and c.new
        out.append(
            f"- **changed** ({escape_markdown(one_line(c.why))}): {quoted(c.old)} → {quoted(c.new)}"
        )
    for c in diff.of("removed"):
        assert c.old
        out.append(f"- **removed** ({escape_markdown(one_line(c.why))}): {quoted(c.old)}")
    for c in diff.of("new"):
        assert c.new
        out.append(f"- **new**: {quoted(c.new)}")
    for s in diff.shifts:
        out.append(
            f"- **confidence** {s.old:.2f} → {s.new:.2f}: {quoted(s.finding)} "
            f"({escape_markdown(one_line(s.why))})"
        )
    for url in diff.sources_unreachable:
        out.append(f"- could not be read again (nothing learned): <{one_line(url)}>")
    out.append("")
    return out


def write_diff(cur: Any, diff: Diff) -> None:
    """Store the difference (finding_changes, session_diffs) in the caller's transaction,
    replacing an earlier one for the same pair (a report written again)."""
    keys = {"old_session_id": diff.old, "new_session_id": diff.new}
    cur.execute(q("finding_changes_clear"), keys)
    cur.execute(q("session_diff_clear"), keys)
    now = utcnow()
    for c in diff.changes:
        cur.execute(
            q("finding_change_insert"),
            {
                **keys,
                "kind": c.kind,
                "old_claim_id": c.old.claim_id if c.old else None,
                "new_claim_id": c.new.claim_id if c.new else None,
                "why": c.why or None,
                "now": now,
            },
        )
    cur.execute(
        q("session_diff_insert"),
        {
            **keys,
            "material": diff.material,
            "diff_json": json.dumps(as_json(diff), ensure_ascii=False, sort_keys=True),
            "now": now,
        },
    )


def for_report(
    store: Store, session_id: str, previous: str, answered: bool, answer_claims: frozenset[str]
) -> Diff:
    """A rerun's difference from the session it re-runs, as its report is written (before the
    report is stored: its answer is given)."""
    new = load_side(store, session_id, answered=answered, answer_claims=answer_claims)
    return compute(load_side(store, previous), new, source_outcomes(store, previous, session_id))
