"""The `extractive` provider: plans, mines, judges and writes without a language model.

The offline default, and the baseline every model is measured against. It costs nothing and
says so: every report it writes states it was made without a language model. Its judgements
are heuristics, flagged as such in what it writes. Each rule lives with the stage that owns it:
- plan: mole_dag.planner.extractive (the question, its parts, a broad question's corpus topics);
- mine: mole_dag.mining.extractive (the most relevant sentences of a chunk, quoted verbatim);
- judge and ground: mole_dag.verifier.extractive (word-overlap heuristics);
- write: mole_dag.output.extractive (the most relevant findings' quotes);
- hypothesize: mole_dag.local_data.choose_extractive (column-name overlap).
This module wires them into the skills protocol."""

from __future__ import annotations

from mole_dag.core import ClaimDraft, Unit
from mole_dag.local_data.choose_extractive import choose_hypotheses
from mole_dag.mining.extractive import mine_sentences
from mole_dag.output.extractive import write_body
from mole_dag.planner.extractive import plan_questions
from mole_dag.skills.protocol import (
    Digest,
    GroundRequest,
    GroundVerdict,
    Metered,
    MineRequest,
    PlannedQuestion,
    Verdict,
    WriteRequest,
    WrittenAnswer,
)
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.verifier.extractive import ground_claim, judge_pair

NAME = "extractive"


class ExtractiveSkills:
    """Model-free skills. Every estimate and cost is zero, in any unit."""

    name = NAME
    uses_model = False

    def estimate_plan(self, digest: Digest, unit: Unit) -> int:
        return 0

    def plan(self, digest: Digest, unit: Unit) -> Metered[list[PlannedQuestion]]:
        # It plans once: without reading pages (which the planner must never do) there is
        # nothing new for a model-free planner to ask in a later round.
        planned = plan_questions(digest.question, digest.corpus_topics) if digest.round == 1 else []
        return Metered(planned, model=NAME)

    def estimate_mine(self, req: MineRequest, unit: Unit) -> int:
        return 0

    def mine(self, req: MineRequest, unit: Unit) -> Metered[list[ClaimDraft]]:
        return Metered(mine_sentences(req), model=NAME)

    def estimate_judge(self, pairs: list[tuple[str, str]], unit: Unit) -> int:
        return 0

    def judge(self, pairs: list[tuple[str, str]], unit: Unit) -> Metered[list[Verdict]]:
        out = []
        for i, (a, b) in enumerate(pairs):
            v = judge_pair(a, b)
            out.append(Verdict(i, v.relation, v.rationale))
        return Metered(out, model=NAME)

    def estimate_write(self, req: WriteRequest, unit: Unit) -> int:
        return 0

    def write(self, req: WriteRequest, unit: Unit) -> Metered[WrittenAnswer]:
        return Metered(write_body(req), model=NAME)

    def estimate_ground(self, req: GroundRequest, unit: Unit) -> int:
        return 0

    def ground(self, req: GroundRequest, unit: Unit) -> Metered[GroundVerdict]:
        return Metered(ground_claim(req), model=NAME)

    # Local data: model-free hypothesis choice, by column-name overlap with the question.
    def estimate_hypothesize(self, view: ProfileView, unit: Unit) -> int:
        return 0

    def hypothesize(self, view: ProfileView, unit: Unit) -> Metered[list[HypothesisChoice]]:
        return Metered(choose_hypotheses(view), model=NAME)
