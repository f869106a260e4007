"""The saved real web pages (../shared/web-pages/), extracted the way the pipeline does.

Each page's bytes are decoded with the fetcher's charset detection (`decode_text`) and extracted
with the web actor's `page_document`, as a fetched page would be; only the network is left out
(bench/web_pages.py covers the fetch path). The pages are other people's text: read in place at
bench time, never copied into the project. Absent folder: `page_texts()` returns an empty list and
the caller says so. $MOLE_WEB_PAGES names another folder (as bench/bm25_bench.py reads it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mole_dag.actors.fetch.body import decode_text  # noqa: E402
from mole_dag.actors.fetch.fetcher import Fetched  # noqa: E402
from mole_dag.actors.web import page_document  # noqa: E402
from mole_dag.core import Document  # noqa: E402
from mole_dag.paths import PROJECT_ROOT  # noqa: E402

PAGES = Path(os.environ.get("MOLE_WEB_PAGES") or PROJECT_ROOT / ".." / "shared" / "web-pages")


def page_texts() -> list[tuple[str, str]]:
    """(file name, extracted text) for every saved page that yields a document, by name."""
    if not PAGES.is_dir():
        return []
    out = []
    for path in sorted(PAGES.glob("*.html")):
        raw = path.read_bytes()
        text, charset = decode_text(raw, declared=None, html=True)
        got = page_document(Fetched(f"https://{path.stem}/", "text/html", text, charset, len(raw)))
        if isinstance(got, Document):
            out.append((path.name, got.text))
    return out


def absent_message() -> str:
    return f"{PAGES} is absent (the saved pages live beside the project, not in it)"
