"""Adjudication batching: calls and tokens for the same candidate pairs judged 8 to a call
against one call per pair, with the real judge prompt through the real Anthropic provider.

The pairs are the demo session's own candidate pairs (the extractive miner over the demo corpus,
the lexical retriever's cap of 8 per claim). The model is the simulated Messages API from
tests/model_server.py on 127.0.0.1, which reports usage as UTF-8 bytes / 4 (a tokenizer
stand-in: the ratio between the two modes is what is measured, not absolute counts).

    .venv/bin/python bench/batching_bench.py [--pairs 120] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mole_dag.core import Unit  # noqa: E402
from mole_dag.skillsets import skills_for  # noqa: E402
from mole_dag.verifier.judge import judge_pairs  # noqa: E402
from mole_dag.verifier.retriever import ClaimText, candidate_pairs  # noqa: E402
from tests.model_server import ModelServer, SimulatedModel  # noqa: E402


def demo_pairs(limit: int) -> tuple[list, dict[str, str]]:
    from mole_dag.actors.local import LocalCorpus
    from mole_dag.chunk import chunk_text
    from mole_dag.mining.extractive import mine_sentences
    from mole_dag.planner.extractive import plan_questions
    from mole_dag.skills.protocol import MineRequest

    question = "What are the health effects of drinking coffee?"
    with tempfile.TemporaryDirectory() as d:
        corpus = LocalCorpus.open(ROOT / "examples" / "corpus", cache_dir=Path(d))
    texts: dict[str, str] = {}
    sub = plan_questions(question)[2].text
    for doc in corpus.documents:
        for span in chunk_text(doc.text):
            for draft in mine_sentences(MineRequest(question, sub, span.text)):
                texts.setdefault(f"c{len(texts):04d}", draft.text)
    pool = [ClaimText(k, v) for k, v in texts.items()]
    pairs = candidate_pairs(pool, set(texts), set(), 8)
    return pairs[:limit], texts


def measure(url: str, pairs: list, texts: dict[str, str], batch: int) -> dict[str, float]:
    config = {"anthropic": {"api_key": "bench-not-a-key", "base_url": url}}
    skills = skills_for("anthropic", config)
    t0 = time.perf_counter()
    calls = {"n": 0, "in": 0, "out": 0, "reserved": 0, "cost": 0}

    def pay(estimate, call):  # type: ignore[no-untyped-def]
        got = call()
        calls["n"] += 1
        calls["in"] += got.usage.input_tokens + got.usage.cache_read_tokens
        calls["out"] += got.usage.output_tokens
        calls["reserved"] += estimate
        calls["cost"] += got.cost
        return got

    out = judge_pairs(skills, pairs, texts, Unit.TOKENS, batch_size=batch, pay=pay)
    assert not out.unjudged, "the simulated judge answers every pair"
    return {**calls, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    pairs, texts = demo_pairs(args.pairs)
    rows: dict[int, list[dict[str, float]]] = {1: [], 8: []}
    with ModelServer(SimulatedModel()) as server:
        for _ in range(args.runs):
            for batch in (8, 1):
                rows[batch].append(measure(server.url, pairs, texts, batch))
    print(f"{len(pairs)} candidate pairs from the demo corpus, {args.runs} runs\n")
    print(
        f"{'batch':>5} {'calls':>6} {'input tok':>10} {'output tok':>11} "
        f"{'tokens (session unit)':>22} {'reserved':>10} {'seconds':>8}"
    )
    med = {}
    for batch in (1, 8):
        m = {k: statistics.median(r[k] for r in rows[batch]) for k in rows[batch][0]}
        med[batch] = m
        print(
            f"{batch:>5} {m['n']:>6.0f} {m['in']:>10.0f} {m['out']:>11.0f} {m['cost']:>22.0f} "
            f"{m['reserved']:>10.0f} {m['seconds']:>8.2f}"
        )
    one, eight = med[1], med[8]
    print(
        f"\nbatched / one-per-pair: calls {eight['n'] / one['n']:.3f}, input tokens "
        f"{eight['in'] / one['in']:.3f}, all tokens {eight['cost'] / one['cost']:.3f}, "
        f"reserved {eight['reserved'] / one['reserved']:.3f}"
    )


if __name__ == "__main__":
    main()
