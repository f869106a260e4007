"""The `local_findings` stage: when a session has data attached, profile it, let the session's
mind pick hypotheses from the profile, run each through the boundary, and turn what crosses into
claims the verifier and the report treat like any other.

A local finding's "source" is the text rendered from its envelope (url `data:<file>#<hash>/<n>`,
publisher `local-data:<hash>`, class `local`). Its claims quote sentences of that text verbatim,
so the quote check and claim integrity hold unchanged; their provenance (the statement and the
envelope hash) is in `local_findings`, and re-running the statement must reproduce the hash: that
is a local claim's equivalent of finding its quote in the page. All findings from one file share
one publisher: a dataset cannot corroborate itself."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mole_dag.actors.base import DeadEnd
from mole_dag.actors.quote import CollapsedText
from mole_dag.budget import BudgetExhausted, charging
from mole_dag.chunk import chunk_text
from mole_dag.context import Run
from mole_dag.core import DeadEndCause, Role, SourceClass, stable_id
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.store import q, utcnow
from mole_dag.store.dead_ends import store_dead_end

if TYPE_CHECKING:
    from mole_dag.local_data.boundary import Crossing
    from mole_dag.local_data.connector import Dataset

# The boundary, its SQL guard (sqlglot), the query audit (numpy, scipy) and the connector are
# imported inside the functions that use them: a session without local data, which is most of
# them, must not load them (issue 12).

log = logging.getLogger("mole.local_data")
STAGE = "local_findings"
# How many hypotheses one session asks of its data. A guess, flagged as one: each is a crossing,
# and what leaves should stay readable in `mole crossings`.
MAX_HYPOTHESES = 6
ACTOR = "local-data"


@dataclass
class LocalResult:
    attached: bool = False
    already_done: bool = False
    rows: int = 0
    columns: int = 0
    withheld: int = 0
    asked: int = 0
    crossings: int = 0
    claims: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    chooser: str = ""


def _sub_question(cur: Any, sid: str, name: str, round_no: int) -> str:
    sq_id = stable_id(sid, "local-data", prefix="sq-")
    cur.execute(
        q("sub_question_insert"),
        {
            "id": sq_id,
            "session_id": sid,
            "round": max(round_no, 1),
            "ordinal": 1000,
            "text": f"What does the attached data ({name}) show?",
            "query": "attached local data",
            "now": utcnow(),
        },
    )
    return sq_id


def _write_finding(
    cur: Any, sid: str, ds: Dataset, sq_id: str, crossing_id: str, crossing: Crossing, seq_hint: str
) -> int:
    """Source + chunks + claims + provenance for one crossing, in the caller's transaction."""
    from mole_dag.local_data.statements import statements

    lines = statements(crossing.envelope, ds.name)
    if not lines:
        return 0
    what = crossing.template or crossing.kind
    header = (
        f"Gated aggregate over {ds.name} (sha256 {ds.sha256[:12]}): {what}; every figure "
        f"rests on at least {crossing.envelope['floor']} rows."
    )
    text = "\n\n".join([header, *lines]) + "\n"
    data = text.encode("utf-8")
    url = f"data:{ds.name}#{ds.sha256[:12]}/{seq_hint}"
    source_id = stable_id(sid, url, prefix="src-")
    now = utcnow()
    cols = crossing.columns
    named = ", ".join(f"{k}={v}" for k, v in cols.items()) if isinstance(cols, dict) else ""
    cur.execute(
        q("source_insert"),
        {
            "id": source_id,
            "session_id": sid,
            "url": url,
            "title": f"{ds.name}: {what} ({named})",
            "publisher": f"local-data:{ds.sha256[:12]}",
            "publisher_name": "local data",
            "author": None,
            "published": None,
            "doi": None,
            "pmid": None,
            "pmcid": None,
            "arxiv_id": None,
            "source_class": str(SourceClass.LOCAL),
            "actor": ACTOR,
            "provider_supplied": False,
            "content_sha256": hashlib.sha256(data).hexdigest(),
            "byte_length": len(data),
            "now": now,
            # Re-verified by re-running its query (mole crossings --verify), not by re-reading.
            "locator": None,
            "etag": None,
            "last_modified": None,
        },
    )
    spans = chunk_text(text)
    for span in spans:
        cur.execute(
            q("chunk_insert"),
            {
                "id": f"{source_id}-{span.ordinal:04d}",
                "session_id": sid,
                "source_id": source_id,
                "ordinal": span.ordinal,
                "byte_start": span.byte_start,
                "byte_end": span.byte_end,
                "text": span.text,
            },
        )
    haystack = CollapsedText(text)
    added = 0
    for line in lines:
        m = haystack.find(line)  # the same check a mined quote passes
        if m is None:
            continue
        chunk = next(s for s in spans if s.byte_start <= m.byte_start < s.byte_end)
        claim_id = stable_id(sid, source_id, str(m.byte_start), str(m.byte_end), prefix="c-")
        cur.execute(
            q("claim_insert"),
            {
                "id": claim_id,
                "session_id": sid,
                "source_id": source_id,
                "chunk_id": f"{source_id}-{chunk.ordinal:04d}",
                "sub_question_id": sq_id,
                "text": line,
                "quote": data[m.byte_start : m.byte_end].decode("utf-8"),
                "quote_byte_start": m.byte_start,
                "quote_byte_end": m.byte_end,
                "created_by": ACTOR,
                "now": now,
            },
        )
        cur.execute(
            q("local_finding_insert"),
            {
                "claim_id": claim_id,
                "session_id": sid,
                "crossing_id": crossing_id,
                "sql": crossing.sql,
                "envelope_sha256": crossing.envelope_sha256,
                "now": now,
            },
        )
        added += 1
    return added


def analyse_local_data(run: Run, *, max_hypotheses: int = MAX_HYPOTHESES) -> LocalResult:
    store, sid = run.store, run.session_id
    sess = run.session()
    result = LocalResult()
    if not sess.data:
        return result
    from mole_dag.local_data import hypothesis
    from mole_dag.local_data.connector import DataError
    from mole_dag.local_data.crossings import Recorder, open_session_data

    result.attached = True
    if store.row(q("local_dataset_get"), {"session_id": sid}) is not None:
        result.already_done = True
        return result
    try:
        ds = open_session_data(store, sid)
    except DataError as exc:
        # Checked when the session was created; the file changed or vanished since.
        error = result.error = str(exc)
        store.transact(
            lambda cur: store_dead_end(
                cur,
                sid,
                DeadEnd(DeadEndCause.UNREADABLE, detail=error),
                sub_question_id=None,
                lead_id=None,
            )
        )
        run.progress(f"local data unreadable: {error}")
        return result
    with ds:
        result.rows, result.columns, result.withheld = ds.rows, len(ds.columns), len(ds.withheld)
        round_no = sess.rounds or 1

        def register(cur: Any) -> str:
            cur.execute(
                q("local_dataset_insert"),
                {
                    "session_id": sid,
                    "path": str(ds.path),
                    "name": ds.name,
                    "sha256": ds.sha256,
                    "files": len(ds.files),
                    "row_count": ds.rows,
                    "columns": len(ds.columns),
                    "withheld": len(ds.withheld),
                    "now": utcnow(),
                },
            )
            return _sub_question(cur, sid, ds.name, round_no)

        sq_id = store.transact(register)
        recorder = Recorder(store, sid, ds)
        view = ds.view(sess.question, hypothesis.CATALOGUE, max_hypotheses)
        choices = _choose(run, view, result, lambda: recorder.record_profile(view))
        if choices is None:
            return result
        for i, choice in enumerate(choices):
            result.asked += 1
            if i >= max_hypotheses:
                over = Refused(
                    Stage.HYPOTHESIS,
                    Reason.BAD_ARGUMENTS,
                    f"more than {max_hypotheses} hypotheses; this one was not asked",
                )
                recorder.record_refusal(over, kind="template", request=_request_text(choice))
                result.refused[str(over.reason)] += 1
                continue
            if not isinstance(choice, HypothesisChoice):
                bad = Refused(
                    Stage.HYPOTHESIS, Reason.BAD_ARGUMENTS, "the answer is not a template choice"
                )
                recorder.record_refusal(bad, kind="template", request=_request_text(choice))
                result.refused[str(bad.reason)] += 1
                continue

            def also(cur: Any, crossing_id: str, crossing: Crossing, i: int = i) -> None:
                result.claims += _write_finding(
                    cur, sid, ds, sq_id, crossing_id, crossing, str(i + 1)
                )

            outcome = recorder.ask_template(choice, also)
            if outcome.crossing is not None:
                result.crossings += 1
            if outcome.refused is not None:
                result.refused[str(outcome.refused.reason)] += 1
    refused = sum(result.refused.values())
    run.progress(
        f"local data: {result.crossings} findings crossed the boundary "
        f"({result.claims} claims), {refused} requests refused"
    )
    return result


def _request_text(choice: object) -> str:
    from mole_dag.local_data.crossings import choice_request

    return choice_request(choice) if isinstance(choice, HypothesisChoice) else repr(choice)[:500]


def _choose(
    run: Run, view: ProfileView, result: LocalResult, profile_leaves: Callable[[], object]
) -> list[Any] | None:
    """Ask the session's mind for hypotheses. The profile crosses to that mind, so it is
    recorded as a crossing at the moment of the call (and not if the budget stops the call)."""
    from mole_dag.local_data.choose_extractive import choose_hypotheses

    skills = run.skills
    sid = run.session_id
    if not hasattr(skills, "hypothesize"):
        # A provider written before the hypothesis skill existed: say so and use the model-free
        # chooser rather than skip the data.
        result.chooser = "extractive (fallback)"
        run.progress(
            f"provider {skills.name} has no hypothesis skill; the model-free chooser "
            "picks the questions"
        )
        profile_leaves()
        return choose_hypotheses(view)
    result.chooser = skills.name
    unit = run.unit
    try:
        estimate = skills.estimate_hypothesize(view, unit)
        with (
            run.ledger.hold(
                sid, Role.PLANNER, estimate, tool=f"{skills.name}:hypothesize", stage=STAGE
            ) as h,
            charging(h),
        ):
            profile_leaves()
            got = skills.hypothesize(view, unit)
            h.settle(got.cost, usage=got.usage, model=got.model or None)
    except ModelCallFailed as exc:
        # The model gave no usable answer; the data still gets its model-free questions.
        result.chooser = "extractive (fallback)"
        run.progress(
            f"local data: the model chose nothing ({type(exc).__name__}); the "
            "model-free chooser picks the questions"
        )
        return choose_hypotheses(view)
    except BudgetExhausted as exc:
        detail = str(exc)
        run.store.transact(
            lambda cur: store_dead_end(
                cur,
                sid,
                DeadEnd(DeadEndCause.BUDGET_EXHAUSTED, detail=detail),
                sub_question_id=None,
                lead_id=None,
            )
        )
        run.progress(f"local data: no budget left to choose hypotheses ({detail})")
        return None
    return list(got.value or [])


def reverify(store: Any, crossing_id: str) -> tuple[bool, str]:
    """Re-run a crossing's request against the session's data and compare envelope hashes: the
    local equivalent of finding a quote in its page again."""
    from mole_dag.local_data import boundary, hypothesis
    from mole_dag.local_data.audit_log import AuditLog
    from mole_dag.local_data.connector import DataError
    from mole_dag.local_data.crossings import open_session_data
    from mole_dag.store.records import CrossingRow

    row = store.one(CrossingRow, q("local_crossing_get"), {"id": crossing_id})
    if row is None:
        return False, f"no crossing {crossing_id!r}"
    try:
        ds = open_session_data(store, row.session_id)
    except (DataError, LookupError) as exc:
        return False, f"the data cannot be read again: {exc}"
    with ds:
        if ds.sha256 != row.dataset_sha256:
            return False, "the data changed since the crossing (its hash differs)"
        # The gate judged the crossing against every answer given over the data before it; so
        # does the re-run, or an answer trimmed by the audit would not reproduce.
        audit = AuditLog(store, ds).before(crossing_id)
        try:
            if row.kind == "profile":
                view = ds.view("", hypothesis.CATALOGUE, MAX_HYPOTHESES)
                again = boundary.profile_crossing(ds, view)
            elif row.kind == "template":
                env = json.loads(row.envelope)
                req = env["request"]
                again = boundary.ask_template(
                    ds,
                    HypothesisChoice(req["template"], req["columns"], req.get("buckets")),
                    audit,
                )
            else:
                again = boundary.ask_sql(ds, row.sql or "", audit)
        except Refused as r:
            return False, f"refused on re-run: {r.reason}"
    if again.envelope_sha256 == row.envelope_sha256:
        return True, "re-run reproduces the envelope exactly"
    return False, "re-run gives a different envelope"
