"""Dead ends: what a lead or a source produced instead of text, recorded with a cause from a fixed
vocabulary. Here, in the store layer, because the executor, mining and the local-data stage all
record them."""

from __future__ import annotations

from typing import Any

from mole_dag.core import DeadEnd, stable_id
from mole_dag.redaction import redact, redact_known
from mole_dag.store.base import utcnow
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
            # A detail is an exception's message (a search API's URL with its key as a
            # parameter, a server's error body): no secret in it is stored.
            "url": redact_known(dead.url) if dead.url else dead.url,
            "cause": str(dead.cause),
            "detail": redact(dead.detail or "")[:500] or None,
            "now": utcnow(),
        },
    )
