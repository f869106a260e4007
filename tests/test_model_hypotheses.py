"""The model-backed hypothesis skill: the model sees the profile (names, types, roles, counts)
and never a row value; its answer is parsed into template and column names, which the boundary
then looks up and refuses when unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from survey_data import row_level_markers, survey_csv  # noqa: F401 - fixture

from mole_dag.core import Unit
from mole_dag.llm.provider import Tier
from mole_dag.llm.registry import DEFAULT_TIERS
from mole_dag.local_data.connector import Dataset
from mole_dag.local_data.hypothesis import CATALOGUE, resolve
from mole_dag.local_data.prompts import parse_hypotheses
from mole_dag.local_data.refusal import Reason, Refused
from mole_dag.skills.view import HypothesisChoice
from mole_dag.skillsets import skills_for
from tests.model_server import ModelServer, Reply, claude_message, scripted

STRONG = DEFAULT_TIERS["anthropic"][Tier.STRONG]


def test_model_chooses_from_the_profile_only(survey_csv: Path) -> None:  # noqa: F811
    with Dataset.open(survey_csv) as ds:
        view = ds.view("Does income differ by region?", CATALOGUE, 4)
        group = view.visible("group")[0].name
        measure = view.visible("measure")[0].name
        answer = {
            "choices": [
                {"template": "mean_by_group", "columns": {"group": group, "value": measure}},
                {"template": "count_by_group", "columns": {"group": 'x"; DROP TABLE t; --'}},
                {"template": "no_such_template", "columns": {}},
            ]
        }
        reply = Reply(
            200,
            claude_message(json.dumps(answer), input_tokens=400, output_tokens=60, model=STRONG),
        )
        with ModelServer(scripted([reply])) as server:
            skills = skills_for(
                "anthropic", {"anthropic": {"api_key": "k", "base_url": server.url}}
            )
            got = skills.hypothesize(view, Unit.TOKENS)
            sent = server.received[0]
        assert got.cost == 460 and got.model == STRONG
        assert sent.json["model"] == STRONG  # strong tier, like planning
        prompt = sent.user
        assert group in prompt and measure in prompt and "withheld" in prompt
        for marker in row_level_markers():  # no value from any row reaches the model
            assert marker not in prompt and marker not in sent.system
        assert [c.template for c in got.value] == [
            "mean_by_group",
            "count_by_group",
            "no_such_template",
        ]
        # Whatever the model wrote is only ever looked up: unknown names are refused.
        template, cols = resolve(got.value[0], ds)
        assert template.info.name == "mean_by_group" and cols["group"].name == group
        with pytest.raises(Refused) as bad_column:
            resolve(got.value[1], ds)
        assert bad_column.value.reason == Reason.UNKNOWN_COLUMN
        with pytest.raises(Refused) as bad_template:
            resolve(got.value[2], ds)
        assert bad_template.value.reason == Reason.UNKNOWN_TEMPLATE


def test_parse_salvages_truncated_answers() -> None:
    from mole_dag.skills.view import ProfileView

    view = ProfileView("q", "f.csv", 10, (), CATALOGUE, 3)
    text = (
        '{"choices": [{"template": "count_by_group", "columns": {"group": "region"}}, '
        '{"template": "mean_by_group", "columns": {"group": "reg'
    )
    assert parse_hypotheses(text, view) == [HypothesisChoice("count_by_group", {"group": "region"})]
