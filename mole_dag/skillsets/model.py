"""The Skills protocol answered by a language model through a provider.

Each skill builds its Call once (each stage's `prompts` module), so the estimate and the call
are made from the same request: the estimate is the price of the provider's input-token bound
plus the `max_tokens` that request carries, which is an upper bound by construction. The cost is
the price of the usage the provider reported. In a USD session a model without a price is refused
by the estimate, which runs before the reservation and so before any call."""

from __future__ import annotations

import logging
from dataclasses import replace

from mole_dag.core import ClaimDraft, Unit
from mole_dag.llm.pricing import PriceTable
from mole_dag.llm.provider import Call, Completion, EmptyOutput, Provider, Tier
from mole_dag.local_data.prompts import hypothesize_call, parse_hypotheses
from mole_dag.mining.prompts import mine_call, parse_mine
from mole_dag.output.prompts import parse_write, write_call
from mole_dag.planner.prompts import parse_plan, plan_call
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
from mole_dag.skills.unreadable import unreadable_items
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.verifier.prompts import ground_call, judge_call, parse_ground, parse_judge

log = logging.getLogger("mole.llm")


class ModelSkills:
    uses_model = True

    def __init__(
        self,
        provider: Provider,
        prices: PriceTable,
        *,
        name: str | None = None,
        judge_model: str | None = None,
    ) -> None:
        self.provider = provider
        self.prices = prices
        self.name = name or provider.name
        # Adjudication decides whether two sentences can both be true, and its errors corrupt
        # confidence, disputes and three eval metrics: a model too dear to mine with can be
        # affordable to judge with. None keeps the cheap tier's model.
        self.judge_model = judge_model

    def __repr__(self) -> str:
        return f"ModelSkills({self.name}, {self.provider!r})"

    # -- metering ---------------------------------------------------------------------------

    def models(self) -> dict[Tier, str]:
        return {t: self.provider.model_for(t) for t in Tier}

    def check_priced(self, unit: Unit) -> None:
        """Raise UnpricedModel if a USD session could not price one of the models it may use."""
        if unit == Unit.USD_MICROS:
            for model in [
                *self.models().values(),
                *([self.judge_model] if self.judge_model else []),
            ]:
                self.prices.require(model)

    def _judge_call(self, pairs: list[tuple[str, str]]) -> Call:
        call = judge_call(pairs)
        return replace(call, model=self.judge_model) if self.judge_model else call

    def estimate(self, call: Call, unit: Unit) -> int:
        model = call.model or self.provider.model_for(call.tier)
        return self.prices.bound(
            model, self.provider.input_token_bound(call), call.max_tokens, unit
        )

    def _complete(self, call: Call, unit: Unit) -> tuple[Completion, int]:
        bound = self.estimate(call, unit)  # an unpriced model fails here, before the call
        try:
            done = self.provider.complete(call)
        except EmptyOutput as exc:
            exc.actual = (
                self.prices.cost(exc.model, exc.usage, unit) if exc.usage_reported else bound
            )
            raise
        # A server that did not say what it used is charged the bound: the most it could have.
        cost = self.prices.cost(done.model, done.usage, unit) if done.usage_reported else bound
        log.debug(
            "%s %s on %s: %d in (+%d cache read, +%d cache write), %d out, cost %d %s%s",
            self.name,
            call.purpose,
            done.model,
            done.usage.input_tokens,
            done.usage.cache_read_tokens,
            done.usage.cache_write_tokens,
            done.usage.output_tokens,
            cost,
            unit,
            " (truncated)" if done.truncated else "",
        )
        return done, cost

    # -- the four skills --------------------------------------------------------------------

    def estimate_plan(self, digest: Digest, unit: Unit) -> int:
        return self.estimate(plan_call(digest), unit)

    def plan(self, digest: Digest, unit: Unit) -> Metered[list[PlannedQuestion]]:
        done, cost = self._complete(plan_call(digest), unit)
        return Metered(
            parse_plan(done.text, digest),
            cost,
            done.usage,
            done.model,
            unreadable_items(done.text, "sub_questions"),
        )

    def estimate_mine(self, req: MineRequest, unit: Unit) -> int:
        return self.estimate(mine_call(req), unit)

    def mine(self, req: MineRequest, unit: Unit) -> Metered[list[ClaimDraft]]:
        done, cost = self._complete(mine_call(req), unit)
        return Metered(
            parse_mine(done.text),
            cost,
            done.usage,
            done.model,
            unreadable_items(done.text, "claims"),
        )

    def estimate_judge(self, pairs: list[tuple[str, str]], unit: Unit) -> int:
        return self.estimate(self._judge_call(pairs), unit)

    def judge(self, pairs: list[tuple[str, str]], unit: Unit) -> Metered[list[Verdict]]:
        done, cost = self._complete(self._judge_call(pairs), unit)
        return Metered(
            parse_judge(done.text, len(pairs)),
            cost,
            done.usage,
            done.model,
            unreadable_items(done.text, "verdicts"),
        )

    def estimate_write(self, req: WriteRequest, unit: Unit) -> int:
        return self.estimate(write_call(req), unit)

    def write(self, req: WriteRequest, unit: Unit) -> Metered[WrittenAnswer]:
        done, cost = self._complete(write_call(req), unit)
        got = parse_write(done.text)
        # Unreadable: no sentence and no decision could be read from it (a cut-off answer
        # that kept its whole sentences was read).
        lost = got.problem if got.answered and not got.sentences else ""
        return Metered(got, cost, done.usage, done.model, lost)

    def estimate_ground(self, req: GroundRequest, unit: Unit) -> int:
        return self.estimate(ground_call(req), unit)

    def ground(self, req: GroundRequest, unit: Unit) -> Metered[GroundVerdict]:
        done, cost = self._complete(ground_call(req), unit)
        return Metered(parse_ground(done.text), cost, done.usage, done.model)

    # -- local data ---------------------------------------------------------------------------

    def estimate_hypothesize(self, view: ProfileView, unit: Unit) -> int:
        return self.estimate(hypothesize_call(view), unit)

    def hypothesize(self, view: ProfileView, unit: Unit) -> Metered[list[HypothesisChoice]]:
        done, cost = self._complete(hypothesize_call(view), unit)
        return Metered(parse_hypotheses(done.text, view), cost, done.usage, done.model)
