"""Claims that are not statements (issue 31, item 1): a labelled sample of mined claims.

Mines claims the way a session over a local folder does (the corpus's BM25 search picks each
question's documents, they are chunked, and the extractive miner proposes claims from each chunk
with the session's term weights), over the DEV PDFs (../shared/qa-pdf-dev) and the DEV web pages
(../shared/web-pages with ../shared/qa-dev's questions), then draws a fixed random sample.

    .venv/bin/python bench/claims_sample.py sample --out DIR [--n 240]
        writes DIR/sample.jsonl: {"id", "set", "question", "document", "text"} per claim, to be
        labelled by hand BEFORE a change (DIR/labels.jsonl: {"id", "label", "kind"}, label
        "statement" or "not", kind what a non-statement is: reference, console, code, keywords,
        table, heading, question, caption, path, fragment);
    .venv/bin/python bench/claims_sample.py score --out DIR
        mines again with the code as it is now and reports, over the labelled sample: how many
        of its non-statements and of its statements are still mined, and the share of
        non-statements among the labelled claims still mined (the issue's bound: at most 2 %);
        also the claims now mined that the sample never saw (new candidates a filter let in,
        to label in a later round).

The documents are other people's text: read in place, never copied into the project; the
sample and its labels live in DIR, outside the repository. Without ../shared this says so and
exits 0."""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mole_dag.actors.local import LocalCorpus  # noqa: E402
from mole_dag.chunk import chunk_text  # noqa: E402
from mole_dag.mining.extractive import mine_sentences  # noqa: E402
from mole_dag.mining.passages import Passages  # noqa: E402
from mole_dag.mining.relevance import TermStats  # noqa: E402
from mole_dag.skills.protocol import MineRequest  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
SETS = {
    "pdf": (SHARED / "qa-pdf-dev" / "pdfs", SHARED / "qa-pdf-dev" / "qa.jsonl"),
    "pages": (SHARED / "web-pages", SHARED / "qa-dev" / "qa.jsonl"),
}
# Documents a question's search keeps, as a session's local search does for one sub-question.
DOCS_PER_QUESTION = 5
SEED = 31


def claim_id(set_name: str, question: str, document: str, text: str) -> str:
    key = "\x1f".join((set_name, question, document, text))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def mine_all() -> list[dict[str, str]]:
    """Every claim the miner proposes for every DEV question, in a stable order."""
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for set_name, (folder, qa_file) in SETS.items():
        corpus = LocalCorpus.open(folder)
        for line in qa_file.read_text().splitlines():
            if not line.strip():
                continue
            qa = json.loads(line)
            question = qa["question"]
            docs = [d for d, _ in corpus.search(question, DOCS_PER_QUESTION)]
            stats = TermStats.from_sentences(
                s.text for d in docs for s in Passages(d.text).sentences
            )
            for doc in docs:
                name = doc.url.rsplit("/", 1)[-1]
                for span in chunk_text(doc.text):
                    req = MineRequest(question, question, span.text, doc.title, stats)
                    for draft in mine_sentences(req):
                        cid = claim_id(set_name, qa["id"], name, draft.text)
                        if cid in seen:
                            continue
                        seen.add(cid)
                        out.append(
                            {
                                "id": cid,
                                "set": set_name,
                                "question": qa["id"],
                                "document": name,
                                "text": draft.text,
                            }
                        )
    return out


def sample(out_dir: Path, n: int) -> None:
    mined = mine_all()
    rng = random.Random(SEED)
    picked: list[dict[str, str]] = []
    for set_name in SETS:
        pool = [c for c in mined if c["set"] == set_name]
        picked += rng.sample(pool, min(n // len(SETS), len(pool)))
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "sample.jsonl").open("w") as f:
        for c in picked:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    counts = Counter(c["set"] for c in mined)
    print(f"mined {len(mined)} claims ({dict(counts)}); sampled {len(picked)} to {out_dir}")


def score(out_dir: Path) -> None:
    sampled = [json.loads(x) for x in (out_dir / "sample.jsonl").read_text().splitlines()]
    labels = {
        d["id"]: d
        for d in (json.loads(x) for x in (out_dir / "labels.jsonl").read_text().splitlines())
    }
    mined = mine_all()
    now = {c["id"] for c in mined}
    labelled = [c for c in sampled if c["id"] in labels]
    before_not = [c for c in labelled if labels[c["id"]]["label"] == "not"]
    kept = [c for c in labelled if c["id"] in now]
    kept_not = [c for c in kept if labels[c["id"]]["label"] == "not"]
    kept_stmt = [c for c in kept if labels[c["id"]]["label"] != "not"]
    stmts = len(labelled) - len(before_not)
    share_before = len(before_not) / len(labelled) if labelled else 0.0
    share_now = len(kept_not) / len(kept) if kept else 0.0
    print(f"labelled claims: {len(labelled)} ({len(before_not)} non-statements)")
    print(f"non-statements before: {share_before:.1%}")
    print(
        f"still mined: {len(kept)} of {len(labelled)}; non-statements {len(kept_not)} of "
        f"{len(before_not)}, statements {len(kept_stmt)} of {stmts}"
    )
    print(f"non-statements among the labelled claims still mined: {share_now:.1%}")
    print("by kind, before -> still mined:")
    kinds_before = Counter(labels[c["id"]]["kind"] for c in before_not)
    kinds_now = Counter(labels[c["id"]]["kind"] for c in kept_not)
    for kind, k in kinds_before.most_common():
        print(f"  {kind}: {k} -> {kinds_now[kind]}")
    for c in kept_not:
        print(f"  kept non-statement ({labels[c['id']]['kind']}): {c['text'][:110]}")
    for c in labelled:
        if c["id"] not in now and labels[c["id"]]["label"] != "not":
            print(f"  lost statement: {c['text'][:110]}")
    seen = {c["id"] for c in sampled}
    new = [c for c in mined if c["id"] not in seen]
    summary = {
        "labelled": len(labelled),
        "non_statements_before": len(before_not),
        "share_before": round(share_before, 4),
        "still_mined": len(kept),
        "non_statements_still_mined": len(kept_not),
        "statements_lost": stmts - len(kept_stmt),
        "share_now": round(share_now, 4),
        "mined_total_now": len(mined),
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    with (out_dir / "unseen.jsonl").open("w") as f:
        for c in new:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"{len(new)} claims mined now that the sample never drew (unseen.jsonl)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("sample", "score"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=240)
    args = ap.parse_args()
    missing = [str(p) for folder, qa in SETS.values() for p in (folder, qa) if not p.exists()]
    if missing:
        print(f"skipped: {', '.join(missing)} not found (the DEV sets live in ../shared)")
        return 0
    if args.mode == "sample":
        sample(args.out, args.n)
    else:
        score(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
