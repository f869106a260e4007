"""Throughput of the two checks every page goes through: chunking and the verbatim quote check.

    .venv/bin/python bench/quote_chunk_bench.py [--runs 7]

Pages are built from the demo corpus's extracted text (English and German prose, the way the
pipeline stores it) and from CJK prose, at real page sizes: 50 kB (a long article), 250 kB (a
report or a long Wikipedia page) and 1 MB (the largest page the fetcher would plausibly keep).
Quotes are taken from the end of each page, the worst case for a left-to-right search, with
their whitespace re-flowed so the collapsing path is exercised. Reports the median of several
runs, in MB/s of page text."""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mole_dag.actors.extract import from_html, from_plain  # noqa: E402
from mole_dag.actors.quote import CollapsedText, find_quote  # noqa: E402
from mole_dag.chunk import chunk_text  # noqa: E402

CJK = (
    "绿茶含有儿茶素和咖啡因。一项针对老年人的大型队列研究发现，经常饮用绿茶的人中风风险较低。"
    "然而，晚上饮茶可能会影响对咖啡因敏感的成年人的睡眠质量！研究人员指出，这些结果仍需进一步验证？"
    "\n\n不同国家的饮茶习惯差异很大，因此很难直接比较各项研究的结论。"
)


def corpus_text() -> str:
    parts = []
    for path in sorted((ROOT / "examples" / "corpus").iterdir()):
        raw = path.read_text("utf-8")
        if path.suffix == ".html":
            doc = from_html(raw, url=f"https://example.org/{path.stem}", fallback_title=path.stem)
        else:
            doc = from_plain(
                raw, fallback_url=f"https://example.org/{path.stem}", fallback_title=path.stem
            )
        parts.append(doc.text)
    return "\n\n".join(parts)


def page(seed: str, size: int) -> str:
    out, n = [], 0
    while n < size:
        out.append(seed)
        n += len(seed.encode("utf-8"))
    return "\n\n".join(out).encode("utf-8")[:size].decode("utf-8", errors="ignore")


def quotes_from(text: str, n: int, rng: random.Random) -> list[str]:
    """n quotes from the last tenth of the text, whitespace re-flowed."""
    words = text.split()
    tail = max(len(words) - max(len(words) // 10, 40), 0)
    out = []
    for _ in range(n):
        i = rng.randrange(tail, len(words) - 12)
        out.append("\n  ".join(words[i : i + rng.randrange(6, 12)]))
    return out


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(7)
    english = corpus_text()
    rows = []
    for label, seed in (("corpus prose", english), ("CJK prose", CJK)):
        for size in (50_000, 250_000, 1_000_000):
            text = page(seed, size)
            mb = len(text.encode("utf-8")) / 1e6
            quotes = quotes_from(text, 20, rng)
            ct = CollapsedText(text)
            assert all(ct.find(q) is not None for q in quotes), "a bench quote was not found"
            chunk = median_seconds(lambda t=text: chunk_text(t), args.runs)
            build = median_seconds(lambda t=text: CollapsedText(t), args.runs)
            one = median_seconds(lambda t=text, q=quotes[0]: find_quote(t, q), args.runs)
            many = median_seconds(lambda c=ct, qs=quotes: [c.find(q) for q in qs], args.runs)
            rows.append(
                (
                    label,
                    f"{size // 1000} kB",
                    mb / chunk,
                    mb / build,
                    mb / one,
                    many / len(quotes) * 1e3,
                )
            )
    print(f"median of {args.runs} runs, Python {sys.version.split()[0]}")
    print(
        f"{'page':<13} {'size':>8} {'chunk MB/s':>11} {'index MB/s':>11} "
        f"{'find_quote MB/s':>16} {'find on index ms/quote':>23}"
    )
    for label, size, c, b, o, per in rows:
        print(f"{label:<13} {size:>8} {c:>11.1f} {b:>11.1f} {o:>16.1f} {per:>23.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
