"""What a fan-out pass is: its calls (`Job`), their outcomes, where they are paid from
(`Pass`, `Allowance`), how a paid answer is kept so it is never paid for twice, and the record
of a pass as it ran. Both ways of running a pass (mole_dag.llm.fanout one at a time,
mole_dag.llm.concurrent_pass concurrently) settle their calls here."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from mole_dag.budget import BudgetExhausted, Hold, Ledger, Usage
from mole_dag.core import Role
from mole_dag.llm.provider import ModelCallFailed
from mole_dag.store import q, utcnow

if TYPE_CHECKING:
    from mole_dag.llm.concurrency import Watch

log = logging.getLogger("mole.fanout")


class Paid(Protocol):
    """What a call returns (a skill's Metered answer): what it cost, what it used, which model."""

    @property
    def cost(self) -> int: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def model(self) -> str: ...


P = TypeVar("P", bound=Paid)


@dataclass(frozen=True)
class Job(Generic[P]):
    """One call: its estimate (an upper bound, reserved before dispatch) and the call. `key`
    names the work the call does (a lead's chunk, a batch of pairs) when its pass keeps
    answers (Pass.keep): a paid answer is then stored with its settlement, and a pass that
    asks for the same work again is handed it instead of paying for it twice."""

    estimate: int
    call: Callable[[], P]
    key: str = ""


@dataclass(frozen=True)
class Keep(Generic[P]):
    """How a pass keeps its paid answers (issue 29: a resume after SIGTERM paid again for
    mining done before the signal, whose answers were waiting in memory for a slower call to
    be applied in plan order). `encode` makes a stored text of an answer; `decode` makes the
    answer again from it, at no cost (it was paid for when it was asked)."""

    encode: Callable[[P], str]
    decode: Callable[[str], P]


class Status(StrEnum):
    DONE = "done"  # answered and settled
    FAILED = "failed"  # the model call failed (released, or settled if it was paid for)
    REFUSED = "refused"  # the budget refused it: never sent
    NOT_SENT = "not_sent"  # after a refusal that stopped the pass: never sent


@dataclass
class Outcome(Generic[P]):
    index: int
    status: Status
    value: P | None = None
    error: ModelCallFailed | None = None
    # The ledger's refusal; None for a refusal by the stage's own allowance.
    refusal: BudgetExhausted | None = None


class Allowance:
    """A stage's own cap on what it spends, on top of the ledger's (the verifier's share of the
    budget, grounding's part of the escrow). A call fits when what was spent plus the estimates
    in flight plus its own estimate stays within the cap; a free call always fits."""

    def __init__(self, cap: int, spent: int = 0) -> None:
        self.cap = cap
        self.spent = spent
        self.pending = 0
        self._lock = threading.Lock()

    def fits(self, estimate: int) -> bool:
        with self._lock:
            return estimate <= 0 or self.spent + self.pending + estimate <= self.cap

    def take(self, estimate: int) -> None:
        with self._lock:
            self.pending += estimate

    def done(self, estimate: int, cost: int) -> None:
        with self._lock:
            self.pending -= estimate
            self.spent += cost


@dataclass(frozen=True)
class Pass:
    """Where a fan-out's calls are paid from and how they are labelled."""

    ledger: Ledger
    session_id: str
    role: Role
    stage: str  # the ledger's stage (mined_claims, claim_edges, grounding)
    tool: str  # the ledger's tool, e.g. "anthropic:mine"
    label: str  # the pass, for progress lines and the throttling record: mining, judging, ...
    parallel: int = 1
    progress: Callable[[str], None] | None = None
    allowance: Allowance | None = None
    # After a final refusal: stop (nothing after it is sent) or skip that call and go on.
    stop_on_refusal: bool = True
    # Keep each paid answer with its settlement, so the same work asked again is not paid twice.
    keep: Keep[Any] | None = None


@dataclass(frozen=True)
class PassRecord:
    """One pass as it ran: for benchmarks and logs (PASSES)."""

    label: str
    stage: str
    parallel: int
    calls: int  # calls sent (answered or failed)
    refused: int
    seconds: float
    max_in_flight: int
    refusals: int  # 429/529 answers met by the pass's calls
    lowest: int
    throttled_s: float


# The passes this process ran, newest last (a benchmark reads them; bounded for long processes).
PASSES: deque[PassRecord] = deque(maxlen=1000)


def kept_answers(p: Pass, jobs: Sequence[Job[P]]) -> dict[int, P]:
    """The jobs whose answers an earlier run of the pass paid for and kept, by index: handed
    out again, free, instead of being asked again."""
    keys = sorted({j.key for j in jobs if j.key})
    if p.keep is None or not keys:
        return {}
    rows = p.ledger.store.named(
        "call_answers_kept", {"session_id": p.session_id, "stage": p.stage, "keys": keys}
    )
    stored = {r["call_key"]: r["answer"] for r in rows}
    return {i: p.keep.decode(stored[j.key]) for i, j in enumerate(jobs) if j.key in stored}


def settle_call(h: Hold, got: Paid, p: Pass, key: str) -> None:
    """Settle a call at what it cost; a paid answer its pass keeps is stored in the same
    transaction (paid and kept, or neither)."""
    also = None
    if p.keep is not None and key and got.cost > 0:
        answer = p.keep.encode(got)

        def also(cur: Any) -> None:
            cur.execute(
                q("call_answer_keep"),
                {
                    "session_id": p.session_id,
                    "stage": p.stage,
                    "call_key": key,
                    "call_id": h.reservation.id,
                    "answer": answer,
                    "now": utcnow(),
                },
            )

    h.settle(got.cost, usage=got.usage, model=got.model or None, also=also)


def paid_cost(exc: BaseException) -> int:
    return int(getattr(exc, "actual", None) or 0)


def record_throttling(p: Pass, watch: Watch, seconds: float) -> None:
    """Store what the provider's refusals did to this pass, for `mole show`."""
    now = utcnow()
    params = {
        "session_id": p.session_id,
        "stage": p.stage,
        "label": p.label,
        "parallel": watch.parallel,
        "lowest": watch.lowest,
        "rate_limited": watch.refusals.get(429, 0),
        "overloaded": watch.refusals.get(529, 0),
        "throttled_s": round(watch.throttled_s, 3),
        "pass_s": round(seconds, 3),
        "now": now,
    }
    try:
        p.ledger.store.transact(lambda cur: cur.execute(q("throttling_insert"), params))
    except Exception:
        # A record about the session, not the session's work: losing it must not lose the pass.
        log.exception(
            "session %s: could not record the %s pass's throttling", p.session_id, p.label
        )
