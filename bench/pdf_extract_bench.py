"""Which PDF library mole reads PDFs with, measured (issue 19): pypdfium2, pdfminer.six and pypdf
on the DEV PDFs of ../shared/qa-pdf-dev/, for text fidelity, reading order, speed and memory.

    .venv/bin/python bench/pdf_extract_bench.py              # every library present, 3 runs each
    .venv/bin/python bench/pdf_extract_bench.py --runs 1 --libs pypdfium2 mole

Each library runs in a fresh process of its own (peak memory is that process's), on one core
(CPU time, not wall time, under a busy machine), over all 31 PDFs. Every library's page text goes
through the same plain-text normalisation (mole's character cleaning, line-end hyphens joined,
whitespace collapsed), so the libraries are compared, not the post-processing. `mole` is the
shipped path: pypdfium2's lines with geometry through mole_dag.actors.pdf.layout (paragraphs,
running heads, references dropped), the text mole stores.

Fidelity, per question of qa.jsonl:
  where    its `where` sentence (pdftotext's, made comparable: letters and digits only, ligatures
           spelled out) is found whole on the page it names (single and two-doc questions; the
           broken ones' `where` is broken on purpose);
  pattern  an answer pattern matches the text of a relevant PDF (whitespace collapsed);
  sentence an answer pattern matches inside one sentence of the text as mole splits it
           (mole_dag.text.sentence_spans per paragraph): what the extractive miner can quote.
Reading order on two-column pages is the `where`/`sentence` result on the two-column PDFs
(Rcpp's vignettes), counted apart.

The PDFs and questions stay in ../shared (never copied here); without them the bench skips.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LIBS = ("mole", "pypdfium2", "pdfminer.six", "pypdf")
TWO_COLUMN = ("Rcpp__",)


def _skeleton(text: str) -> str:
    from mole_dag.actors.pdf.layout import clean

    return re.sub(r"[\W_]+", "", clean(text).lower())


def _plain(pages: list[str]) -> list[str]:
    """The same plain-text normalisation for every library: characters cleaned, a hyphen at a
    line's end joined, whitespace collapsed."""
    from mole_dag.actors.pdf.layout import clean

    out = []
    for p in pages:
        lines = [clean(x) for x in p.replace("\r\n", "\n").replace("\ufffe", "-\n").split("\n")]
        text = ""
        for ln in lines:
            if not ln:
                continue
            if text.endswith("-") and ln[:1].islower():
                text = text[:-1] + ln
            else:
                text = f"{text} {ln}" if text else ln
        out.append(" ".join(text.split()))
    return out


def pages_of(lib: str, path: Path) -> list[str]:
    if lib == "pypdfium2":
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(str(path))
        try:
            out = []
            for i in range(len(pdf)):
                page = pdf[i]
                tp = page.get_textpage()
                out.append(tp.get_text_range())
                tp.close()
                page.close()
            return out
        finally:
            pdf.close()
    if lib == "pypdf":
        from pypdf import PdfReader

        return [p.extract_text() or "" for p in PdfReader(str(path)).pages]
    if lib == "pdfminer.six":
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LTTextContainer

        return [
            "\n".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
            for page in extract_pages(str(path))
        ]
    raise KeyError(lib)


def mole_pages(path: Path) -> tuple[list[str], str]:
    """mole's own path, in this process: the worker's reading and the layout, page by page."""
    from mole_dag.actors.pdf.layout import normalise
    from mole_dag.actors.pdf.reader import RawPage, RawPdf
    from mole_dag.actors.pdf.worker import read

    got = read(path.read_bytes(), 10_000, 1 << 30)
    if not got["ok"]:
        return [], ""
    doc = normalise(
        RawPdf([RawPage(p["w"], p["h"], p["lines"]) for p in got["pages"]], got["meta"])
    )
    data = doc.text.encode("utf-8")
    bounds = [*doc.pages, len(data)]
    return [data[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:], strict=False)], doc.text


def one(lib: str, pdf_dir: Path) -> dict:
    """Run in a child process: every PDF through LIB; CPU seconds, pages, peak RSS, texts."""
    import warnings

    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    texts: dict[str, list[str]] = {}
    full: dict[str, str] = {}
    pages = 0
    t0 = time.process_time()
    for path in sorted(pdf_dir.glob("*.pdf")):
        if lib == "mole":
            got, whole = mole_pages(path)
            texts[path.name] = got
            full[path.name] = whole
        else:
            raw = pages_of(lib, path)
            texts[path.name] = raw
        pages += len(texts[path.name])
    cpu = time.process_time() - t0
    if lib != "mole":
        for name, raw in texts.items():
            texts[name] = _plain(raw)
            full[name] = "\n\n".join(texts[name])
    return {
        "lib": lib,
        "cpu_s": cpu,
        "pages": pages,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "texts": texts,
        "full": full,
    }


def fidelity(res: dict, qa: list[dict]) -> dict:
    from mole_dag.mining.passages import sentences_of

    sys.path.insert(0, str(QA_SCORE.parent))
    import importlib.util

    spec = importlib.util.spec_from_file_location("qa_score_shared", QA_SCORE)
    qs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(qs)
    where_rx = re.compile(
        r"^(?P<pdf>\S+\.pdf) p\.(?P<p0>\d+)(?:-(?P<p1>\d+))?: (?P<text>.*)$", re.S
    )
    out = {"where": [0, 0], "pattern": [0, 0], "sentence": [0, 0], "two_col": [0, 0]}
    per_q = {}
    sentences = {name: [s.text for s in sentences_of(t)] for name, t in res["full"].items()}
    for q in qa:
        pats = qs.compile_patterns(q["patterns"])
        rel = q["relevant_pages"]
        ok_where = None
        if q["kind"] != "broken":
            parts = q["where"].split(" || ")
            hits = 0
            for part in parts:
                m = where_rx.match(part.strip())
                if not m:
                    continue
                pages = res["texts"].get(m["pdf"], [])
                lo, hi = int(m["p0"]), int(m["p1"] or m["p0"])
                page_text = _skeleton(" ".join(pages[lo - 1 : hi]))
                hits += _skeleton(m["text"]) in page_text
            ok_where = hits == len(parts)
            out["where"][0] += ok_where
            out["where"][1] += 1
        ok_pat = all(any(qs.matches([p], res["full"].get(r, "")) for p in pats) for r in rel[:1])
        ok_sent = any(qs.matches(pats, s) for r in rel for s in sentences.get(r, []))
        out["pattern"][0] += ok_pat
        out["pattern"][1] += 1
        out["sentence"][0] += ok_sent
        out["sentence"][1] += 1
        if any(r.startswith(TWO_COLUMN) for r in rel):
            out["two_col"][0] += ok_sent
            out["two_col"][1] += 1
        per_q[q["id"]] = {"where": ok_where, "pattern": ok_pat, "sentence": ok_sent}
    return {"totals": out, "per_question": per_q}


QA_DIR = Path(os.environ.get("MOLE_QA_PDF_DIR") or REPO.parent / "shared" / "qa-pdf-dev")
QA_SCORE = Path(os.environ.get("MOLE_QA_DIR") or REPO.parent / "shared" / "qa-dev") / "qa_score.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--libs", nargs="+", default=list(LIBS))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--pdfs", type=Path, default=QA_DIR / "pdfs")
    ap.add_argument("--json", type=Path, help="write every figure here")
    a = ap.parse_args(argv)
    if a.one:
        json.dump(one(a.one, a.pdfs), sys.stdout)
        return 0
    qa_file = QA_DIR / "qa.jsonl"
    if not (a.pdfs.is_dir() and qa_file.exists() and QA_SCORE.exists()):
        print(f"pdf_extract_bench: skipped: the DEV PDFs are not here ({a.pdfs}, {qa_file})")
        return 0
    qa = [json.loads(x) for x in qa_file.read_text("utf-8").splitlines() if x.strip()]
    rows = []
    for lib in a.libs:
        runs = []
        for _ in range(a.runs):
            proc = subprocess.run(
                [sys.executable, __file__, "--one", lib, "--pdfs", str(a.pdfs)],
                capture_output=True,
                text=True,
                cwd=REPO,
            )
            if proc.returncode != 0:
                print(f"{lib}: not measured ({proc.stderr.strip().splitlines()[-1:]})")
                break
            runs.append(json.loads(proc.stdout))
        if not runs:
            continue
        fid = fidelity(runs[0], qa)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        rows.append(
            {
                "lib": lib,
                "pages": runs[0]["pages"],
                "cpu_s": cpu,
                "pages_per_s": runs[0]["pages"] / cpu if cpu else None,
                "maxrss_mb": statistics.median(r["maxrss_mb"] for r in runs),
                "runs": len(runs),
                **fid,
            }
        )
        print(f"measured {lib}: {rows[-1]['pages_per_s']:.1f} pages/s", flush=True)

    def frac(x: list[int]) -> str:
        return f"{x[0]}/{x[1]}"

    lines = [
        "| library | pages/s (one core, CPU) | CPU s, 31 PDFs | peak RSS MB | `where` sentence "
        "whole on its page | answer pattern in the text | answer inside one sentence | "
        "two-column (Rcpp) answers inside one sentence |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = r["totals"]
        lines.append(
            f"| {r['lib']} | {r['pages_per_s']:.0f} | {r['cpu_s']:.2f} | {r['maxrss_mb']:.0f} | "
            f"{frac(t['where'])} | {frac(t['pattern'])} | {frac(t['sentence'])} | "
            f"{frac(t['two_col'])} |"
        )
    print("\n".join(lines))
    misses = {
        r["lib"]: sorted(q for q, v in r["per_question"].items() if not v["sentence"]) for r in rows
    }
    print("answer not inside one sentence: " + "; ".join(f"{k}: {v}" for k, v in misses.items()))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
