"""The invariants a finished session must satisfy, checked from the store alone: every claim's
quote is still at its byte span in the stored chunks, and every citation in the report maps to a
source that backs a claim. Used by the Dagster asset checks and by `mole eval`."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from mole_dag.actors.quote import collapse
from mole_dag.output.citations import cited_numbers
from mole_dag.store import Store, q
from mole_dag.store.records import ChunkRow, QuoteSpanRow


@dataclass
class IntegrityResult:
    claims: int
    intact: int
    broken: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.broken


def claim_integrity(store: Store, session_id: str) -> IntegrityResult:
    """Re-find every claim's quote in its stored chunks, at the byte span it was accepted at."""
    claims = store.many(QuoteSpanRow, q("integrity_claims"), {"session_id": session_id})
    by_source: dict[str, list[QuoteSpanRow]] = defaultdict(list)
    for c in claims:
        by_source[c.source_id].append(c)
    result = IntegrityResult(len(claims), 0)
    for source_id, group in by_source.items():
        chunks = store.many(ChunkRow, q("source_chunks"), {"source_id": source_id})
        data = "".join(ch.text for ch in chunks).encode("utf-8")
        for c in group:
            span = data[c.quote_byte_start : c.quote_byte_end]
            try:
                found = span.decode("utf-8")
            except UnicodeDecodeError:
                found = None
            if found is not None and collapse(found) == collapse(c.quote):
                result.intact += 1
            else:
                result.broken.append(c.id)
    return result


@dataclass
class CitationResult:
    report_id: str | None
    citations: int  # occurrences of [n] in the report
    valid: int
    forged: list[int] = field(default_factory=list)
    unsupported: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report_id is not None and not self.forged and not self.unsupported


def citation_validity(store: Store, session_id: str) -> CitationResult:
    """Every [n] in the latest report maps to a numbered source, and that source backs at least
    one claim of the session."""
    rep = store.row(q("report_latest"), {"session_id": session_id})
    if rep is None:
        return CitationResult(None, 0, 0)
    mapping = {
        r["number"]: r["source_id"]
        for r in store.named("report_citation_map", {"report_id": rep["id"]})
    }
    backing = {
        r["source_id"] for r in store.named("sources_with_claims", {"session_id": session_id})
    }
    # The Sources list itself ("[n] Title ...") is the map, not a use of it.
    body = rep["markdown"].split("\n## Sources", 1)[0]
    cited = cited_numbers(body)
    res = CitationResult(rep["id"], len(cited), 0)
    for n in cited:
        if n not in mapping:
            res.forged.append(n)
        elif mapping[n] not in backing:
            res.unsupported.append(n)
        else:
            res.valid += 1
    return res
