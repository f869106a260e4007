"""Every empty or partial result says truthfully why: the Answer of a report with no finding
(what happened, with counts from the store), of a report whose findings do not answer its
question, the reason line of an incomplete report (what starved the model's work), and which
work a model did, for the note when its answer was not used. Each case names its own cause."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mole_dag.context import Run
from mole_dag.output.selection import Selection
from mole_dag.output.wording import counted, fmt_amount
from mole_dag.sanitize import one_line
from mole_dag.skills.unreadable import STAGE_NAMES

# The line that opens the answer of a report with no findings (tests and readers key on it).
EMPTY_PREFIX = "No finding to report"


def not_answered(sources: int) -> str:
    """The Answer section of a report whose findings do not answer its question: it says so,
    and cites nothing."""
    if sources == 1:
        return "The one source read does not answer this question. The closest findings are below."
    return (
        f"None of the {sources} sources read answers this question. The closest findings are below."
    )


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
            f"{fmt_amount(bal.overrun, str(bal.unit))}), so dispatching stopped"
        )
    failed = failed_model_calls(run)
    if failed is not None:
        n, last = failed
        out.append(f"{counted(n, 'model call')} failed, their work skipped (last: {last})")
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
            f"{counted(claims, 'claim')} passed the quote check, but none is relevant to "
            f"the question (best relevance {sel.best:.2f})"
        )
    elif discarded:
        why = (
            f"the miners proposed {counted(discarded, 'claim')} from "
            f"{counted(sources, 'source')}, and the quote check discarded every one "
            f"({_causes(discarded_rows)})"
        )
    elif sources:
        why = (
            f"{counted(sources, 'source')} {'was' if sources == 1 else 'were'} read, but no "
            "claim was mined from them: no passage bore on the question"
        )
    elif not leads:
        why = "no search was run: the planner proposed nothing to search for"
    elif dead and all(r["cause"] == "no_results" for r in dead):
        why = (
            "nothing was found: no search returned a result "
            f"({counted(leads, 'search', 'searches')})"
        )
    elif dead:
        why = f"nothing could be fetched: {counted(dead_total, 'dead end')} ({_causes(dead)})"
    else:
        why = f"nothing was fetched from {counted(leads, 'search', 'searches')}"
    # What stopped the model's work comes first: "budget exhausted" or "the planner proposed
    # nothing" alone hid an overrun, an outage or replies nobody could read (issue 29).
    why = "; ".join([*stop_causes(run), why])
    counts = (
        f"Searches: {leads}; sources read: {sources}; dead ends: {dead_total}"
        + (f" ({_causes(dead)})" if dead else "")
        + f"; claims discarded by the quote check: {discarded}; claims kept: {claims}."
    )
    return f"{EMPTY_PREFIX}: {why}. {counts}"


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
    parts = [f"{_WORK[r['skill']]} ({counted(int(r['calls']), 'call')})" for r in rows]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"The model (`{run.skills.name}`) {listed} in this session"
