"""Issue 31, item 4: the model judge is asked the same way as the extractive one. The prompt
asks for the subject, the attribute and the two values of a contradiction and keeps unrelated
pairs as no edge; a reply that says "contradicts" without naming them is no edge, and one that
names them gives a rationale that shows them. The replies are recorded answers of a model,
replayed by the simulated server (tests/model_server.py); the session cassette's disputes are
checked in tests/test_cassette_graph.py."""

from __future__ import annotations

import json

from mole_dag.core import Unit
from mole_dag.skillsets import skills_for
from mole_dag.verifier.judge import parse_verdicts
from mole_dag.verifier.prompts import JUDGE_SYSTEM, parse_judge
from mole_dag.verifier.retriever import Pair
from tests.model_server import ModelServer, Reply, claude_message, scripted

BIB_A = "R package version 2.4-1, URL http://CRAN.R-project.org/package=pumpkin."
BIB_B = "R package version 1.0-3, URL http://CRAN.R-project.org/package=squash."
TALL_A = "The Rhine bridge is 330 metres long."
TALL_B = "The Rhine bridge is 300 metres long."


def test_the_prompt_asks_for_the_frame_and_keeps_unrelated_as_no_edge() -> None:
    for asked in ('"subject"', '"attribute"', '"values"', "same subject", "same attribute"):
        assert asked in JUDGE_SYSTEM
    assert "unrelated" in JUDGE_SYSTEM and 'When in doubt, "neither"' in JUDGE_SYSTEM
    assert "cited works" in JUDGE_SYSTEM and "places" in JUDGE_SYSTEM


def test_a_contradiction_that_names_no_frame_is_no_edge() -> None:
    reply = json.dumps(
        {
            "verdicts": [
                {"index": 0, "relation": "contradicts", "rationale": "different versions"},
                {
                    "index": 1,
                    "relation": "contradicts",
                    "subject": "x",
                    "attribute": "y",
                    "values": ["same", "same"],
                },
                {"index": 2, "relation": "unrelated"},
            ]
        }
    )
    got = parse_judge(reply, 3)
    assert [v.relation for v in got] == ["neither", "neither", "unrelated"]
    assert "without naming subject, attribute and both values" in got[0].rationale


def test_a_named_contradiction_shows_its_frame() -> None:
    reply = json.dumps(
        {
            "verdicts": [
                {
                    "index": 0,
                    "relation": "contradicts",
                    "subject": "the Rhine bridge",
                    "attribute": "length",
                    "values": ["330 metres", "300 metres"],
                    "rationale": "two lengths for one bridge",
                }
            ]
        }
    )
    (v,) = parse_judge(reply, 1)
    assert v.relation == "contradicts"
    assert v.rationale == (
        "subject: the Rhine bridge; attribute: length; values: 330 metres vs 300 metres; "
        "two lengths for one bridge"
    )


def _judged(body: dict) -> list[tuple[str, str]]:
    """The verdicts a model's recorded reply gives, through the Anthropic provider, the
    judge's parser and the relation normaliser."""
    reply = Reply(
        200, claude_message(json.dumps(body), input_tokens=100, output_tokens=40, model="m")
    )
    with ModelServer(scripted([reply])) as server:
        skills = skills_for("anthropic", {"anthropic": {"api_key": "k", "base_url": server.url}})
        pairs = [(BIB_A, BIB_B), (TALL_A, TALL_B)]
        got = skills.judge(pairs, Unit.TOKENS)
    batch = [Pair("a", "b"), Pair("c", "d")]
    return [(j.relation, j.rationale) for j in parse_verdicts(got, batch, "m").judged]


def test_through_the_provider_only_a_shown_dispute_is_an_edge() -> None:
    got = _judged(
        {
            "verdicts": [
                {"index": 0, "relation": "contradicts", "rationale": "1.3-17 vs 1.2-2"},
                {
                    "index": 1,
                    "relation": "contradicts",
                    "subject": "Rhine bridge",
                    "attribute": "length",
                    "value_a": "330 metres",
                    "value_b": "300 metres",
                },
            ]
        }
    )
    assert got[0][0] == "neither"
    assert got[1] == (
        "contradicts",
        "subject: Rhine bridge; attribute: length; values: 330 metres vs 300 metres",
    )
