"""A scripted stand-in for a model: deterministic answers, real (nonzero) prices, call records.
Lets tests drive the model-only paths (confirm pass, budget shares, grounding verdicts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mole_dag.budget import Usage
from mole_dag.core import Unit
from mole_dag.skills.protocol import GroundRequest, GroundVerdict, Metered, Verdict
from mole_dag.skillsets.extractive import ExtractiveSkills

JudgeFn = Callable[[str, str, int], str]  # (a, b, call number) -> relation


@dataclass
class ScriptedSkills(ExtractiveSkills):
    """Plans, mines and writes like the extractive provider; judges and grounds by script, and
    charges `price` per call (estimate = price + `estimate_margin`)."""

    judge_fn: JudgeFn | None = None
    ground_verdict: str = "supported"
    price: int = 10
    estimate_margin: int = 5
    judge_calls: list[list[tuple[str, str]]] = field(default_factory=list)
    ground_calls: list[GroundRequest] = field(default_factory=list)
    drop_last_verdict: bool = False

    name = "scripted"
    uses_model = True

    def estimate_judge(self, pairs: list[tuple[str, str]], unit: Unit) -> int:
        return self.price + self.estimate_margin

    def judge(self, pairs: list[tuple[str, str]], unit: Unit) -> Metered[list[Verdict]]:
        self.judge_calls.append(list(pairs))
        n = len(self.judge_calls)
        fn = self.judge_fn or (lambda a, b, k: "neither")
        out = [Verdict(i, fn(a, b, n), "scripted") for i, (a, b) in enumerate(pairs)]
        if self.drop_last_verdict and out:
            out = out[:-1]
        return Metered(
            out,
            cost=self.price,
            usage=Usage(input_tokens=100, output_tokens=20),
            model="scripted-judge",
        )

    def estimate_ground(self, req: GroundRequest, unit: Unit) -> int:
        return self.price + self.estimate_margin

    def ground(self, req: GroundRequest, unit: Unit) -> Metered[GroundVerdict]:
        self.ground_calls.append(req)
        return Metered(
            GroundVerdict(self.ground_verdict, "scripted"), cost=self.price, model="scripted-ground"
        )
