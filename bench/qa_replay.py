"""Replay stored QA sessions with other relevance weights and answer thresholds, and the
held-out check built on it (bench/qa.py --heldout).

A replay copies a run's store, then for each setting re-scores every session's claims
(mole_dag.mining.score_relevance with the setting's weights) and writes its report again
(mole_dag.output.report.write_report with the setting's weights and answer threshold), and
scores the new report as qa_score.py does: the first cited statement that states the answer,
the Answer section, the answered-or-not decision. Nothing is searched, fetched or mined again:
the claims are the ones the sessions mined with the default weights, so a replay measures
ranking and deciding, not mining (a weight that changes which sentences a miner keeps shows
its full effect only in a real run).

The held-out check splits the questions in two fixed halves by the parity of their number (D01,
D03, ... and U01, U03, ... odd; the rest even), picks on one half the setting that scores best
there, reports that setting on the other half, and does the same the other way round. A setting
that generalises scores about as well on the half it was not picked on."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from qa import answer_section, cites, half  # bench/qa.py, beside this file

# The grid searched by --heldout: each weight at its default and either side of it, the answer
# threshold from lenient to strict. Small on purpose: every setting replays every session.
GRID: dict[str, tuple[float, ...]] = {
    "context": (0.25, 0.5, 0.75),
    "cue": (0.1, 0.25, 0.4),
    "context_needs_own": (0.15, 0.25, 0.35),
}
THRESHOLDS: tuple[float, ...] = (0.15, 0.2, 0.25, 0.3)
# Each part of the score switched off, one at a time, to see whether it earns its place on
# both halves (a part that helps on one half only was fitted to that half).
ABLATIONS: dict[str, dict[str, float]] = {
    "no context": {"context": 0.0},
    "no title": {"title": 0.0},
    "no answer-type cue": {"cue": 0.0},
    "context without a cue or own words": {"context_needs_own": 0.0},
    "no restatement discount": {"restatement": 1.0},
}


@dataclass(frozen=True)
class Setting:
    weights: Any  # mole_dag.mining.relevance.Weights
    min_coverage: float

    def label(self, default: Any) -> str:
        changed = [
            f"{k} {getattr(self.weights, k):g}"
            for k in ("context", "title", "context_needs_own", "cue", "restatement")
            if getattr(self.weights, k) != getattr(default, k)
        ]
        return ", ".join(changed + [f"threshold {self.min_coverage:g}"])


@dataclass
class Outcome:
    """One question under one setting."""

    rank: int | None = None  # first cited statement stating the answer (answerable only)
    answer_has: bool = False  # the Answer section states the answer (answerable only)
    answered: bool | None = None
    answer_cites: bool = False  # the Answer section cites something
    # Relevance precision as qa_score.py scores it: the share of the report's cited units that
    # cite at least one of the question's relevant pages (None: no cited unit, or no pages).
    precision: float | None = None


@dataclass
class Question:
    qid: str
    session: str
    answerable: bool
    patterns: list[Any] = field(default_factory=list)  # compiled, qa_score.compile_patterns
    pages: list[str] = field(default_factory=list)  # the question's relevant_pages


def outcome(
    md: str, answered: bool | None, q: Question, qs: Any, urls: dict[int, str] | None = None
) -> Outcome:
    """Score one report: qa_score.py's reading order for the rank, the Answer section for the
    rest. URLS: the report's citation numbers and their sources' URLs, for the precision."""
    out = Outcome(answered=answered)
    answer = answer_section(md)
    out.answer_cites = cites(answer)
    if q.answerable:
        units, md_urls = qs.parse_report(md)
        out.rank = next((n for n, text, _c in units if qs.matches(q.patterns, text)), None)
        out.answer_has = qs.matches(q.patterns, answer)
        if units and q.pages:
            where = {**md_urls, **(urls or {})}
            relevant = sum(
                1
                for _n, _text, cited in units
                if any(qs.page_of(where.get(c, ""), q.pages) for c in cited)
            )
            out.precision = relevant / len(units)
    return out


def summary(outcomes: Sequence[tuple[Question, Outcome]]) -> dict[str, Any]:
    """hit@1, hit@5, MRR and Answer accuracy over the answerable questions; false declines
    among them; declines among the unanswerable ones."""
    ans = [(q, o) for q, o in outcomes if q.answerable]
    una = [(q, o) for q, o in outcomes if not q.answerable]
    n, m = len(ans), len(una)
    ranks = [o.rank for _, o in ans]
    precisions = [o.precision for _, o in ans if o.precision is not None]
    return {
        "n": n,
        "hit@1": sum(1 for r in ranks if r == 1) / n if n else None,
        "hit@5": sum(1 for r in ranks if r is not None and r <= 5) / n if n else None,
        "mrr": sum(1 / r for r in ranks if r) / n if n else None,
        "answer@": sum(o.answer_has for _, o in ans) / n if n else None,
        "precision": sum(precisions) / len(precisions) if precisions else None,
        "false_declines": sum(o.answered is False for _, o in ans),
        "n_unanswerable": m,
        "declined": sum(o.answered is False for _, o in una),
        "quoted_as_answer": sum(o.answer_cites for _, o in una),
    }


def objective(s: dict[str, Any]) -> tuple[float, ...]:
    """What --heldout picks a setting by on its tuning half: hit@1, then the share of right
    decisions (unanswerable declined, answerable not), then MRR, then the Answer's accuracy."""
    n, m = s["n"] or 0, s["n_unanswerable"] or 0
    right = (s["declined"] + (n - s["false_declines"])) / (n + m) if n + m else 0.0
    return (s["hit@1"] or 0.0, right, s["mrr"] or 0.0, s["answer@"] or 0.0)


def settings(default_weights: Any, default_threshold: float, full: bool) -> list[Setting]:
    """The defaults, the ablations and (full) the grid."""
    out = [Setting(default_weights, default_threshold)]
    for change in ABLATIONS.values():
        out.append(Setting(replace(default_weights, **change), default_threshold))
    if full:
        keys = list(GRID)
        for values in itertools.product(*(GRID[k] for k in keys)):
            w = replace(default_weights, **dict(zip(keys, values, strict=True)))
            out += [Setting(w, t) for t in THRESHOLDS]
    seen: set[tuple[Any, float]] = set()
    unique = []
    for s in out:
        if (s.weights, s.min_coverage) not in seen:
            seen.add((s.weights, s.min_coverage))
            unique.append(s)
    return unique


def replay(
    stores: Sequence[tuple[Path, list[Question]]],
    grid: Sequence[Setting],
    qs: Any,
    progress: Callable[[str], None] = print,
) -> dict[int, dict[str, Outcome]]:
    """Outcome per setting (by index in `grid`) and question id. Each store is copied first:
    a replay writes relevance rows and reports."""
    import mole_dag.mining.score_relevance as scoring
    import mole_dag.output.answered as answered
    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.output.report import write_report
    from mole_dag.skillsets.extractive import ExtractiveSkills
    from mole_dag.store import Store

    # A session's pages and their term statistics do not depend on the weights, and a replay
    # never changes them: read and count them once per session, not once per setting and stage.
    pages: dict[tuple[int, str], Any] = {}
    stats: dict[int, Any] = {}
    read_pages, count = scoring.session_passages, scoring.session_stats

    def cached_pages(store: Any, session_id: str) -> Any:
        key = (id(store), session_id)
        if key not in pages:
            pages[key] = read_pages(store, session_id)
        return pages[key]

    def cached_stats(passages: Any) -> Any:
        if id(passages) not in stats:
            stats[id(passages)] = count(passages)
        return stats[id(passages)]

    scoring.session_passages = answered.session_passages = cached_pages  # type: ignore[assignment]
    scoring.session_stats = answered.session_stats = cached_stats  # type: ignore[assignment]

    results: dict[int, dict[str, Outcome]] = {i: {} for i in range(len(grid))}
    by_weights: dict[Any, list[int]] = {}
    for i, s in enumerate(grid):
        by_weights.setdefault(s.weights, []).append(i)
    with tempfile.TemporaryDirectory(prefix="mole-qa-replay-") as tmp:
        for k, (path, questions) in enumerate(stores):
            copy = Path(tmp) / f"store{k}.duckdb"
            shutil.copyfile(path, copy)
            store = Store(copy)
            try:
                for w_no, (weights, indexes) in enumerate(by_weights.items(), 1):
                    progress(
                        f"replay: store {k + 1}/{len(stores)}, weights {w_no}/{len(by_weights)}"
                    )
                    for q in questions:
                        run = Run(
                            store, Ledger(store), ExtractiveSkills(), q.session, lambda _m: None
                        )
                        scoring.score_relevance(run, weights)
                        for i in indexes:
                            rep = write_report(
                                run,
                                out_dir=Path(tmp) / "reports",
                                weights=weights,
                                min_coverage=grid[i].min_coverage,
                            )
                            urls = {
                                int(r["number"]): str(r["url"])
                                for r in store.rows(
                                    "SELECT c.number, s.url FROM report_citations c "
                                    "JOIN sources s ON s.id = c.source_id "
                                    "WHERE c.report_id = $r",
                                    {"r": rep.report_id},
                                )
                            }
                            results[i][q.qid] = outcome(rep.markdown, rep.answered, q, qs, urls)
            finally:
                store.close()
    scoring.session_passages = answered.session_passages = read_pages  # type: ignore[assignment]
    scoring.session_stats = answered.session_stats = count  # type: ignore[assignment]
    return results


@dataclass
class HeldOut:
    tuned_on: str
    setting: Setting
    tuned: dict[str, Any]  # the chosen setting on the half it was chosen on
    held_out: dict[str, Any]  # the same setting on the other half


def held_out(
    grid: Sequence[Setting], results: dict[int, dict[str, Outcome]], questions: list[Question]
) -> list[HeldOut]:
    out = []
    for tune, test in (("odd", "even"), ("even", "odd")):

        def on(i: int, part: str) -> dict[str, Any]:
            return summary([(q, results[i][q.qid]) for q in questions if half(q.qid) == part])

        best = max(range(len(grid)), key=lambda i: (objective(on(i, tune)), -i))
        out.append(HeldOut(tune, grid[best], on(best, tune), on(best, test)))
    return out
