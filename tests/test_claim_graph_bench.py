"""Issue 31, item 5: bench/claim_graph.py on a tiny file in CLIMATE-FEVER's format (sentences
written for this test). It runs the real verifier and confidence stages per line, writes one
pairs.jsonl line per labelled claim-evidence pair with the fields the issue names, and a summary
whose figures follow from those lines: a refuting sentence that negates what the claim states is
found, a supporting one is not marked as a dispute, and an unrelated one never is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parent.parent / "bench" / "claim_graph.py"


def _line(cid: str, claim: str, evidences: list[tuple[str, str, str]]) -> str:
    return json.dumps(
        {
            "claim_id": cid,
            "claim": claim,
            "claim_label": "DISPUTED",
            "evidences": [
                {
                    "evidence_id": f"{article}:{i}",
                    "evidence_label": label,
                    "article": article,
                    "evidence": text,
                    "entropy": 0.0,
                    "votes": [label],
                }
                for i, (article, label, text) in enumerate(evidences)
            ],
        }
    )


def test_the_bench_writes_pairs_and_a_summary(tmp_path: Path) -> None:
    data = tmp_path / "claims-even.jsonl"
    data.write_text(
        _line(
            "10",
            "The Rhone glacier is not retreating.",
            [
                (
                    "Rhone Glacier",
                    "REFUTES",
                    "Satellite images show the Rhone glacier retreating by 30 metres a year.",
                ),
                (
                    "Glaciers",
                    "SUPPORTS",
                    "Some measurements suggest the Rhone glacier was stable in the 1990s.",
                ),
                ("Bees", "NOT_ENOUGH_INFO", "Honey bees pollinate many crops in the valley."),
            ],
        )
        + "\n"
        + _line(
            "12",
            "Sea ice in the bay covered 40 square kilometres in March.",
            [
                (
                    "Bay",
                    "SUPPORTS",
                    "Sea ice in the bay covered 40 square kilometres in March, the survey said.",
                ),
                ("Tides", "NOT_ENOUGH_INFO", "Tides in the bay are among the highest anywhere."),
            ],
        )
        + "\n"
    )
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, str(_BENCH), "--data", str(data), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    pairs = [json.loads(x) for x in (out / "pairs.jsonl").read_text().splitlines()]
    assert len(pairs) == 5
    assert set(pairs[0]) == {"claim_id", "evidence_id", "label", "candidate", "edge"}
    by = {p["evidence_id"]: p for p in pairs}
    assert by["Rhone Glacier:0"]["candidate"] and by["Rhone Glacier:0"]["edge"] == "contradicts"
    assert by["Glaciers:1"]["edge"] != "contradicts"
    assert by["Bees:2"]["edge"] is None
    summary = json.loads((out / "summary.json").read_text())
    ex = summary["judges"]["extractive"]
    assert ex["pairs"] == {"SUPPORTS": 2, "REFUTES": 1, "NOT_ENOUGH_INFO": 2}
    assert ex["candidate_recall"]["REFUTES"] == 1.0
    assert ex["contradictions"] == 1 and ex["contradiction_precision"] == 1.0
    assert ex["supports_marked_disputes"] == 0.0
    assert "cassette" in summary["judges"]["model"]


def test_the_held_out_half_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "climate-fever-odd.jsonl"
    data.write_text("")
    run = subprocess.run(
        [sys.executable, str(_BENCH), "--data", str(data), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "held out" in run.stderr
