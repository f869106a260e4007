"""The `mole` command line.

    mole research "question" (--usd X | --tokens N) [--corpus DIR] [--provider NAME]
                  [--search NAME ...] [--searxng-url URL] [--allow-host HOST ...]
                  [--cassette FILE | --record FILE] [--session-id ID] [--data PATH]
    mole sessions
    mole show SESSION [--html [PATH]]
    mole trace SESSION
    mole eval SESSION [--pairs FILE] [--json]
    mole crossings SESSION [--verify]
    mole models

`research` creates the session (ledger row with escrow) and its Dagster partition, runs research
rounds as Dagster runs in the project's instance (so they appear in `dagster dev`), then the
report. Bad input is refused with one line on stderr and exit status 2, before anything is
written."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from mole_dag.paths import dagster_home, default_store_path

EXIT_USAGE = 2
EXIT_FAILED = 1


class CliError(Exception):
    """A one-line, user-facing error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _fmt(amount: int, unit: str) -> str:
    return f"${amount / 1_000_000:.6f}" if unit == "usd_micros" else f"{amount} tokens"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mole", description="Deep research with a budget the database enforces.")
    p.add_argument("--db", help="the DuckDB store (default: .mole/mole.duckdb, or $MOLE_DB)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("research", help="research a question within a hard budget")
    r.add_argument("question", help="the question, in quotes")
    budget = r.add_argument_group("budget (exactly one is required; there is no default)")
    budget.add_argument("--usd", metavar="AMOUNT", help="ceiling in US dollars, e.g. 0.50")
    budget.add_argument("--tokens", metavar="N", help="ceiling in model tokens")
    r.add_argument("--corpus", metavar="DIR",
                   help="folder of .html/.md/.txt documents for the local search provider "
                        "(default: the bundled demo corpus)")
    r.add_argument("--data", metavar="PATH",
                   help="a CSV file or a folder of CSVs to analyse through the aggregation "
                        "gate (only aggregates over at least 5 rows leave it)")
    # Model providers.
    r.add_argument("--provider", default=None,
                   help="anthropic, openai (any OpenAI-compatible endpoint), cassette (replay a "
                        "recording) or extractive (no model); default: MOLE_PROVIDER, else "
                        '"provider" in the config file, else extractive')
    r.add_argument("--cassette", metavar="FILE",
                   help="the recording --provider cassette replays (or MOLE_CASSETTE)")
    r.add_argument("--record", metavar="FILE",
                   help="record this session's model calls to a new cassette FILE")
    r.add_argument("--session-id", metavar="ID",
                   help="name the session (default: a fresh id); a cassette replays under the "
                        "id it was recorded with")
    # Search providers and fetching; each also settable in the config file.
    r.add_argument("--search", metavar="NAME", action="append",
                   help="search provider, repeatable: local, searxng, brave, tavily, arxiv, "
                        "openalex, crossref, pubmed (default: config `search`, else local)")
    r.add_argument("--searxng-url", metavar="URL", help="the SearXNG instance to query")
    r.add_argument("--allow-host", metavar="HOST", action="append",
                   help="let the fetcher reach this host although it is private or local "
                        "(your own service); repeatable")
    r.add_argument("--quiet", action="store_true", help="print only the report path and session")
    r.add_argument("--no-report-print", action="store_true",
                   help="do not print the report itself, only where it was written")

    sub.add_parser("sessions", help="list sessions")
    s = sub.add_parser("show", help="status, spend, counts and report of a session")
    s.add_argument("session")
    s.add_argument("--html", nargs="?", const="", metavar="PATH",
                   help="also write the report as HTML (default: next to the Markdown file)")
    t = sub.add_parser("trace", help="clusters, edges, scores, follow-ups and grounding")
    t.add_argument("session")
    e = sub.add_parser("eval", help="the scorecard of a session")
    e.add_argument("session")
    e.add_argument("--pairs", metavar="FILE",
                   help="labelled claim pairs (JSON) for contradiction precision")
    e.add_argument("--json", action="store_true", help="machine-readable output")
    x = sub.add_parser("crossings", help="exactly what left a session's local data, and what "
                                         "was refused")
    x.add_argument("session")
    x.add_argument("--verify", action="store_true",
                   help="re-run every crossing against the data and compare envelope hashes")
    sub.add_parser("models", help="the priced models (USD per million tokens, as of when) and "
                                  "the default tiers")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.db:
        os.environ["MOLE_DB"] = str(Path(args.db).expanduser().resolve())
    try:
        if args.command == "research":
            return cmd_research(args)
        if args.command == "sessions":
            return cmd_sessions(args)
        if args.command == "show":
            return cmd_show(args)
        if args.command == "trace":
            return cmd_trace(args)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "crossings":
            return cmd_crossings(args)
        if args.command == "models":
            return cmd_models(args)
    except CliError as exc:
        print(f"mole {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `mole show ... | head`: the reader left, nothing to report
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("mole: interrupted; the session can be resumed with `dagster asset materialize`",
              file=sys.stderr)
        return 130
    parser.error(f"unknown command {args.command}")


def _open_store(wait: bool = True):  # noqa: ANN202
    from mole_dag.store import Store, StoreError

    try:
        return Store(default_store_path(), lock_wait_s=None if wait else 0.0,
                     on_wait=lambda m: print(f"mole: {m}", file=sys.stderr))
    except StoreError as exc:
        raise CliError(str(exc)) from None


def _progress_to_stderr(quiet: bool) -> None:
    log = logging.getLogger("mole.progress")
    log.setLevel(logging.INFO)
    log.propagate = False
    if not quiet and not log.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("  · %(message)s"))
        log.addHandler(h)
    logging.getLogger("mole").setLevel(logging.WARNING)


def _dagster_instance():  # noqa: ANN202
    """The project's Dagster instance, the one `make dev` shows: DAGSTER_HOME, else
    <mole home>/dagster with the project's dagster.yaml (paths.dagster_home)."""
    import dagster as dg

    home = dagster_home()
    # Dagster reads the variable, and the runs it launches inherit it.
    os.environ["DAGSTER_HOME"] = str(home)
    if not (home / "dagster.yaml").exists():
        raise CliError(f"DAGSTER_HOME={home} has no dagster.yaml; unset it to use the project's")
    os.chdir(home)
    return dg.DagsterInstance.get()


def cmd_research(args: argparse.Namespace) -> int:
    from mole_dag.launch import LaunchError, check_launch
    from mole_dag.session import create_session

    # Validate everything before writing anything.
    try:
        launch = check_launch(
            args.question, usd=args.usd, tokens=args.tokens, provider=args.provider,
            session_id=args.session_id, corpus=args.corpus, data=args.data, search=args.search,
            searxng_url=args.searxng_url, allow_hosts=args.allow_host,
            note=lambda line: print(f"mole: {line}", file=sys.stderr),
            before_skills=lambda provider: _cassette_and_record(args, provider))
    except LaunchError as exc:
        raise CliError(str(exc)) from None
    question, unit, total, skills = launch.question, launch.unit, launch.total, launch.skills

    store = _open_store()
    try:
        if args.session_id:
            from mole_dag.store import q

            if store.row(q("session_get"), {"session_id": args.session_id}) is not None:
                raise CliError(f"session {args.session_id} already exists; "
                               f"`mole show {args.session_id}` shows it")
        bal = create_session(store, question, unit, total, corpus=str(launch.corpus),
                             provider=launch.provider, session_id=args.session_id,
                             actors=launch.actors, search=launch.search, data=launch.data)
    finally:
        store.close()
    sid = bal.session_id
    _progress_to_stderr(args.quiet)
    if not args.quiet:
        print(f"session {sid}: {question!r}, budget {_fmt(total, str(unit))} "
              f"({_fmt(bal.escrow, str(unit))} in escrow for the report)", file=sys.stderr)

    instance = _dagster_instance()
    from assets.definitions import defs
    from assets.partitions import SESSIONS

    instance.add_dynamic_partitions(SESSIONS, [sid])
    run_config: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    round_job = defs.resolve_job_def("research_round")
    report_job = defs.resolve_job_def("research_report")

    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.session import should_run_another_round

    def another_round() -> bool:
        st = _open_store()
        try:
            return should_run_another_round(Run(st, Ledger(st), skills, sid))
        finally:
            st.close()

    rounds = 0
    while True:
        rounds += 1
        if not args.quiet:
            print(f"round {rounds}", file=sys.stderr)
        res = round_job.execute_in_process(instance=instance, partition_key=sid,
                                           run_config=run_config, raise_on_error=False)
        if not res.success:
            _report_failure(res, sid)
            return EXIT_FAILED
        if not another_round():
            break
    if not args.quiet:
        print("report", file=sys.stderr)
    res = report_job.execute_in_process(instance=instance, partition_key=sid,
                                        run_config=run_config, raise_on_error=False)
    if not res.success:
        _report_failure(res, sid)
        return EXIT_FAILED
    return _print_outcome(sid, quiet=args.quiet, print_report=not args.no_report_print)


def _cassette_and_record(args: argparse.Namespace, provider: str) -> None:
    """--cassette and --record, checked once the provider is named and before its skills are
    built (the Dagster runs build their own skills from the environment set here)."""
    from mole_dag.launch import LaunchError
    from mole_dag.llm.registry import MODEL_PROVIDERS

    if args.cassette:
        if provider != "cassette":
            raise LaunchError("--cassette is the recording for --provider cassette")
        os.environ["MOLE_CASSETTE"] = str(Path(args.cassette).expanduser().resolve())
    if args.record:
        path = Path(args.record).expanduser().resolve()
        if provider not in MODEL_PROVIDERS:
            raise LaunchError(f"--record records a model provider's calls; --provider {provider} "
                              f"makes none (use one of {', '.join(MODEL_PROVIDERS)})")
        if path.exists():
            raise LaunchError(f"--record {path}: the file exists; record to a new file")
        os.environ["MOLE_RECORD"] = str(path)


def cmd_crossings(args: argparse.Namespace) -> int:
    from mole_dag.compute.crossings import format_listing, listing
    from mole_dag.compute.findings import reverify
    from mole_dag.output.sanitize import strip_controls
    from mole_dag.store import q

    store = _open_store()
    try:
        sess = store.row(q("session_get"), {"session_id": args.session})
        if sess is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        got = listing(store, args.session)
        checks = ([(c["id"], *reverify(store, c["id"])) for c in got.crossings]
                  if args.verify else [])
    finally:
        store.close()
    if not sess.get("data"):
        print(f"session {args.session} has no data attached: nothing has crossed")
        return 0
    # Labels come from the user's file: strip terminal and bidi controls before printing.
    print(strip_controls(format_listing(args.session, got)))
    if checks:
        print("")
        for cid, ok, why in checks:
            print(f"verify {cid}: {'ok' if ok else 'FAILED'}: {why}")
        return 0 if all(ok for _, ok, _ in checks) else EXIT_FAILED
    return 0


def _report_failure(result: Any, sid: str) -> None:
    for ev in result.all_events:
        if ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data = ev.asset_check_evaluation_data
            if not data.passed:
                why = data.description or ""
                print(f"mole research: check {data.check_name} failed{': ' + why if why else ''}",
                      file=sys.stderr)
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            cause = err.cause or err
            print(f"mole research: step {ev.step_key} failed: {cause.message.strip()}",
                  file=sys.stderr)
    print(f"session {sid}", file=sys.stderr)


def _print_outcome(sid: str, *, quiet: bool, print_report: bool) -> int:
    from mole_dag.budget import Ledger
    from mole_dag.store import q

    store = _open_store()
    try:
        rep = store.row(q("report_latest"), {"session_id": sid})
        ledger = Ledger(store)
        bal = ledger.balance(sid)
        by_role = ledger.spend_by_role(sid)
        check = ledger.verify(sid)
    finally:
        store.close()
    if rep and print_report and not quiet:
        print(rep["markdown"])
    if rep:
        print(f"report {rep['path'] or '(stored only: the report file could not be written)'}")
    print(f"session {sid}")
    if not quiet:
        spend = ", ".join(f"{r['role']} {_fmt(int(r['spent']), str(bal.unit))}" for r in by_role)
        print(f"spent {_fmt(bal.spent, str(bal.unit))} of {_fmt(bal.total, str(bal.unit))} "
              f"({spend}); {check.explain()}")
    return 0 if check.ok else EXIT_FAILED


def cmd_sessions(args: argparse.Namespace) -> int:
    from mole_dag.store import q

    store = _open_store()
    try:
        rows = store.rows(q("sessions_list"))
    finally:
        store.close()
    if not rows:
        print("no sessions yet; start one with `mole research \"question\" --usd 0.50`")
        return 0
    for r in rows:
        print(f"{r['id']}  {r['status']:<9}  {_fmt(int(r['spent']), r['unit']):>16} of "
              f"{_fmt(int(r['total']), r['unit']):<16}  {int(r['claims']):>4} claims  "
              f"{'[maintenance] ' if r['kind'] == 'maintenance' else ''}{r['question'][:60]}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from mole_dag.budget import Ledger, LedgerError
    from mole_dag.output.sanitize import one_line
    from mole_dag.store import q

    store = _open_store()
    try:
        ledger = Ledger(store)
        try:
            bal = ledger.balance(args.session)
        except LedgerError:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them") from None
        sess = store.row(q("session_get"), {"session_id": args.session}) or {}
        counts = store.row(q("session_counts"), {"session_id": args.session}) or {}
        by_role = ledger.spend_by_role(args.session)
        check = ledger.verify(args.session)
        rep = store.row(q("report_latest"), {"session_id": args.session})
        stages = ledger.spend_by_stage(args.session)
        dead = store.named("digest_dead_ends", {"session_id": args.session})
        by_model = store.named("spend_by_model", {"session_id": args.session})
        discarded = store.named("discarded_by_cause", {"session_id": args.session})
    finally:
        store.close()
    unit = str(bal.unit)
    print(f"session {args.session}")
    print(f"question  {one_line(sess['question'])}")
    print(f"status    {bal.status} after {sess['rounds']} round(s), provider {sess['provider']}")
    print(f"budget    {_fmt(bal.total, unit)}: spent {_fmt(bal.spent, unit)}, held "
          f"{_fmt(bal.held, unit)}, escrow {_fmt(bal.escrow, unit)}"
          + (f", OVERRUN {_fmt(bal.overrun, unit)}" if bal.overrun else ""))
    for r in by_role:
        print(f"  {r['role']:<9} {_fmt(int(r['spent']), unit):>16} over {r['calls']} calls")
    for r in by_model:
        print(f"  {r['model']:<24} {_fmt(int(r['spent']), unit):>16} over {r['calls']} calls: "
              f"{r['input_tokens']} in, {r['output_tokens']} out, {r['cache_read_tokens']} cache "
              f"read, {r['cache_write_tokens']} cache write"
              + (f", OVERRUN {_fmt(int(r['overrun']), unit)}" if r["overrun"] else ""))
    print(f"ledger    {check.explain()}")
    print("counts    " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("by stage  " + "; ".join(
        f"{r['stage']}/{r['role']} {_fmt(int(r['spent']), unit)} x{r['calls']}"
        for r in stages))
    if dead:
        print("dead ends " + ", ".join(f"{r['cause']} {r['n']}" for r in dead))
    causes = {"quote_not_found": "quote not found", "quote_too_short": "quote too short",
              "empty": "no quote"}
    print("discarded " + (", ".join(f"{causes.get(r['cause'], r['cause'])} {r['n']}"
                                    for r in discarded) or "none") + " (by the quote check)")
    if rep:
        print(f"report    {rep['path'] or '(in the store only)'}")
        if args.html is not None:
            print(f"html      {_write_html(rep, args.html, args.session)}")
        print()
        print(rep["markdown"])
    else:
        print("report    not written yet")
    return 0


def _write_html(rep: dict[str, Any], target: str, sid: str) -> Path:
    from mole_dag.output.html import render_html
    from mole_dag.paths import reports_dir

    path = Path(target).expanduser() if target else (
        Path(rep["path"]).with_suffix(".html") if rep["path"] else reports_dir() / f"{sid}.html")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(rep["markdown"], title=f"mole report {sid}"), "utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    return path


def cmd_trace(args: argparse.Namespace) -> int:
    from mole_dag.output.trace import render_trace
    from mole_dag.store import q

    store = _open_store()
    try:
        if store.row(q("session_get"), {"session_id": args.session}) is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        print(render_trace(store, args.session), end="")
    finally:
        store.close()
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from mole_dag.evals.scorecard import LabelsError, as_json, as_text, scorecard
    from mole_dag.store import q

    pairs = Path(args.pairs).expanduser() if args.pairs else None
    store = _open_store()
    try:
        if store.row(q("session_get"), {"session_id": args.session}) is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        try:
            metrics = scorecard(store, args.session, pairs)
        except LabelsError as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    print(as_json(metrics, args.session) if args.json else as_text(metrics, args.session),
          end="" if not args.json else "\n")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """What a USD budget can be spent on: the shipped price table with the config's `pricing`
    laid over it, and each provider's tier models (the config's, else the defaults)."""
    from decimal import Decimal
    from fractions import Fraction

    from mole_dag.config import ConfigError, load_config, section
    from mole_dag.llm.pricing import PriceTable, PricingError, checked
    from mole_dag.llm.registry import DEFAULT_TIERS

    def usd(f: Fraction) -> str:  # exact: the table's prices are finite decimals
        d = (Decimal(f.numerator) / Decimal(f.denominator)).normalize()
        return f"{d:.2f}" if d == d.quantize(Decimal("0.01")) else f"{d:f}"

    try:
        cfg = load_config()
        table = PriceTable.load(cfg.get("pricing"))
    except (ConfigError, PricingError) as exc:
        raise CliError(str(exc)) from None
    print(f"priced models, USD per million tokens (shipped table checked {checked()}; "
          "'config' = from your config file)")
    width = max(len(m) for m in table.prices)
    print(f"  {'model':<{width}}  {'input':>7}  {'output':>7}  {'cache rd':>8}  "
          f"{'cache wr':>8}  as of")
    for model in sorted(table.prices):
        p = table.prices[model]
        print(f"  {model:<{width}}  {usd(p.input):>7}  {usd(p.output):>7}  "
              f"{usd(p.cache_read):>8}  {usd(p.cache_write):>8}  {p.as_of}")
        if p.long_prompt is not None:
            above, lp = p.long_prompt
            print(f"  {'':<{width}}  {usd(lp.input):>7}  {usd(lp.output):>7}  "
                  f"{usd(lp.cache_read):>8}  {usd(lp.cache_write):>8}  "
                  f"(prompts over {above:,} tokens)")
    print("default tiers (set others under \"<provider>\": {\"models\": {...}} in the config)")
    for provider, tiers in DEFAULT_TIERS.items():
        mine = section(dict(cfg), provider).get("models") or {}
        for tier, model in tiers.items():
            used = mine.get(str(tier), model) if isinstance(mine, dict) else model
            note = "" if used == model else f"  (config; default {model})"
            priced = "" if table.get(used) is not None else "  UNPRICED: --tokens only"
            print(f"  {provider:<9}  {tier!s:<6}  {used}{note}{priced}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
