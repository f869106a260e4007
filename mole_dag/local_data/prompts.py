"""The hypothesis prompt over a data file's profile, and the parser for its answer (the
boundary: mole_dag.skills.prompting)."""

from __future__ import annotations

from mole_dag.llm.jsonout import parse_items, string_field
from mole_dag.llm.provider import Call, Message, Tier
from mole_dag.skills.prompting import flat, label
from mole_dag.skills.view import HypothesisChoice, ProfileView

HYPOTHESIZE_SYSTEM = """\
You choose analyses of a user's table that would help answer their research question. You see \
only the table's profile: column names, types, roles and counts, never a row. Pick from the \
templates listed, filling each slot with the NAME of a column whose roles include the role the \
slot asks for. Do not use columns marked withheld. Invent no templates and no columns: anything \
not listed is refused.

Reply with JSON only, no prose: {"choices": [{"template": "name", "columns": {"slot": \
"column name"}, "buckets": 5}]} ("buckets" only for templates that bucket a measure)."""


HYPOTHESIZE_MAX_TOKENS = 600


def hypothesize_call(view: ProfileView) -> Call:
    cols = []
    for c in view.columns:
        if c.withheld:
            cols.append(f"- {label(c.name, 80)}: withheld ({label(c.withheld, 80)})")
        else:
            cols.append(
                f"- {label(c.name, 80)}: {c.type}, roles {', '.join(c.roles) or 'none'}, "
                f"{c.distinct} distinct, {c.null_rate:.0%} empty"
            )
    temps = [
        f"- {t.name}: slots "
        + ", ".join(f"{slot} ({role})" for slot, role in t.slots)
        + f". {flat(t.description, 200)}"
        for t in view.templates
    ]
    user = (
        f"Question: {flat(view.question, 600)}\n"
        f"Table: {label(view.file, 120)}, {view.rows} rows\n"
        "Columns:\n" + "\n".join(cols) + "\n"
        "Templates:\n" + "\n".join(temps) + "\n"
        f"Choose at most {view.max_choices}."
    )
    return Call(
        Tier.STRONG,
        (Message("user", user),),
        HYPOTHESIZE_MAX_TOKENS,
        system=HYPOTHESIZE_SYSTEM,
        json=True,
        purpose="hypothesize",
    )


def parse_hypotheses(text: str, view: ProfileView) -> list[HypothesisChoice]:
    """Choices as written; the boundary looks every name up and refuses what it does not know,
    so nothing here needs to be trusted. Malformed items are dropped, truncated output salvaged."""
    out: list[HypothesisChoice] = []
    for item in parse_items(text, "choices").items[: view.max_choices]:
        template = string_field(item, "template")
        columns = item.get("columns") if isinstance(item, dict) else None
        if not template or not isinstance(columns, dict):
            continue
        named = {str(k): str(v) for k, v in columns.items() if isinstance(v, str | int | float)}
        buckets = item.get("buckets")
        out.append(
            HypothesisChoice(
                template,
                named,
                buckets if isinstance(buckets, int) and not isinstance(buckets, bool) else None,
            )
        )
    return out
