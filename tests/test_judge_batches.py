"""Issue 33, item 6: the same work makes the same judge calls. Which claims share a judging
batch, and the order each pair is shown in, come from the session's data alone (its claims in
content order), not from which call finished first nor from the session's id (ids hash it, and
pairs were shown in id order): the demo at --parallel 8 and --parallel 1 judged the same pairs
at different output costs. Two sessions over one corpus, at 4 calls at once with the calls'
completion order shuffled and at 1, show the judge the same batches."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.session import create_session
from mole_dag.skills.protocol import Metered, Verdict
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

Batch = tuple[tuple[str, str], ...]


class Recording(ExtractiveSkills):
    """The extractive skills, recording every batch the judge is shown. With `shuffle`, each
    call takes a time drawn from its batch's text, so calls finish out of dispatch order."""

    def __init__(self, shuffle: bool) -> None:
        super().__init__()
        self.shuffle = shuffle
        self.batches: list[Batch] = []
        self._lock = threading.Lock()

    def judge(self, pairs: list[tuple[str, str]], unit: Unit) -> Metered[list[Verdict]]:
        batch = tuple(pairs)
        if self.shuffle:
            digest = hashlib.sha256(repr(batch).encode()).digest()
            time.sleep(digest[0] / 255 * 0.3)
        with self._lock:
            self.batches.append(batch)
        return super().judge(pairs, unit)


def _batches(tmp_path: Path, corpus: Path, name: str, parallel: int, shuffle: bool) -> list[Batch]:
    store = Store(tmp_path / f"{name}.duckdb")
    skills = Recording(shuffle)
    sid = create_session(
        store, "Does green tea affect sleep?", Unit.TOKENS, 50_000, corpus=str(corpus)
    ).session_id
    run_session(Run(store, Ledger(store), skills, sid, progress=lambda m: None, parallel=parallel))
    store.close()
    assert skills.batches, "nothing was judged"
    # Compared as a set of batches: the order calls are made in is the fan-out's business;
    # what each call is shown is the point.
    return sorted(skills.batches)


def test_judge_batches_do_not_depend_on_completion_order_or_session_id(
    tmp_path: Path, mini_corpus: Path
) -> None:
    shuffled = _batches(tmp_path, mini_corpus, "a", parallel=4, shuffle=True)
    one_at_a_time = _batches(tmp_path, mini_corpus, "b", parallel=1, shuffle=False)
    again = _batches(tmp_path, mini_corpus, "c", parallel=4, shuffle=True)
    assert shuffled == one_at_a_time == again
