"""The judge prompt lists each claim of a batch once and names the pairs by number (issue 14:
the shared claim written into every pair was a third of a batched call's input), and every
judgement still gets both of its claims' whole text."""

from __future__ import annotations

import re

from mole_dag.verifier.prompts import JUDGE_SYSTEM, judge_call, judge_user

A = "Coffee drinkers had a lower risk of type 2 diabetes in a ten-year cohort study."
B = "Drinking coffee raised the risk of type 2 diabetes among older adults in Norway."
C = "Decaffeinated coffee showed the same association with diabetes as regular coffee."


def _parse(user: str) -> tuple[dict[str, str], list[tuple[int, str, str]]]:
    claims = dict(re.findall(r"^C(\d+): (.*)$", user, re.M))
    pairs = [(int(i), x, y) for i, x, y in re.findall(r"^(\d+): C(\d+) / C(\d+)$", user, re.M)]
    return claims, pairs


def test_each_claim_once_and_every_pair_resolves_to_its_texts() -> None:
    batch = [(A, B), (A, C), (C, B), (B, A)]
    user = judge_user(batch)
    claims, pairs = _parse(user)
    assert sorted(claims.values()) == sorted({A, B, C})
    for text in (A, B, C):
        assert user.count(text) == 1
    assert [(claims[x], claims[y]) for _, x, y in pairs] == batch  # order kept, per pair
    assert [i for i, _, _ in pairs] == list(range(len(batch)))


def test_a_claim_is_written_as_one_capped_line() -> None:
    long = "Coffee " + "and tea " * 200 + "\nwith a newline\x1b[31m in it."
    claims, pairs = _parse(judge_user([(long, A)]))
    assert len(pairs) == 1 and "\n" not in claims["1"] and "\x1b" not in claims["1"]
    assert len(claims["1"]) <= 600


def test_one_pair_call_and_the_output_bound() -> None:
    call = judge_call([(A, B)])
    assert call.system == JUDGE_SYSTEM and call.json and call.purpose == "judge"
    claims, pairs = _parse(call.messages[0].content)
    assert claims == {"1": A, "2": B} and pairs == [(0, "1", "2")]
    # The bound still leaves room for a rationale on every verdict of a batch.
    assert judge_call([(A, B)] * 8).max_tokens > judge_call([(A, B)]).max_tokens * 4
