"""A slow local web for `mole research` in its own process: a fake SearXNG and a few pages on
127.0.0.1, each answering after a delay, so a session spends its time waiting on the network
as a real one does. Used by tests/test_store_shorttx.py and bench/store_readers_bench.py."""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

from tests.fakeweb import FakeWeb, Route, Seen, page, searxng_results

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Does green tea affect sleep?"

PAGES = {
    "/tea/evening": (
        "Evening tea and sleep",
        [
            "Drinking green tea in the evening raises the risk of poor sleep in adults "
            "who are sensitive to caffeine.",
            "A cup of green tea holds about thirty milligrams of caffeine, which is "
            "less than coffee.",
        ],
    ),
    "/tea/theanine": (
        "Theanine",
        [
            "Green tea contains theanine, which was found to improve sleep quality "
            "in a trial of ninety adults.",
            "The trial found that sleep latency fell by nine minutes with green tea extract.",
        ],
    ),
    "/tea/review": (
        "A review of tea and sleep",
        [
            "The review found mixed evidence that green tea affects sleep, with "
            "caffeine and theanine pulling in opposite directions.",
            "Decaffeinated green tea was associated with better sleep in older adults.",
        ],
    ),
    "/tea/decaf": (
        "Decaf",
        [
            "Decaffeinated green tea keeps most of its theanine, which was found to "
            "shorten the time it takes to fall asleep."
        ],
    ),
}


def start(delay_s: tuple[float, float] = (1.0, 2.0), seed: int = 0) -> tuple[FakeWeb, str]:
    """Serve the pages and a SearXNG answering every query with all of them; every response
    waits a uniform `delay_s` first. Returns the server (stop it) and the SearXNG URL."""
    web = FakeWeb().start()
    rng = random.Random(seed)
    urls = []
    for path, (title, paras) in PAGES.items():
        web.route(path, page(title, *paras), delay_s=rng.uniform(*delay_s))
        urls.append(web.url(path))

    def search(seen: Seen) -> Route:
        q = seen.query.get("q", [""])[0]
        return Route(
            searxng_results(q, urls),
            200,
            {"Content-Type": "application/json"},
            delay_s=rng.uniform(*delay_s),
        )

    web.handlers["/sx/search"] = search
    return web, web.url("/sx")


def research_argv(searxng_url: str, session_id: str, usd: str = "0.20") -> list[str]:
    return [
        sys.executable,
        "-m",
        "mole_dag.cli",
        "research",
        QUESTION,
        "--usd",
        usd,
        "--session-id",
        session_id,
        "--search",
        "searxng",
        "--searxng-url",
        searxng_url,
        "--allow-host",
        "127.0.0.1",
        "--quiet",
        "--no-report-print",
    ]


def research_env(tmp: Path, home: Path) -> dict[str, str]:
    """The environment for a research process with its own Dagster home under `tmp` and its
    store under `home` (several processes may share one `home`, each with its own `tmp`)."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "dagster.yaml", tmp / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp),
        "MOLE_HOME": str(home),
        "MOLE_CONFIG": str(tmp / "config.json"),
    }
    env.pop("MOLE_DB", None)
    return env
