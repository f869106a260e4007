"""The model-free hypothesis chooser: the extractive provider's answer to "which questions should
we ask of this data?".

It reads the profile view only (names, types, roles, counts) and ranks columns by how many
content words their names share with the research question, then by their order in the file. A
heuristic, flagged as one: it asks the standard questions of the most relevant columns (a
measure by the most relevant category, an outcome's share by category, two measures'
correlation, a distribution), not the clever ones a model might."""

from __future__ import annotations

import re

from mole_dag.skills.view import (
    BINARY,
    GROUP,
    MEASURE,
    ColumnView,
    HypothesisChoice,
    ProfileView,
)
from mole_dag.text import terms

_SPLIT = re.compile(r"[_\W]+|(?<=[a-z])(?=[A-Z])")


def _name_terms(name: str) -> set[str]:
    return set(terms(" ".join(p for p in _SPLIT.split(name) if p)))


def _ranked(view: ProfileView, role: str, want: set[str]) -> list[ColumnView]:
    order = {c.name: i for i, c in enumerate(view.columns)}
    cols = view.visible(role)

    def key(c: ColumnView) -> tuple[int, int, int]:
        relevance = len(_name_terms(c.name) & want)
        if role == GROUP:
            # A named category (text, yes/no) reads better as a group than a numeric code.
            secondary = 0 if c.type in {"text", "boolean"} else 1
        elif role == MEASURE:
            # A quantity with many values before a rating with a handful.
            secondary = 0 if GROUP not in c.roles else 1
        else:
            secondary = 0
        return (-relevance, secondary, order[c.name])

    return sorted(cols, key=key)


def choose_hypotheses(view: ProfileView) -> list[HypothesisChoice]:
    want = set(terms(view.question))
    groups = _ranked(view, GROUP, want)
    measures = _ranked(view, MEASURE, want)
    binaries = _ranked(view, BINARY, want)
    out: list[HypothesisChoice] = []

    def add(choice: HypothesisChoice) -> None:
        if choice not in out and len(out) < view.max_choices:
            out.append(choice)

    category_groups = [g for g in groups if BINARY not in g.roles] or groups
    if category_groups and measures:
        add(
            HypothesisChoice(
                "mean_by_group", {"group": category_groups[0].name, "value": measures[0].name}
            )
        )
    if binaries and category_groups:
        outcome = binaries[0]
        group = next((g for g in category_groups if g.name != outcome.name), None)
        if group is not None:
            add(
                HypothesisChoice(
                    "proportion_by_group", {"group": group.name, "outcome": outcome.name}
                )
            )
    if len(measures) >= 2:
        add(HypothesisChoice("correlation", {"x": measures[0].name, "y": measures[1].name}))
    if len(category_groups) >= 2 and measures:
        add(
            HypothesisChoice(
                "median_by_group", {"group": category_groups[1].name, "value": measures[0].name}
            )
        )
    if category_groups:
        add(HypothesisChoice("count_by_group", {"group": category_groups[0].name}))
    if measures:
        add(HypothesisChoice("distribution", {"value": measures[0].name}, buckets=5))
    return out
