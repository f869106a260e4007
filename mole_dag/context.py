"""What every stage receives: the store, the ledger, the skills, and which session it is for."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mole_dag.budget import Ledger
from mole_dag.core import Role, Unit
from mole_dag.llm.fanout import Allowance, Keep, Pass, parallel_for
from mole_dag.skills.protocol import Skills
from mole_dag.store import Store, q
from mole_dag.store.records import SessionRow

log = logging.getLogger("mole")


def _log_progress(message: str) -> None:
    log.info(message)


@dataclass
class Run:
    store: Store
    ledger: Ledger
    skills: Skills
    session_id: str
    progress: Callable[[str], None] = field(default=_log_progress)
    # Model calls in flight at once (issue 20). None: the setting (`--parallel` through
    # MOLE_PARALLEL, else "parallel" in the config file, else 8).
    parallel: int | None = None

    def session(self) -> SessionRow:
        row = self.store.one(SessionRow, q("session_get"), {"session_id": self.session_id})
        if row is None:
            raise LookupError(f"no session {self.session_id!r} in {self.store.path}")
        return row

    @property
    def unit(self) -> Unit:
        return self.session().unit

    def fan(
        self,
        role: Role,
        stage: str,
        skill: str,
        label: str,
        *,
        allowance: Allowance | None = None,
        stop_on_refusal: bool = True,
        keep: Keep[Any] | None = None,
    ) -> Pass:
        """How a stage's independent calls of `skill` are made (mole_dag.llm.fanout): paid from
        this session, at most `parallel` at once with a model (one at a time without one, where
        calls are free and instant), with progress lines only when a model is called."""
        model = self.skills.uses_model
        return Pass(
            self.ledger,
            self.session_id,
            role,
            stage,
            f"{self.skills.name}:{skill}",
            label,
            parallel_for(model, self.parallel),
            self.progress if model else None,
            allowance,
            stop_on_refusal,
            keep,
        )
