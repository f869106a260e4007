"""Where a demo session's time goes (issue 12): wall time, commits, and the share of the
pipeline's own work against DuckDB, imports and Dagster.

Each run is a fresh process on a warm venv, with its own MOLE_HOME (a new store and Dagster
instance), researching the demo question over the bundled corpus with the extractive provider,
exactly as `make demo` does:

- `cli`: `mole research "..." --usd 0.50` in-process (`mole_dag.cli.main`), Dagster runs and all;
- `pipeline`: the plain pipeline (`mole_dag.driver.run_session`, as tests/test_demo_session.py).

Wall time is measured by the parent around the whole child process (interpreter start to exit),
in runs without any profiler. The shares come from separate runs with a sampling profiler: a
thread reads the main thread's stack every millisecond (sys._current_frames) and files each
sample under the first owner it finds walking outward from the innermost frame:

- DuckDB: a DuckDB call in progress (the store's cursors are wrapped to flag it: statements,
  fetches, BEGIN/COMMIT), or a frame of mole_dag/store (the store layer, its open and migrations);
- imports: a frame of the import machinery;
- Dagster: a frame of dagster, its storage (sqlalchemy, alembic, sqlite) or the asset layer;
- pipeline: a frame of mole_dag (the stages, the CLI), the pipeline's own work;
- other: none of these (interpreter start-up, argument parsing).

While the main thread waits for the lead workers, the busiest worker is sampled instead.

    .venv/bin/python bench/session_bench.py --runs 5 [--mode cli|pipeline|both]

`--scaling` (issue 14): an end-to-end cassette session of a few hundred claims, and the same
with twice the claims. A synthetic local corpus (bench/session_bench.py's own generator:
40 documents of coffee-and-health sentences, deterministic; `--paragraphs P` per document,
then 2P, i.e. one chunk of 8 minable claims per document, then two) is researched once live
against the simulated Claude (tests/model_server.py on 127.0.0.1) and recorded to a cassette;
the measured runs replay that cassette with no server:

- `cli`: `mole research ... --provider cassette --cassette TAPE` in a fresh process, Dagster
  runs and all. The stage functions the assets call (recover, plan_round, execute_leads,
  mine_claims, analyse_local_data, build_edges, score_session, finish_session, ensure_session)
  are wrapped with timers: their sum is the pipeline's work; the rest of the process's wall
  time (interpreter, imports, the Dagster instance, its runs, events and asset metadata) is
  orchestration;
- `pipeline`: the same replay through the plain `run_session`, no Dagster (the same timers).

Peak memory is the child process's maximum resident set (`wait4`'s ru_maxrss). Growth is each
figure at 2P over the same at P; the claim counts are reported beside it (near 2x, not exactly).

    .venv/bin/python bench/session_bench.py --scaling --runs 3 [--paragraphs 4] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What are the health effects of drinking coffee?"
BUCKETS = ("pipeline", "duckdb", "imports", "dagster", "other")
DAGSTER_PARTS = (
    "/dagster",
    "/sqlalchemy/",
    "/alembic/",
    "/sqlite3/",
    "/grpc/",
    "/pydantic",
    "/dagster_",
)


# -- the child: one session, optionally sampled ---------------------------------------------


class _Sampler:
    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.counts: dict[str, float] = {}  # seconds per bucket
        self.in_duckdb: set[int] = set()  # thread ids inside a DuckDB call
        self._stop = threading.Event()
        self._main = threading.main_thread().ident or 0
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-sampler")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _classify(self, tid: int, frame: Any) -> str:
        if tid in self.in_duckdb:
            return "duckdb"
        stack = []
        while frame is not None:
            stack.append(frame.f_code.co_filename)
            frame = frame.f_back
        if any("importlib._bootstrap" in f for f in stack):
            return "imports"
        for f in stack:  # innermost first
            if "/mole_dag/store/" in f:
                return "duckdb"
            if "/mole_dag/" in f or f.startswith("<mole"):
                return "pipeline"
            if f"{os.sep}assets{os.sep}" in f and str(ROOT) in f:
                return "dagster"
            if any(p in f for p in DAGSTER_PARTS):
                return "dagster"
        return "other"

    @staticmethod
    def _waiting(frame: Any) -> bool:
        """The main thread is parked on the lead workers (a future's result, a pool join)."""
        f = frame.f_code.co_filename
        return f.endswith(("threading.py", "_base.py", "thread.py"))

    def _run(self) -> None:
        me = threading.get_ident()
        last = time.perf_counter()
        while not self._stop.wait(self.interval_s):
            frames = sys._current_frames()
            # Each sample stands for the time since the last one. The sampler gets the GIL at
            # once while DuckDB has released it, but only every switch interval (5 ms) while
            # Python code holds it: counting samples instead of time over-weights DuckDB ~5x.
            now = time.perf_counter()
            dt, last = now - last, now
            main = frames.get(self._main)
            if main is None:
                continue
            tid, frame = self._main, main
            if self._waiting(main):
                workers = {t.ident: t for t in threading.enumerate() if t.name.startswith("lead")}
                busy = [
                    (i, fr)
                    for i, fr in frames.items()
                    if i in workers and i != me and not self._waiting(fr)
                ]
                if busy:
                    tid, frame = busy[0]
            bucket = self._classify(tid, frame)
            self.counts[bucket] = self.counts.get(bucket, 0.0) + dt


def _instrument_duckdb(sampler: _Sampler) -> None:
    """Wrap the store's cursors so the sampler knows a DuckDB call is in progress."""
    from mole_dag.store.duckdb_store import DuckDBStore

    class Timed:
        def __init__(self, cur: Any) -> None:
            self._cur = cur

        def _call(self, name: str, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            sampler.in_duckdb.add(tid)
            try:
                out = getattr(self._cur, name)(*a, **k)
            finally:
                sampler.in_duckdb.discard(tid)
            return self if out is self._cur else out

        def execute(self, *a: Any, **k: Any) -> Any:
            return self._call("execute", *a, **k)

        def executemany(self, *a: Any, **k: Any) -> Any:
            return self._call("executemany", *a, **k)

        def fetchone(self) -> Any:
            return self._call("fetchone")

        def fetchall(self) -> Any:
            return self._call("fetchall")

        def __getattr__(self, name: str) -> Any:
            return getattr(self._cur, name)

    plain_use = DuckDBStore._use

    @contextlib.contextmanager
    def use(self: Any, *, read_only: bool) -> Any:
        # Every statement goes through a cursor handed out here (the store keeps none open).
        with plain_use(self, read_only=read_only) as raw:
            yield Timed(raw)

    DuckDBStore._use = use  # type: ignore[method-assign]


def child(mode: str, home: Path, out: Path, sample: bool) -> None:
    sampler = _Sampler() if sample else None
    if sampler:
        sampler.start()
    # Imported here, under the sampler: the import cost is part of what is measured.
    from mole_dag.store import base

    if sampler:
        _instrument_duckdb(sampler)
    if mode == "cli":
        from mole_dag.cli import main

        code = main(["research", QUESTION, "--usd", "0.50", "--quiet", "--no-report-print"])
        if code != 0:
            raise SystemExit(f"mole research exited {code}")
    else:
        from mole_dag.budget import Ledger
        from mole_dag.context import Run
        from mole_dag.core import Unit
        from mole_dag.driver import run_session
        from mole_dag.paths import demo_corpus
        from mole_dag.session import create_session
        from mole_dag.skillsets.extractive import ExtractiveSkills
        from mole_dag.store import Store

        store = Store(home / "mole.duckdb")
        sid = create_session(
            store, QUESTION, Unit.USD_MICROS, 500_000, corpus=str(demo_corpus())
        ).session_id
        run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None))
        store.close()
    if sampler:
        sampler.stop()
    out.write_text(
        json.dumps(
            {"commits": base.process_commits(), "samples": dict(sampler.counts) if sampler else {}}
        )
    )


# -- the scaling session (issue 14) ----------------------------------------------------------

SCALE_QUESTION = "What are the health effects of drinking coffee?"
SCALE_SESSION = "bench-scaling-1"
SCALE_USD = "5"  # far from binding: a budget that stopped the larger session would cap growth
SCALE_DOCS = 40
STAGES = {
    "ensure_session": "session",
    "recover": "session",
    "plan_round": "plan",
    "execute_leads": "execute",
    "mine_claims": "mine",
    "analyse_local_data": "local data",
    "build_edges": "verify",
    "score_session": "score",
    "finish_session": "report",
}

_OUTCOMES = (
    "type 2 diabetes|liver cancer|heart failure|stroke|atrial fibrillation|Parkinson's disease|"
    "depression|gallstones|kidney stones|gout|high blood pressure|liver cirrhosis|"
    "colorectal cancer|endometrial cancer|Alzheimer's disease|migraine|insomnia|anxiety|"
    "hip fractures|low birth weight|acid reflux|fatty liver disease|melanoma|prostate cancer|"
    "coronary heart disease|early death|multiple sclerosis|tinnitus|cataracts|weight gain"
).split("|")
_EXPOSURES = (
    "drinking {n} cups of coffee a day|daily coffee drinking|regular coffee intake|"
    "drinking decaffeinated coffee|drinking filtered coffee|drinking espresso|"
    "drinking instant coffee|drinking caffeinated coffee|"
    "drinking more than {n} cups of coffee a day"
).split("|")
_EFFECTS = (
    "was associated with a {p} percent lower risk of|was linked to a {p} percent higher risk of|"
    "showed no clear association with|cut the odds of developing|raised the odds of developing"
).split("|")
_STUDIES = (
    "In a {k}-year cohort of {n} adults in {country},|A meta-analysis of {k} studies found that|"
    "In a randomised trial of {n} volunteers,|Researchers at the University of {city} reported "
    "that|A {year} survey of {n} nurses in {country} showed that|According to a {year} review,"
).split("|")
_COUNTRIES = "Sweden Japan Brazil Canada Spain Korea Finland Italy Chile Kenya India Norway".split()
_CITIES = "Leeds Utrecht Osaka Lyon Porto Gdansk Austin Perth Zurich Cork".split()
_FILLER = (
    "The authors said more work is needed before any advice changes.|"
    "Participants filled in a food questionnaire at the start of the study.|"
    "The work was paid for by a public research grant.|"
    "Some of the volunteers also drank tea, which the analysis took into account.|"
    "Smoking and alcohol were recorded and adjusted for in the models."
).split("|")
_PUBLISHERS = (
    "healthwire dailyclinic brewscience medjournal-news cupreport wellnesstimes "
    "nutritionfacts-daily cohortwatch labnotes publicdoctor heartbeat-news gutfeeling"
).split()


def _sentence(rng: random.Random) -> str:
    study = rng.choice(_STUDIES).format(
        k=rng.randint(3, 30),
        n=f"{rng.randint(2, 900) * 100:,}",
        country=rng.choice(_COUNTRIES),
        city=rng.choice(_CITIES),
        year=rng.randint(1995, 2024),
    )
    exposure = rng.choice(_EXPOSURES).format(n=rng.randint(2, 6))
    effect = rng.choice(_EFFECTS).format(p=rng.randint(5, 45))
    return f"{study} {exposure} {effect} {rng.choice(_OUTCOMES)}."


def synthetic_corpus(root: Path, docs: int, paragraphs: int) -> Path:
    """Documents of coffee-and-health findings with varied studies, numbers and outcomes (so
    the retriever and the judge see related but distinct claims, some of them opposed), and a
    sentence of page talk per paragraph. Paragraph p of document i is the same at every size,
    so the larger corpus is the smaller one plus more of the same kind."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(docs):
        pub = _PUBLISHERS[i % len(_PUBLISHERS)]
        year = 2000 + i % 25
        paras = []
        for p in range(paragraphs):
            rng = random.Random(i * 1000 + p)
            sents = [_sentence(rng) for _ in range(3)] + [rng.choice(_FILLER)]
            rng.shuffle(sents)
            paras.append(" ".join(sents))
        head = (
            f"---\ntitle: Coffee and health, report {i}\n"
            f"url: https://www.{pub}.com/coffee/{year}/report-{i}\n"
            f"publisher: {pub.title()}\npublished: {year}-0{1 + i % 9}-1{i % 9}\n---\n\n"
        )
        (root / f"{i:03d}-report.md").write_text(head + "\n\n".join(paras) + "\n", "utf-8")
    return root


class _StageTimer:
    """Seconds per stage, outermost calls only (a stage calling another counts once)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.first_start: float | None = None
        self._depth = threading.local()

    def wrap(self, stage: str, fn: Any) -> Any:
        def timed(*a: Any, **k: Any) -> Any:
            depth = getattr(self._depth, "n", 0)
            self._depth.n = depth + 1
            t0 = time.perf_counter()
            if self.first_start is None:
                self.first_start = t0
            try:
                return fn(*a, **k)
            finally:
                self._depth.n = depth
                if depth == 0:
                    self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t0

        return timed

    def install(self, module: Any) -> None:
        for name, stage in STAGES.items():
            if hasattr(module, name):
                setattr(module, name, self.wrap(stage, getattr(module, name)))


def _research_args(corpus: Path, tape: Path, provider: str) -> list[str]:
    flag = "--cassette" if provider == "cassette" else "--record"
    return [
        "research",
        SCALE_QUESTION,
        "--usd",
        SCALE_USD,
        "--corpus",
        str(corpus),
        "--session-id",
        SCALE_SESSION,
        "--provider",
        provider,
        flag,
        str(tape),
        "--quiet",
        "--no-report-print",
    ]


def scale_child(mode: str, home: Path, corpus: Path, tape: Path, out: Path, t_start: float) -> None:
    """One session: `record` (live, against the simulated Claude), `cli` or `pipeline` (replay)."""
    timer = _StageTimer()
    if mode in ("record", "cli"):
        from mole_dag import cli

        if mode == "cli":
            import assets.local_data
            import assets.research

            timer.install(assets.research)
            timer.install(assets.local_data)
            code = cli.main(_research_args(corpus, tape, "cassette"))
        else:
            from tests.model_server import ModelServer, SimulatedModel

            with ModelServer(SimulatedModel()) as server:
                os.environ["ANTHROPIC_API_KEY"] = "bench-not-a-key"
                os.environ["ANTHROPIC_BASE_URL"] = server.url
                code = cli.main(_research_args(corpus, tape, "anthropic"))
        if code != 0:
            raise SystemExit(f"mole research exited {code}")
    else:
        from mole_dag import driver
        from mole_dag.budget import Ledger
        from mole_dag.context import Run
        from mole_dag.core import Unit
        from mole_dag.skillsets import skills_for
        from mole_dag.store import Store

        timer.install(driver)
        os.environ["MOLE_CASSETTE"] = str(tape)
        skills = skills_for("cassette", {})
        store = Store(home / "mole.duckdb")
        ledger = Ledger(store)
        ledger.create_session(
            SCALE_QUESTION,
            Unit.USD_MICROS,
            int(float(SCALE_USD) * 1_000_000),
            session_id=SCALE_SESSION,
            provider="cassette",
            corpus=str(corpus),
        )
        driver.run_session(Run(store, ledger, skills, SCALE_SESSION, progress=lambda m: None))
        store.close()
    from mole_dag.paths import default_store_path
    from mole_dag.store import Store

    path = home / "mole.duckdb" if mode == "pipeline" else default_store_path()
    store = Store(path)
    counts = {
        t: int(store.scalar(f"SELECT count(*) FROM {t} WHERE session_id = ?", [SCALE_SESSION]))
        for t in ("claims", "sources", "chunks", "pair_verdicts", "claim_edges")
    }
    status = str(store.scalar("SELECT status FROM sessions WHERE id = ?", [SCALE_SESSION]))
    store.close()
    out.write_text(
        json.dumps(
            {
                "stages": dict(timer.seconds),
                "before_first_stage_s": (timer.first_start or t_start) - t_start,
                "counts": counts,
                "status": status,
            }
        )
    )


def _scale_home() -> tuple[Path, dict[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="mole-bench-scale-"))
    (home / "dagster").mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster" / "dagster.yaml")
    env = {
        **os.environ,
        "MOLE_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "MOLE_CONFIG": str(home / "config.json"),
        "PYTHONPATH": str(ROOT),
    }
    for var in ("MOLE_DB", "MOLE_PROVIDER", "MOLE_CASSETTE", "MOLE_RECORD"):
        env.pop(var, None)
    # The recording's models are pinned, so a replay prices calls as the recording did.
    (home / "config.json").write_text(
        json.dumps(
            {"anthropic": {"models": {"cheap": "claude-haiku-4-5", "strong": "claude-sonnet-4-5"}}}
        )
    )
    (home / "config.json").chmod(0o600)
    return home, env


def scale_run(mode: str, corpus: Path, tape: Path) -> dict[str, Any]:
    home, env = _scale_home()
    try:
        out = home / "result.json"
        err = home / "stderr.txt"
        cmd = [sys.executable, __file__, "--scale-child", mode, "--home", str(home)]
        cmd += ["--corpus", str(corpus), "--tape", str(tape), "--out", str(out)]
        t0 = time.perf_counter()
        cmd += ["--t-start", repr(time.time())]
        with err.open("w") as errf:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=errf)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            text = err.read_text(errors="replace")
            if "CassetteMiss" in text:
                raise ReplayMiss(text.strip().splitlines()[-1][:300])
            sys.stderr.write(text[-3000:])
            raise SystemExit(f"the {mode} session failed (exit {code})")
        got = json.loads(out.read_text())
        got["wall_s"] = wall
        got["peak_rss_mb"] = usage.ru_maxrss / 1024  # Linux: kilobytes
        got["pipeline_s"] = sum(got["stages"].values())
        got["orchestration_s"] = wall - got["pipeline_s"]
        return got
    finally:
        shutil.rmtree(home, ignore_errors=True)


class ReplayMiss(RuntimeError):
    """A replay asked for a request the recording never made: the session took another path.

    Seen in about one replay in six of the 2x session before the `claim_lead_info` query
    (sql/queries/pipeline.sql) broke ties between a claim's shallowest leads: `arg_min(root,
    depth)` picked any of their roots, and the root decides the per-root follow-up cap
    (tests/test_claim_lead_info.py). A miss now means another path to find: counted and
    retried here, and the recording redone if its replays keep missing."""


def replay(mode: str, corpus: Path, tape: Path, misses: list[str], tries: int = 3) -> Any:
    for _ in range(tries):
        try:
            return scale_run(mode, corpus, tape)
        except ReplayMiss as exc:
            misses.append(f"{mode}: {exc}")
    # Several misses in a row: the recording itself took the rarer path. Record again.
    raise ReplayMiss(f"the {mode} replay missed {tries} times in a row")


class _Size:
    """One corpus size: its corpus, its recording (redone when its replays keep missing), the
    replays' results per path, and the misses."""

    def __init__(self, work: Path, name: str, paragraphs: int) -> None:
        self.name = name
        self.corpus = synthetic_corpus(work / f"corpus-{name}", SCALE_DOCS, paragraphs)
        self.tape = work / f"tape-{name}.jsonl"
        self.recordings = 0
        self.misses: list[str] = []
        self.runs: dict[str, list[Any]] = {}
        self.record()

    def record(self) -> None:
        self.tape.unlink(missing_ok=True)
        scale_run("record", self.corpus, self.tape)  # live: no cassette to miss
        self.recordings += 1

    def replay(self, mode: str) -> None:
        for _ in range(3):
            try:
                got = replay(mode, self.corpus, self.tape, self.misses)
                self.runs.setdefault(mode, []).append(got)
                return
            except ReplayMiss:
                # The recording itself took the rarer path: record again. What was measured
                # on the old recording stays (it was a whole session of the same corpus).
                self.record()
        raise SystemExit(f"no recording of the {self.name} session replayed: {self.misses[-1]}")

    def summary(self, modes: tuple[str, ...]) -> dict[str, Any]:
        per_mode: dict[str, Any] = {}
        for mode in modes:
            got = self.runs[mode]
            stages = sorted({s for g in got for s in g["stages"]})
            per_mode[mode] = {
                **{
                    k: statistics.median(g[k] for g in got)
                    for k in ("wall_s", "pipeline_s", "orchestration_s", "peak_rss_mb")
                },
                "before_first_stage_s": statistics.median(g["before_first_stage_s"] for g in got),
                "stages": {
                    s: statistics.median(g["stages"].get(s, 0.0) for g in got) for s in stages
                },
                "counts": got[-1]["counts"],
                "status": got[-1]["status"],
                "replay_misses": sum(1 for m in self.misses if m.startswith(f"{mode}:")),
                "recordings": self.recordings,
            }
        return per_mode


def scaling(runs: int, paragraphs: int, modes: tuple[str, ...]) -> dict[str, Any]:
    """Both sizes recorded first, then replayed in alternating order (1x, 2x; then 2x, 1x; ...),
    so that a machine whose load drifts during the bench does not land on one size only."""
    work = Path(tempfile.mkdtemp(prefix="mole-bench-corpus-"))
    try:
        sizes = [_Size(work, "1x", paragraphs), _Size(work, "2x", 2 * paragraphs)]
        for i in range(runs):
            for size in sizes if i % 2 == 0 else sizes[::-1]:
                for mode in modes:
                    size.replay(mode)
        return {
            "paragraphs": paragraphs,
            "runs": runs,
            "sizes": {size.name: size.summary(modes) for size in sizes},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def scaling_figures(res: dict[str, Any]) -> dict[str, Any]:
    """The figures bench/suite.py reads, flat, with growth = 2x / 1x."""
    fig: dict[str, float] = {}
    units: dict[str, str] = {}
    limits: dict[str, dict[str, float]] = {}
    one, two = res["sizes"]["1x"], res["sizes"]["2x"]
    for mode in one:
        a, b = one[mode], two[mode]
        fig[f"{mode} claims 1x"] = a["counts"]["claims"]
        fig[f"{mode} claims growth"] = b["counts"]["claims"] / a["counts"]["claims"]
        for k, unit in (
            ("wall_s", "s"),
            ("pipeline_s", "s"),
            ("orchestration_s", "s"),
            ("peak_rss_mb", "MB"),
        ):
            name = k.rsplit("_", 1)[0].replace("_", " ")
            fig[f"{mode} {name} 1x"] = a[k]
            units[f"{mode} {name} 1x"] = unit
            fig[f"{mode} {name} growth"] = b[k] / a[k] if a[k] else 0.0
            units[f"{mode} {name} growth"] = "x"
        limits[f"{mode} pipeline growth"] = {"max": 2.2}
        fig[f"{mode} replay misses"] = a["replay_misses"] + b["replay_misses"]
        fig["recordings made"] = a["recordings"] + b["recordings"]
        units[f"{mode} replay misses"] = "count"
        for stage, sec in a["stages"].items():
            if stage in ("verify", "mine"):  # the two that are most of the work
                fig[f"{mode} stage {stage} 1x"] = sec
                units[f"{mode} stage {stage} 1x"] = "s"
            if sec > 0.05:
                fig[f"{mode} stage {stage} growth"] = b["stages"].get(stage, 0.0) / sec
                units[f"{mode} stage {stage} growth"] = "x"
    notes = []
    if any(fig[f"{m} replay misses"] for m in one):
        notes.append(
            "a replay took another path than its recording and was run again "
            "(ReplayMiss in bench/session_bench.py)"
        )
    return {"figures": fig, "units": units, "limits": limits, "notes": notes}


def print_scaling(res: dict[str, Any]) -> None:
    one, two = res["sizes"]["1x"], res["sizes"]["2x"]
    print(
        f"Synthetic corpus: {SCALE_DOCS} documents, {res['paragraphs']} then "
        f"{2 * res['paragraphs']} paragraphs each; medians of {res['runs']} run(s)\n"
    )
    print(
        "| path | size | claims | sources | pairs judged | wall s | pipeline s | "
        "orchestration s | of it before the first stage s | peak MB |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in one:
        for size, r in (("1x", one[mode]), ("2x", two[mode])):
            c = r["counts"]
            print(
                f"| {mode} | {size} | {c['claims']} | {c['sources']} | {c['pair_verdicts']} | "
                f"{r['wall_s']:.1f} | {r['pipeline_s']:.1f} | {r['orchestration_s']:.1f} | "
                f"{r['before_first_stage_s']:.1f} | {r['peak_rss_mb']:.0f} |"
            )
        a, b = one[mode], two[mode]
        print(
            f"| {mode} | 2x / 1x | {b['counts']['claims'] / a['counts']['claims']:.2f}x | | | "
            f"{b['wall_s'] / a['wall_s']:.2f}x | {b['pipeline_s'] / a['pipeline_s']:.2f}x | "
            f"{b['orchestration_s'] / a['orchestration_s']:.2f}x | | "
            f"{b['peak_rss_mb'] / a['peak_rss_mb']:.2f}x |"
        )
        misses = a["replay_misses"] + b["replay_misses"]
        if misses:
            print(f"| {mode} | replays that missed and were run again: {misses} | | | | | | | | |")
    first = next(iter(one))
    recorded = one[first]["recordings"] + two[first]["recordings"]
    if recorded > 2:
        print(
            f"| | recordings made (2 needed; one whose replays kept missing redone): {recorded} |"
        )
    print("\n| path | stage | 1x s | 2x s | growth |")
    print("|---|---|---:|---:|---:|")
    for mode in one:
        for stage, sec in sorted(one[mode]["stages"].items(), key=lambda kv: -kv[1]):
            later = two[mode]["stages"].get(stage, 0.0)
            growth = f"{later / sec:.2f}x" if sec else ""
            print(f"| {mode} | {stage} | {sec:.2f} | {later:.2f} | {growth} |")


# -- the parent: runs, medians, a table ------------------------------------------------------


def one_run(mode: str, sample: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="mole-bench-"))
    try:
        (home / "dagster").mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster" / "dagster.yaml")
        env = {
            **os.environ,
            "MOLE_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster"),
            "MOLE_CONFIG": str(home / "config.json"),
            "MOLE_PROVIDER": "extractive",
        }
        env.pop("MOLE_DB", None)
        out = home / "result.json"
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, __file__, "--child", mode, "--home", str(home), "--out", str(out)]
            + (["--sample"] if sample else []),
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t0
        got = json.loads(out.read_text())
        got["wall_s"] = wall
        return got
    finally:
        shutil.rmtree(home, ignore_errors=True)


def measure(mode: str, runs: int) -> dict[str, Any]:
    walls: list[float] = []
    commits: list[int] = []
    shares: dict[str, list[float]] = {b: [] for b in BUCKETS}
    for _ in range(runs):
        plain = one_run(mode, sample=False)
        walls.append(plain["wall_s"])
        commits.append(plain["commits"])
        sampled = one_run(mode, sample=True)
        total = sum(sampled["samples"].values()) or 1
        for b in BUCKETS:
            shares[b].append(100.0 * sampled["samples"].get(b, 0) / total)
    return {
        "mode": mode,
        "runs": runs,
        "wall_s": {"median": statistics.median(walls), "min": min(walls), "max": max(walls)},
        "commits": statistics.median(commits),
        "share_pct": {b: statistics.median(v) for b, v in shares.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mode", choices=("cli", "pipeline", "both"), default="both")
    ap.add_argument("--json", action="store_true", help="one final line of JSON (bench/suite.py)")
    ap.add_argument(
        "--scaling", action="store_true", help="the issue-14 cassette session at 1x, 2x"
    )
    ap.add_argument("--paragraphs", type=int, default=4, help="--scaling: paragraphs at 1x")
    ap.add_argument("--quick", action="store_true", help="--scaling: the cli path only, 1 run")
    ap.add_argument("--child", choices=("cli", "pipeline"), help=argparse.SUPPRESS)
    ap.add_argument("--scale-child", choices=("record", "cli", "pipeline"), help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--tape", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--t-start", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sample", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scale_child:
        sys.path.insert(0, str(ROOT))
        # The process's start, in the parent's clock: what came before the first stage.
        started = time.perf_counter() - (time.time() - args.t_start)
        scale_child(args.scale_child, args.home, args.corpus, args.tape, args.out, started)
        return
    if args.scaling:
        modes = ("cli",) if args.quick else ("cli", "pipeline")
        res = scaling(1 if args.quick else args.runs, args.paragraphs, modes)
        if args.json:
            print(json.dumps({**scaling_figures(res), "raw": res}))
        else:
            print_scaling(res)
        return
    if args.child:
        sys.path.insert(0, str(ROOT))
        child(args.child, args.home, args.out, args.sample)
        return
    modes = ("cli", "pipeline") if args.mode == "both" else (args.mode,)
    results = [measure(m, args.runs) for m in modes]
    if args.json:
        print(json.dumps(results))
        return
    print(
        f"| session | wall s (median of {args.runs}) | min-max | commits | "
        + " | ".join(f"{b} %" for b in BUCKETS)
        + " |"
    )
    print("|---|---:|---|---:|" + "---:|" * len(BUCKETS))
    for r in results:
        w = r["wall_s"]
        print(
            f"| {r['mode']} | {w['median']:.1f} | {w['min']:.1f}-{w['max']:.1f} | "
            f"{r['commits']:.0f} | "
            + " | ".join(f"{r['share_pct'][b]:.0f}" for b in BUCKETS)
            + " |"
        )


if __name__ == "__main__":
    main()
