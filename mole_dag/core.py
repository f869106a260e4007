"""Shared types: roles, budget units, edge kinds, dead-end causes, and the records that move
between stages before they are stored (rows read back are in store/records.py). Every enum here
mirrors a CHECK constraint in sql/migrations, so a value the code can name is a value the schema
accepts, and nothing else."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Any

# Limits the schema enforces too (sql/migrations/0001_init.sql, claims): the one Python copy of
# each, read by every stage that trims or checks; tests/test_shared_limits.py compares them with
# the applied CHECKs.
# The longest claim text the claims table accepts.
MAX_CLAIM_CHARS = 600
# A three-word quote matches almost any document by chance; 24 collapsed characters is roughly
# four or five words, the shortest span that still identifies a passage.
MIN_QUOTE_CHARS = 24
# The longest question accepted (mole_dag.launch: every front door), in characters, after
# control sequences are removed and whitespace collapsed. A guess, flagged as one, chosen from
# what reaches a model: the planning, mining and writing prompts carry the first 1,000
# characters of the question, and the model-free planner's search is the question's words;
# twice that leaves room for a question that states its setting at length, while a pasted
# document (130,000 bytes took 29 s of CPU and was echoed whole) is refused instead of being
# cut where nobody sees it.
MAX_QUESTION_CHARS = 2000


class Role(StrEnum):
    """Which stage spent the money. Spend by stage is then a GROUP BY, not archaeology."""

    PLANNER = "planner"
    EXECUTOR = "executor"
    VERIFIER = "verifier"
    OUTPUT = "output"


class Unit(StrEnum):
    """A session's budget unit, chosen at creation. Money is integer micro-USD: float
    accumulation drifts over thousands of calls."""

    USD_MICROS = "usd_micros"
    TOKENS = "tokens"


class SessionStatus(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    REPORTING = "reporting"
    DONE = "done"
    FAILED = "failed"
    ABANDONED = "abandoned"
    # Stopped by its budget: a provider overran a call's allowance, or the budget could not
    # pay for the first call. Finished (with whatever report it could write), not resumable.
    EXHAUSTED = "exhausted"
    # Stopped by a signal or a dead process before finishing; `mole resume` continues it.
    INTERRUPTED = "interrupted"


class CallStatus(StrEnum):
    RESERVED = "reserved"
    SETTLED = "settled"
    RELEASED = "released"
    EXPIRED = "expired"


class LeadStatus(StrEnum):
    PENDING = "pending"
    LEASED = "leased"
    DONE = "done"
    DEAD = "dead"


class EdgeKind(StrEnum):
    """Edges the graph stores. `neither` is a verdict, never an edge."""

    CONTRADICTS = "contradicts"
    DUPLICATE_OF = "duplicate_of"
    SUPERSEDES = "supersedes"


class DeadEndCause(StrEnum):
    """Why a lead or a source produced nothing. A fixed enum so the planner's digest is counts
    of known causes, never page-derived text."""

    NO_RESULTS = "no_results"
    FETCH_FAILED = "fetch_failed"
    ROBOTS = "robots"
    TOO_LARGE = "too_large"
    WRONG_TYPE = "wrong_type"
    JS_REQUIRED = "js_required"
    NO_TEXT = "no_text"
    NO_CLAIMS = "no_claims"
    SSRF_REFUSED = "ssrf_refused"
    RATE_LIMITED = "rate_limited"
    BUDGET_EXHAUSTED = "budget_exhausted"
    TIMEOUT = "timeout"
    UNREADABLE = "unreadable"
    # A PDF that cannot be read (issue 19), each named so `mole show` says which: encrypted with
    # a password, damaged or truncated, no text layer (a scan; mole does no OCR), more pages
    # than the cap, slower to read than the time cap, streams that inflate past the cap.
    PDF_ENCRYPTED = "pdf_encrypted"
    PDF_CORRUPT = "pdf_corrupt"
    PDF_NO_TEXT = "pdf_no_text"
    PDF_TOO_MANY_PAGES = "pdf_too_many_pages"
    PDF_TOO_SLOW = "pdf_too_slow"
    PDF_BOMB = "pdf_bomb"
    # A bug of ours (an unexpected exception), not the outside world failing: its traceback is
    # in the log, and `mole show` counts it apart.
    INTERNAL_ERROR = "internal_error"


@dataclass(frozen=True)
class DeadEnd:
    """A lead or source that produced nothing, and why."""

    cause: DeadEndCause
    url: str | None = None
    detail: str | None = None


class SourceClass(StrEnum):
    """How much a publisher's word weighs on its own. Unknown is the default and the weakest,
    so an unrecognised source understates confidence rather than inventing it."""

    PEER_REVIEWED = "peer-reviewed"
    PRIMARY = "primary"
    SECONDARY = "secondary"
    LOCAL = "local"
    UNKNOWN = "unknown"


def stable_id(*parts: str, prefix: str = "") -> str:
    """A short deterministic id, so re-running a stage over the same input names rows the same."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]
    return f"{prefix}{digest}"


def columns(rows: Iterable[Mapping[str, Any]], keys: Iterable[str]) -> dict[str, list[Any]]:
    """Rows as one list per column: the parameters of a multi-row statement in sql/queries
    (`..._many`, INSERT ... SELECT unnest($col), ...). A row missing a key is a bug, not a NULL,
    so it raises KeyError; every list has the same length, which unnest() needs to zip them."""
    rows = list(rows)
    return {k: [r[k] for r in rows] for k in keys}


@dataclass
class Document:
    """One retrieved document, as an actor sees it. `text` is raw and dies with the actor:
    only chunks, quotes and metadata persist."""

    url: str
    title: str
    text: str
    publisher: str | None = None
    author: str | None = None
    published: date | None = None
    doi: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    arxiv_id: str | None = None
    provider_supplied: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    # A PDF's pages: the UTF-8 byte offset in `text` where each page starts, page 1 first (issue
    # 19). Empty for a document without pages. Stored as the source's page map, so every claim
    # knows its page.
    pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class ClaimDraft:
    """What a miner proposes. It becomes a claim (a `claims` row; store/records.py reads it
    back as a ClaimRow) only if its quote is found verbatim."""

    text: str
    quote: str
    # How well the claim answers the question, as the miner graded it: 0 (not at all) .. 3
    # (states the answer). A model miner returns it with each claim; None when none was given.
    grade: int | None = None


def json_object(value: Any) -> dict[str, Any]:
    """A decoded JSON object, or an empty one for anything else: an outside API's shape is not
    trusted, and a missing or mistyped member reads as absent."""
    return value if isinstance(value, dict) else {}
