"""Dead ends: what a lead or a source produced instead of text, recorded with a cause from a fixed
vocabulary. Here, in the store layer, because the executor, mining and the local-data stage all
record them."""

from __future__ import annotations

from typing import Any

from mole_dag.core import DeadEnd, stable_id
from mole_dag.store.db import utcnow
from mole_dag.store.queries import q


def store_dead_end(
    cur: Any, session_id: str, dead: DeadEnd, *, sub_question_id: str | None, lead_id: str | None
) -> None:
    cur.execute(
        q("dead_end_insert"),
        {
            "id": stable_id(
                session_id,
                lead_id or "",
                dead.url or "",
                str(dead.cause),
                utcnow().isoformat(),
                prefix="de-",
            ),
            "session_id": session_id,
            "sub_question_id": sub_question_id,
            "lead_id": lead_id,
            "url": dead.url,
            "cause": str(dead.cause),
            "detail": (dead.detail or "")[:500] or None,
            "now": utcnow(),
        },
    )
