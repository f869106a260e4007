"""Throughput of the two checks every page goes through, chunking and the verbatim quote check,
on the 110 saved real pages in ../shared/web-pages/, extracted as the pipeline extracts them.

    .venv/bin/python bench/quote_chunk_bench.py [--runs 7] [--json] [--quick]

The same text in three forms:

- *pages*: each page's extracted text on its own, as the pipeline chunks and checks it;
- *pages, single newlines*: the same pages with every blank line collapsed to one newline, the
  form trafilatura's own text output and many plain-text sources have. Without blank lines the
  chunker never takes a paragraph cut: the slow case of issue 14;
- *one long page*: all pages joined by blank lines (about 630 kB), so chunking crosses hundreds
  of windows and many quotes are checked against one index.

Each run times, one after another so that load on a shared machine hits all alike:

- *chunk*: `chunk_text` over the form, and the chunker from before issue 14
  (tests/chunk_reference.py) on the same text;
- *baseline*: `collapse(page).find(collapse(quote))` for one quote per page, whitespace
  collapsing and a C search: the least any quote check must do;
- *find_quote*: `find_quote(page, quote)` (index build plus one search), and the pre-issue-14
  version (tests/quote_reference.py);
- *index*: `CollapsedText(page)` alone;
- *per quote*: 20 quotes per page checked against one built index, ms per quote.

Quotes come from the last tenth of each page (the worst case for a left-to-right search) with
their whitespace re-flowed, so the collapsing path is exercised. Figures are medians over the
runs of MB/s of page text (CPU time of this process), and medians of each run's ratio to the
baseline or to the old version measured in that same run.

--json ends with the figures as one JSON line for bench/suite.py, with the issue's bound
(chunking at least 100 MB/s on every form) as limits; --quick is 3 runs. Absent pages folder:
says so in one line and exits 2."""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from real_pages import absent_message, page_texts  # noqa: E402

from mole_dag.actors.quote import CollapsedText, collapse, find_quote  # noqa: E402
from mole_dag.chunk import chunk_text  # noqa: E402
from mole_dag.core import MIN_QUOTE_CHARS  # noqa: E402
from tests.chunk_reference import reference_chunk_text  # noqa: E402
from tests.quote_reference import ReferenceCollapsedText, reference_find_quote  # noqa: E402

QUOTES_PER_PAGE = 20
# The issue-14 bound: chunking the real pages at 100 MB/s or more (CPU time, steadier than wall
# on a shared machine).
CHUNK_MIN_MBS = 100.0
FORM_NAMES = {
    "pages": "pages",
    "pages, single newlines": "single newlines",
    "one long page": "long page",
}


def quotes_from(text: str, n: int, rng: random.Random) -> list[str]:
    """n quotes from the last tenth of the text, whitespace re-flowed, each long enough to be
    checked (MIN_QUOTE_CHARS after collapsing)."""
    words = text.split()
    tail = max(len(words) - max(len(words) // 10, 40), 0)
    out: list[str] = []
    while len(out) < n:
        i = rng.randrange(tail, len(words) - 12)
        quote = "\n  ".join(words[i : i + rng.randrange(6, 12)])
        if len(collapse(quote)) >= MIN_QUOTE_CHARS:
            out.append(quote)
    return out


def cpu_seconds(fn: Callable[[], object]) -> float:
    # A collection started by an earlier measurement's garbage would be billed to this one.
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0
    finally:
        gc.enable()


class Form:
    def __init__(self, label: str, pages: list[str], rng: random.Random) -> None:
        self.label = label
        self.pages = pages
        self.mb = sum(len(p.encode("utf-8")) for p in pages) / 1e6
        # Quote checks only on pages with enough words for a quote from their last tenth.
        self.quoted = [
            (p, quotes_from(p, QUOTES_PER_PAGE, rng)) for p in pages if len(p.split()) >= 60
        ]
        self.quoted_mb = sum(len(p.encode("utf-8")) for p, _ in self.quoted) / 1e6
        self.n_quotes = sum(len(qs) for _, qs in self.quoted)
        self.indexes = [CollapsedText(p) for p, _ in self.quoted]
        self.old_indexes = [ReferenceCollapsedText(p) for p, _ in self.quoted]
        # Same answers, old and new, before anything is timed.
        for p in pages:
            assert chunk_text(p) == reference_chunk_text(p), f"{label}: chunk boundaries differ"
        for (p, qs), new, old in zip(self.quoted, self.indexes, self.old_indexes, strict=True):
            for q in qs:
                m = new.find(q)
                assert m is not None, f"{label}: a bench quote was not found"
                assert m == old.find(q) == find_quote(p, q), f"{label}: quote answers differ"

    def run_once(self, reverse: bool) -> dict[str, float]:
        """One timing of each; `reverse` runs them in the opposite order (alternate runs do),
        so that whatever the first or last measurement of a run suffers is shared out."""
        one = [(p, qs[0]) for p, qs in self.quoted]
        pairs = list(zip(self.indexes, (qs for _, qs in self.quoted), strict=True))
        old_pairs = list(zip(self.old_indexes, (qs for _, qs in self.quoted), strict=True))
        jobs: dict[str, Callable[[], object]] = {
            "chunk": lambda: [chunk_text(p) for p in self.pages],
            "chunk_old": lambda: [reference_chunk_text(p) for p in self.pages],
            "baseline": lambda: [collapse(p).find(collapse(q)) for p, q in one],
            "find": lambda: [find_quote(p, q) for p, q in one],
            "find_old": lambda: [reference_find_quote(p, q) for p, q in one],
            "index": lambda: [CollapsedText(p) for p, _ in self.quoted],
            "per_quote": lambda: [ix.find(q) for ix, qs in pairs for q in qs],
            "per_quote_old": lambda: [ix.find(q) for ix, qs in old_pairs for q in qs],
        }
        order = list(jobs)[::-1] if reverse else list(jobs)
        return {name: cpu_seconds(jobs[name]) for name in order}


class Report:
    """The figures of every form, for the table and the suite's JSON line."""

    def __init__(self) -> None:
        self.figures: dict[str, float] = {}
        self.units: dict[str, str] = {}
        self.better: dict[str, str] = {}
        self.limits: dict[str, dict[str, float]] = {}

    def put(self, name: str, value: float, unit: str, good: str = "higher") -> float:
        self.figures[name] = round(value, 6)
        self.units[name] = unit
        self.better[name] = good
        return value

    def json(self, notes: list[str]) -> str:
        return json.dumps(
            {
                "figures": self.figures,
                "units": self.units,
                "better": self.better,
                "limits": self.limits,
                "notes": notes,
            }
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # None so that --quick changes it only when it is not given.
    ap.add_argument("--runs", type=int, help="default 7 (--quick: 3)")
    ap.add_argument(
        "--json", action="store_true", help="end with one JSON line of figures (bench/suite.py)"
    )
    ap.add_argument("--quick", action="store_true", help="3 runs (about 15 s)")
    args = ap.parse_args()
    args.runs = args.runs or (3 if args.quick else 7)
    texts = [t for _, t in page_texts()]
    if not texts:
        # One line and a failure: a benchmark that measured nothing must not pass.
        print(absent_message(), file=sys.stderr)
        return 2
    rng = random.Random(7)
    forms = [
        Form("pages", texts, rng),
        Form("pages, single newlines", [re.sub(r"\n\s*\n", "\n", t) for t in texts], rng),
        Form("one long page", ["\n\n".join(texts)], rng),
    ]
    runs: dict[str, list[dict[str, float]]] = {f.label: [] for f in forms}
    for i in range(args.runs):
        for f in forms:
            runs[f.label].append(f.run_once(reverse=i % 2 == 1))

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    print(f"{len(texts)} real pages; medians of {args.runs} runs, Python {sys.version.split()[0]}")
    print(
        f"\n{'form':<24} {'MB':>5} {'chunk MB/s':>11} {'old':>6} {'x old':>6}"
        f" {'baseline MB/s':>14} {'find_quote MB/s':>16} {'x base':>7} {'old x base':>11}"
        f" {'index MB/s':>11} {'ms/quote':>9} {'old':>6}"
    )
    rep = Report()
    for f in forms:
        r = runs[f.label]
        # Figure names for the suite: "<form>: <what>", the table's columns.
        pre = FORM_NAMES[f.label] + ": "
        chunk = rep.put(pre + "chunk MB/s", med([f.mb / x["chunk"] for x in r]), "MB/s")
        rep.limits[pre + "chunk MB/s"] = {"min": CHUNK_MIN_MBS}
        chunk_old = med([f.mb / x["chunk_old"] for x in r])
        chunk_x = rep.put(
            pre + "chunk MB/s / before", med([x["chunk_old"] / x["chunk"] for x in r]), "x"
        )
        base = rep.put(pre + "baseline MB/s", med([f.quoted_mb / x["baseline"] for x in r]), "MB/s")
        find = rep.put(pre + "find_quote MB/s", med([f.quoted_mb / x["find"] for x in r]), "MB/s")
        find_x = rep.put(
            pre + "find_quote MB/s / baseline", med([x["baseline"] / x["find"] for x in r]), "x"
        )
        old_x = rep.put(
            pre + "before: find_quote MB/s / baseline",
            med([x["baseline"] / x["find_old"] for x in r]),
            "x",
        )
        index = rep.put(pre + "index MB/s", med([f.quoted_mb / x["index"] for x in r]), "MB/s")
        per_q = rep.put(
            pre + "ms per quote",
            med([x["per_quote"] / f.n_quotes * 1e3 for x in r]),
            "ms",
            "lower",
        )
        per_q_old = med([x["per_quote_old"] / f.n_quotes * 1e3 for x in r])
        print(
            f"{f.label:<24} {f.mb:>5.2f} {chunk:>11.0f} {chunk_old:>6.0f} {chunk_x:>6.1f}"
            f" {base:>14.0f} {find:>16.0f} {find_x:>7.2f} {old_x:>11.2f}"
            f" {index:>11.0f} {per_q:>9.3f} {per_q_old:>6.3f}"
        )
    if args.json:
        print(
            rep.json(
                [
                    f"{len(texts)} real pages ({forms[0].mb:.2f} MB), {args.runs} run(s); MB/s of "
                    "page text on CPU time; x figures are medians of each run's own ratio, "
                    "'before' is the code before issue 14 (tests/*_reference.py)"
                ]
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
