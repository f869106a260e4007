"""Robustness and speed of the fetch -> extract -> chunk path on 110 real saved pages.

Serves each page of ../shared/web-pages/ from a local server on 127.0.0.1 (allow-listed), fetches
it through the real fetcher (guard, robots, cap, charset detection), extracts it with the web
actor's page_document, chunks it, and checks that the chunks tile the text and that every
sentence-sized quote taken from it is found again by the quote check. Prints outcomes by cause
and the median time per page over several runs.

    .venv/bin/python bench/web_pages.py [--runs 5]

The pages are other people's text: read in place, never copied into the project. Absent folder:
the script says so and exits 0."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mole_dag.actors.fetch import Fetcher, FetchFailed, FetchLimits, Policy  # noqa: E402
from mole_dag.actors.fetch.ratelimit import DomainLimiter  # noqa: E402
from mole_dag.actors.fetch.robots import RobotsCache  # noqa: E402
from mole_dag.actors.quote import CollapsedText  # noqa: E402
from mole_dag.actors.web import page_document  # noqa: E402
from mole_dag.chunk import chunk_text  # noqa: E402
from mole_dag.core import Document  # noqa: E402
from mole_dag.paths import PROJECT_ROOT  # noqa: E402
from tests.fakeweb import FakeWeb  # noqa: E402

PAGES = PROJECT_ROOT / ".." / "shared" / "web-pages"


def run_once(web: FakeWeb, names: list[str], tmp: Path) -> tuple[Counter[str], list[str], float]:
    fetcher = Fetcher(
        Policy.of(["127.0.0.1"]),
        FetchLimits(interval_s=0.0),
        limiter=DomainLimiter(tmp / "rl"),
        robots=RobotsCache(),
    )
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    start = time.perf_counter()
    for name in names:
        try:
            got = page_document(fetcher.fetch(web.url(f"/{name}")))
        except FetchFailed as exc:
            outcomes[str(exc.cause)] += 1
            continue
        if not isinstance(got, Document):
            outcomes[str(got.cause)] += 1
            continue
        outcomes["document"] += 1
        spans = chunk_text(got.text)
        if "".join(s.text for s in spans) != got.text:
            problems.append(f"{name}: chunks do not tile the text")
        hay = CollapsedText(got.text)
        for line in got.text.splitlines():
            line = line.strip()
            if 40 <= len(line) <= 300 and hay.find(line) is None:
                problems.append(f"{name}: a line of its own text is not found by the quote check")
                break
        if any(c in got.text for c in "\u202e\u202d\x1b\x07"):
            problems.append(f"{name}: control characters survived extraction")
    return outcomes, problems, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not PAGES.is_dir():
        print(f"skipped: {PAGES} is absent (the saved pages live beside the project, not in it)")
        return 0
    names = sorted(p.name for p in PAGES.glob("*.html"))
    web = FakeWeb().start()
    try:
        for name in names:
            web.route(f"/{name}", (PAGES / name).read_bytes(), content_type="text/html")
        times = []
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.runs):
                outcomes, problems, secs = run_once(web, names, Path(tmp))
                times.append(secs / len(names))
    finally:
        web.stop()
    print(f"{len(names)} pages: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    for p in problems:
        print(f"  problem: {p}")
    print(
        f"median per page over {args.runs} runs: {statistics.median(times) * 1000:.1f} ms "
        f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
