"""Local corpus BM25 at 10k documents (issue 14): the project's index side by side with bm25s
on the same documents and the same terms.

Documents come from real text: the saved pages in ../shared/web-pages/ (or --pages, or
$MOLE_WEB_PAGES), read in place and never copied, extracted by the local corpus's own loader
(`load_document`) and split into sentences (`sentence_spans`). A document is a window of 1-6
consecutive sentences of one page (sizes from a seeded RNG; --sentences sets the longest), one
window starting at each sentence, going round the pages again until there are --docs of them:
paragraph-sized documents, as a folder of notes would hold. The 110 pages give about 6,000
sentences, so the second round's windows overlap the first's with other sizes. Queries:
--queries sets of 2-5 words drawn from a random document (seeded), turned into terms by the
project's `terms()` as `LocalCorpus.search` does; both sides get the same term lists.

Each side runs in a fresh subprocess, so its peak memory (VmHWM, see `_rss_mb`) is its own:
  project      mole_dag.actors.bm25.BM25.build(terms), then top(terms, 10) per query
  bm25s        bm25s.BM25() with its defaults (Lucene variant, float32): .index(terms), then
               .retrieve([terms], k=10) per query, its documented one-query path
  bm25s, same formula  bm25s configured to the project's scores (ATIRE tf, Lucene idf,
               float64), scores by get_scores_from_ids and the project's tie-keeping top k:
               what wrapping bm25s inside the project would cost
  corpus cold / warm   LocalCorpus.open over the documents written as .txt files: extraction,
               terms, index and cache write; then a new process opening it from the cache
The query time excludes turning the query into terms (the same `terms()` call for every side).

    .venv/bin/python bench/bm25_bench.py [--runs 3] [--docs 10000] [--queries 200]
        [--sentences 6] [--pages DIR] [--baseline DIR] [--json] [--quick]

--baseline DIR measures the project and corpus sides again from another checkout
(PYTHONPATH=DIR), e.g. the code before issue 14: `git archive main | tar -x -C DIR`. --json
prints the project's figures and their ratios to bm25s as one JSON line at the end, for
bench/suite.py (the issue's bound, query p50 and p95 within 1.5x of bm25s, as limits); --quick
is one run of 100 queries, still at 10k documents. Absent pages folder or bm25s: says so in one
line and exits 2."""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PAGES = Path(os.environ.get("MOLE_WEB_PAGES") or REPO.parent / "shared" / "web-pages")
K = 10
# Queries run before the timed ones on every side: the first numpy calls and bm25s's first
# retrieve pay one-off costs that are not what a query costs.
WARMUP = 20


# --- the documents and queries (parent process) -----------------------------------------------


def build_documents(pages: Path, n_docs: int, seed: int, longest: int = 6) -> list[str]:
    sys.path.insert(0, str(REPO))
    from mole_dag.actors.local import load_document
    from mole_dag.text import sentence_spans

    per_page: list[list[str]] = []
    for p in sorted(pages.glob("*.html")):
        text = load_document(p).text
        sents = [line[a:b] for line in text.splitlines() for a, b in sentence_spans(line)]
        if sents:
            per_page.append(sents)
    if not per_page:
        raise SystemExit(f"no text in the pages of {pages}")
    rng = random.Random(seed)
    docs: list[str] = []
    while len(docs) < n_docs:
        for sents in per_page:
            for i in range(len(sents)):
                if len(docs) == n_docs:
                    return docs
                docs.append(" ".join(sents[i : i + rng.randint(1, longest)]))
    return docs


def build_queries(docs: list[str], n: int, seed: int) -> list[list[str]]:
    from mole_dag.text import terms, words

    rng = random.Random(seed + 1)
    out: list[list[str]] = []
    while len(out) < n:
        ws = words(rng.choice(docs))
        if len(ws) < 2:
            continue
        q = terms(" ".join(rng.sample(ws, min(len(ws), rng.randint(2, 5)))))
        if q:  # a query of stopwords only is not a query either side would see
            out.append(q)
    return out


# --- the sides (each in its own process) -------------------------------------------------------


def _rss_mb() -> float:
    """This process's peak resident set, in MB. VmHWM rather than ru_maxrss: Linux carries
    ru_maxrss across exec, so a worker started by this (large) parent would report the
    parent's size at fork as its own peak (seen: every side read the same 160 MB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _traced(build: Callable[[], object]) -> list[float]:
    """[peak, kept] MB of Python and numpy allocations while BUILD runs and once it has
    returned (its result alive). Exact and allocator-blind, unlike the resident set: freed
    JSON buffers are reused by small objects without raising VmHWM, while numpy's large
    arrays take fresh pages, so RSS growth flatters dict-of-Counters indexes."""
    gc.collect()
    tracemalloc.start()
    got = build()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del got
    return [peak / 2**20, kept / 2**20]


def _timed_queries(run: Any, queries: list[list[str]]) -> list[float]:
    for q in queries[:WARMUP]:
        run(q)
    out = []
    for q in queries:
        t = time.perf_counter()
        run(q)
        out.append(time.perf_counter() - t)
    return out


def side_project(docs: list[list[str]], queries: list[list[str]]) -> dict[str, Any]:
    t = time.perf_counter()
    from mole_dag.actors.bm25 import BM25

    # A one-word index loads whatever the index loads on first use (numpy, since issue 14;
    # nothing before): timed apart, as bm25s's import is.
    BM25.build([["warm"]]).top(["warm"], 1)
    import_s = time.perf_counter() - t
    t = time.perf_counter()
    bm = BM25.build(docs)
    index_s = time.perf_counter() - t
    return {
        "import_s": import_s,
        "index_s": index_s,
        "query_s": _timed_queries(lambda q: bm.top(q, K), queries),
        "traced_mb": _traced(lambda: BM25.build(docs)),
        "top": [[i for i, _ in bm.top(q, K)] for q in queries],
    }


def _bm25s_index(ret: Any, docs: list[list[str]]) -> Any:
    ret.index(docs, show_progress=False)
    return ret


def side_bm25s(docs: list[list[str]], queries: list[list[str]]) -> dict[str, Any]:
    os.environ.setdefault("DISABLE_TQDM", "1")
    t = time.perf_counter()
    import bm25s  # type: ignore[import-untyped]

    import_s = time.perf_counter() - t
    t = time.perf_counter()
    ret = bm25s.BM25()
    ret.index(docs, show_progress=False)
    index_s = time.perf_counter() - t
    return {
        "import_s": import_s,
        "index_s": index_s,
        "query_s": _timed_queries(
            lambda q: ret.retrieve([q], k=K, show_progress=False, n_threads=0), queries
        ),
        "traced_mb": _traced(lambda: _bm25s_index(bm25s.BM25(), docs)),
    }


def side_bm25s_same(docs: list[list[str]], queries: list[list[str]]) -> dict[str, Any]:
    os.environ.setdefault("DISABLE_TQDM", "1")
    t = time.perf_counter()
    import bm25s
    import numpy as np

    import_s = time.perf_counter() - t
    t = time.perf_counter()
    ret = bm25s.BM25(method="atire", idf_method="lucene", dtype="float64")
    ret.index(docs, show_progress=False)
    index_s = time.perf_counter() - t

    def top(q: list[str]) -> list[int]:
        ids = list(dict.fromkeys(ret.get_tokens_ids(q)))
        if not ids:
            return []
        s = ret.get_scores_from_ids(ids)
        hit = np.flatnonzero(s > 0)
        if hit.size > K:
            vals = s[hit]
            hit = hit[vals >= np.partition(vals, hit.size - K)[hit.size - K]]
        return [int(i) for i in hit[np.lexsort((hit, -s[hit]))[:K]]]

    return {
        "import_s": import_s,
        "index_s": index_s,
        "query_s": _timed_queries(top, queries),
        "traced_mb": _traced(
            lambda: _bm25s_index(
                bm25s.BM25(method="atire", idf_method="lucene", dtype="float64"), docs
            )
        ),
        "top": [top(q) for q in queries],
    }


def side_corpus(folder: str, cache_dir: str, queries: list[str] | None = None) -> dict[str, Any]:
    """LocalCorpus.open timed; with QUERIES (retrieval by meaning on, MOLE_RETRIEVAL=meaning in
    the environment), each query's search timed too and the texts the vector cache embedded
    counted: a second process over the same folder and queries should embed none."""
    from mole_dag.actors.local import LocalCorpus

    t = time.perf_counter()
    c = LocalCorpus.open(folder, cache_dir=Path(cache_dir))
    open_s = time.perf_counter() - t
    assert len(c.documents) > 0
    query_s: list[float] = []
    embedded = 0
    if queries:
        from mole_dag.meaning.store import cache_for

        for q in queries:
            t = time.perf_counter()
            c.search(q, K)
            query_s.append(time.perf_counter() - t)
        embedded = cache_for(Path(cache_dir) / "meaning").embedded
    return {
        "import_s": 0.0,
        "index_s": open_s,
        "query_s": query_s,
        "traced_mb": [0.0, 0.0],
        "embedded": embedded,
    }


SIDES = {
    "project": side_project,
    "bm25s": side_bm25s,
    "bm25s, same formula": side_bm25s_same,
}


# Queries searched by meaning per corpus side (each embeds up to PASSAGES_PER_QUERY passages
# the first time): enough for a median, few enough for a run of minutes on a shared machine.
MEANING_QUERIES = 20


def worker(side: str, data: Path, folder: str, cache_dir: str) -> None:
    if side.startswith("corpus") and "meaning" in side:
        payload = json.loads(data.read_text("utf-8"))
        texts = [" ".join(q) for q in payload["queries"][WARMUP : WARMUP + MEANING_QUERIES]]
        got = side_corpus(folder, cache_dir, texts)
    elif side.startswith("corpus"):
        got = side_corpus(folder, cache_dir)
    else:
        payload = json.loads(data.read_text("utf-8"))
        got = SIDES[side](payload["docs"], payload["queries"])
    got["peak_mb"] = _rss_mb()
    print(json.dumps(got))


def run_side(side: str, data: Path, folder: Path, cache: Path, src: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src), "DISABLE_TQDM": "1"}
    env.pop("MOLE_RETRIEVAL", None)
    if "meaning" in side:
        env["MOLE_RETRIEVAL"] = "meaning"
    out = subprocess.run(
        [sys.executable, __file__, "--worker", side, str(data), str(folder), str(cache)],
        env=env,
        cwd=src,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{side} ({src}) failed:\n{out.stderr[-3000:]}")
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


# --- the report --------------------------------------------------------------------------------


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def p50(s: dict[str, Any]) -> float:
    return _pct(s["query_s"], 0.50) * 1e3


def p95(s: dict[str, Any]) -> float:
    return _pct(s["query_s"], 0.95) * 1e3


def summarise(runs: list[dict[str, dict[str, Any]]], ref: str = "bm25s") -> None:
    cols: list[tuple[str, Any, str]] = [
        ("import s", lambda s: s["import_s"], ".2f"),
        ("index s", lambda s: s["index_s"], ".3f"),
        ("query p50 ms", p50, ".3f"),
        ("query p95 ms", p95, ".3f"),
        ("peak MB", lambda s: s["peak_mb"], ".0f"),
        ("build MB", lambda s: s["traced_mb"][0], ".1f"),
        ("kept MB", lambda s: s["traced_mb"][1], ".1f"),
    ]
    ratio_cols = [1, 2, 3, 4]
    print(
        "\n| side | "
        + " | ".join(c[0] for c in cols)
        + " | "
        + " | ".join(
            f"{cols[i][0].split()[-2 if 'ms' in cols[i][0] else 0]} / {ref}" for i in ratio_cols
        )
        + " |"
    )
    print("|---|" + "---:|" * (len(cols) + len(ratio_cols)))
    for name in runs[0]:
        has_q = bool(runs[0][name]["query_s"])
        cells = []
        for i, (_, f, fmt) in enumerate(cols):
            skip = (i in (2, 3) and not has_q) or (i in (0, 5, 6) and "corpus" in name)
            cells.append("" if skip else format(statistics.median(f(r[name]) for r in runs), fmt))
        for i in ratio_cols:
            f = cols[i][1]
            skip = name == ref or "corpus" in name or (i in (2, 3) and not has_q)
            val = statistics.median(f(r[name]) / f(r[ref]) for r in runs) if not skip else None
            cells.append("" if val is None else f"{val:.2f}x")
        print(f"| {name} | " + " | ".join(cells) + " |")
    # A corpus side's open includes reading the files and writing the cache, which bm25s's
    # index does not: its ratio is printed apart, with what retrieval by meaning embedded.
    for name in runs[0]:
        if "corpus" not in name:
            continue
        ratio = statistics.median(r[name]["index_s"] / r[ref]["index_s"] for r in runs)
        line = f"{name}: open {ratio:.2f}x {ref}'s index"
        if "meaning" in name:
            emb = statistics.median(r[name].get("embedded", 0) for r in runs)
            line += f"; embedded {emb:.0f} texts over {MEANING_QUERIES} queries"
        print(line)


# The issue-14 bound: the project's query p50 and p95 at 10k documents within 1.5x of bm25s's.
# A ratio measured in the same run, so a loaded machine slows both sides alike.
QUERY_LIMIT = 1.5


def figures(
    runs: list[dict[str, dict[str, Any]]], args: argparse.Namespace, rank_differs: int
) -> dict[str, Any]:
    """The suite's JSON (bench/suite.py): the project's figures, its ratios to bm25s (medians
    of the per-run ratios, as the table), the corpus open, and the baseline's when measured.
    `rank_differs`: runs in which the project's top 10 differed from bm25s's (same formula)."""
    fig: dict[str, float] = {}
    units: dict[str, str] = {}
    better: dict[str, str] = {}

    def put(name: str, value: float, unit: str, good: str = "lower") -> None:
        fig[name] = round(value, 6)
        units[name] = unit
        better[name] = good

    def med(side: str, f: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(f(r[side]) for r in runs)

    def ratio(side: str, f: Callable[[dict[str, Any]], float], ref: str = "bm25s") -> float:
        return statistics.median(f(r[side]) / f(r[ref]) for r in runs)

    def index_s(s: dict[str, Any]) -> float:
        return float(s["index_s"])

    def peak(s: dict[str, Any]) -> float:
        return float(s["peak_mb"])

    prefixes = ["", "before: "] if args.baseline else [""]
    for pre in prefixes:
        side = pre + "project"
        put(f"{pre}index s", med(side, index_s), "s")
        put(f"{pre}query p50 ms", med(side, p50), "ms")
        put(f"{pre}query p95 ms", med(side, p95), "ms")
        put(f"{pre}peak MB", med(side, peak), "MB")
        put(f"{pre}kept MB", med(side, lambda s: s["traced_mb"][1]), "MB")
        put(f"{pre}index / bm25s", ratio(side, index_s), "x")
        put(f"{pre}query p50 / bm25s", ratio(side, p50), "x")
        put(f"{pre}query p95 / bm25s", ratio(side, p95), "x")
        put(f"{pre}peak / bm25s", ratio(side, peak), "x")
        put(f"{pre}corpus cold open s", med(pre + "corpus cold", index_s), "s")
        put(f"{pre}corpus warm open s", med(pre + "corpus warm", index_s), "s")
        put(f"{pre}corpus cold peak MB", med(pre + "corpus cold", peak), "MB")
    # What wrapping bm25s would give instead (same scores, its own index): for the reader.
    put(
        "query p50 / bm25s same formula",
        ratio("project", p50, "bm25s, same formula"),
        "x",
    )
    put("bm25s query p50 ms", med("bm25s", p50), "ms")
    put("bm25s query p95 ms", med("bm25s", p95), "ms")
    put("bm25s index s", med("bm25s", index_s), "s")
    notes = [
        f"{args.docs} documents, {args.queries} queries, {len(runs)} run(s); ratios are "
        "medians of per-run ratios to bm25s (defaults) measured in the same run"
    ]
    if not args.baseline:
        notes.append("no --baseline DIR: the code before issue 14 was not measured")
    if rank_differs:
        notes.append(
            f"the project ranked differently from bm25s (same formula) in {rank_differs} run(s)"
        )
    limit = {"max": QUERY_LIMIT}
    return {
        "figures": fig,
        "units": units,
        "better": better,
        "limits": {"query p50 / bm25s": limit, "query p95 / bm25s": limit},
        "notes": notes,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # --runs and --queries default to None so that --quick changes only what is not given.
    ap.add_argument("--runs", type=int, help="default 3 (--quick: 1)")
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--queries", type=int, help="default 200 (--quick: 100)")
    ap.add_argument(
        "--sentences", type=int, default=6, help="the longest window, in sentences (1 to this)"
    )
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--pages", type=Path, default=PAGES)
    ap.add_argument("--baseline", type=Path, help="another checkout to measure too")
    ap.add_argument(
        "--json", action="store_true", help="end with one JSON line of figures (bench/suite.py)"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="1 run of 100 queries (still 10k documents): under a minute",
    )
    ap.add_argument(
        "--meaning",
        action="store_true",
        help=f"also open the corpus with retrieval by meaning and search {MEANING_QUERIES} "
        "queries, cold and warm, counting the texts embedded",
    )
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        side, data, folder, cache = args.worker
        worker(side, Path(data), folder, cache)
        return 0
    args.runs = args.runs or (1 if args.quick else 3)
    args.queries = args.queries or (100 if args.quick else 200)
    # A missing prerequisite is one line and a failure: the suite shows that line, and a
    # benchmark that measured nothing must not pass as one that did.
    if not args.pages.is_dir():
        print(f"{args.pages} is absent (the saved pages live beside the project)", file=sys.stderr)
        return 2
    try:
        import bm25s  # noqa: F401
    except ImportError:
        print("bm25s is not installed (the dev extra: make .venv/.installed)", file=sys.stderr)
        return 2
    from mole_dag.text import terms

    t = time.perf_counter()
    docs = build_documents(args.pages, args.docs, args.seed, args.sentences)
    queries = build_queries(docs, args.queries + WARMUP, args.seed)
    # The documents' terms as LocalCorpus indexes them: its index holds the file name (the
    # title) too, which the direct sides do not see; a few terms a document, the same for all.
    doc_terms = [terms(d) for d in docs]
    n_terms = sum(len(d) for d in doc_terms)
    print(
        f"{len(docs)} documents from {args.pages.name}/ ({n_terms} terms, "
        f"{n_terms / len(docs):.0f} a document), {args.queries} queries "
        f"(+{WARMUP} warm-up), built in {time.perf_counter() - t:.1f} s"
    )
    checkouts = [("", REPO)]
    if args.baseline:
        checkouts.insert(0, ("before: ", args.baseline.resolve()))
    runs: list[dict[str, dict[str, Any]]] = []
    rank_differs = 0
    with tempfile.TemporaryDirectory(prefix="bm25-bench-") as tmp:
        data = Path(tmp) / "data.json"
        data.write_text(json.dumps({"docs": doc_terms, "queries": queries}), "utf-8")
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for i, d in enumerate(docs):
            (folder / f"{i:05d}.txt").write_text(d + "\n", "utf-8")
        for r in range(args.runs):
            got: dict[str, dict[str, Any]] = {}
            for side in ("bm25s", "bm25s, same formula"):
                got[side] = run_side(side, data, folder, Path(tmp), REPO)
            for prefix, src in checkouts:
                got[prefix + "project"] = run_side("project", data, folder, Path(tmp), src)
                cache = Path(tmp) / f"cache-{r}-{len(prefix)}"
                got[prefix + "corpus cold"] = run_side("corpus", data, folder, cache, src)
                got[prefix + "corpus warm"] = run_side("corpus", data, folder, cache, src)
                if args.meaning and not prefix:
                    # Retrieval by meaning (issue 30): a fresh index, then a second process
                    # over the same folder and queries.
                    mcache = Path(tmp) / f"meaning-{r}"
                    for name in ("corpus cold, meaning", "corpus warm, meaning"):
                        got[name] = run_side(name, data, folder, mcache, src)
            ref = got.get("bm25s, same formula", {}).get("top")
            for name, s in got.items():
                if "top" in s and ref is not None and s["top"] != ref:
                    print(f"  run {r + 1}: {name} ranks differently from bm25s (same formula)")
                    rank_differs += name == "project"
                s.pop("top", None)
            runs.append(got)
            print(
                f"run {r + 1}/{args.runs}: "
                + ", ".join(f"{k} {v['index_s']:.2f} s" for k, v in got.items())
            )
    summarise(runs)
    print(
        "\nmedians of",
        args.runs,
        "runs; ratios are medians of the per-run ratios to bm25s "
        "(defaults) measured in the same run. 'peak MB': the process's peak resident set; "
        "'build MB' / 'kept MB': allocations while building / held by the built index "
        "(tracemalloc, a second build after the timed one); 'import s' is "
        "what loading the index costs before the first build (numpy for the project since "
        "issue 14, bm25s and its numpy and scipy.sparse for bm25s).",
    )
    if args.json:
        print(json.dumps(figures(runs, args, rank_differs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
