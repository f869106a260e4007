"""Opt-in (MOLE_ROBUSTNESS=1): the fetch -> extract -> chunk -> quote-check path over 110 real
saved pages in ../shared/web-pages/, served from 127.0.0.1. Skips with the reason when not asked
for or when the folder is absent (a fresh clone has no ../shared)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.fakeweb import FakeWeb

BENCH = Path(__file__).resolve().parent.parent / "bench" / "web_pages.py"


def _bench():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("web_pages_bench", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(
    not os.environ.get("MOLE_ROBUSTNESS"),
    reason="opt-in: set MOLE_ROBUSTNESS=1 to run over ../shared/web-pages/",
)
def test_real_pages_extract_chunk_and_quote(tmp_path: Path) -> None:
    bench = _bench()
    if not bench.PAGES.is_dir():
        pytest.skip(f"{bench.PAGES} is absent: the saved pages live beside the project")
    names = sorted(p.name for p in bench.PAGES.glob("*.html"))
    web = FakeWeb().start()
    try:
        for name in names:
            web.route(f"/{name}", (bench.PAGES / name).read_bytes(), content_type="text/html")
        outcomes, problems, _ = bench.run_once(web, names, tmp_path)
    finally:
        web.stop()
    assert problems == []
    # Measured: all 110 extract to a document. Allow a little for a trafilatura upgrade.
    assert outcomes["document"] >= 0.95 * len(names), outcomes
