"""The four things the pipeline asks of a mind: plan, mine, judge, write.

Two implementations: the model-free `extractive` one (the offline default) and one that prompts a
language model through a provider. Stages depend on this protocol only, so the budget, quote
check and claim graph treat both alike. Every call is priced in the session's unit, and every
estimate is an upper bound, so the ledger can reserve it before the call is made."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from mole_dag.budget import Usage
from mole_dag.core import ClaimDraft, Unit
from mole_dag.llm.fanout import Keep
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.text import TermStats

T = TypeVar("T")


@dataclass(frozen=True)
class Metered(Generic[T]):
    """A skill's answer with what it cost, in the session's unit."""

    value: T
    cost: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    # Why the model's reply could not be read ('' when it could): an answered, paid call whose
    # answer was lost. The stage records it (mole_dag.skills.unreadable) for the report.
    unreadable: str = ""


def keep_list(item: type[Any]) -> Keep[Metered[list[Any]]]:
    """How a stage keeps an answer that is a list of `item` dataclasses (mining's drafts, the
    judge's verdicts): as JSON, made again at no cost with the model that answered."""

    def encode(got: Metered[list[Any]]) -> str:
        items = [asdict(x) for x in got.value]
        return json.dumps({"model": got.model, "items": items, "unreadable": got.unreadable})

    def decode(text: str) -> Metered[list[Any]]:
        data = json.loads(text)
        return Metered(
            [item(**x) for x in data["items"]],
            model=data["model"],
            unreadable=data.get("unreadable", ""),
        )

    return Keep(encode, decode)


@dataclass(frozen=True)
class Digest:
    """What the planner may see: wording it wrote itself and counts. Never page text, so there
    is nothing from a page to inject into the planning prompt."""

    question: str
    round: int
    sub_questions: tuple[tuple[str, int], ...] = ()  # (sub-question wording, claims found)
    dead_ends: tuple[tuple[str, int], ...] = ()  # (cause, count)
    contradictions: int = 0
    budget_left: int = 0
    unit: str = ""
    # (sub-question wording, dead-end cause, count): which sub-questions keep hitting walls.
    dead_ends_by_sub_question: tuple[tuple[str, str, int], ...] = ()
    # The local corpus's dominant terms, given only to the model-free planner and only for a
    # broad question ("What do the sources say?"): a model planner sees no page-derived words.
    corpus_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlannedQuestion:
    text: str
    query: str
    # False for a sub-question that only groups findings and runs no search: a broad question's
    # own ("What do the sources say?" names no topic to search for; its topics do).
    search: bool = True


@dataclass(frozen=True)
class MineRequest:
    question: str
    sub_question: str
    chunk: str
    title: str = ""
    # Term weights over every page the session has read, for the model-free miner's relevance
    # (mole_dag/mining/relevance.py); a model miner reads meaning instead and ignores them.
    stats: TermStats | None = None


@dataclass(frozen=True)
class Verdict:
    index: int
    relation: str  # contradicts | duplicate_of | neither (retired names normalised by the caller)
    rationale: str = ""


@dataclass(frozen=True)
class FindingForWriter:
    """One finding as the writer sees it: its number in the report and the source's own words.
    No source numbers: the writer names findings, and the project renders the citations."""

    number: int  # the finding's number in the report (#n)
    text: str  # the stored quote, whitespace collapsed: what the source said
    confidence: float
    relevance: float = 0.0
    sub_question: str = ""  # the report section the finding sits in
    disputed: bool = False
    superseded: bool = False
    # Holds the kind of answer asked for, from a source about what the question names, with
    # enough of the question's words (mole_dag.output.answered): what the model-free writer
    # quotes first. A model writer reads the findings and decides for itself.
    answers: bool = False
    # How many independent publishers state it (the claim graph's duplicates across sources):
    # what the sources agree on, which the model-free writer states first.
    publishers: int = 1


@dataclass(frozen=True)
class WriteRequest:
    question: str
    findings: tuple[FindingForWriter, ...]
    # The lexical decision (mole_dag.output.answered): whether any finding answers the
    # question. The model-free writer follows it; a model writer makes its own.
    answered: bool = True


@dataclass(frozen=True)
class BoundSentence:
    """A sentence of the answer paragraph and the findings (by number) that support it."""

    text: str
    findings: tuple[int, ...]


@dataclass(frozen=True)
class WrittenAnswer:
    """What a writer returns: sentences bound to findings, never citations or free prose.
    `problem` says why an answer could not be read (no JSON, cut off), '' when it could."""

    sentences: tuple[BoundSentence, ...]
    problem: str = ""
    # False when the writer finds that the findings do not answer the question: then it writes
    # no sentence, and the report says so and cites nothing.
    answered: bool = True


@dataclass(frozen=True)
class GroundRequest:
    """Does this passage (re-read from the source just now) support the claim?"""

    claim: str
    passage: str


GROUND_VERDICTS = ("supported", "unsupported", "undecided")


@dataclass(frozen=True)
class GroundVerdict:
    verdict: str  # one of GROUND_VERDICTS
    rationale: str = ""


class Skills(Protocol):
    name: str
    uses_model: bool

    def estimate_plan(self, digest: Digest, unit: Unit) -> int: ...
    def plan(self, digest: Digest, unit: Unit) -> Metered[list[PlannedQuestion]]: ...

    def estimate_mine(self, req: MineRequest, unit: Unit) -> int: ...
    def mine(self, req: MineRequest, unit: Unit) -> Metered[list[ClaimDraft]]: ...

    def estimate_judge(self, pairs: list[tuple[str, str]], unit: Unit) -> int: ...
    def judge(self, pairs: list[tuple[str, str]], unit: Unit) -> Metered[list[Verdict]]: ...

    def estimate_write(self, req: WriteRequest, unit: Unit) -> int: ...
    def write(self, req: WriteRequest, unit: Unit) -> Metered[WrittenAnswer]: ...

    def estimate_ground(self, req: GroundRequest, unit: Unit) -> int: ...
    def ground(self, req: GroundRequest, unit: Unit) -> Metered[GroundVerdict]: ...

    # Local data: the view holds names, types, counts and roles, never a row value; the answer
    # is template names and column names, which the boundary looks up (mole_dag/local_data).
    def estimate_hypothesize(self, view: ProfileView, unit: Unit) -> int: ...
    def hypothesize(self, view: ProfileView, unit: Unit) -> Metered[list[HypothesisChoice]]: ...
