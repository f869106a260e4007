"""`mole eval <session>`: the scorecard. Every metric is computed from the store or says why it
cannot be; none defaults to 0 or 100.

- budget overshoot: spend beyond the ceiling, as a % of the budget (the ledger's CHECK makes the
  recorded `spent` unable to pass it; an estimate that was not an upper bound shows up here);
- citation accuracy: citations in the report that map to a source backing a claim;
- claim integrity: claims whose quote is still at its byte span in the stored chunks;
- re-read confirmation rate: confirmed / (confirmed + unsupported) among grounding checks;
- contradiction precision: contradiction edges a labelled pairs file agrees with (only with a
  file: without ground truth there is nothing to measure against);
- cost per accepted claim, and spend by role."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from mole_dag.budget import Ledger
from mole_dag.evals.checks import citation_validity, claim_integrity
from mole_dag.store import Store
from mole_dag.verifier.graph import normalized


class LabelsError(ValueError):
    pass


@dataclass(frozen=True)
class Metric:
    name: str
    value: float | None
    display: str
    reason: str | None = None  # why it could not be computed, when value is None
    detail: str | None = None


def _pct(num: int, den: int) -> float:
    return 100.0 * num / den


def _fmt(amount: float, unit: str) -> str:
    return f"${amount / 1_000_000:.6f}" if unit == "usd_micros" else f"{amount:.1f} tokens"


def load_labels(path: Path) -> list[tuple[str, str, str]]:
    """Labelled pairs: a JSON list (or JSON lines) of {"a": ..., "b": ..., "label": ...}, where a
    and b are claim ids or claim texts and label is contradicts | duplicate_of | neither."""
    try:
        raw = path.read_text("utf-8")
    except OSError as exc:
        raise LabelsError(f"cannot read the labelled pairs file {path}: {exc.strerror}") from None
    try:
        items = json.loads(raw)
    except json.JSONDecodeError:
        try:
            items = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise LabelsError(
                f"{path}: not JSON or JSON lines ({exc.msg}, line {exc.lineno})"
            ) from None
    if not isinstance(items, list):
        raise LabelsError(f"{path}: expected a list of {{a, b, label}} objects")
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict) or not {"a", "b", "label"} <= it.keys():
            raise LabelsError(f"{path}: item {i} needs keys a, b and label")
        label = str(it["label"]).strip().lower()
        if label not in ("contradicts", "duplicate_of", "neither"):
            raise LabelsError(
                f"{path}: item {i} has label {label!r}; use contradicts, duplicate_of or neither"
            )
        out.append((str(it["a"]), str(it["b"]), label))
    return out


def scorecard(store: Store, session_id: str, labels: Path | None = None) -> list[Metric]:
    ledger = Ledger(store)
    bal = ledger.balance(session_id)
    unit = str(bal.unit)
    metrics: list[Metric] = []

    beyond = max(0, bal.spent + bal.overrun - bal.total)
    over = _pct(beyond, bal.total)
    metrics.append(
        Metric(
            "budget_overshoot_pct",
            over,
            f"{over:.1f}%",
            detail=f"spent {_fmt(bal.charged, unit)} of {_fmt(bal.total, unit)} "
            f"(overrun {_fmt(bal.overrun, unit)} included)",
        )
    )

    cit = citation_validity(store, session_id)
    if cit.report_id is None:
        metrics.append(
            Metric(
                "citation_accuracy_pct",
                None,
                "n/a",
                reason="no report has been written for this session",
            )
        )
    elif cit.citations == 0:
        metrics.append(
            Metric(
                "citation_accuracy_pct",
                None,
                "n/a",
                reason="the report cites nothing (no finding survived)",
            )
        )
    else:
        v = _pct(cit.valid, cit.citations)
        metrics.append(
            Metric(
                "citation_accuracy_pct",
                v,
                f"{v:.1f}%",
                detail=f"{cit.valid}/{cit.citations} citations resolve"
                + (f"; forged {cit.forged}" if cit.forged else "")
                + (f"; unsupported {cit.unsupported}" if cit.unsupported else ""),
            )
        )

    integ = claim_integrity(store, session_id)
    if integ.claims == 0:
        metrics.append(
            Metric("claim_integrity_pct", None, "n/a", reason="the session has no claims")
        )
    else:
        v = _pct(integ.intact, integ.claims)
        metrics.append(
            Metric(
                "claim_integrity_pct",
                v,
                f"{v:.1f}%",
                detail=f"{integ.intact}/{integ.claims} quotes re-found at their span",
            )
        )

    g = {
        r["outcome"]: int(r["n"])
        for r in store.named("grounding_counts", {"session_id": session_id})
    }
    decisive = g.get("confirmed", 0) + g.get("unsupported", 0)
    if decisive == 0:
        others = ", ".join(f"{k} {v}" for k, v in sorted(g.items())) or "none"
        metrics.append(
            Metric(
                "reread_confirmation_pct",
                None,
                "n/a",
                reason=f"no re-read reached a decisive outcome (checks: {others})",
            )
        )
    else:
        v = _pct(g.get("confirmed", 0), decisive)
        metrics.append(
            Metric(
                "reread_confirmation_pct",
                v,
                f"{v:.1f}%",
                detail=f"{g.get('confirmed', 0)} confirmed, {g.get('unsupported', 0)} unsupported",
            )
        )

    metrics.append(_contradiction_precision(store, session_id, labels))

    claims = int(store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [session_id]))
    if claims == 0:
        metrics.append(
            Metric("cost_per_accepted_claim", None, "n/a", reason="no claim was accepted")
        )
    else:
        per = bal.charged / claims
        metrics.append(
            Metric(
                "cost_per_accepted_claim",
                per,
                _fmt(per, unit),
                detail=f"{_fmt(bal.charged, unit)} over {claims} claims",
            )
        )

    by_role = ledger.spend_by_role(session_id)
    metrics.append(
        Metric(
            "spend_by_role",
            float(sum(int(r["spent"]) for r in by_role)),
            "; ".join(
                f"{r['role']} {_fmt(int(r['spent']), unit)} ({r['calls']} calls)" for r in by_role
            )
            or "no calls",
        )
    )
    return metrics


def _contradiction_precision(store: Store, session_id: str, labels: Path | None) -> Metric:
    name = "contradiction_precision_pct"
    if labels is None:
        return Metric(
            name,
            None,
            "n/a",
            reason="needs a labelled pairs file (--pairs FILE): precision without "
            "ground truth would be a guess",
        )
    truth: dict[frozenset[str], str] = {}
    for a, b, label in load_labels(labels):
        truth[frozenset((a, b))] = label
        truth[frozenset((normalized(a), normalized(b)))] = label
    edges = store.named("contradiction_edges_with_text", {"session_id": session_id})
    judged = 0
    right = 0
    for e in edges:
        found = truth.get(frozenset((e["src_claim_id"], e["dst_claim_id"]))) or truth.get(
            frozenset((normalized(e["src_text"]), normalized(e["dst_text"])))
        )
        if found is None:
            continue
        judged += 1
        right += found == "contradicts"
    if not edges:
        return Metric(name, None, "n/a", reason="the session has no contradiction edges")
    if judged == 0:
        return Metric(
            name,
            None,
            "n/a",
            reason=f"none of the {len(edges)} contradiction edges is in the labels",
        )
    v = _pct(right, judged)
    return Metric(
        name,
        v,
        f"{v:.1f}%",
        detail=f"{right}/{judged} labelled contradiction edges are contradictions "
        f"({len(edges) - judged} unlabelled)",
    )


def as_json(metrics: list[Metric], session_id: str) -> str:
    return json.dumps({"session": session_id, "metrics": [asdict(m) for m in metrics]}, indent=2)


def as_text(metrics: list[Metric], session_id: str) -> str:
    lines = [f"scorecard for session {session_id}"]
    for m in metrics:
        tail = f"  ({m.reason})" if m.value is None else (f"  ({m.detail})" if m.detail else "")
        lines.append(f"  {m.name:<30} {m.display}{tail}")
    return "\n".join(lines) + "\n"
