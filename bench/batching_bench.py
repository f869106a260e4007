"""Adjudication batching: calls and tokens for the same candidate pairs judged 8 to a call
against one call per pair, with the real judge prompt through the real Anthropic provider.

The pairs are the demo corpus's own candidate pairs (the extractive miner over
examples/corpus/ for the demo question, the lexical retriever's cap of 8 per claim). The model
is the simulated Messages API from tests/model_server.py on 127.0.0.1, which reports usage as
UTF-8 bytes / 4 of the request body (a tokenizer stand-in: the ratio between the two modes is
what is measured, not absolute counts).

Besides the totals it says where each pair's tokens go, in both modes, from the requests the
server received: the instructions, the request envelope, the claims' text (first mention in a
request, and mentions after the first), labels and layout, and the verdicts. Mole's seed
figures (one call per pair ~39k tokens for 54 pairs, batched at 8 about 6k in 7 calls) give
only totals; with n calls carrying P pairs, tokens = n * F + P * V solves them into F, what
every call pays, and V, what each pair adds, for comparison.

    .venv/bin/python bench/batching_bench.py [--pairs 120] [--runs 3] [--baseline DIR] [--json]

`--baseline DIR`: the same measurement with another checkout's code (its prompts, its judge and
its simulated model), e.g. `git archive main | tar -x -C DIR`, in the same run.
"""

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
from typing import Any

# MOLE_BENCH_ROOT: measure another checkout's code with this script (--baseline sets it).
ROOT = Path(os.environ.get("MOLE_BENCH_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

from mole_dag.core import Unit  # noqa: E402
from mole_dag.skillsets import skills_for  # noqa: E402
from mole_dag.verifier.judge import judge_pairs  # noqa: E402
from mole_dag.verifier.retriever import ClaimText, candidate_pairs  # noqa: E402
from tests.model_server import ModelServer, SimulatedModel  # noqa: E402

# Mole's figures (seeds/003, verifier.Batches): "one call per pair spends roughly 39k tokens"
# for 54 pairs; "batched at 8 it is seven calls and about 6k".
MOLE = {"pairs": 54, "one_calls": 54, "one_tokens": 39_000, "batch_calls": 7, "batch_tokens": 6_000}


def demo_pairs(limit: int) -> tuple[list[Any], dict[str, str]]:
    from mole_dag.actors.local import LocalCorpus
    from mole_dag.chunk import chunk_text
    from mole_dag.mining.extractive import mine_sentences
    from mole_dag.planner.extractive import plan_questions
    from mole_dag.skills.protocol import MineRequest

    question = "What are the health effects of drinking coffee?"
    with tempfile.TemporaryDirectory() as d:
        corpus = LocalCorpus.open(ROOT / "examples" / "corpus", cache_dir=Path(d))
    texts: dict[str, str] = {}
    # The question itself is the first sub-question the planner makes (an index into its list
    # broke when the planner's facets changed).
    sub = plan_questions(question)[0].text
    for doc in corpus.documents:
        for span in chunk_text(doc.text):
            for draft in mine_sentences(MineRequest(question, sub, span.text)):
                texts.setdefault(f"c{len(texts):04d}", draft.text)
    pool = [ClaimText(k, v) for k, v in texts.items()]
    pairs = candidate_pairs(pool, set(texts), set(), 8)
    return pairs[:limit], texts


def flat_text(text: str) -> str:
    """A claim as the judge prompt writes it (one line, capped)."""
    from mole_dag.core import MAX_CLAIM_CHARS
    from mole_dag.skills.prompting import flat

    return flat(text, MAX_CLAIM_CHARS)


def anatomy(got: Any, batch: list[Any], texts: dict[str, str]) -> dict[str, float]:
    """Where one judge request's bytes went, whatever the prompt's layout: the claims' text
    (first mention in the request, and mentions after the first), the rest of the user message
    (labels, layout), the system prompt, and the rest of the request body (the JSON envelope:
    model, max_tokens, keys, escapes), all as bytes / 4 like the simulated model's usage."""
    user = got.user
    distinct = {flat_text(texts[c]) for p in batch for c in (p.a, p.b)}
    first = sum(len(t.encode()) for t in distinct)
    sent = sum(user.count(t) * len(t.encode()) for t in distinct)
    system = len(got.system.encode())
    user_b = len(user.encode())
    return {
        "claims, first mention": first / 4,
        "claims, repeated": (sent - first) / 4,
        "labels and layout": (user_b - sent) / 4,
        "instructions (system prompt)": system / 4,
        "request envelope": (len(got.body) - user_b - system) / 4,
    }


def measure(server: Any, pairs: list[Any], texts: dict[str, str], batch: int) -> dict[str, float]:
    from mole_dag.verifier.judge import batches

    config = {"anthropic": {"api_key": "bench-not-a-key", "base_url": server.url}}
    skills = skills_for("anthropic", config)
    calls = {"n": 0, "in": 0, "system": 0, "out": 0, "reserved": 0, "cost": 0}

    class Metering:
        """The skills, with each judge call's estimate, usage and cost counted (judge_pairs
        without a session's ledger makes the calls one by one, in this checkout and in older
        ones a --baseline may name)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(skills, name)

        def judge(self, shown: Any, unit: Any) -> Any:
            got = skills.judge(shown, unit)
            calls["n"] += 1
            calls["in"] += got.usage.input_tokens + got.usage.cache_read_tokens
            calls["system"] += got.usage.cache_read_tokens  # the simulated model bills it so
            calls["out"] += got.usage.output_tokens
            calls["reserved"] += skills.estimate_judge(shown, unit)
            calls["cost"] += got.cost
            return got

    seen = len(server.received)
    out = judge_pairs(Metering(), pairs, texts, Unit.TOKENS, batch_size=batch)  # type: ignore[arg-type]
    assert not out.unjudged, "the simulated judge answers every pair"
    sent = server.received[seen:]
    parts: dict[str, float] = {}
    for got, b in zip(sent, batches(pairs, batch), strict=True):
        for k, v in anatomy(got, b, texts).items():
            parts[k] = parts.get(k, 0.0) + v
    parts["output (verdicts)"] = calls["out"]
    return {**calls, **{f"part: {k}": v for k, v in parts.items()}}


def solve(
    pairs: int, one_calls: float, one_tokens: float, batch_calls: float, batch_tokens: float
) -> tuple[float, float]:
    """(F, V): tokens per call and per pair, from two modes, if each pair costs the same in
    both (true of Mole's figures as far as they say; not of a prompt that lists shared claims
    once, whose pairs cost less batched)."""
    f = (one_tokens - batch_tokens) / (one_calls - batch_calls)
    return f, (one_tokens - one_calls * f) / pairs


def run(pairs_n: int, runs: int) -> dict[str, Any]:
    pairs, texts = demo_pairs(pairs_n)
    rows: dict[int, list[dict[str, float]]] = {1: [], 8: []}
    with ModelServer(SimulatedModel()) as server:
        for _ in range(runs):
            for batch in (8, 1):
                t0 = time.perf_counter()
                m = measure(server, pairs, texts, batch)
                m["seconds"] = time.perf_counter() - t0
                rows[batch].append(m)
    med = {b: {k: statistics.median(r[k] for r in rows[b]) for k in rows[b][0]} for b in (1, 8)}
    one, eight = med[1], med[8]
    n = len(pairs)
    figures: dict[str, float] = {
        "pairs": n,
        "calls batched / one per pair": eight["n"] / one["n"],
        "input tokens batched / one per pair": eight["in"] / one["in"],
        "tokens batched / one per pair": eight["cost"] / one["cost"],
        "reserved batched / one per pair": eight["reserved"] / one["reserved"],
        "tokens per pair, one per pair": one["cost"] / n,
        "tokens per pair, batched": eight["cost"] / n,
    }
    # Per pair, by part (bytes / 4; the simulated usage rounds up per request, so the parts
    # add up to the charged tokens within a token or two per call).
    for mode, m in (("one per pair", one), ("batched", eight)):
        for k, v in m.items():
            if k.startswith("part: "):
                figures[f"per pair, {mode}, {k[6:]}"] = v / n
    return {"figures": figures, "modes": {str(k): m for k, m in med.items()}}


def mole_figures() -> dict[str, float]:
    m = MOLE
    f, v = solve(m["pairs"], m["one_calls"], m["one_tokens"], m["batch_calls"], m["batch_tokens"])
    return {
        "tokens batched / one per pair": m["batch_tokens"] / m["one_tokens"],
        "tokens per pair, one per pair": m["one_tokens"] / m["pairs"],
        "tokens per pair, batched": m["batch_tokens"] / m["pairs"],
        "F: tokens every call pays (solved)": f,
        "V: tokens each pair adds (solved)": v,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="another checkout to measure in the same run")
    ap.add_argument("--quick", action="store_true", help="1 run (the counts are deterministic)")
    ap.add_argument("--json", action="store_true", help="one final line of JSON (bench/suite.py)")
    args = ap.parse_args()
    if args.quick:
        args.runs = 1
    got = run(args.pairs, args.runs)
    if args.json:
        # The suite's figures are the totals; where each pair's tokens go stays beside them.
        fig = {k: v for k, v in got["figures"].items() if not k.startswith("per pair, ")}
        print(
            json.dumps(
                {
                    "figures": fig,
                    "units": {k: ("x" if "/" in k else "tokens") for k in fig if k != "pairs"},
                    "better": {k: "lower" for k in fig if "batched" in k},
                    "anatomy": {k: v for k, v in got["figures"].items() if k not in fig},
                    "modes": got["modes"],
                }
            )
        )
        return
    base = None
    if args.baseline:
        env = {**os.environ, "MOLE_BENCH_ROOT": str(Path(args.baseline).resolve())}
        out = subprocess.run(
            [sys.executable, __file__, "--pairs", str(args.pairs), "--runs", str(args.runs)]
            + ["--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        base = json.loads(out.stdout.strip().splitlines()[-1])["figures"]
    print(f"{got['figures']['pairs']:.0f} candidate pairs from the demo corpus, {args.runs} runs\n")
    print(
        f"{'batch':>5} {'calls':>6} {'input tok':>10} {'of it system':>13} {'output tok':>11} "
        f"{'tokens (session unit)':>22} {'reserved':>10} {'seconds':>8}"
    )
    for batch in ("1", "8"):
        m = got["modes"][batch]
        print(
            f"{batch:>5} {m['n']:>6.0f} {m['in']:>10.0f} {m['system']:>13.0f} {m['out']:>11.0f} "
            f"{m['cost']:>22.0f} {m['reserved']:>10.0f} {m['seconds']:>8.2f}"
        )
    mole = mole_figures()
    print(f"\n{'':60} {'this checkout':>14} {'baseline' if base else '':>10} {'Mole':>8}")
    for k, v in got["figures"].items():
        if k == "pairs":
            continue
        b = f"{base[k]:.3g}" if base and k in base else ""
        m = f"{mole[k]:.3g}" if k in mole else ""
        print(f"{k:>60} {v:>14.3g} {b:>10} {m:>8}")
    print("\nMole's totals solved into per call / per pair tokens:")
    for k in ("F: tokens every call pays (solved)", "V: tokens each pair adds (solved)"):
        print(f"{k:>60} {mole[k]:>14.3g}")


if __name__ == "__main__":
    main()
