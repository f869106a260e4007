"""A configured judge model: adjudication calls go to it (and are priced by it), every other
skill keeps its tier's model; a USD session refuses an unpriced judge model before any call."""

from __future__ import annotations

import json

import pytest

from mole_dag.core import Unit
from mole_dag.llm.pricing import UnpricedModel
from mole_dag.llm.provider import Tier
from mole_dag.llm.registry import DEFAULT_TIERS
from mole_dag.skills.protocol import Digest
from mole_dag.skillsets import skills_for
from tests.model_server import ModelServer, Reply, claude_message, scripted


def _verdicts(n: int) -> Reply:
    body = {"verdicts": [{"index": i, "relation": "neither"} for i in range(n)]}
    return Reply(
        200,
        claude_message(json.dumps(body), input_tokens=100, output_tokens=20, model="judge-model-x"),
    )


def test_judge_calls_use_the_judge_model_and_its_price() -> None:
    plan = Reply(
        200,
        claude_message(
            json.dumps({"sub_questions": []}),
            input_tokens=50,
            output_tokens=5,
            model="claude-sonnet-4-5",
        ),
    )
    with ModelServer(scripted([_verdicts(2), plan])) as server:
        cfg = {
            "anthropic": {"api_key": "k", "base_url": server.url, "judge_model": "judge-model-x"},
            "pricing": {"judge-model-x": {"input": 100, "output": 1000}},
        }
        skills = skills_for("anthropic", cfg)
        pairs = [
            ("a claim of some length here", "another claim of some length"),
            ("third claim text goes here", "fourth claim text goes here"),
        ]
        est = skills.estimate_judge(pairs, Unit.USD_MICROS)
        got = skills.judge(pairs, Unit.USD_MICROS)
        skills.plan(Digest("q?", 2), Unit.USD_MICROS)
        sent = [r.json["model"] for r in server.received]
    # The plan goes to the strong tier's default model, whatever it is today.
    assert sent == ["judge-model-x", DEFAULT_TIERS["anthropic"][Tier.STRONG]]
    # 100 input tokens at $100/M and 20 output at $1000/M: 10_000 + 20_000 micro-dollars.
    assert got.cost == 30_000 and got.model == "judge-model-x"
    assert est >= got.cost


def test_unpriced_judge_model_is_refused_in_usd() -> None:
    cfg = {
        "anthropic": {
            "api_key": "k",
            "base_url": "http://127.0.0.1:9",
            "judge_model": "nobody-priced-this",
        }
    }
    skills = skills_for("anthropic", cfg)
    with pytest.raises(UnpricedModel):
        skills.check_priced(Unit.USD_MICROS)
    skills.check_priced(Unit.TOKENS)  # tokens need no price
