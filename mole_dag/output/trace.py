"""`mole trace`: how the graph reached its numbers. Clusters, edges and who decided them, scores
with their derivation, follow-ups with the contradiction that caused them, grounding outcomes.
Every string from a page is one-lined and stripped of controls before it reaches a terminal."""

from __future__ import annotations

from mole_dag.sanitize import one_line
from mole_dag.store import Store

CLAIM_WIDTH = 110


def _short(text: str, width: int = CLAIM_WIDTH) -> str:
    t = one_line(text)
    return t if len(t) <= width else t[: width - 1] + "…"


def render_trace(store: Store, session_id: str) -> str:
    p = {"session_id": session_id}
    out: list[str] = [f"trace of session {session_id}", ""]

    rows = store.named("trace_clusters", p)
    # The page each claim from a PDF was quoted from (issue 19).
    pages = {r["claim_id"]: int(r["page"]) for r in store.named("claim_pages", p)}

    def at(claim_id: str) -> str:
        return f" (p. {pages[claim_id]})" if claim_id in pages else ""

    clusters: dict[str, list[dict]] = {}
    for r in rows:
        clusters.setdefault(r["cluster_id"], []).append(r)
    out.append(f"clusters ({len(clusters)}; {len(rows)} claims)")
    for members in clusters.values():
        rep = members[0]
        pubs = sorted({m["publisher"] for m in members})
        out.append(
            f"  {rep['confidence']:.2f}  {rep['claim_id']}{at(rep['claim_id'])}  "
            f"{_short(rep['text'])}"
        )
        out.append(f"        {one_line(rep['explanation'])}")
        rel = rep["relevance"]
        out.append(
            "        relevance "
            + (
                f"{rel:.2f}: {one_line(rep['relevance_explanation'])}"
                if rel is not None
                else "not scored"
            )
        )
        if len(members) > 1:
            out.append(
                f"        {len(members)} claims from {len(pubs)} publishers: " + ", ".join(pubs)
            )
            for m in members[1:]:
                out.append(f"        = {m['claim_id']}{at(m['claim_id'])} ({m['publisher']})")
    out.append("")

    # Where each source's class and publisher came from (issue 31): a local document's are read
    # from the document itself; a web page's from its URL.
    sources = store.named("trace_sources", p)
    out.append(f"sources ({len(sources)})")
    for s in sources:
        out.append(
            f"  {s['source_class']:<13} {_short(s['title'] or s['url'], 70)}  "
            f"publisher {one_line(s['publisher'])}, {s['claims']} claims"
        )
        out.append(
            "        "
            + (
                _short(s["origin"], 160)
                if s["origin"]
                else "class and publisher from its address (" + _short(s["url"], 80) + ")"
            )
        )
    out.append("")

    edges = store.named("trace_edges", p)
    out.append(f"edges ({len(edges)})")
    for e in edges:
        conf = {True: ", confirmed", False: ", NOT confirmed", None: ""}[e["confirmed"]]
        arrow = "->" if e["kind"] == "supersedes" else "--"
        out.append(
            f"  {e['kind']:<12} {e['src_claim_id']} {arrow} {e['dst_claim_id']}  "
            f"by {e['created_by']}{conf}: {_short(e['rationale'] or '', 80)}"
        )
    counts = store.named("trace_verdict_counts", p)
    if counts:
        out.append(
            "  verdicts: "
            + "; ".join(
                f"{c['relation']} by {c['decided_by']}"
                + ({True: " (confirmed)", False: " (unconfirmed)", None: ""}[c["confirmed"]])
                + f" x{c['n']}"
                for c in counts
            )
        )
    out.append("")

    fus = store.named("trace_follow_ups", p)
    out.append(f"follow-ups ({len(fus)})")
    for f in fus:
        out.append(
            f"  depth {f['depth']} [{f['status']}] {one_line(f['query'])!r}  "
            f"because {f['because']} (root {f['root_claim_id']})"
        )
    out.append("")

    ground = store.named("trace_grounding", p)
    out.append(f"grounding ({len(ground)})")
    for g in ground:
        paid = "" if g["paid_by"] == session_id else f", paid by {g['paid_by']}"
        out.append(
            f"  {g['outcome']:<15} {g['claim_id']}  {one_line(g['note'] or '')} "
            f"({g['decided_by']}{paid}, {g['checked_at']:%Y-%m-%d %H:%M})"
        )
    return "\n".join(out) + "\n"
