"""Each rule fitted on the DEV questions, switched off alone (issue 30, item 1): stored benchmark
sessions are scored and reported again with one rule off at a time, and the figures of DEV, its
halves and the unseen sets are printed side by side, so a rule keeps its place only where it
helps on held-out questions too.

    .venv/bin/python bench/rule_ablation.py --run OUT/run [OUT/local ...] [--out DIR]

A RUN is a folder `bench/qa.py` or `bench/qa_pdf.py` wrote (its sessions.tsv and store.duckdb);
its siblings `RUN.NAME` (another question set) and `RUN.unanswerable` / `RUN.NAME.unanswerable`
are found the same way those scripts find them, and their questions are read from the shared
DEV folders and the project's `bench/qa-*-unseen` sets. Replays are bench/qa_replay.py's:
nothing is searched, fetched or mined again, so a rule that also changes which sentences the
extractive miner keeps shows here only its effect on ranking and deciding (the full effect is
a real run with the rule off, as BENCHMARKS.md's issue 30 section records). The negation cue
and the absent-words decline were measured this way and retired (BENCHMARKS.md, issue 30)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import qa as qa_bench  # noqa: E402
import qa_replay as rp  # noqa: E402

SHARED = REPO.parent / "shared"
# Question files per set name: the run folder's suffix names the set (bench/qa.py set_run).
SETS = {
    "": [SHARED / "qa-dev" / "qa.jsonl", SHARED / "qa-pdf-dev" / "qa.jsonl"],
    "qa-html-unseen": [BENCH / "qa-html-unseen" / "qa.jsonl"],
    "qa-pdf-unseen": [BENCH / "qa-pdf-unseen" / "qa.jsonl"],
}
UNANSWERABLE = {
    "": [SHARED / "qa-dev" / "qa-unanswerable.jsonl"],
    "qa-html-unseen": [BENCH / "qa-html-unseen" / "qa-unanswerable.jsonl"],
}


def _patch(module: Any, name: str, value: object) -> Callable[[], None]:
    old = getattr(module, name)
    setattr(module, name, value)
    return lambda: setattr(module, name, old)


@contextmanager
def rule_off(rule: str) -> Iterator[None]:
    import mole_dag.mining.answer_types as answer_types
    import mole_dag.mining.relevance as relevance
    import mole_dag.output.selection as selection

    off: dict[str, list[tuple[Any, str, object]]] = {
        "none (today)": [],
        "SCOPE_BY_DOCUMENT (and TEXT_SHARE, the document nouns)": [
            (relevance, "SCOPE_BY_DOCUMENT", False)
        ],
        "NEAR_SHARE (near-synonyms)": [(relevance, "NEAR_SHARE", 0.0)],
        "SETTING_SHARE": [(relevance, "SETTING_SHARE", 1.0)],
        "SOURCE_FLOOR": [(selection, "SOURCE_FLOOR", 0.0)],
        # "which/what X" of no known kind asks for no kind in particular rather than a name.
        "UNKNOWN_NOUN (a name)": [(answer_types, "UNKNOWN_NOUN", answer_types.AnswerType.ANY)],
        # Issue 30, item 6: a heading restating the question scored like any sentence again.
        "restated headings kept": [(relevance, "restates_question", lambda s, q: False)],
        "all of them": [
            (relevance, "SCOPE_BY_DOCUMENT", False),
            (relevance, "NEAR_SHARE", 0.0),
            (relevance, "SETTING_SHARE", 1.0),
            (selection, "SOURCE_FLOOR", 0.0),
        ],
    }
    undo = [_patch(m, n, v) for m, n, v in off[rule]]
    try:
        yield
    finally:
        for u in reversed(undo):
            u()


RULES = (
    "none (today)",
    "SCOPE_BY_DOCUMENT (and TEXT_SHARE, the document nouns)",
    "NEAR_SHARE (near-synonyms)",
    "SETTING_SHARE",
    "SOURCE_FLOOR",
    "UNKNOWN_NOUN (a name)",
    "restated headings kept",
    "all of them",
)


def _pool(files: list[Path]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        if f.exists():
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    out[d["id"]] = d
    return out


def _stores(runs: list[Path], qs: Any) -> list[tuple[str, Path, list[rp.Question]]]:
    """(set label, store, questions) for every run folder and its siblings."""
    out = []
    for run in runs:
        for folder in sorted(run.parent.glob(run.name + "*")):
            rest = folder.name[len(run.name) :].lstrip(".")
            answerable = not rest.endswith("unanswerable")
            name = rest.removesuffix("unanswerable").rstrip(".")
            files = (SETS if answerable else UNANSWERABLE).get(name)
            if files is None or not (folder / "store.duckdb").exists():
                continue
            pool = _pool(files)
            sessions = {q: s for q, s in qa_bench.read_sessions(folder).items() if q in pool}
            questions = [
                rp.Question(
                    q,
                    s,
                    answerable,
                    qs.compile_patterns(pool[q].get("patterns", [])),
                    list(pool[q].get("relevant_pages", [])),
                )
                for q, s in sorted(sessions.items())
            ]
            if questions:
                kind = "PDF" if "pdf" in name or folder.name.startswith("local") else "HTML"
                label = f"{kind} {'DEV' if not name else 'unseen'}"
                out.append((label, folder / "store.duckdb", questions))
    return out


def _fmt(s: dict[str, Any]) -> str:
    if not s["n"]:
        return "-"
    cell = f"{s['hit@1']:.0%} / {s['hit@5']:.0%} / {s['mrr']:.2f}"
    if s["n_unanswerable"]:
        cell += f" · declined {s['declined']}/{s['n_unanswerable']}"
    cell += f" · false declines {s['false_declines']}"
    if s.get("precision") is not None:
        cell += f" · precision {s['precision']:.0%}"
    return cell


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, help="write rule-ablation.md and .json here")
    ap.add_argument(
        "--ranking",
        choices=("words", "learned", "fused"),
        default="words",
        help="score as MOLE_RANKING does: the hand-weighted word score (today's default), the "
        "learned ranking, or the mean of the two (fused); the stored claims are the same",
    )
    ap.add_argument(
        "--rules",
        nargs="+",
        metavar="RULE",
        help="only these rows (names as printed, e.g. 'none (today)' 'restated headings kept')",
    )
    args = ap.parse_args()
    rules = tuple(args.rules or RULES)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        ap.error(f"unknown rules: {unknown}; known: {list(RULES)}")
    import mole_dag.mining.relevance as relevance

    relevance.LEARNED = args.ranking == "learned"
    relevance.FUSED = args.ranking == "fused"
    qs = qa_bench.load_module(SHARED / "qa-dev" / "qa_score.py", "qa_score_shared")
    stores = _stores(args.run, qs)
    if not stores:
        print("rule_ablation: no stored sessions found", file=sys.stderr)
        return 2
    from mole_dag.mining.relevance import WEIGHTS
    from mole_dag.output.answered import MIN_COVERAGE

    setting = [rp.Setting(WEIGHTS, MIN_COVERAGE)]
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for rule in rules:
        with rule_off(rule):
            outcomes: dict[str, list[tuple[rp.Question, rp.Outcome]]] = {}
            for label, path, questions in stores:
                res = rp.replay([(path, questions)], setting, qs, progress=lambda _m: None)[0]
                for q in questions:
                    for key in (label, f"{label} {qa_bench.half(q.qid)}"):
                        outcomes.setdefault(key, []).append((q, res[q.qid]))
        table[rule] = {k: rp.summary(v) for k, v in sorted(outcomes.items())}
        print(f"rule_ablation: {rule}: done", flush=True)
    cols = sorted({k for r in table.values() for k in r})
    lines = [
        "| rule off | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for rule, row in table.items():
        lines.append(
            f"| {rule} | " + " | ".join(_fmt(row[c]) if c in row else "-" for c in cols) + " |"
        )
    text = (
        "hit@1 / hit@5 / MRR of the answerable questions (stored sessions replayed; "
        "halves: odd and even ids)\n\n" + "\n".join(lines)
    )
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "rule-ablation.md").write_text(text + "\n", encoding="utf-8")
        (args.out / "rule-ablation.json").write_text(json.dumps(table, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
