"""What every stage receives: the store, the ledger, the skills, and which session it is for."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from mole_dag.budget import Ledger
from mole_dag.core import Unit
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

    def session(self) -> SessionRow:
        row = self.store.one(SessionRow, q("session_get"), {"session_id": self.session_id})
        if row is None:
            raise LookupError(f"no session {self.session_id!r} in {self.store.path}")
        return row

    @property
    def unit(self) -> Unit:
        return self.session().unit
