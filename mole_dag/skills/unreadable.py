"""Model replies a stage could not read, recorded so the report can say why it is thin.

A reply that is prose where JSON was asked for parses to nothing, and the call is settled like
any other: without a record, the report read "the planner proposed nothing to search for" when
the planner had proposed things in a form nobody could read (issue 29)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from mole_dag.llm.jsonout import first_object, parse_items
from mole_dag.store import q

# What the report calls each skill's replies.
STAGE_NAMES = {
    "plan": "planner",
    "mine": "mining",
    "judge": "judging",
    "write": "writer",
    "ground": "grounding",
    "hypothesize": "local-data",
}


def unreadable_items(text: str, key: str) -> str:
    """Why a reply that should hold a JSON list under `key` cannot be read, '' when it can: an
    empty list is an answer ("nothing to propose"), prose or another shape is not."""
    got = parse_items(text, key)
    if got.items:
        return ""
    obj = first_object(text)
    if isinstance(obj.get(key), list):
        return ""
    if got.complete and not obj:
        return ""  # a bare, empty JSON array
    if not text.strip():
        return "an empty reply"
    if obj:
        return f'JSON without the "{key}" list asked for'
    return "no readable JSON in the reply"


def write_unreadable(
    cur: Any, session_id: str, found: Iterable[tuple[str, str]], now: datetime
) -> None:
    """Record (skill, problem) pairs in the stage's own transaction."""
    rows = list(found)
    if rows:
        cur.execute(
            q("unreadable_reply_insert_many"),
            {
                "session_id": session_id,
                "skill": [s for s, _ in rows],
                "problem": [p[:300] for _, p in rows],
                "now": now,
            },
        )
