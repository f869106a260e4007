"""Toolkit mode: the deterministic half of mole, for an agent whose own model does the reasoning.

Each function here is a pure function of its arguments (no model, no network, no store), checks
its untrusted input against the caps below, and raises BadInput with what was wrong and what to
send instead. The caps are guesses, flagged as such: large enough for a long paper's extracted
text, small enough that one call cannot make the server hold or return hundreds of megabytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mole_dag.actors.quote import QuoteRejected, find_quote
from mole_dag.chunk import DEFAULT_MAX_BYTES, chunk_text
from mole_dag.core import MIN_QUOTE_CHARS, EdgeKind, SourceClass
from mole_dag.publisher import paper_key, publisher_of, registrable_domain
from mole_dag.verifier.confidence import ClaimNode, derive
from mole_dag.verifier.source_class import class_of

MAX_TEXT_CHARS = 1_000_000  # chunk's text and find_quote's source_text
MAX_QUOTE_CHARS = 10_000
MIN_CHUNK_BYTES = 8  # chunk_bytes's own floor: a UTF-8 character is up to 4 bytes
MAX_CHUNK_BYTES = 1_000_000
MAX_URL_CHARS = 2048
MAX_ID_CHARS = 256  # claim ids, publishers and paper identifiers
MAX_CLAIMS = 5_000
MAX_EDGES = 50_000

SOURCE_CLASSES = tuple(str(c) for c in SourceClass)
EDGE_KINDS = tuple(str(k) for k in EdgeKind)


class BadInput(ValueError):
    """Input a tool refuses; the message says what was wrong and what to send."""


def _text(name: str, value: Any, cap: int, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{name} must be a string, got {type(value).__name__}")
    if len(value) > cap:
        raise BadInput(
            f"{name} has {len(value):,} characters; the cap is {cap:,}: split it "
            "and send the parts in separate calls"
        )
    if not empty_ok and not value.strip():
        raise BadInput(f"{name} is empty")
    return value


def chunk(text: str, max_bytes: int | None = None) -> dict[str, Any]:
    """Contiguous byte-offset spans of the UTF-8 text; their concatenation is the text."""
    _text("text", text, MAX_TEXT_CHARS, empty_ok=True)
    size = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if isinstance(size, bool) or not isinstance(size, int):
        raise BadInput(f"max_bytes must be a whole number, got {max_bytes!r}")
    if not MIN_CHUNK_BYTES <= size <= MAX_CHUNK_BYTES:
        raise BadInput(
            f"max_bytes must be between {MIN_CHUNK_BYTES} and {MAX_CHUNK_BYTES:,} "
            f"(a UTF-8 character is up to 4 bytes), got {size}"
        )
    spans = chunk_text(text, size)
    return {
        "bytes": len(text.encode("utf-8")),
        "max_bytes": size,
        "chunks": [
            {
                "ordinal": s.ordinal,
                "byte_start": s.byte_start,
                "byte_end": s.byte_end,
                "text": s.text,
            }
            for s in spans
        ],
    }


def quote(source_text: str, quote_text: str) -> dict[str, Any]:
    """Where the quote is in the source (whitespace collapsed, otherwise exact), or why not."""
    _text("source_text", source_text, MAX_TEXT_CHARS)
    _text("quote", quote_text, MAX_QUOTE_CHARS, empty_ok=True)
    try:
        got = find_quote(source_text, quote_text)
    except QuoteRejected as exc:
        return {
            "found": False,
            "rejected": True,
            "reason": exc.cause,
            "detail": str(exc),
            "min_quote_chars": MIN_QUOTE_CHARS,
        }
    if got is None:
        return {
            "found": False,
            "rejected": False,
            "reason": "quote_not_found",
            "detail": "the quote does not occur in the source, even with whitespace "
            "collapsed; copy it verbatim (no paraphrase, no changed characters)",
        }
    span = source_text.encode("utf-8")[got.byte_start : got.byte_end].decode("utf-8")
    return {
        "found": True,
        "byte_start": got.byte_start,
        "byte_end": got.byte_end,
        "occurrences": got.occurrences,
        "text": span,
    }


def publisher(
    url: str,
    doi: str | None = None,
    pmid: str | None = None,
    pmcid: str | None = None,
    arxiv_id: str | None = None,
) -> dict[str, Any]:
    """The publisher key a source counts under, and its source class."""
    _text("url", url, MAX_URL_CHARS, empty_ok=True)
    ids = {"doi": doi, "pmid": pmid, "pmcid": pmcid, "arxiv_id": arxiv_id}
    for name, value in ids.items():
        if value is not None:
            _text(name, value, MAX_ID_CHARS)
    clean = {k: (v.strip() if v else None) for k, v in ids.items()}
    if not url.strip() and not any(clean.values()):
        raise BadInput("give a url, or at least one of doi, pmid, pmcid, arxiv_id")
    if any(ch.isspace() for ch in url.strip()):
        raise BadInput("url contains whitespace; send one URL (or host name)")
    key = publisher_of(url.strip(), **clean)
    return {
        "publisher": key,
        "source_class": str(class_of(url.strip(), **clean)),
        "registrable_domain": registrable_domain(url.strip()) if url.strip() else None,
        "paper": paper_key(**clean),
    }


def _field(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{where}: {key} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise BadInput(f"{where}: {key} has {len(value)} characters; the cap is {MAX_ID_CHARS}")
    return value


def confidence(
    claims: Sequence[Mapping[str, Any]],
    edges: Sequence[Mapping[str, Any]] | None = None,
    grounded: Mapping[str, bool] | None = None,
) -> dict[str, Any]:
    """Per-cluster confidence derived from the graph, each with its explanation."""
    edges = edges or []
    grounded = grounded or {}
    if not claims:
        raise BadInput("claims is empty: send at least one {id, publisher, source_class?}")
    if len(claims) > MAX_CLAIMS or len(edges) > MAX_EDGES:
        raise BadInput(
            f"at most {MAX_CLAIMS:,} claims and {MAX_EDGES:,} edges per call, got "
            f"{len(claims):,} and {len(edges):,}"
        )
    nodes: dict[str, ClaimNode] = {}
    for i, c in enumerate(claims):
        cid = _field(c, "id", f"claims[{i}]")
        if cid in nodes:
            raise BadInput(f"claims[{i}]: id {cid!r} appears twice; ids must be unique")
        raw_cls = c.get("source_class") or str(SourceClass.UNKNOWN)
        if raw_cls not in SOURCE_CLASSES:
            raise BadInput(
                f"claims[{i}]: source_class {raw_cls!r} is not one of "
                f"{', '.join(SOURCE_CLASSES)} (omit it for unknown, the weakest)"
            )
        nodes[cid] = ClaimNode(cid, _field(c, "publisher", f"claims[{i}]"), SourceClass(raw_cls))
    triples: list[tuple[str, str, str]] = []
    for i, e in enumerate(edges):
        src, dst = _field(e, "src", f"edges[{i}]"), _field(e, "dst", f"edges[{i}]")
        kind = e.get("kind")
        if kind not in EDGE_KINDS:
            raise BadInput(f"edges[{i}]: kind {kind!r} is not one of {', '.join(EDGE_KINDS)}")
        for end in (src, dst):
            if end not in nodes:
                raise BadInput(f"edges[{i}]: claim {end!r} is not among the claims sent")
        if src == dst:
            raise BadInput(f"edges[{i}]: an edge from {src!r} to itself means nothing")
        triples.append((src, dst, str(kind)))
    for cid, verdict in grounded.items():
        if cid not in nodes:
            raise BadInput(f"grounded: claim {cid!r} is not among the claims sent")
        if not isinstance(verdict, bool):
            raise BadInput(
                f"grounded[{cid!r}] must be true (a re-read confirmed it) or false "
                "(a re-read did not support it)"
            )
    scores = derive(list(nodes.values()), triples, dict(grounded))
    return {
        "clusters": [
            {
                "cluster_id": s.cluster_id,
                "members": list(s.members),
                "representative": s.representative,
                "confidence": s.confidence,
                "publishers": s.publishers,
                "contradicting_publishers": s.contradictors,
                "superseded": s.superseded,
                "grounded": s.grounded,
                "source_class": str(s.source_class),
                "explanation": s.explanation,
            }
            for s in scores
        ]
    }
