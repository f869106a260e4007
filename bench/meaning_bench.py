"""The model of meaning on the CPU (issue 30): sentences embedded per second on one core and on
two, the time to load the model, and the memory it adds.

Sentences come from real text: the saved pages in ../shared/web-pages/ (or --pages, or
$MOLE_WEB_PAGES), read in place by the local corpus's own loader (`load_document`) and split by
`sentence_spans`, as the pipeline splits them; those of 5 to 80 words, each once, then
--sentences of them drawn with a seeded RNG. They are embedded at the pipeline's truncation
(embed.MAX_TOKENS word pieces) in its length-sorted batches (embed.BATCH texts and
embed.BATCH_TOKENS word pieces at most, or --batch and --batch-tokens).

Each thread count runs in a fresh subprocess with MOLE_MEANING_THREADS set, so its memory is
its own:
  load          Embedder(): the sha256 checks, the tokenizer and the onnxruntime session
  sentences/s   all the sentences through the model, in-process cache off (median of --runs,
                after a warm-up batch that is not counted)
  cached/s      the same sentences again with the cache on: what a repeated sentence costs
  RSS added     peak resident set (VmHWM) over the timed runs minus the resident set before
                numpy and the model were imported

    .venv/bin/python bench/meaning_bench.py [--sentences 2000] [--runs 3] [--threads 1,2]
        [--batch N] [--batch-tokens N] [--pages DIR] [--seed 7]

Absent pages folder: says so in one line and exits 2."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = Path(os.environ.get("MOLE_WEB_PAGES") or REPO.parent / "shared" / "web-pages")
WARMUP = 64


def build_sentences(pages: Path, n: int, seed: int) -> list[str]:
    sys.path.insert(0, str(REPO))
    from mole_dag.actors.local import load_document
    from mole_dag.text import sentence_spans

    seen: dict[str, None] = {}
    for p in sorted(pages.glob("*.html")):
        text = load_document(p).text
        for line in text.splitlines():
            for a, b in sentence_spans(line):
                s = line[a:b]
                if 5 <= len(s.split()) <= 80:
                    seen.setdefault(s, None)
    sentences = list(seen)
    if not sentences:
        raise SystemExit(f"no sentences in the pages of {pages}")
    random.Random(seed).shuffle(sentences)
    return sentences[:n]


def _status_mb(field: str) -> float:
    """VmRSS or VmHWM of this process, in MB (ru_maxrss where /proc is absent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(sentences_file: str, runs: int, batch: int, batch_tokens: int) -> None:
    """One thread count (MOLE_MEANING_THREADS in the environment), in its own process."""
    sentences = json.loads(Path(sentences_file).read_text("utf-8"))
    before = _status_mb("VmRSS")
    sys.path.insert(0, str(REPO))
    import mole_dag.meaning.embed as embed_mod

    embed_mod.BATCH = batch
    embed_mod.BATCH_TOKENS = batch_tokens
    t0 = time.perf_counter()
    model = embed_mod.Embedder(cache_entries=0)
    load_s = time.perf_counter() - t0
    model.embed([f"warm-up {i} {s}" for i, s in enumerate(sentences[:WARMUP])])
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        model.embed(sentences)
        times.append(time.perf_counter() - t0)
    added_mb = _status_mb("VmHWM") - before
    model._cache_entries = embed_mod.CACHE_ENTRIES  # the same session, its cache now on
    model.embed(sentences)
    t0 = time.perf_counter()
    model.embed(sentences)
    cached_s = time.perf_counter() - t0
    tok = model._tok
    lengths = [len(tok.encode(s).ids) for s in sentences]
    print(
        json.dumps(
            {
                "load_s": load_s,
                "run_s": times,
                "cached_s": cached_s,
                "rss_added_mb": added_mb,
                "tokens_median": statistics.median(lengths),
                "truncated": sum(n >= embed_mod.MAX_TOKENS for n in lengths),
                "max_tokens": embed_mod.MAX_TOKENS,
            }
        )
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", type=int, default=None, help="default: embed.BATCH")
    ap.add_argument("--batch-tokens", type=int, default=None, help="default: embed.BATCH_TOKENS")
    ap.add_argument("--pages", type=Path, default=PAGES)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], *(int(a) for a in args.child[1:]))
        return 0
    if not args.pages.is_dir():
        print(f"no pages folder at {args.pages} (pass --pages or set MOLE_WEB_PAGES)")
        return 2
    sys.path.insert(0, str(REPO))
    from mole_dag.meaning.embed import BATCH, BATCH_TOKENS

    batch = args.batch or BATCH
    batch_tokens = args.batch_tokens or BATCH_TOKENS
    sentences = build_sentences(args.pages, args.sentences, args.seed)
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "sentences.json"
        file.write_text(json.dumps(sentences), "utf-8")
        for threads in [int(t) for t in args.threads.split(",")]:
            env = {**os.environ, "MOLE_MEANING_THREADS": str(threads)}
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(file)]
                + [str(args.runs), str(batch), str(batch_tokens)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append((threads, json.loads(out.stdout.strip().splitlines()[-1])))

    first = rows[0][1]
    print(
        f"{len(sentences)} sentences of {args.pages.name}/ (5-80 words; median "
        f"{first['tokens_median']:.0f} word pieces, {first['truncated']} cut at "
        f"{first['max_tokens']}), batches of {batch} texts and {batch_tokens} word pieces at "
        f"most, median of {args.runs} runs\n"
    )
    print("| threads | load | sentences/s | ms/sentence | cached/s | RSS added |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threads, r in rows:
        run = statistics.median(r["run_s"])
        print(
            f"| {threads} | {r['load_s']:.2f} s | {len(sentences) / run:,.0f} "
            f"| {1000 * run / len(sentences):.2f} | {len(sentences) / r['cached_s']:,.0f} "
            f"| {r['rss_added_mb']:.0f} MB |"
        )
    cmd = " ".join(["bench/meaning_bench.py", *sys.argv[1:]])
    print(f"\n`.venv/bin/python {cmd}`; CPU: {os.cpu_count()} logical cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
