"""PDF answer benchmark (issue 19): the DEV set of ../shared/qa-pdf-dev/ on both paths a user meets
PDFs by, beside a plain-BM25 baseline over the same text computed in the same run.

    .venv/bin/python bench/qa_pdf.py                       # both paths, all 30 questions
    .venv/bin/python bench/qa_pdf.py --paths local --only Q01 Q26
    .venv/bin/python bench/qa_pdf.py --rescore OUT         # score an earlier output folder again
    .venv/bin/python bench/qa_pdf.py --record              # also write the table in BENCHMARKS.md
    make qa-pdf QA_PDF_ARGS="--paths web"
    .venv/bin/python bench/qa_pdf.py --pdf-dir ../shared/qa-pdf-dev /tmp/qa-pdf-unseen

--pdf-dir takes several question sets (each a folder with qa.jsonl and pdfs/; how the PDFs of
bench/qa-pdf-unseen are installed is in its README). The output starts with one table with a
column per set: DEV whole, its halves A (odd ids) and B (even ids), and each other set, each
path's hit@1 / hit@5 / MRR / report@ beside the BM25 baselines' on the same text, so that a
change which raises DEV but not the other sets shows at once; then each set's own tables. DEV
runs into OUT/web and OUT/local, another set into OUT/web.NAME and OUT/local.NAME (NAME = its
folder's name); --rescore OUT finds them again.

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
of every PDF of the set, twice: over mole's own stored text (extracted in this run, which also gives
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
DEV_DIR = REPO.parent / "shared" / "qa-pdf-dev"


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


# The same figures over some of qa_score.py's rows as bench/qa.py's sets table uses.
mole_metrics = qa_bench.mole_metrics


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
        if not n and kind != "all":  # e.g. --only, or a set without broken questions
            continue
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


def set_run(out: Path, path: str, qset: qa_bench.QSet) -> Path:
    """Where a set's sessions on one path went: DEV's in OUT/web and OUT/local (as before there
    were sets), any other set's in OUT/web.NAME and OUT/local.NAME."""
    return out / (path if qset.dev else f"{path}.{qset.name}")


def score_set(
    qs,  # noqa: ANN001
    out: Path,
    qset: qa_bench.QSet,
    alone: bool,
) -> tuple[dict[str, dict], dict[str, dict], str]:
    """One set's figures per column (path or BM25 variant) and kind, its per-question rows, and
    the extraction speed line. ALONE: the only set, which an output folder made before there
    were sets holds in OUT/web and OUT/local whatever it is."""
    pdfs, qa, qa_list = qset.folder / "pdfs", qset.qa, list(qset.qa.values())
    results: dict[str, dict] = {}
    per_q: dict[str, dict] = {}
    for path in ("web", "local"):
        run = set_run(out, path, qset)
        if alone and not run.exists():
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
    speed = (
        f"Extraction (mole: PDFium in-process and the layout, CPU on one core): {n_pages} pages "
        f"of {len(texts)} PDFs in {cpu:.2f} s, {n_pages / cpu if cpu else 0:.0f} pages/s."
    )
    return results, per_q, speed


def pdf_sets_table(scored: list[tuple[qa_bench.QSet, dict[str, dict]]]) -> str:
    """DEV, its halves and each other set side by side: each path's figures and the BM25
    baselines' over the same text, computed in this run."""
    cols = [
        (label, per_q, ids)
        for qset, per_q in scored
        for label, ids in qa_bench.set_parts(qset.name, qset.dev, qset.qa)
    ]
    names = {
        "web": "mole web",
        "local": "mole local",
        "bm25 mole text": "BM25 mole's text",
        "bm25 pdftotext": "BM25 pdftotext",
    }
    figures = [
        ("hit@1", qa_bench.pct),
        ("hit@5", qa_bench.pct),
        ("mrr", qa_bench.num),
        ("report@", qa_bench.pct),
    ]
    rows = []
    for col, title in names.items():
        if not any(col in per_q for _, per_q, _ in cols):
            continue
        for key, fmt in figures:
            if key == "report@" and col.startswith("bm25"):
                continue
            get = mole_metrics if col in ("web", "local") else base_metrics
            vals = [
                fmt(get([per_q[col][q] for q in ids if q in per_q.get(col, {})]).get(key))
                for _, per_q, ids in cols
            ]
            rows.append((f"{title} {'MRR' if key == 'mrr' else key}", vals))
    heads = [f"{label} ({len(ids)})" for label, _, ids in cols]
    return qa_bench.sets_table(heads, rows, "set (questions)")


def per_question(qa: dict[str, dict], per_q: dict[str, dict]) -> str:
    lines = ["| id | kind | " + " | ".join(per_q) + " |", "|---|---|" + "---|" * len(per_q)]
    for qid, q in qa.items():
        cells = []
        for rows in per_q.values():
            r = rows.get(qid, {})
            rank = r.get("rank")
            stage = f" ({r['stage']})" if "stage" in r and r.get("stage") != "ok" else ""
            cells.append(("-" if rank is None else str(rank)) + stage)
        lines.append(f"| {qid} | {q['kind']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:  # noqa: C901, PLR0912, PLR0915
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--pdf-dir",
        "--sets",
        dest="pdf_dir",
        type=Path,
        nargs="+",
        action="extend",
        metavar="DIR",
        help="question sets, each a folder with qa.jsonl and pdfs/ (default: "
        "../shared/qa-pdf-dev, DEV); e.g. --pdf-dir ../shared/qa-pdf-dev /tmp/qa-pdf-unseen. "
        "--rescore without it takes the sets the run was made with",
    )
    ap.add_argument("--qa-dir", type=Path, default=REPO.parent / "shared" / "qa-dev")
    ap.add_argument("--paths", nargs="+", default=["web", "local"], choices=["web", "local"])
    ap.add_argument("--only", nargs="+", default=[], metavar="QID")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per session")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--rescore", type=Path, help="score this earlier output folder again")
    ap.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    a = ap.parse_args(argv)

    meta: dict = {}
    if a.rescore:
        try:
            meta = json.loads((a.rescore / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
    # --rescore without --pdf-dir: the sets the run was made with
    folders = a.pdf_dir or [Path(f) for f in meta.get("sets", [])]
    # and the questions it ran, so that BM25 is measured over the same ones as mole
    only: list[str] = a.only or meta.get("only", [])
    folders = folders or [DEV_DIR]
    need = [a.qa_dir / "qa_score.py", a.qa_dir / "qa_run.sh"]
    need += [p for f in folders for p in (f / "qa.jsonl", f / "pdfs")]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        print(f"qa_pdf: skipped: the shared PDF QA set is not here ({', '.join(missing)} missing)")
        return 0
    sets: list[qa_bench.QSet] = []
    for folder in folders:
        qa_list = [
            json.loads(x)
            for x in (folder / "qa.jsonl").read_text("utf-8").splitlines()
            if x.strip()
        ]
        # DEV by its place (or, moved elsewhere, its folder's name), so its halves are shown.
        dev = folder.resolve() == DEV_DIR.resolve() or folder.resolve().name == DEV_DIR.name
        name = qa_bench.set_name(folder, dev, (x.name for x in sets))
        qa = {q["id"]: q for q in qa_list if not only or q["id"] in only}
        sets.append(qa_bench.QSet(name, folder, dev, qa, {}))
    unknown = sorted(set(only) - {q for x in sets for q in x.qa})
    if unknown:
        print(f"qa_pdf: unknown question ids {unknown}", file=sys.stderr)
        return 2
    sets = [x for x in sets if x.qa]  # --only picked nothing of these
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
            json.dumps(
                {
                    "commit": commit,
                    "date": dt.datetime.now().isoformat(),
                    "paths": paths,
                    "sets": [str(x.folder.resolve()) for x in sets],
                    "only": only,
                }
            ),
            encoding="utf-8",
        )
        for qset in sets:
            pdfs, qa_list = qset.folder / "pdfs", list(qset.qa.values())
            for path in paths:
                run = set_run(out, path, qset)
                print(f"qa_pdf: {qset.name} {path} -> {run}", flush=True)
                if path == "web":
                    port = a.port or qa_bench.free_port()
                    run.mkdir(parents=True, exist_ok=True)
                    qa_bench.run_sessions(
                        a.qa_dir,
                        pdfs,
                        qset.folder / "qa.jsonl",
                        run,
                        [q for q in only if q in qset.qa],
                        port,
                        "",
                        a.timeout,
                    )
                else:
                    run_local(pdfs, qa_list, run, [], a.timeout)
    qs = shared_scorer(a.qa_dir)
    scored, sections, dumped = [], [], {}
    for qset in sets:
        results, per_q, speed = score_set(qs, out, qset, len(sets) == 1)
        scored.append((qset, per_q))
        dumped[qset.name] = {"folder": str(qset.folder), "results": results, "per_question": per_q}
        where = "" if qset.dev else f" (`{qset.folder}`)"
        sections.append(
            f"### {qset.name}{where}\n\n{speed}\n\n{table(results)}\n"
            "Per question: rank of the first answering statement (the stage that lost it when "
            f"not ok).\n\n{per_question(qset.qa, per_q)}"
        )
    ran = {p for _, per_q in scored for p in per_q if p in ("web", "local")}
    if a.rescore:  # the sessions ran earlier, on the commit their meta.json names
        commit = f"{meta.get('commit', '?')}` (re-scored at `{commit}`)"
    else:
        commit += "`"
    header = (
        f"Commit `{commit}, {dt.date.today().isoformat()}, extractive provider, paths: "
        f"{', '.join(p for p in ('web', 'local') if p in ran) or 'none run'}; sets: "
        + ", ".join(f"{x.name} ({len(x.qa)} questions)" for x in sets)
        + "."
    )
    halves = f" {qa_bench.HALVES_NOTE}" if any(x.dev for x in sets) else ""
    text = (
        f"{header}\n\nMole and the BM25 baselines per question set.{halves}\n\n"
        + pdf_sets_table(scored)
        + "\n"
        + "\n".join(sections)
    )
    (out / "qa-pdf-table.md").write_text(text, encoding="utf-8")
    first = dumped[sets[0].name] if sets else {"results": {}, "per_question": {}}
    (out / "qa-pdf.json").write_text(
        json.dumps(
            {
                "results": first["results"],
                "per_question": first["per_question"],
                "sets": dumped,
            },
            indent=1,
            default=str,
        ),
        encoding="utf-8",
    )
    print(text)
    print(f"qa_pdf: written {out / 'qa-pdf-table.md'} ({time.time() - started:.0f} s)")
    if a.record:
        cmd = "make qa-pdf" + (f' QA_PDF_ARGS="--only {" ".join(only)}"' if only else "")
        doc = (REPO / "BENCHMARKS.md").read_text(encoding="utf-8")
        (REPO / "BENCHMARKS.md").write_text(
            qa_bench.replace_section(doc, SECTION, f"```sh\n{cmd}\n```\n\n{text}"),
            encoding="utf-8",
        )
        print(f"qa_pdf: recorded in BENCHMARKS.md under {SECTION!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
