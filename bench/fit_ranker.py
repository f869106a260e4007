"""Fit the learned ranking's weights (mole_dag/mining/ranker.py) on data outside every question
set of this project: the Microsoft Research WikiQA corpus (Yang, Yih and Meek, EMNLP 2015),
3,047 Bing questions, each with the sentences of one Wikipedia summary labelled 1 where the
sentence answers it. Fitted on its train split, checked on dev and test; never on DEV or the
unseen sets here.

    .venv/bin/python bench/fit_ranker.py --wikiqa DIR          # WikiQA-{train,dev,test}.tsv
    .venv/bin/python bench/fit_ranker.py --wikiqa DIR --write  # also write the weights file

The corpus is not copied into the repository (its licence is Microsoft's research data licence):
the TSV files come from the WikiQACorpus.zip Microsoft publishes, or from a public repository
that carries them (one that does: rohantilva/Google-Like-Question-Answering-System,
data/WikiQA/WikiQA-*.tsv.gz).

A session's candidates are sentences of many pages, not of the one right page: so each
question's candidates are its page's sentences plus every sentence of the three other pages
whose sentences plain BM25 (bm25s) ranks highest for it, as a search over many pages would
bring. Every feature is computed by the project's own code (relevance.evidence,
ranker.meaning), as a session does.

A linear score over the features, fitted listwise (a softmax over each question's candidates)
with a small L2 penalty, then scaled to a probability (fit()). The decline floor is the
top-candidate probability that best separates WikiQA's questions whose page answers them from
those whose page does not (balanced accuracy, on train); the mining floor the probability that
MINE_RECALL of train's answer sentences reach; the report's gap the log-odds below a question's
best candidate that MINE_RECALL of its answer sentences are within."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mole_dag.mining import ranker  # noqa: E402
from mole_dag.mining.relevance import CONTEXT_WINDOW, Query, evidence, weigh  # noqa: E402
from mole_dag.text import TermStats, sentence_spans  # noqa: E402

WEIGHTS_FILE = REPO / "mole_dag" / "data" / "ranker_weights.json"
DISTRACTOR_PAGES = 3  # other pages per question, as a search would bring. A guess.
# Share of answer sentences the mining floor lets through. A guess, flagged as one: a chunk
# still yields at most its best few sentences, so the floor only keeps the hopeless out.
MINE_RECALL = 0.95
L2 = 1e-4  # a guess, flagged as one: keeps weights finite, barely moves them


def detok(text: str) -> str:
    """WikiQA's text is tokenised ("Glacier ." "it 's"): put it back as a page writes it."""
    t = text.replace("``", '"').replace("''", '"')
    t = re.sub(r" ([.,;:!?%)\]}])", r"\1", t)
    t = re.sub(r"([(\[{$]) ", r"\1", t)
    t = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", t)
    return " ".join(t.split())


def as_asked(question: str) -> str:
    q = detok(question).strip()
    q = q[:1].upper() + q[1:]
    return q if q.endswith("?") else q + "?"


@dataclass
class Doc:
    title: str
    sentences: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)


@dataclass
class Item:
    question: str
    doc: Doc


def load(path: Path) -> list[Item]:
    items: dict[str, Item] = {}
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            it = items.setdefault(
                row["QuestionID"],
                Item(as_asked(row["Question"]), Doc(detok(row["DocumentTitle"]))),
            )
            it.doc.sentences.append(detok(row["Sentence"]))
            it.doc.labels.append(int(row["Label"]))
    return list(items.values())


def load_squad(paths: list[Path]) -> dict[str, list[Item]]:
    """SQuAD 2.0 files (any subset of its articles), by article title: each paragraph a page,
    its sentences labelled 1 where one of a question's answer spans starts. Questions SQuAD
    marks impossible keep every label 0 (the decline floor's negatives). A question seen in two
    files is taken once."""
    by_title: dict[str, list[Item]] = defaultdict(list)
    seen: set[str] = set()
    for path in paths:
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            title = article["title"].replace("_", " ")
            for para in article["paragraphs"]:
                text = para["context"]
                spans = sentence_spans(text)
                doc = Doc(title, [text[a:b] for a, b in spans], [0] * len(spans))
                for qa in para["qas"]:
                    if qa["id"] in seen:
                        continue
                    seen.add(qa["id"])
                    starts = {int(a["answer_start"]) for a in qa.get("answers", [])}
                    labels = [int(any(a <= st < b for st in starts)) for a, b in spans]
                    by_title[title].append(
                        Item(as_asked(qa["question"]), Doc(title, doc.sentences, labels))
                    )
    return by_title


@dataclass
class Candidate:
    x: ranker.Features
    label: int
    hand: float  # today's hand-weighted relevance (relevance.weigh), for comparison


def candidates(items: list[Item]) -> list[list[Candidate]]:
    import bm25s

    docs: list[Doc] = []
    seen: dict[int, int] = {}
    for it in items:
        if id(it.doc.sentences) not in seen:
            seen[id(it.doc.sentences)] = len(docs)
            docs.append(it.doc)
    flat = [(d, i) for d in docs for i in range(len(d.sentences))]
    texts = [d.sentences[i] for d, i in flat]
    stats = TermStats.from_sentences(texts)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    k = min(100, len(texts))
    hits, _ = retriever.retrieve(
        bm25s.tokenize([it.question for it in items], stopwords="en", show_progress=False),
        k=k,
        show_progress=False,
    )
    t0 = time.perf_counter()
    ranker.warm([it.question for it in items] + texts)
    print(f"  embedded {len(texts) + len(items)} texts in {time.perf_counter() - t0:.0f}s")
    out: list[list[Candidate]] = []
    for it, row in zip(items, hits, strict=True):
        query = Query.of(it.question, stats)
        picks = [(it.doc, i, it.doc.labels[i]) for i in range(len(it.doc.sentences))]
        # Whole pages, as a search brings them: every sentence of the pages holding the
        # sentences plain BM25 ranks highest (the top sentences alone would be a biased sample,
        # all sharing the question's words).
        pages: list[Doc] = []
        for j in row:
            d = flat[j][0]
            if d.sentences is not it.doc.sentences and all(d is not p for p in pages):
                pages.append(d)
            if len(pages) == DISTRACTOR_PAGES:
                break
        picks += [(d, i, 0) for d in pages for i in range(len(d.sentences))]
        group: list[Candidate] = []
        for d, i, label in picks:
            s = d.sentences[i]
            context = [
                d.sentences[j]
                for j in range(
                    max(0, i - CONTEXT_WINDOW), min(len(d.sentences), i + 1 + CONTEXT_WINDOW)
                )
                if j != i
            ]
            ev = evidence(query, stats, s, context, d.title)
            own = ranker.meaning(it.question, s)
            group.append(Candidate(ranker.features(ev, own), label, weigh(ev).value))
        out.append(group)
    return out


def fit(datasets: list[list[list[Candidate]]]) -> tuple[float, np.ndarray]:
    """Weights that rank a question's answer above its other candidates: a listwise
    (softmax over each question's candidates) log-likelihood, which is what ranking needs, not
    a pointwise one dominated by the many easy negatives. The ranking fixes the weights' ratios
    only; a one-feature logistic fit of the score to the labels then gives their scale and the
    intercept, so the score reads as a probability (monotone: the order is the ranking's).
    Each data set weighs alike, however many questions it has: WikiQA's questions rarely share
    words with their answers, SQuAD's mostly do, and a session meets both kinds."""
    groups = [g for d in datasets for g in d]
    lists = [
        (
            np.array([c.x.vector() for c in g]),
            np.array([c.label for c in g], dtype=float),
            1.0 / (len(datasets) * sum(1 for h in d if any(c.label for c in h))),
        )
        for d in datasets
        for g in d
        if any(c.label for c in g)
    ]
    dim = lists[0][0].shape[1]

    def listwise(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.0, np.zeros(dim)
        for x, y, share in lists:
            z = x @ w
            z = z - z.max()
            e = np.exp(z)
            p = e / e.sum()
            pos = y / y.sum()
            total -= share * float(pos @ np.log(p + 1e-12))
            grad += share * (x.T @ (p - pos))
        return total + L2 * float(w @ w), grad + 2 * L2 * w

    w = minimize(listwise, np.zeros(dim), jac=True, method="L-BFGS-B").x
    s = np.array([float(np.dot(c.x.vector(), w)) for g in groups for c in g])
    y = np.array([c.label for g in groups for c in g], dtype=float)

    def pointwise(ab: np.ndarray) -> tuple[float, np.ndarray]:
        z = ab[0] * s + ab[1]
        p = 1 / (1 + np.exp(-z))
        g = p - y
        ll = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
        return float(ll), np.array([np.mean(g * s), np.mean(g)])

    a, b = minimize(pointwise, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B").x
    return float(b), w * a


def ranks(groups: list[list[Candidate]], key) -> dict[str, float]:  # noqa: ANN001
    """hit@1, hit@5 and MRR over the questions with an answer, ordered by `key` (ties: the
    page's own order, then the distractors')."""
    rr: list[float] = []
    for g in groups:
        if not any(c.label for c in g):
            continue
        order = sorted(range(len(g)), key=lambda i: (-key(g[i]), i))
        first = next(n for n, i in enumerate(order) if g[i].label)
        rr.append(1 / (first + 1))
    n = len(rr)
    return {
        "questions": n,
        "hit@1": round(sum(r == 1 for r in rr) / n, 3),
        "hit@5": round(sum(r >= 0.2 for r in rr) / n, 3),
        "MRR": round(sum(rr) / n, 3),
    }


def decline_floor(groups: list[list[Candidate]], prob) -> tuple[float, float]:  # noqa: ANN001
    """The top probability below which a question is taken as not answered by its candidates,
    chosen for balanced accuracy."""
    tops = [(max(prob(c) for c in g), any(c.label for c in g)) for g in groups]
    best = (0.0, 0.0)
    for t in sorted({round(p, 3) for p, _ in tops}):
        pos = [p >= t for p, a in tops if a]
        neg = [p < t for p, a in tops if not a]
        acc = (sum(pos) / max(len(pos), 1) + sum(neg) / max(len(neg), 1)) / 2
        if acc > best[1]:
            best = (t, acc)
    return best


def report_gap(groups: list[list[Candidate]], m: ranker.Model) -> float:
    """How far below its question's best candidate an answer sentence may score and still be
    kept, in the model's log-odds: the gap MINE_RECALL of the answered questions' first answer
    sentences are within. A report keeps what is within this of its best (report.choose)."""
    gaps = sorted(
        max(m.logit(c.x) for c in g) - max(m.logit(c.x) for c in g if c.label)
        for g in groups
        if any(c.label for c in g)
    )
    return round(gaps[min(int(MINE_RECALL * len(gaps)), len(gaps) - 1)], 3)


def balanced(groups: list[list[Candidate]], prob, floor: float) -> float:  # noqa: ANN001
    tops = [(max(prob(c) for c in g), any(c.label for c in g)) for g in groups]
    pos = [p >= floor for p, a in tops if a]
    neg = [p < floor for p, a in tops if not a]
    return round((sum(pos) / max(len(pos), 1) + sum(neg) / max(len(neg), 1)) / 2, 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wikiqa", type=Path, required=True)
    ap.add_argument(
        "--squad",
        type=Path,
        nargs="*",
        default=[],
        help="SQuAD 2.0 JSON files (subsets of its articles); fitted on beside WikiQA's train",
    )
    ap.add_argument(
        "--squad-heldout",
        nargs="*",
        default=["Rhine"],
        help="SQuAD articles kept out of the fit and checked on (a guess: the smallest one)",
    )
    ap.add_argument("--write", action="store_true", help=f"write {WEIGHTS_FILE.name}")
    args = ap.parse_args()
    splits: dict[str, list[list[Candidate]]] = {}
    for name in ("train", "dev", "test"):
        path = args.wikiqa / f"WikiQA-{name}.tsv"
        print(f"WikiQA {name}: reading {path.name}")
        splits[f"WikiQA {name}"] = candidates(load(path))
    fitted_on = [splits["WikiQA train"]]
    if args.squad:
        squad = load_squad(args.squad)
        held = [it for t in args.squad_heldout for it in squad.get(t, [])]
        train = [it for t, items in squad.items() if t not in args.squad_heldout for it in items]
        print(f"SQuAD: {len(train)} questions to fit on, {len(held)} held out")
        splits["SQuAD fitted"] = candidates(train)
        splits["SQuAD held out"] = candidates(held)
        fitted_on.append(splits["SQuAD fitted"])
    b, w = fit(fitted_on)
    m = ranker.Model(b, dict(zip(ranker.FEATURES, map(float, w), strict=True)), "")

    def prob(c: Candidate) -> float:
        return m.probability(c.x)

    pooled = [g for d in fitted_on for g in d]
    floor, train_acc = decline_floor(pooled, prob)
    # The mining floor: the probability that MINE_RECALL of train's answer sentences reach.
    answers = sorted(prob(c) for g in pooled for c in g if c.label)
    mine_floor = round(answers[int((1 - MINE_RECALL) * len(answers))], 4)
    gap = report_gap(pooled, m)
    report: dict[str, dict[str, object]] = {}
    for name, groups in splits.items():
        report[name] = {
            "learned": ranks(groups, prob),
            "bm25 words only": ranks(groups, lambda c: c.x.words),
            "meaning only": ranks(groups, lambda c: c.x.meaning),
            "hand-weighted (relevance.weigh)": ranks(groups, lambda c: c.hand),
            "decline balanced accuracy": balanced(groups, prob, floor),
        }
    print(
        json.dumps(
            {
                "intercept": b,
                "weights": m.weights,
                "answer_floor": floor,
                "mine_floor": mine_floor,
                "report_gap": gap,
            },
            indent=1,
        )
    )
    print(json.dumps(report, indent=1))
    if args.write:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        WEIGHTS_FILE.write_text(
            json.dumps(
                {
                    "fitted_on": "WikiQA (Microsoft Research WikiQA Corpus 1.0) train split"
                    + (
                        " and SQuAD 2.0 dev articles "
                        + ", ".join(sorted(t for t in squad if t not in args.squad_heldout))
                        if args.squad
                        else ""
                    ),
                    "command": "bench/fit_ranker.py --wikiqa DIR"
                    + (" --squad FILE... " if args.squad else " ")
                    + "--write",
                    "data": {
                        "wikiqa": "rohantilva/Google-Like-Question-Answering-System "
                        "data/WikiQA/WikiQA-*.tsv.gz (Microsoft's WikiQACorpus 1.0)",
                        "squad": [p.name for p in args.squad],
                    },
                    "fitted": dt.date.today().isoformat(),
                    "code": commit,
                    "features": list(ranker.FEATURES),
                    "intercept": round(b, 4),
                    "weights": {k: round(v, 4) for k, v in m.weights.items()},
                    "answer_floor": floor,
                    "mine_floor": mine_floor,
                    "report_gap": gap,
                    "mine_recall": MINE_RECALL,
                    "l2": L2,
                    "distractor_pages": DISTRACTOR_PAGES,
                    "checked": report,
                },
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {WEIGHTS_FILE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
