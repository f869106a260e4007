"""PDF answer benchmark (issue 19): the DEV set of ../shared/qa-pdf-dev/ on both paths a user meets
PDFs by, beside a plain-BM25 baseline over the same text computed in the same run.

    .venv/bin/python bench/qa_pdf.py                       # both paths, all 30 questions
    .venv/bin/python bench/qa_pdf.py --paths local --only Q01 Q26
    .venv/bin/python bench/qa_pdf.py --rescore OUT         # score an earlier output folder again
    .venv/bin/python bench/qa_pdf.py --record              # also write the table in BENCHMARKS.md
    make qa-pdf QA_PDF_ARGS="--paths web"

Paths:
  web    the PDFs as links from a search engine: ../shared/qa-dev/server.py (a fake SearXNG that
         serves .pdf files as application/pdf; it indexes them with poppler's pdftotext, so this
         path needs poppler-utils and is skipped without it), run by the shared qa_run.sh;
  local  the PDFs as a corpus folder: one `mole research QUESTION --corpus pdfs/` per question.
Both are scored by the shared qa_score.py as it is, unpatched (hit@1, hit@5, MRR, report@,
relevance precision, fetched@, the stage that lost each answer): it reads a PDF citation
"[3] (p. 12)" as citation [3], and a local file's source URL, its file:// URI, as the PDF its
path ends in. (Output folders made before those two forms, with "[3, p. 12]" and
`corpus:NAME.pdf`, read 0 on them when rescored.) Figures per kind (single, two-doc, broken)
and overall.

Baseline: Okapi BM25 (bench/qa.py's, the question's words minus stop words) over every sentence
of every DEV PDF, twice: over mole's own stored text (extracted in this run, which also gives
the extraction speed in pages/s of CPU on one core) and over poppler's pdftotext text (the
issue's reference baseline; skipped without pdftotext).

The PDFs and questions are other people's work and stay in ../shared; without them this skips.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import qa as qa_bench  # noqa: E402  (bench/qa.py: BM25, metrics, the runner, section writer)

SECTION = "## Issue 19: PDF answers (qa-pdf-dev): mole vs plain BM25"
KINDS = ("single", "two-doc", "broken")


def shared_scorer(qa_dir: Path):  # noqa: ANN201
    """The shared qa_score.py, as it is (see the docstring)."""
    return qa_bench.load_module(qa_dir / "qa_score.py", "qa_score_pdf")


def run_local(pdfs: Path, qa: list[dict], out: Path, only: list[str], timeout: int) -> None:
    """One `mole research --corpus` session per question, one at a time (qa_run.sh's shape)."""
    mole = REPO / ".venv" / "bin" / "mole"
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    tag = dt.datetime.now().strftime("%Y%m%d%H%M%S")
    env = dict(os.environ, MOLE_HOME=str(out / "mole-home"))
    tsv = out / "sessions.tsv"
    if not tsv.exists():
        tsv.write_text("qid\tsession\trc\twall_s\tt0\tt1\n", encoding="utf-8")
    for q in qa:
        if only and q["id"] not in only:
            continue
        sid = f"qa-pdf-{tag}-{q['id']}"
        t0 = time.time()
        with (
            open(out / "runs" / f"{q['id']}.stdout", "w") as so,
            open(out / "runs" / f"{q['id']}.stderr", "w") as se,
        ):
            try:
                rc = subprocess.run(
                    [
                        str(mole),
                        "--db",
                        str(out / "store.duckdb"),
                        "research",
                        " ".join(q["question"].split()),
                        "--tokens",
                        "200000",
                        "--corpus",
                        str(pdfs),
                        "--session-id",
                        sid,
                        "--no-report-print",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=so,
                    stderr=se,
                    env=env,
                    timeout=timeout,
                ).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        t1 = time.time()
        with open(tsv, "a", encoding="utf-8") as fh:
            fh.write(f"{q['id']}\t{sid}\t{rc}\t{t1 - t0:.1f}\t{t0}\t{t1}\n")
        print(f"qa_pdf: local {q['id']} rc={rc} wall={t1 - t0:.0f}s", flush=True)


def score_path(qs, run: Path, qa: dict[str, dict], corpus: Path | None) -> list[dict]:  # noqa: ANN001
    import duckdb

    server = qs.load_server(str(corpus)) if corpus is not None else None
    log_file = run / "server.log"
    log = qs.load_log(str(log_file)) if log_file.exists() else None
    con = duckdb.connect(str(run / "store.duckdb"), read_only=True)
    try:
        out = []
        for r in qs.load_map(str(run / "sessions.tsv")):
            if r["qid"] in qa:
                res = qs.score_one(con, qa[r["qid"]], r["session"], r, server, log)
                res["kind"] = qa[r["qid"]]["kind"]
                out.append(res)
        return out
    finally:
        con.close()


def mole_texts(pdfs: Path) -> tuple[dict[str, str], int, float]:
    """mole's stored text of every PDF, the pages, and the CPU seconds of extracting them."""
    from mole_dag.actors.pdf.layout import normalise
    from mole_dag.actors.pdf.reader import RawPage, RawPdf
    from mole_dag.actors.pdf.worker import read

    texts, pages = {}, 0
    t0 = time.process_time()
    for path in sorted(pdfs.glob("*.pdf")):
        got = read(path.read_bytes(), 10_000, 1 << 30)
        if not got["ok"]:
            texts[path.name] = ""
            continue
        doc = normalise(
            RawPdf([RawPage(p["w"], p["h"], p["lines"]) for p in got["pages"]], got["meta"])
        )
        texts[path.name] = doc.text
        pages += len(doc.pages)
    return texts, pages, time.process_time() - t0


def pdftotext_texts(pdfs: Path) -> dict[str, str] | None:
    if not shutil.which("pdftotext"):
        return None
    out = {}
    for path in sorted(pdfs.glob("*.pdf")):
        raw = subprocess.run(
            ["pdftotext", "-q", str(path), "-"], capture_output=True, check=False
        ).stdout.decode("utf-8", "replace")
        # pdftotext hard-wraps lines; a blank line or a form feed ends a block.
        blocks = re.split(r"\n\s*\n|\f", raw)
        out[path.name] = "\n".join(" ".join(b.split()) for b in blocks if b.strip())
    return out


def bm25(texts: dict[str, str], qa: list[dict], qs) -> dict[str, dict]:  # noqa: ANN001
    corpus = [(name, s) for name in sorted(texts) for s in qa_bench.sentences(texts[name])]
    out = {}
    for q in qa:
        pats = qs.compile_patterns(q["patterns"])
        r = qa_bench.rank_question(
            corpus, q["question"], lambda s, p=pats: qs.matches(p, s), set(q["relevant_pages"])
        )
        out[q["id"]] = {"rank": r.rank, "prec5": r.prec5, "kind": q["kind"]}
    return out


def mole_metrics(rows: list[dict]) -> dict:
    n = len(rows)
    if not n:
        return {}
    ranks = [r["rank"] for r in rows]
    precs = [r["prec"] for r in rows if r["prec"] is not None]
    return {
        "n": n,
        "hit@1": sum(1 for x in ranks if x and x <= 1) / n,
        "hit@5": sum(1 for x in ranks if x and x <= 5) / n,
        "mrr": sum(1 / x for x in ranks if x) / n,
        "report@": sum(1 for r in rows if r["report"]) / n,
        "mined@": sum(1 for r in rows if r["mined"]) / n,
        "fetched@": sum(1 for r in rows if r["fetched"]) / n,
        "relevance_precision": sum(precs) / len(precs) if precs else None,
    }


def base_metrics(rows: list[dict]) -> dict:
    m = qa_bench.metrics([r["rank"] for r in rows], [r["prec5"] for r in rows])
    return {k: m[k] for k in ("n", "hit@1", "hit@5", "mrr", "relevance_precision")}


def table(results: dict) -> str:
    cols = [c for c in ("web", "local", "bm25 mole text", "bm25 pdftotext") if c in results]
    keys = [
        ("hit@1", qa_bench.pct),
        ("hit@5", qa_bench.pct),
        ("mrr", qa_bench.num),
        ("report@", qa_bench.pct),
        ("mined@", qa_bench.pct),
        ("fetched@", qa_bench.pct),
        ("relevance_precision", qa_bench.pct),
    ]
    head = {
        "web": "mole, web (PDF links)",
        "local": "mole, local --corpus",
        "bm25 mole text": "BM25, mole's text",
        "bm25 pdftotext": "BM25, pdftotext",
    }
    out = []
    for kind in ("all", *KINDS):
        n = results[cols[0]][kind].get("n", 0) if cols else 0
        out += [
            f"| {kind} ({n} questions) | " + " | ".join(head[c] for c in cols) + " |",
            "|---|" + "---|" * len(cols),
        ]
        for key, fmt in keys:
            vals = [
                fmt(results[c][kind].get(key)) if key in results[c][kind] else "-" for c in cols
            ]
            if all(v == "-" for v in vals):
                continue
            out.append(f"| {key} | " + " | ".join(vals) + " |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:  # noqa: C901, PLR0912, PLR0915
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pdf-dir", type=Path, default=REPO.parent / "shared" / "qa-pdf-dev")
    ap.add_argument("--qa-dir", type=Path, default=REPO.parent / "shared" / "qa-dev")
    ap.add_argument("--paths", nargs="+", default=["web", "local"], choices=["web", "local"])
    ap.add_argument("--only", nargs="+", default=[], metavar="QID")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per session")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--rescore", type=Path, help="score this earlier output folder again")
    ap.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    a = ap.parse_args(argv)

    qa_file, pdfs = a.pdf_dir / "qa.jsonl", a.pdf_dir / "pdfs"
    missing = [
        str(p)
        for p in (qa_file, pdfs, a.qa_dir / "qa_score.py", a.qa_dir / "qa_run.sh")
        if not p.exists()
    ]
    if missing:
        print(f"qa_pdf: skipped: the shared PDF QA set is not here ({', '.join(missing)} missing)")
        return 0
    qa_list = [json.loads(x) for x in qa_file.read_text("utf-8").splitlines() if x.strip()]
    if a.only:
        qa_list = [q for q in qa_list if q["id"] in a.only]
    qa = {q["id"]: q for q in qa_list}
    paths = list(a.paths)
    if "web" in paths and not shutil.which("pdftotext"):
        print(
            "qa_pdf: web path skipped: the fake SearXNG indexes PDFs with pdftotext "
            "(apt-get install poppler-utils)"
        )
        paths.remove("web")
    out = a.rescore or a.out or Path(tempfile.mkdtemp(prefix="mole-qa-pdf-"))
    out.mkdir(parents=True, exist_ok=True)
    commit = qa_bench.git("rev-parse", "--short", "HEAD")
    started = time.time()
    if not a.rescore:
        (out / "meta.json").write_text(
            json.dumps({"commit": commit, "date": dt.datetime.now().isoformat(), "paths": paths}),
            encoding="utf-8",
        )
        for path in paths:
            run = out / path
            if path == "web":
                port = a.port or qa_bench.free_port()
                run.mkdir(parents=True, exist_ok=True)
                qa_bench.run_sessions(
                    a.qa_dir, pdfs, qa_file, run, list(a.only), port, "", a.timeout
                )
            else:
                run_local(pdfs, qa_list, run, list(a.only), a.timeout)
    qs = shared_scorer(a.qa_dir)
    results: dict[str, dict] = {}
    per_q: dict[str, dict] = {}
    for path in ("web", "local"):
        run = out / path
        if not (run / "sessions.tsv").exists():
            continue
        rows = score_path(qs, run, qa, pdfs if path == "web" else None)
        results[path] = {"all": mole_metrics(rows)}
        for kind in KINDS:
            results[path][kind] = mole_metrics([r for r in rows if r["kind"] == kind])
        per_q[path] = {r["qid"]: r for r in rows}
    texts, n_pages, cpu = mole_texts(pdfs)
    variants = {"bm25 mole text": texts}
    poppler = pdftotext_texts(pdfs)
    if poppler is not None:
        variants["bm25 pdftotext"] = poppler
    for name, tx in variants.items():
        b = bm25(tx, qa_list, qs)
        results[name] = {"all": base_metrics(list(b.values()))}
        for kind in KINDS:
            results[name][kind] = base_metrics([r for r in b.values() if r["kind"] == kind])
        per_q[name] = b
    body = table(results)
    lines = ["| id | kind | " + " | ".join(per_q) + " |", "|---|---|" + "---|" * len(per_q)]
    for qid, q in qa.items():
        cells = []
        for rows in per_q.values():
            r = rows.get(qid, {})
            rank = r.get("rank")
            stage = f" ({r['stage']})" if "stage" in r and r.get("stage") != "ok" else ""
            cells.append(("-" if rank is None else str(rank)) + stage)
        lines.append(f"| {qid} | {q['kind']} | " + " | ".join(cells) + " |")
    speed = (
        f"Extraction (mole: PDFium in-process and the layout, CPU on one core): {n_pages} pages "
        f"of {len(texts)} PDFs in {cpu:.2f} s, {n_pages / cpu:.0f} pages/s."
    )
    header = (
        f"Commit `{commit}`, {dt.date.today().isoformat()}, extractive provider, paths: "
        f"{', '.join(p for p in ('web', 'local') if p in results) or 'none run'}. {speed}"
    )
    text = f"{header}\n\n{body}\nPer question: rank of the first answering statement "
    text += "(the stage that lost it when not ok).\n\n" + "\n".join(lines) + "\n"
    (out / "qa-pdf-table.md").write_text(text, encoding="utf-8")
    (out / "qa-pdf.json").write_text(
        json.dumps({"results": results, "per_question": per_q}, indent=1, default=str),
        encoding="utf-8",
    )
    print(text)
    print(f"qa_pdf: written {out / 'qa-pdf-table.md'} ({time.time() - started:.0f} s)")
    if a.record:
        cmd = "make qa-pdf" + (f' QA_PDF_ARGS="--only {" ".join(a.only)}"' if a.only else "")
        doc = (REPO / "BENCHMARKS.md").read_text(encoding="utf-8")
        (REPO / "BENCHMARKS.md").write_text(
            qa_bench.replace_section(doc, SECTION, f"```sh\n{cmd}\n```\n\n{text}"),
            encoding="utf-8",
        )
        print(f"qa_pdf: recorded in BENCHMARKS.md under {SECTION!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
