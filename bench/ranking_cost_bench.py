"""What the learned ranking costs a session (issue 30, item 9): wall time of the same session
with the lexical ranking and with MOLE_RANKING=learned, each a fresh `mole research` process
with its own MOLE_HOME (so the learned one starts with no sentence vectors: the cold case),
then each once more in the same MOLE_HOME (the warm case: the corpus index, Dagster's instance
and the sentence vectors kept on disk). The two
rankings alternate, run by run, so a busy machine slows both alike; the figures are medians
and the ratio is of medians measured in the same run.

    .venv/bin/python bench/ranking_cost_bench.py --runs 3
    .venv/bin/python bench/ranking_cost_bench.py --runs 3 --pdf-dir ../shared/qa-pdf-dev
    .venv/bin/python bench/ranking_cost_bench.py --runs 3 --ranking fused   # MOLE_RANKING=fused

Sessions: the demo question over the bundled corpus, as `make demo` runs it; with --pdf-dir, the
first question of that set over its `pdfs/` folder (the DEV PDFs), as `bench/qa_pdf.py`'s local
path runs it. The PDFs stay where they are; without them that part is skipped."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MOLE = REPO / ".venv" / "bin" / "mole"
DEMO_QUESTION = "What are the health effects of drinking coffee?"


def _session(home: Path, ranking: str, question: str, corpus: Path | None) -> float:
    env = dict(os.environ, MOLE_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    env.pop("MOLE_RANKING", None)
    if ranking != "lexical":
        env["MOLE_RANKING"] = ranking
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    (home / "dagster" / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    cmd = [str(MOLE), "research", question, "--usd", "0.50"]
    if corpus is not None:
        cmd += ["--corpus", str(corpus)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"ranking_cost_bench: the session failed ({ranking}): {done.stderr[-400:]}")
    return wall


def measure(
    name: str, question: str, corpus: Path | None, runs: int, other: str = "learned"
) -> dict[str, object]:
    walls: dict[str, list[float]] = {
        "lexical": [],
        other: [],
        "lexical, warm": [],
        f"{other}, warm": [],
    }
    with tempfile.TemporaryDirectory(prefix="mole-rank-cost-") as tmp:
        for i in range(runs):
            for ranking in ("lexical", other):
                home = Path(tmp) / f"{ranking}-{i}"
                walls[ranking].append(_session(home, ranking, question, corpus))
                # Again in the same home: the corpus index, Dagster's instance and (learned)
                # the sentence vectors are kept from the first.
                walls[f"{ranking}, warm"].append(_session(home, ranking, question, corpus))
            print(
                f"  {name} run {i + 1}: "
                + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in walls.items())
            )
    med = {k: statistics.median(v) for k, v in walls.items()}
    return {
        "session": name,
        "runs": runs,
        "median_s": {k: round(v, 2) for k, v in med.items()},
        "ratio_cold": round(med[other] / med["lexical"], 2),
        "ratio_warm": round(med[f"{other}, warm"] / med["lexical, warm"], 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pdf-dir", type=Path, help="a PDF question set (qa.jsonl and pdfs/)")
    ap.add_argument(
        "--ranking", choices=("learned", "fused"), default="learned", help="MOLE_RANKING to compare"
    )
    args = ap.parse_args()
    other = args.ranking
    if not MOLE.exists():
        sys.exit("ranking_cost_bench: no .venv/bin/mole here; run `make demo` once first")
    results = [measure("demo", DEMO_QUESTION, None, args.runs, other)]
    if args.pdf_dir is not None:
        qa = args.pdf_dir / "qa.jsonl"
        if not qa.exists():
            print(f"ranking_cost_bench: {qa} is absent; the PDF session is skipped")
        else:
            first = json.loads(qa.read_text().splitlines()[0])
            results.append(
                measure(
                    f"PDF {first['id']}", first["question"], args.pdf_dir / "pdfs", args.runs, other
                )
            )
    print(f"| session | lexical | {other} | ratio | lexical, warm | {other}, warm | ratio, warm |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        m = r["median_s"]
        assert isinstance(m, dict)
        print(
            f"| {r['session']} | {m['lexical']:.1f} s | {m[other]:.1f} s | "
            f"{r['ratio_cold']:.2f}x | {m['lexical, warm']:.1f} s | {m[f'{other}, warm']:.1f} s | "
            f"{r['ratio_warm']:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
