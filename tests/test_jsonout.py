"""Salvaging a model's JSON answer item by item, and the prompt parsers built on it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.core import MAX_CLAIM_CHARS
from mole_dag.llm.jsonout import parse_items
from mole_dag.mining.prompts import parse_mine
from mole_dag.planner.prompts import LATER_ROUND_SUB_QUESTIONS, parse_plan, plan_call
from mole_dag.skills.protocol import Digest
from mole_dag.verifier.prompts import (
    GROUND_SYSTEM,
    MAX_PASSAGE_CHARS,
    ground_call,
    parse_ground,
    parse_judge,
)

_claim = st.fixed_dictionaries(
    {
        "text": st.text(max_size=40),
        "quote": st.text(max_size=40),
    }
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_claim, max_size=6), st.sampled_from([", ", ",\n  ", ","]), st.booleans(), st.data()
)
def test_every_truncation_keeps_exactly_the_complete_items(
    claims: list[dict], sep: str, ascii_only: bool, data: st.DataObject
) -> None:
    head = '{"claims": ['
    parts, ends, pos = [], [], len(head)
    for i, c in enumerate(claims):
        item = json.dumps(c, ensure_ascii=ascii_only)
        pos += (len(sep) if i else 0) + len(item)
        parts.append(item)
        ends.append(pos)
    full = head + sep.join(parts) + "]}"
    whole = parse_items(full, "claims")
    assert whole.items == claims and whole.complete
    cut = data.draw(st.integers(0, len(full)))
    got = parse_items(full[:cut], "claims").items
    # Exactly the items whose closing brace made it into the text, in order.
    assert got == [c for c, e in zip(claims, ends, strict=True) if e <= cut]


def test_code_fence_and_preamble() -> None:
    text = 'Here you go:\n```json\n{"claims": [{"text": "a", "quote": "b"}]}\n```\nDone.'
    assert parse_items(text, "claims").items == [{"text": "a", "quote": "b"}]


def test_bare_array_and_wrong_key() -> None:
    assert parse_items('[{"text": "x"}]', "claims").items == [{"text": "x"}]
    got = parse_items('{"results": [{"text": "x"}]}', "claims")
    assert got.items == [] and got.complete


def test_non_objects_and_garbage_are_dropped() -> None:
    assert parse_items('{"claims": [1, "two", {"text": "ok"}, null]}', "claims").items == [
        {"text": "ok"}
    ]
    assert parse_items("I could not find any claims.", "claims").items == []
    assert parse_items("", "claims").items == []


def test_truncated_inside_a_string_with_braces() -> None:
    text = '{"claims": [{"text": "a {b} [c]", "quote": "q1"}, {"text": "x }], {", "quo'
    got = parse_items(text, "claims")
    assert got.items == [{"text": "a {b} [c]", "quote": "q1"}]
    assert got.salvaged


def test_parse_mine_caps_text_and_uses_quote_when_text_missing() -> None:
    long = "word " * 200
    text = json.dumps(
        {
            "claims": [
                {"text": long, "quote": "a quote that is long enough to check"},
                {"quote": "only a quote given by the model here"},
                {"text": "no quote at all"},
                {"text": 42, "quote": None},
            ]
        }
    )
    drafts = parse_mine(text)
    assert len(drafts[0].text) == MAX_CLAIM_CHARS
    assert drafts[1].text == "only a quote given by the model here"
    assert drafts[2].quote == ""  # kept, so the miner counts it as discarded for no quote
    assert len(drafts) == 3


def test_parse_judge_keeps_valid_first_indices() -> None:
    text = json.dumps(
        {
            "verdicts": [
                {
                    "index": 0,
                    "relation": "contradicts",
                    "subject": "green tea",
                    "attribute": "effect on sleep",
                    "values": ["disturbs it", "improves it"],
                    "rationale": "opposite",
                },
                {"index": "1", "relation": "supports"},
                {"index": 0, "relation": "neither"},  # a second verdict for 0 is ignored
                {"index": 7, "relation": "neither"},  # out of range
                {"index": True, "relation": "neither"},
                {"relation": "neither"},
                {"index": 2},
            ]
        }
    )
    got = parse_judge(text, 3)
    assert [(v.index, v.relation) for v in got] == [(0, "contradicts"), (1, "supports")]


def test_parse_plan_dedupes_caps_and_defaults_query() -> None:
    digest = Digest(question="q", round=2, sub_questions=(("Old one?", 3),))
    text = json.dumps(
        {
            "sub_questions": [
                {"text": "old ONE?", "query": "x"},
                {"text": "New one?"},
                {"text": "New one?", "query": "dup"},
                {"text": "  "},
                {"text": "Second?", "query": "second"},
                {"text": "Third?", "query": "third"},
                {"text": "Fourth?", "query": "fourth"},
            ]
        }
    )
    got = parse_plan(text, digest)
    assert [(p.text, p.query) for p in got] == [
        ("New one?", "New one?"),
        ("Second?", "second"),
        ("Third?", "third"),
    ]
    assert len(got) == LATER_ROUND_SUB_QUESTIONS


def test_plan_prompt_carries_counts_and_dead_ends_by_sub_question() -> None:
    digest = Digest(
        question="Does tea help?",
        round=2,
        sub_questions=(("Tea and sleep?", 0),),
        dead_ends=(("no_results", 2),),
        contradictions=1,
        budget_left=12_345,
        unit="usd_micros",
        dead_ends_by_sub_question=(("Tea and sleep?", "no_results", 2),),
    )
    user = plan_call(digest).messages[0].content
    assert "- Tea and sleep? (0 claims)" in user
    assert "- no_results: 2" in user
    assert "- Tea and sleep?: no_results x2" in user
    assert "Contradictions found: 1" in user and "$0.0123" in user


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ('{"verdict": "supported", "rationale": "same figures"}', "supported"),
        ('```json\n{"verdict": "Unsupported", "rationale": "different year"}\n```', "unsupported"),
        ('Sure. {"verdict": "undecided"}', "undecided"),
        ('{"verdict": "supported", "rationale": "the passage sa', "supported"),  # cut off
        ('{"verdict": "maybe"}', "undecided"),
        ("The passage supports it.", "undecided"),
        ("", "undecided"),
    ],
)
def test_parse_ground(text: str, verdict: str) -> None:
    assert parse_ground(text).verdict == verdict


def test_ground_call_caps_and_fences_the_passage() -> None:
    from mole_dag.skills.protocol import GroundRequest

    call = ground_call(GroundRequest("c" * 5000, "p" * 10_000))
    user = call.messages[0].content
    assert user.count("c") <= MAX_CLAIM_CHARS + 1
    assert "p" * MAX_PASSAGE_CHARS in user
    assert "p" * (MAX_PASSAGE_CHARS + 1) not in user
    assert "<passage>" in user and call.tier == "cheap" and call.system == GROUND_SYSTEM
