"""The ranker and relevance scoring once imported each other (issue 34 item 4): the records
they share live in mining.relevance_records, so importing the ranker loads no scorer."""

from __future__ import annotations

import subprocess
import sys


def test_the_ranker_imports_without_relevance() -> None:
    # A fresh interpreter, since this one may already hold relevance from other tests.
    code = "import sys, mole_dag.mining.ranker; print('mole_dag.mining.relevance' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
