"""QA benchmark over the shared DEV set: mole research sessions against a plain-BM25 sentence
baseline on the same pages, in one run, side by side; the questions the pages answer and the
ones they do not.

    .venv/bin/python bench/qa.py                      # all 30 + 10 questions, extractive provider
    .venv/bin/python bench/qa.py --only D01 U05       # a subset
    .venv/bin/python bench/qa.py --no-unanswerable    # only the 30 answerable questions
    .venv/bin/python bench/qa.py --repeat 3           # three runs of each question
    .venv/bin/python bench/qa.py --provider openai    # passed to the sessions as MOLE_ARGS
    .venv/bin/python bench/qa.py --rescore OUT/run    # re-score an earlier run folder
    .venv/bin/python bench/qa.py --heldout OUT/run    # the held-out check over its sessions
    .venv/bin/python bench/qa.py --record             # also write the table into BENCHMARKS.md
    .venv/bin/python bench/qa.py --qa ../shared/qa-dev bench/qa-html-unseen  # DEV and another set

Every run prints first one table with a column per question set: DEV whole, its halves A (odd
ids) and B (even ids), and each other set given with --qa (same pages, same server), mole's
hit@1 / hit@5 / MRR / report@ / decisions beside the BM25 baseline's figures on the same
sentences, so that a change which raises DEV but not the other sets shows at once. Then each
set's own table and per-question rows. A set other than DEV runs into OUT/run.NAME (NAME = its
folder's name) and OUT/run.NAME.unanswerable; --rescore OUT/run finds them again.

The questions, the pages, the fake SearXNG, the runner and the scorer live outside the project
(`../shared/qa-dev/` and `../shared/web-pages/` beside the checkout, or $MOLE_QA_DIR /
$MOLE_QA_PAGES, or --qa-dir / --pages). They are other people's text and are never copied here.
When the folder is absent the script prints why and exits 0 (a skip, not a failure).

Sessions run through the shared `qa_run.sh` (MOLE_REPO = this checkout, one session at a time),
which also scores them with the shared `qa_score.py`: `qa.jsonl` into OUT/run and
`qa-unanswerable.jsonl` into OUT/run.unanswerable. From each session's latest report it also
reads the stored answered-or-not decision and the `## Answer` section: whether the Answer states
the gold answer (the question's patterns, qa_score.py's normalisation), how many answerable
questions were declined (false declines), how many unanswerable ones were declined, and how many
of those presented a cited quote as the answer.

The baseline is Okapi BM25 (k1=1.5, b=0.75) over every sentence of the trafilatura text of the
pages, query = the question's words minus stop words, lower-cased, no stemming. It is computed
two ways:

  (a) fetched: over the pages the session fetched (its sources' URLs mapped to page files as
      qa_score.py's page_of does); the same evidence mole had;
  (b) all:     over every page in the folder.

Per question: the rank of the first sentence that matches one of the question's patterns
(qa_score.py's normalisation), hit@1, hit@5, MRR, and the top-5 relevance precision (share of
the top-5 sentences that come from a relevant page).

--heldout replays stored sessions under other relevance weights and answer thresholds
(bench/qa_replay.py) and reports the held-out check: the questions split in two fixed halves by
the parity of their number, a setting picked on one half and scored on the other, both ways.
The helpers (answer_section, report_decisions, decision_row, decisions_summary, metrics, Okapi,
rank_question) are functions, importable by other benchmarks.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SECTION_PREFIX = "## QA (DEV set): mole vs plain BM25"

# ---------------------------------------------------------------------------------------------
# Pure parts: tokens, sentences, Okapi BM25, metrics, the BENCHMARKS.md section.

K1, B = 1.5, 0.75

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has
have having he her here hers him his how i if in into is it its itself just me more most my no nor
not now of off on once only or other our ours out over own same she should so some such than that
the their theirs them then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours
""".split()
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENT_END = re.compile(
    r"(?<=[.!?])[\"')\]\u201d\u2019]*\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9\u00c0-\u024f])"
)


def tokens(text: str) -> list[str]:
    """Lower-cased words minus stop words (no stemming: a plain baseline)."""
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in STOP_WORDS]


def sentences(text: str) -> list[str]:
    """Sentences of an extracted text: each line (trafilatura writes a paragraph a line) split
    after . ! ? followed by a capital or a digit."""
    out = []
    for line in (text or "").splitlines():
        out.extend(s.strip() for s in _SENT_END.split(line) if s.strip())
    return out


class Okapi:
    """Okapi BM25 (Robertson & Zaragoza's idf with +1, so it stays positive)."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avgdl = (sum(self.len) / len(self.len)) if self.len else 0.0
        df: Counter[str] = Counter()
        for t in self.tf:
            df.update(t.keys())
        n = len(self.tf)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def scores(self, query: Iterable[str]) -> list[float]:
        out = [0.0] * len(self.tf)
        avgdl = self.avgdl or 1.0
        for w in set(query):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i, tf in enumerate(self.tf):
                f = tf.get(w)
                if f:
                    out[i] += (
                        idf
                        * f
                        * (self.k1 + 1)
                        / (f + self.k1 * (1 - self.b + self.b * self.len[i] / avgdl))
                    )
        return out

    def rank(self, query: Iterable[str], k: int | None = None) -> list[int]:
        """Indices of the documents with a positive score, best first; ties keep corpus order."""
        s = self.scores(query)
        order = sorted((i for i, v in enumerate(s) if v > 0), key=lambda i: (-s[i], i))
        return order if k is None else order[:k]


@dataclass
class Ranked:
    rank: int | None  # 1-based position of the first answering sentence, None if none
    prec5: float | None  # share of the top 5 from a relevant page, None when nothing ranked


def rank_question(
    corpus: Sequence[tuple[str, str]],
    question: str,
    answers: Callable[[str], bool],
    relevant: set[str],
    k1: float = K1,
    b: float = B,
) -> Ranked:
    """BM25 over CORPUS = [(page, sentence)...]; ANSWERS tells whether a sentence states
    the answer."""
    bm = Okapi([tokens(s) for _, s in corpus], k1, b)
    order = bm.rank(tokens(question))
    rank = next((pos for pos, i in enumerate(order, 1) if answers(corpus[i][1])), None)
    top = order[:5]
    prec = sum(corpus[i][0] in relevant for i in top) / len(top) if top else None
    return Ranked(rank, prec)


def metrics(ranks: Sequence[int | None], precs: Sequence[float | None]) -> dict:
    """hit@1, hit@5, MRR (a miss counts 0) and mean relevance precision (None values skipped)."""
    n = len(ranks)
    if not n:
        return {
            "n": 0,
            "hit@1": None,
            "hit@5": None,
            "mrr": None,
            "answer_anywhere": None,
            "relevance_precision": None,
        }
    ps = [p for p in precs if p is not None]
    return {
        "n": n,
        "hit@1": sum(1 for r in ranks if r is not None and r <= 1) / n,
        "hit@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr": sum(1 / r for r in ranks if r) / n,
        "answer_anywhere": sum(1 for r in ranks if r is not None) / n,
        "relevance_precision": sum(ps) / len(ps) if ps else None,
    }


def replace_section(doc: str, heading: str, body: str) -> str:
    """DOC with the section titled HEADING (up to the next '## ' heading) replaced by
    HEADING + BODY, or with it appended when there is none."""
    section = heading.rstrip() + "\n\n" + body.strip("\n") + "\n"
    lines = doc.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == heading.rstrip()), None)
    if start is None:
        return doc.rstrip("\n") + "\n\n" + section if doc.strip() else section
    end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + tail if tail else "")


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


# ---------------------------------------------------------------------------------------------
# Impure parts: locating the shared folder, running sessions, extracting pages.


def load_module(path: Path, name: str):  # noqa: ANN201
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def free_port(nhosts: int = 8) -> int:
    """A port free on 127.0.0.1..127.0.0.N (server.py binds all of them)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            for i in range(1, nhosts + 1):
                with socket.socket() as t:
                    t.bind((f"127.0.0.{i}", port))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port on the loopback hosts")


def extract_pages(pages_dir: Path) -> dict[str, list[str]]:
    import trafilatura

    out = {}
    for p in sorted(pages_dir.iterdir()):
        if p.suffix.lower() in (".html", ".htm"):
            out[p.name] = sentences(trafilatura.extract(p.read_bytes()) or "")
    return out


def session_pages(
    db: Path, sessions: dict[str, str], names: list[str], page_of
) -> dict[str, set[str]]:  # noqa: ANN001
    """qid -> the page files the session fetched (all its sources, not only relevant ones)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for qid, sid in sessions.items():
            urls = [
                u
                for (u,) in con.execute(
                    "select url from sources where session_id = ?", [sid]
                ).fetchall()
            ]
            out[qid] = {p for p in (page_of(u, names) for u in urls) if p}
        return out
    finally:
        con.close()


def run_sessions(
    qa_dir: Path,
    pages: Path,
    qa: Path,
    out: Path,
    only: list[str],
    port: int,
    mole_args: str,
    timeout: int | None,
) -> int:
    env = dict(os.environ, MOLE_REPO=str(REPO), MOLE_ARGS=mole_args, ONLY=" ".join(only))
    if timeout:
        env["TIMEOUT"] = str(timeout)
    cmd = ["bash", str(qa_dir / "qa_run.sh"), str(pages), str(qa), str(out), str(port)]
    print("qa: " + " ".join(cmd), flush=True)
    with open(out.parent / f"{out.name}.qa_run.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for line in proc.stdout:
            log.write(line)
            if line.startswith("qa_run:"):
                print(line.rstrip(), flush=True)
        return proc.wait()


# ---------------------------------------------------------------------------------------------
# Scoring one output folder (one repeat) and the combined table.


def answer_section(markdown: str) -> str:
    """The text under a report's `## Answer` heading, up to the next `## `."""
    m = re.search(r"^## Answer\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    return m.group(1).strip() if m else ""


def cites(text: str) -> bool:
    """Whether TEXT carries a citation [n] (an escaped \\[n\\] is a source's own marker)."""
    return bool(re.search(r"(?<!\\)\[\d+\]", text))


def half(qid: str) -> str:
    """The held-out check's fixed halves: 'odd' or 'even' by the number in the id."""
    m = re.search(r"(\d+)$", qid)
    return "odd" if m and int(m.group(1)) % 2 else "even"


HALVES_NOTE = (
    "DEV's halves are fixed by the parity of the number that ends the id: A = odd (01, 03, ...), "
    "B = even (02, 04, ...)."
)


@dataclass
class QSet:
    """A question set: a folder with qa.jsonl (and, for HTML, qa-unanswerable.jsonl)."""

    name: str  # "DEV" or the folder's name
    folder: Path
    dev: bool
    qa: dict[str, dict]
    unanswerable: dict[str, dict]


def set_name(folder: Path, dev: bool, taken: Iterable[str]) -> str:
    """DEV, or the folder's name; a name already taken gets a number (two folders alike)."""
    if dev:
        return "DEV"
    name, taken, k = folder.name or str(folder), set(taken), 2
    while name in taken:
        name, k = f"{folder.name}-{k}", k + 1
    return name


def set_parts(name: str, dev: bool, ids: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The columns a set gives in the sets table: DEV whole and its two halves (so a change that
    helps one half only shows), any other set whole."""
    ids = sorted(ids)
    if not dev:
        return [(name, ids)]
    return [
        ("DEV all", ids),
        ("DEV A (odd ids)", [q for q in ids if half(q) == "odd"]),
        ("DEV B (even ids)", [q for q in ids if half(q) == "even"]),
    ]


def mole_metrics(rows: list[dict]) -> dict:
    """hit@1, hit@5, MRR, report@, ... over some of qa_score.py's per-question rows (its own
    summary covers the whole file only); {} for no rows."""
    n = len(rows)
    if not n:
        return {}
    ranks = [r.get("rank") for r in rows]
    precs = [r["prec"] for r in rows if r.get("prec") is not None]
    return {
        "n": n,
        "hit@1": sum(1 for x in ranks if x and x <= 1) / n,
        "hit@5": sum(1 for x in ranks if x and x <= 5) / n,
        "mrr": sum(1 / x for x in ranks if x) / n,
        "report@": sum(1 for r in rows if r.get("report")) / n,
        "mined@": sum(1 for r in rows if r.get("mined")) / n,
        "fetched@": sum(1 for r in rows if r.get("fetched")) / n,
        "relevance_precision": sum(precs) / len(precs) if precs else None,
    }


def mean_of(vals: Iterable[float | None]) -> float | None:
    """The mean over the repeats, None values skipped (None when all are)."""
    got = [v for v in vals if v is not None]
    return statistics.mean(got) if got else None


def sets_table(heads: list[str], rows: list[tuple[str, list[str]]], first: str) -> str:
    """A Markdown table: one column per set (or half), one row per figure."""
    out = [f"| {first} | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    # A figure no column has (e.g. declines without unanswerable questions) is left out.
    out += [f"| {label} | " + " | ".join(v) + " |" for label, v in rows if set(v) != {"-"}]
    return "\n".join(out) + "\n"


def html_sets_table(scored: list[tuple[QSet, list[dict]]]) -> str:
    """DEV, its halves and each other set side by side: mole's figures and the BM25 baseline's
    of the same run, averaged over the repeats."""
    cols: list[tuple[str, list[dict], list[str], list[str] | None]] = []
    for qset, runs in scored:
        una = sorted(runs[0].get("unanswerable", {})) if runs else []
        ans = sorted(runs[0]["mole"]) if runs else []
        for (label, a_ids), (_, u_ids) in zip(
            set_parts(qset.name, qset.dev, ans), set_parts(qset.name, qset.dev, una), strict=True
        ):
            cols.append((label, runs, a_ids, u_ids if una else None))

    def figure(
        get: Callable[[dict, list[str], list[str] | None], float | None],
    ) -> list[float | None]:
        return [mean_of(get(r, a, u) for r in runs) for _, runs, a, u in cols]

    def mole(key: str) -> list[float | None]:
        return figure(
            lambda r, a, u: mole_metrics([r["mole"][q] for q in a if q in r["mole"]]).get(key)
        )

    def base(variant: str, key: str) -> list[float | None]:
        def get(r: dict, a: list[str], u: list[str] | None) -> float | None:
            b = r["baseline"][variant]
            rows = [b[q] for q in a if q in b]
            return (
                metrics([x["rank"] for x in rows], [x["prec5"] for x in rows])[key]
                if rows
                else None
            )

        return figure(get)

    def decided(key: str) -> list[float | None]:
        return figure(
            lambda r, a, u: decisions_summary(
                {q: r["mole"][q] for q in a if q in r["mole"]},
                {q: r["unanswerable"][q] for q in u or [] if q in r.get("unanswerable", {})},
            )[key]
        )

    def of(vals: list[float | None], totals: list[int]) -> list[str]:
        return ["-" if v is None else f"{v:g} of {t}" for v, t in zip(vals, totals, strict=True)]

    n_a = [len(a) for _, _, a, _ in cols]
    n_u = [len(u or []) for _, _, _, u in cols]
    mrr, b_mrr = mole("mrr"), base("all", "mrr")
    rows = [
        ("mole hit@1", [pct(x) for x in mole("hit@1")]),
        ("mole hit@5", [pct(x) for x in mole("hit@5")]),
        ("mole MRR", [num(x) for x in mrr]),
        ("mole report@", [pct(x) for x in mole("report@")]),
        ("mole: Answer paragraph states the answer", [pct(x) for x in decided("answer@")]),
        ("unanswerable questions declined", of(decided("declined"), n_u)),
        ("answerable questions wrongly declined", of(decided("false_declines"), n_a)),
        ("BM25 over all pages hit@1", [pct(x) for x in base("all", "hit@1")]),
        ("BM25 over all pages hit@5", [pct(x) for x in base("all", "hit@5")]),
        ("BM25 over all pages MRR", [num(x) for x in b_mrr]),
        ("BM25 over fetched pages hit@1", [pct(x) for x in base("fetched", "hit@1")]),
        ("BM25 over fetched pages hit@5", [pct(x) for x in base("fetched", "hit@5")]),
        ("BM25 over fetched pages MRR", [num(x) for x in base("fetched", "mrr")]),
        (
            "MRR, mole minus BM25 over all pages",
            [
                "-" if m is None or b is None else f"{m - b:+.2f}"
                for m, b in zip(mrr, b_mrr, strict=True)
            ],
        ),
    ]
    # "+ 0" on a half without unanswerable questions; nothing on a set without any
    heads = [f"{label} ({len(a)}{'' if u is None else f' + {len(u)}'})" for label, _, a, u in cols]
    reps = max((len(runs) for _, runs, _, _ in cols), default=1)
    first = "set (answerable + unanswerable)" + (f", mean of {reps} runs" if reps > 1 else "")
    return sets_table(heads, rows, first)


def report_decisions(db: Path, sessions: dict[str, str]) -> dict[str, dict]:
    """qid -> the session's latest report: its markdown and whether it answered (None when the
    store predates the recorded decision, or the session wrote no report)."""
    import duckdb

    out: dict[str, dict] = {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = {
            r[0]
            for r in con.execute(
                "select column_name from information_schema.columns where table_name = 'reports'"
            ).fetchall()
        }
        decided = "answered, answer_basis" if "answered" in cols else "NULL, NULL"
        for qid, sid in sessions.items():
            row = con.execute(
                f"select markdown, {decided} from reports where session_id = ? "
                "order by created_at desc limit 1",
                [sid],
            ).fetchone()
            md, answered, basis = row if row else ("", None, None)
            out[qid] = {"markdown": md or "", "answered": answered, "basis": basis or ""}
    finally:
        con.close()
    return out


def decision_row(md: str, answered: bool | None, basis: str, pats, qs) -> dict:  # noqa: ANN001
    """What bench/qa.py records of one report's Answer: whether it states the answer (for an
    answerable question: PATS), whether it cites anything, and the stored decision."""
    answer = answer_section(md)
    return {
        "answered": answered,
        "basis": basis,
        "answer_has": bool(pats) and qs.matches(pats, answer),
        "answer_cites": cites(answer),
    }


def read_sessions(run: Path) -> dict[str, str]:
    """qid -> session id, from qa_run.sh's sessions.tsv."""
    import csv

    path = run / "sessions.tsv"
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as fh:
        return {r["qid"]: r["session"] for r in csv.DictReader(fh, delimiter="\t") if r.get("qid")}


def set_run(run: Path, qset: QSet) -> Path:
    """Where a set's sessions of one run went: DEV's in the run folder itself (as before there
    were sets), any other set's in a sibling named after it."""
    return run if qset.dev else run.with_name(f"{run.name}.{qset.name}")


def unanswerable_run(run: Path) -> Path:
    """Where a run folder's unanswerable questions ran: a sibling folder."""
    return run.with_name(run.name + ".unanswerable")


def score_run(
    run: Path,
    qa: dict[str, dict],
    sents: dict[str, list[str]],
    qs,  # noqa: ANN001
    unanswerable: dict[str, dict] | None = None,
) -> dict:
    """The mole scores (qa_run.sh's scores.json), the answered-or-not decisions and Answer
    sections of both question sets, and both baselines for one run folder."""
    mole: dict[str, dict] = {}
    summary: dict = {}
    if (run / "scores.json").exists():
        scored = json.loads((run / "scores.json").read_text(encoding="utf-8"))
        mole = {r["qid"]: r for r in scored["questions"]}
        summary = scored["summary"]["all"]
        decisions = report_decisions(
            run / "store.duckdb", {q: r["session"] for q, r in mole.items()}
        )
        for qid, d in decisions.items():
            pats = qs.compile_patterns(qa[qid]["patterns"])
            mole[qid].update(decision_row(d["markdown"], d["answered"], d["basis"], pats, qs))
    una: dict[str, dict] = {}
    u_run = unanswerable_run(run)
    if unanswerable and (u_run / "store.duckdb").exists():
        sessions = {q: s for q, s in read_sessions(u_run).items() if q in unanswerable}
        for qid, d in report_decisions(u_run / "store.duckdb", sessions).items():
            una[qid] = {"session": sessions[qid]} | decision_row(
                d["markdown"], d["answered"], d["basis"], [], qs
            )
    sessions = {q: r["session"] for q, r in mole.items()}
    base: dict[str, dict[str, dict]] = {"fetched": {}, "all": {}}
    if sessions:
        fetched = session_pages(run / "store.duckdb", sessions, sorted(sents), qs.page_of)
        all_corpus = [(p, s) for p in sorted(sents) for s in sents[p]]
    for qid in sessions:
        q = qa[qid]
        pats = qs.compile_patterns(q["patterns"])
        rel = set(q["relevant_pages"])

        def answers(s: str, pats=pats) -> bool:
            return qs.matches(pats, s)

        for variant, corpus in (
            ("fetched", [(p, s) for p in sorted(fetched[qid]) for s in sents[p]]),
            ("all", all_corpus),
        ):
            t0 = time.perf_counter()
            r = rank_question(corpus, q["question"], answers, rel)
            base[variant][qid] = {
                "rank": r.rank,
                "prec5": r.prec5,
                "s": time.perf_counter() - t0,
                "fetched": bool(rel & {p for p, _ in corpus}),
            }
    return {
        "run": str(run),
        "summary": summary,
        "mole": mole,
        "unanswerable": una,
        "baseline": base,
    }


def decisions_summary(mole: dict[str, dict], una: dict[str, dict]) -> dict:
    """The Answer's accuracy and the decisions: over the answerable questions the share whose
    Answer states the answer and how many were declined; over the unanswerable ones how many
    were declined and how many presented a cited quote as the answer. None where a figure
    cannot be computed (no question of that kind, or no recorded decision)."""
    n = len(mole)
    recorded = [r for r in mole.values() if r.get("answered") is not None]
    u_recorded = [r for r in una.values() if r.get("answered") is not None]
    return {
        "answer@": sum(bool(r.get("answer_has")) for r in mole.values()) / n if n else None,
        "false_declines": sum(r["answered"] is False for r in recorded) if recorded else None,
        "n_answerable": n,
        "declined": sum(r["answered"] is False for r in u_recorded) if u_recorded else None,
        "quoted_as_answer": sum(bool(r.get("answer_cites")) for r in una.values()) if una else None,
        "n_unanswerable": len(una),
    }


def summarise(runs: list[dict]) -> dict:
    """Per column (mole, bm25 fetched, bm25 all): metrics averaged over the repeats."""
    cols: dict[str, list[dict]] = {"mole": [], "fetched": [], "all": []}
    for run in runs:
        s = run["summary"]
        walls = [r["wall_s"] for r in run["mole"].values() if "wall_s" in r]
        cols["mole"].append(
            {
                "fetched@": s.get("fetched@"),
                "mined@": s.get("mined@"),
                "report@": s.get("report@"),
                "hit@1": s.get("hit@1"),
                "hit@5": s.get("hit@5"),
                "mrr": s.get("mrr"),
                "relevance_precision": s.get("relevance_precision"),
                "s_mean": statistics.mean(walls) if walls else None,
                "s_median": statistics.median(walls) if walls else None,
                "stages": s.get("stages", {}),
                "report_all@(multi)": s.get("report_all@(multi)"),
                "timeouts": s.get("timeouts"),
            }
            | decisions_summary(run["mole"], run.get("unanswerable", {}))
        )
        for v in ("fetched", "all"):
            b = run["baseline"][v]
            m = metrics([r["rank"] for r in b.values()], [r["prec5"] for r in b.values()])
            secs = [r["s"] for r in b.values()]
            m.update(
                {
                    "fetched@": sum(r["fetched"] for r in b.values()) / len(b) if b else None,
                    "s_mean": statistics.mean(secs) if secs else None,
                    "s_median": statistics.median(secs) if secs else None,
                }
            )
            cols[v].append(m)

    def avg(rows: list[dict], key: str) -> tuple[float | None, float | None, float | None]:
        vals = [r.get(key) for r in rows if r.get(key) is not None]
        return (statistics.mean(vals), min(vals), max(vals)) if vals else (None, None, None)

    out = {}
    for c, rows in cols.items():
        keys = {k for r in rows for k in r if k != "stages"}
        out[c] = {k: avg(rows, k) for k in keys}
        if c == "mole":
            stages: Counter[str] = Counter()
            for r in rows:
                stages.update(r["stages"])
            out[c]["stages"] = {k: v / len(rows) for k, v in stages.items()}
    return out


STAGE_ORDER = [
    "not surfaced by search",
    "surfaced, not fetched",
    "requested, not stored",
    "fetched, answer not in chunks",
    "in chunks, not mined",
    "mined, not in report",
    "ok",
]


def table(summ: dict, runs: list[dict], qa: dict[str, dict]) -> str:  # noqa: C901
    reps = len(runs)

    def cell(col: str, key: str, fmt: Callable[[float | None], str]) -> str:
        m, lo, hi = summ[col].get(key, (None, None, None))
        if m is None:
            return "-"
        return fmt(m) + (f" ({fmt(lo)}-{fmt(hi)})" if reps > 1 and lo != hi else "")

    def of(total_key: str) -> Callable[[float | None], str]:
        total = summ["mole"].get(total_key, (None,))[0]
        return lambda x: "-" if x is None else f"{x:g} of {total:g}"

    rows = [
        ("fetched@", "fetched@", pct),
        ("mined@", "mined@", pct),
        ("report@", "report@", pct),
        ("hit@1", "hit@1", pct),
        ("hit@5", "hit@5", pct),
        ("MRR", "mrr", num),
        ("Answer paragraph states the answer", "answer@", pct),
        ("answerable questions declined (false declines)", "false_declines", of("n_answerable")),
        ("unanswerable questions declined", "declined", of("n_unanswerable")),
        (
            "unanswerable: a cited quote given as the answer",
            "quoted_as_answer",
            of("n_unanswerable"),
        ),
        ("relevance precision (BM25: top 5)", "relevance_precision", pct),
        ("answer anywhere in the ranking", "answer_anywhere", pct),
        ("two-page: both parts in report", "report_all@(multi)", pct),
        ("seconds per question, mean", "s_mean", lambda x: num(x, 1 if x and x >= 1 else 3)),
        ("seconds per question, median", "s_median", lambda x: num(x, 1 if x and x >= 1 else 3)),
    ]
    n = len(runs[0]["mole"]) if runs else 0
    n_u = len(runs[0].get("unanswerable", {})) if runs else 0
    out = [
        f"| metric ({n} answerable{f' + {n_u} unanswerable' if n_u else ''} questions"
        f"{f', mean of {reps} runs (min-max)' if reps > 1 else ''}) "
        "| mole | BM25 over fetched pages | BM25 over all pages |",
        "|---|---|---|---|",
    ]
    for label, key, fmt in rows:
        vals = [cell(c, key, fmt) for c in ("mole", "fetched", "all")]
        # A store from before the decision was recorded: say so rather than drop the row.
        if (
            vals[0] == "-"
            and key in ("false_declines", "declined")
            and (key == "declined") == bool(n_u)
        ):
            vals[0] = "not recorded"
        if all(v == "-" for v in vals):
            continue
        out.append(f"| {label} | " + " | ".join(vals) + " |")
    stages = summ["mole"].get("stages", {})
    if stages:
        ordered = [s for s in STAGE_ORDER if s in stages] + sorted(set(stages) - set(STAGE_ORDER))
        out.append(
            "| stage (mole: first step that lost the answer) | "
            + ", ".join(f"{s} {stages[s]:g}" for s in ordered)
            + " | - | - |"
        )

    def ranks(get: Callable[[dict], Any]) -> str:
        return ", ".join("-" if (x := get(r)) is None else str(x) for r in runs)

    def yes(x: Any) -> str | None:
        return None if x is None else ("yes" if x else "no")

    if n:
        out += [
            "",
            "| id | mole stage | mole rank | answered | Answer states it | BM25 fetched rank "
            "| BM25 all rank |",
            "|---|---|---|---|---|---|---|",
        ]
        for qid in sorted(runs[0]["mole"]):
            stage = ", ".join(sorted({r["mole"][qid].get("stage", "?") for r in runs}))
            mole = ranks(lambda r, q=qid: r["mole"][q].get("rank"))
            answered = ranks(lambda r, q=qid: yes(r["mole"][q].get("answered")))
            has = ranks(lambda r, q=qid: yes(r["mole"][q].get("answer_has")))
            fetched = ranks(lambda r, q=qid: r["baseline"]["fetched"][q]["rank"])
            every = ranks(lambda r, q=qid: r["baseline"]["all"][q]["rank"])
            out.append(f"| {qid} | {stage} | {mole} | {answered} | {has} | {fetched} | {every} |")
    if n_u:
        out += ["", "| id | declined | why (the report's recorded basis) |", "|---|---|---|"]
        for qid in sorted(runs[0]["unanswerable"]):
            declined = ranks(
                lambda r, q=qid: yes(
                    None
                    if r["unanswerable"][q].get("answered") is None
                    else not r["unanswerable"][q]["answered"]
                )
            )
            why = runs[0]["unanswerable"][qid].get("basis", "").replace("|", "/")
            out.append(f"| {qid} | {declined} | {why} |")
    del qa
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# The held-out check: replay stored sessions with other settings (bench/qa_replay.py).


def heldout_table(grid: list, results: dict, questions: list, default: Any) -> str:  # noqa: ANN001
    """The defaults and each ablation on both halves and all questions; then the setting
    picked on each half and how it does on the other."""
    import qa_replay as rp

    def line(s: dict) -> str:
        return (
            f"{pct(s['hit@1'])} / {pct(s['hit@5'])} / {num(s['mrr'])} / {pct(s['answer@'])} "
            f"/ {s['declined']} of {s['n_unanswerable']} / {s['false_declines']} of {s['n']}"
        )

    def on(i: int, part: str | None) -> dict:
        return rp.summary(
            [(q, results[i][q.qid]) for q in questions if part is None or half(q.qid) == part]
        )

    head = "hit@1 / hit@5 / MRR / Answer states it / unanswerable declined / answerable declined"
    out = [
        f"| setting | odd half: {head} | even half | all |",
        "|---|---|---|---|",
    ]
    names = ["defaults"] + list(rp.ABLATIONS)
    for i, name in enumerate(names[: min(len(names), len(grid))]):
        out.append(
            f"| {name} | {line(on(i, 'odd'))} | {line(on(i, 'even'))} | {line(on(i, None))} |"
        )
    picked = rp.held_out(grid, results, questions)
    out += [
        "",
        f"| picked on | setting picked ({len(grid)} tried) | on its own half: {head} "
        "| on the other half | hit@1 gap (points) |",
        "|---|---|---|---|---|",
    ]
    for h in picked:
        gap = 100 * ((h.tuned["hit@1"] or 0) - (h.held_out["hit@1"] or 0))
        out.append(
            f"| {h.tuned_on} half | {h.setting.label(default)} | {line(h.tuned)} "
            f"| {line(h.held_out)} | {gap:+.0f} |"
        )
    return "\n".join(out) + "\n"


def heldout_main(a: argparse.Namespace, qa: dict, unanswerable: dict, qs) -> int:  # noqa: ANN001
    """--heldout RUN...: replay each run folder's sessions (and its unanswerable sibling's)
    under the defaults, the ablations and (--grid full) the grid, and report the held-out
    check."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import qa_replay as rp

    from mole_dag.mining.relevance import WEIGHTS
    from mole_dag.output.answered import MIN_COVERAGE

    stores = []
    questions: list = []
    for run in a.heldout:
        for folder, pool, answerable in (
            (run, qa, True),
            (unanswerable_run(run), unanswerable, False),
        ):
            sessions = {
                q: s
                for q, s in read_sessions(folder).items()
                if q in pool and (not a.only or q in a.only)
            }
            if not sessions or not (folder / "store.duckdb").exists():
                continue
            qs_ = [
                rp.Question(q, s, answerable, qs.compile_patterns(pool[q].get("patterns", [])))
                for q, s in sorted(sessions.items())
            ]
            stores.append((folder / "store.duckdb", qs_))
            questions += qs_
    if not stores:
        print("qa: --heldout: no sessions found in the given run folders", file=sys.stderr)
        return 2
    grid = rp.settings(WEIGHTS, MIN_COVERAGE, full=a.grid == "full")
    print(f"qa: replaying {len(questions)} sessions under {len(grid)} settings", flush=True)
    t0 = time.time()
    results = rp.replay(stores, grid, qs, progress=lambda m: print("qa: " + m, flush=True))
    body = heldout_table(grid, results, questions, WEIGHTS)
    header = (
        f"Commit `{git('rev-parse', '--short', 'HEAD')}`, {dt.date.today().isoformat()}: "
        f"{len(questions)} stored sessions of {', '.join(str(r) for r in a.heldout)} replayed "
        f"under {len(grid)} settings ({time.time() - t0:.0f} s). Halves by the parity of the "
        "question number (D01, D03, ... U01, ... odd)."
    )
    out = a.out or a.heldout[0].parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "qa-heldout.md").write_text(f"{header}\n\n{body}", encoding="utf-8")
    (out / "qa-heldout.json").write_text(
        json.dumps(
            {
                "settings": [g.label(WEIGHTS) for g in grid],
                "results": {str(i): {q: vars(o) for q, o in r.items()} for i, r in results.items()},
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    print()
    print(header)
    print()
    print(body)
    print(f"qa: written {out / 'qa-heldout.md'} and qa-heldout.json")
    return 0


def run_commit(run: Path) -> str | None:
    """The measured checkout's commit, as qa_run.sh logged it ("mole from REPO (abc1234)")."""
    log = run.parent / f"{run.name}.qa_run.log"
    if not log.exists():
        return None
    m = re.search(
        r"mole from \S+ \(([0-9a-f?]+)\)", log.read_text(encoding="utf-8", errors="replace")
    )
    return m.group(1) if m else None


def run_meta(run: Path) -> dict:
    """What bench/qa.py noted about a run when it started it ({} for a bare qa_run.sh folder)."""
    try:
        return json.loads((run / "qa-bench-meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def load_questions(path: Path) -> dict[str, dict]:
    out = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                out[q["id"]] = q
    return out


def main(argv: list[str] | None = None) -> int:  # noqa: C901, PLR0912, PLR0915
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--qa-dir",
        type=Path,
        default=Path(os.environ.get("MOLE_QA_DIR") or REPO.parent / "shared" / "qa-dev"),
        help="folder with qa.jsonl, qa-unanswerable.jsonl, qa_run.sh, qa_score.py, server.py "
        "($MOLE_QA_DIR)",
    )
    ap.add_argument(
        "--pages",
        type=Path,
        default=Path(os.environ.get("MOLE_QA_PAGES") or REPO.parent / "shared" / "web-pages"),
        help="the saved pages ($MOLE_QA_PAGES)",
    )
    ap.add_argument(
        "--qa",
        "--sets",
        dest="sets",
        type=Path,
        nargs="+",
        action="extend",
        metavar="DIR",
        help="question sets to run, each a folder with qa.jsonl and optionally "
        "qa-unanswerable.jsonl, over the same pages and server (default: --qa-dir alone, DEV); "
        "e.g. --qa ../shared/qa-dev bench/qa-html-unseen. --rescore without it takes the sets "
        "the run was made with",
    )
    ap.add_argument(
        "--only", nargs="+", default=[], metavar="QID", help="question ids to run (default: all)"
    )
    ap.add_argument(
        "--no-unanswerable",
        action="store_true",
        help="skip qa-unanswerable.jsonl (the questions the pages do not answer)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each question (default 1)")
    ap.add_argument(
        "--provider", default="", help="passed to the sessions as MOLE_ARGS='--provider P'"
    )
    ap.add_argument("--mole-args", default="", help="further arguments for `mole research`")
    ap.add_argument("--port", type=int, default=0, help="fake SearXNG port (default: a free one)")
    ap.add_argument(
        "--timeout", type=int, default=None, help="seconds per session (qa_run.sh: 300)"
    )
    ap.add_argument("--out", type=Path, help="output folder (default: a new temp folder)")
    ap.add_argument(
        "--rescore",
        type=Path,
        nargs="+",
        metavar="RUN",
        help="skip the sessions; score these earlier run folders (scores.json, store.duckdb)",
    )
    ap.add_argument(
        "--heldout",
        type=Path,
        nargs="+",
        metavar="RUN",
        help="the held-out check: replay these run folders' stored sessions (and their "
        ".unanswerable siblings) under other weights and thresholds; no session is run",
    )
    ap.add_argument(
        "--grid",
        choices=("full", "small"),
        default="full",
        help="--heldout: the whole grid (default), or only the defaults and the ablations",
    )
    ap.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    ap.add_argument(
        "--label", default=None, help="BENCHMARKS.md section label (default: the commit)"
    )
    ap.add_argument("--note", default="", help="a line for the BENCHMARKS.md section")
    a = ap.parse_args(argv)

    qa_file = a.qa_dir / "qa.jsonl"
    need = [qa_file, a.qa_dir / "qa_run.sh", a.qa_dir / "qa_score.py", a.pages]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        print(
            f"qa: skipped: the shared QA set is not here ({', '.join(missing)} missing); "
            "set MOLE_QA_DIR / MOLE_QA_PAGES or --qa-dir / --pages"
        )
        return 0
    try:
        import trafilatura  # noqa: F401
    except ImportError:
        print(
            "qa: skipped: trafilatura is not installed (run with the checkout's .venv/bin/python)"
        )
        return 0
    qs = load_module(a.qa_dir / "qa_score.py", "qa_score_shared")
    folders = a.sets
    if not folders and a.rescore:  # the sets the run was made with
        folders = [Path(f) for f in run_meta(a.rescore[0]).get("sets", [])]
    sets: list[QSet] = []
    for folder in folders or [a.qa_dir]:
        if not (folder / "qa.jsonl").exists():
            print(
                f"qa: no question set at {folder} ({folder / 'qa.jsonl'} missing)", file=sys.stderr
            )
            return 2
        dev = folder.resolve() == a.qa_dir.resolve()
        una = {} if a.no_unanswerable else load_questions(folder / "qa-unanswerable.jsonl")
        name = set_name(folder, dev, (x.name for x in sets))
        sets.append(QSet(name, folder, dev, load_questions(folder / "qa.jsonl"), una))
    known = {q for x in sets for q in (*x.qa, *x.unanswerable)}
    unknown = [q for q in a.only if q not in known]
    if unknown:
        print(f"qa: unknown question ids {unknown}", file=sys.stderr)
        return 2
    if a.heldout:
        return heldout_main(a, sets[0].qa, sets[0].unanswerable, qs)
    # Each set keeps only what --only picked of it; a set it picked nothing of is not run.
    sets = [x for x in sets if not a.only or any(q in x.qa or q in x.unanswerable for q in a.only)]
    mole_args = " ".join(
        x for x in ((f"--provider {a.provider}" if a.provider else ""), a.mole_args) if x
    )
    commit = git("rev-parse", "--short", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    started = time.time()

    if a.rescore:
        out = a.out or a.rescore[0].parent
        out.mkdir(parents=True, exist_ok=True)
        run_dirs = list(a.rescore)
        for x in sets:
            gone = [r for r in run_dirs if not set_run(r, x).exists()]
            if gone:
                print(f"qa: {x.name}: no run folder {set_run(gone[0], x)}", file=sys.stderr)
                return 2
    else:
        if not (REPO / ".venv" / "bin" / "mole").exists():
            print(
                "qa: no .venv/bin/mole in this checkout: run `make .venv/.installed` first",
                file=sys.stderr,
            )
            return 2
        out = a.out or Path(tempfile.mkdtemp(prefix="mole-qa-"))
        out.mkdir(parents=True, exist_ok=True)
        run_dirs = []
        for k in range(1, a.repeat + 1):
            run = out / (f"run{k}" if a.repeat > 1 else "run")
            port = a.port or free_port()
            print(
                f"qa: run {k}/{a.repeat} -> {run} (port {port}, MOLE_ARGS={mole_args!r})",
                flush=True,
            )
            meta = {
                "mole_args": mole_args,
                "commit": commit,
                "dirty": dirty,
                "port": port,
                "date": dt.datetime.now().isoformat(timespec="seconds"),
                "only": a.only,
                "sets": [str(x.folder.resolve()) for x in sets],
            }
            jobs = []
            for x in sets:
                folder = set_run(run, x)
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "qa-bench-meta.json").write_text(
                    json.dumps(meta | {"set": x.name}), encoding="utf-8"
                )
                only_a = [q for q in a.only if q in x.qa]
                only_u = [q for q in a.only if q in x.unanswerable]
                if not a.only or only_a:
                    jobs.append((x.folder / "qa.jsonl", folder, only_a))
                if x.unanswerable and (not a.only or only_u):
                    jobs.append(
                        (x.folder / "qa-unanswerable.jsonl", unanswerable_run(folder), only_u)
                    )
            # The base folder holds the sets' list even when DEV is not among them (--rescore).
            run.mkdir(parents=True, exist_ok=True)
            if not (run / "qa-bench-meta.json").exists():
                (run / "qa-bench-meta.json").write_text(json.dumps(meta), encoding="utf-8")
            for questions, folder, only in jobs:
                folder.mkdir(parents=True, exist_ok=True)
                rc = run_sessions(
                    a.qa_dir, a.pages, questions, folder, only, port, mole_args, a.timeout
                )
                if rc != 0 or not (folder / "scores.json").exists():
                    print(
                        f"qa: qa_run.sh failed (rc {rc}); see "
                        f"{folder.parent / (folder.name + '.qa_run.log')}",
                        file=sys.stderr,
                    )
                    return 1
            run_dirs.append(run)

    t0 = time.perf_counter()
    sents = extract_pages(a.pages)
    extract_s = time.perf_counter() - t0
    scored = [
        (x, [score_run(set_run(r, x), x.qa, sents, qs, x.unanswerable) for r in run_dirs])
        for x in sets
    ]
    summaries = {x.name: summarise(runs) for x, runs in scored}
    body = (
        "Mole and the BM25 baseline per question set"
        + ("" if all(not x.dev for x in sets) else f"; {HALVES_NOTE[:-1]}, unanswerable ones too.")
        + "\n\n"
        + html_sets_table(scored)
    )
    for x, runs in scored:
        where = "" if x.dev else f" (`{x.folder}`)"
        body += f"\n### {x.name}{where}\n\n" + table(summaries[x.name], runs, x.qa)
    runs, summ = scored[0][1], summaries[scored[0][0].name]
    n_sent = sum(len(v) for v in sents.values())
    cmd = (
        "make qa"
        if not (a.only or a.repeat > 1 or a.provider or a.mole_args or a.no_unanswerable or a.sets)
        else ".venv/bin/python bench/qa.py"
        + (f" --qa {' '.join(str(x.folder) for x in sets)}" if a.sets else "")
        + (f" --only {' '.join(a.only)}" if a.only else "")
        + (" --no-unanswerable" if a.no_unanswerable else "")
        + (f" --repeat {a.repeat}" if a.repeat > 1 else "")
        + (f" --provider {a.provider}" if a.provider else "")
    )
    shown_args = f"MOLE_ARGS `{mole_args}`" if mole_args else "the extractive provider"
    if a.rescore:  # the sessions ran earlier: take their commit from the runner's log
        logged = {run_commit(set_run(r, x)) for r in run_dirs for x in sets} - {None}
        commit = ", ".join(sorted(logged)) or commit
        metas = [run_meta(set_run(r, x)) for r in run_dirs for x in sets]
        args = {m.get("mole_args", "?") for m in metas}
        dirty = any(m.get("dirty") for m in metas)
        shown_args = (
            ", ".join(sorted(f"MOLE_ARGS `{x}`" if x else "the extractive provider" for x in args))
            + " (re-scored)"
        )
    header = (
        f"Commit `{commit}`{' (uncommitted changes)' if dirty else ''}, "
        f"{dt.date.today().isoformat()}, sessions with {shown_args}; "
        f"BM25 over {n_sent} trafilatura sentences of {len(sents)} pages "
        f"(extraction {extract_s:.1f} s, not counted in the BM25 seconds per question)."
    )
    (out / "qa-table.md").write_text(
        f"# QA (DEV set): mole vs plain BM25\n\n{header}\n\n{body}", encoding="utf-8"
    )
    (out / "qa-bench.json").write_text(
        json.dumps(
            {
                "commit": commit,
                "runs": runs,
                "summary": summ,
                "sets": {
                    x.name: {"folder": str(x.folder), "runs": r, "summary": summaries[x.name]}
                    for x, r in scored
                },
            },
            indent=1,
            default=str,
        ),
        encoding="utf-8",
    )
    print()
    print(header)
    print()
    print(body)
    print(f"qa: written {out / 'qa-table.md'} and qa-bench.json ({time.time() - started:.0f} s)")

    if a.record:
        label = a.label or f"commit {commit}"
        text = (
            f"```sh\n{cmd}\n```\n\n{textwrap.fill(header, 100)}\n"
            + (f"\n{textwrap.fill(a.note.strip(), 100)}\n" if a.note.strip() else "")
            + f"\n{body}"
        )
        path = REPO / "BENCHMARKS.md"
        path.write_text(
            replace_section(path.read_text(encoding="utf-8"), f"{SECTION_PREFIX} ({label})", text),
            encoding="utf-8",
        )
        print(f"qa: recorded in {path} under '{SECTION_PREFIX} ({label})'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
