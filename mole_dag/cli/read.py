"""The commands that only read the store: `sessions`, `show`, `trace`, `eval`, `diff`, `crossings`
and `sql`, and `models` (the price table and tiers, from the config). Each opens the store
read-only, so a typo in --db never creates a store and a damaged one is never written to."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mole_dag.cli.common import EXIT_FAILED, EXIT_USAGE, CliError, fmt, open_store
from mole_dag.diskfull import (
    write_text_atomic,
)
from mole_dag.paths import default_store_path
from mole_dag.sanitize import escape_controls


def cmd_sessions(args: argparse.Namespace) -> int:
    from mole_dag.store import q

    store = open_store(read_only=True)
    try:
        rows = store.rows(q("sessions_list"))
    finally:
        store.close()
    if not rows:
        print('no sessions yet; start one with `mole research "question" --usd 0.50`')
        return 0
    for r in rows:
        # spent + overrun: what the session cost, against its total. The question as stored,
        # its controls shown as escapes (\\x1b, \\u202e), not obeyed.
        cost = int(r["spent"]) + int(r["overrun"])
        print(
            escape_controls(
                f"{r['id']}  {r['status']:<11}  {fmt(cost, r['unit']):>16} of "
                f"{fmt(int(r['total']), r['unit']):<16}  {int(r['claims']):>4} claims  "
                f"{'[maintenance] ' if r['kind'] == 'maintenance' else ''}{r['question'][:60]}"
            )
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from mole_dag.budget import Ledger, LedgerError
    from mole_dag.output.unread import unread_files
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    store = open_store(read_only=True)
    try:
        ledger = Ledger(store)
        try:
            bal = ledger.balance(args.session)
        except LedgerError:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them") from None
        sess = store.one(SessionRow, q("session_get"), {"session_id": args.session})
        assert sess is not None  # balance() above found it
        counts = store.row(q("session_counts"), {"session_id": args.session}) or {}
        by_role = ledger.spend_by_role(args.session)
        check = ledger.verify(args.session)
        rep = store.row(q("report_latest"), {"session_id": args.session})
        stages = ledger.spend_by_stage(args.session)
        dead = store.named("digest_dead_ends", {"session_id": args.session})
        unread = unread_files(store, args.session, sess.corpus)
        by_model = store.named("spend_by_model", {"session_id": args.session})
        discarded = store.named("discarded_by_cause", {"session_id": args.session})
        throttled = store.row(q("session_throttling"), {"session_id": args.session})
    finally:
        store.close()
    unit = str(bal.unit)
    print(f"session {args.session}")
    # Whitespace collapsed; controls shown as escapes rather than obeyed or silently dropped.
    print(f"question  {escape_controls(' '.join(sess.question.split()))}")
    print(f"status    {bal.status} after {sess.rounds} round(s), provider {sess.provider}")
    # spent includes the overrun: it is what the session cost, held against the total.
    print(
        f"budget    {fmt(bal.total, unit)}: spent {fmt(bal.charged, unit)}, held "
        f"{fmt(bal.held, unit)}, escrow {fmt(bal.escrow, unit)}"
        + (
            f" (OVERRUN {fmt(bal.overrun, unit)} included: a provider used more than its "
            "calls were allowed)"
            if bal.overrun
            else ""
        )
    )
    if sess.stop_reason:
        print(f"stopped   {escape_controls(' '.join(sess.stop_reason.split()))}")
    for r in by_role:
        print(f"  {r['role']:<9} {fmt(int(r['spent']), unit):>16} over {r['calls']} calls")
    for r in by_model:
        print(
            f"  {r['model']:<24} {fmt(int(r['spent']), unit):>16} over {r['calls']} calls: "
            f"{r['input_tokens']} in, {r['output_tokens']} out, {r['cache_read_tokens']} cache "
            f"read, {r['cache_write_tokens']} cache write"
            + (f", OVERRUN {fmt(int(r['overrun']), unit)}" if r["overrun"] else "")
        )
    print(f"ledger    {check.explain()}")
    print("counts    " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(
        "by stage  "
        + "; ".join(
            f"{r['stage']}/{r['role']} {fmt(int(r['spent']), unit)} x{r['calls']}" for r in stages
        )
    )
    if throttled:
        print(f"throttled {_throttling(throttled)}")
    if dead:
        print("dead ends " + ", ".join(f"{r['cause']} {r['n']}" for r in dead))
    for u in unread:
        # A file that could not be read (issues 19, 33): which (by its path in the corpus
        # folder), and what was wrong with it, each said once.
        print(f"  {u.cause:<18} {escape_controls(u.shown)}: {escape_controls(u.reason)}")
    internal = sum(int(r["n"]) for r in dead if r["cause"] == "internal_error")
    if internal:
        # Apart from the causes above: these are ours to fix, not the outside world failing.
        print(
            f"internal errors {internal} (bugs in mole, not fetch failures; the tracebacks "
            "are in the run's log)"
        )
    causes = {
        "quote_not_found": "quote not found",
        "quote_too_short": "quote too short",
        "empty": "no quote",
        "not_a_claim": "not a claim (heading, menu, caption)",
    }
    print(
        "discarded "
        + (", ".join(f"{causes.get(r['cause'], r['cause'])} {r['n']}" for r in discarded) or "none")
        + " (by the quote check)"
    )
    if rep:
        print(f"report    {rep['path'] or '(in the store only)'}")
        # Whether the findings answer the question: decided when the report was written and
        # stored with it (NULL for a report written before the decision was recorded).
        decided = rep.get("answered")
        basis = escape_controls(" ".join(str(rep.get("answer_basis") or "").split()))
        if decided is None:
            print("answer    not recorded (the report predates the answered-or-not decision)")
        else:
            print(f"answer    {'answered' if decided else 'NOT ANSWERED'}: {basis}")
        if args.html is not None:
            print(f"html      {_write_html(rep, args.html, args.session)}")
        print()
        print(rep["markdown"])
    else:
        print("report    not written yet")
    return 0


def _throttling(row: dict[str, Any]) -> str:
    """One line: what the provider's refusals did to a session's concurrent calls."""
    said = [
        f"{int(row[k])} x HTTP {status} ({what})"
        for k, status, what in (
            ("rate_limited", 429, "rate limited"),
            ("overloaded", 529, "overloaded"),
        )
        if row[k]
    ]
    return (
        f"{', '.join(said)} in {row['labels']} from {row['first_at']:%Y-%m-%d %H:%M:%S} UTC: "
        f"concurrency lowered to {row['lowest']} of {row['parallel']}, below it for "
        f"{float(row['throttled_s']):.1f}s in all"
    )


def _write_html(rep: dict[str, Any], target: str, sid: str) -> Path:
    from mole_dag.output.html import render_html
    from mole_dag.paths import reports_dir

    path = (
        Path(target).expanduser()
        if target
        else (
            Path(rep["path"]).with_suffix(".html") if rep["path"] else reports_dir() / f"{sid}.html"
        )
    )
    try:
        # Whole or not at all; a full disk is DiskFull (one line from main), not caught here.
        write_text_atomic(path, render_html(rep["markdown"], title=f"mole report {sid}"))
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    return path


def cmd_trace(args: argparse.Namespace) -> int:
    from mole_dag.output.trace import render_trace
    from mole_dag.store import q

    store = open_store(read_only=True)
    try:
        if store.row(q("session_get"), {"session_id": args.session}) is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        print(escape_controls(render_trace(store, args.session)), end="")
    finally:
        store.close()
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from mole_dag.evals.scorecard import LabelsError, as_json, as_text, scorecard
    from mole_dag.store import q

    pairs = Path(args.pairs).expanduser() if args.pairs else None
    store = open_store(read_only=True)
    try:
        if store.row(q("session_get"), {"session_id": args.session}) is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        try:
            metrics = scorecard(store, args.session, pairs)
        except LabelsError as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    print(
        as_json(metrics, args.session) if args.json else as_text(metrics, args.session),
        end="" if not args.json else "\n",
    )
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """What changed between two sessions of one question; reads only."""
    import json

    from mole_dag.output.changes import DiffRefused, as_json, diff_sessions, render_section

    store = open_store(read_only=True)
    try:
        try:
            diff = diff_sessions(store, args.old, args.new)
        except DiffRefused as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    if args.json:
        print(json.dumps(as_json(diff), ensure_ascii=False, indent=2))
    else:
        print(escape_controls("\n".join(render_section(diff)).rstrip()))
    return 0


def cmd_crossings(args: argparse.Namespace) -> int:
    from mole_dag.local_data.crossings import format_listing, listing
    from mole_dag.local_data.findings import reverify
    from mole_dag.sanitize import strip_controls
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    store = open_store(read_only=True)
    try:
        sess = store.one(SessionRow, q("session_get"), {"session_id": args.session})
        if sess is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        got = listing(store, args.session)
        checks = [(c.id, *reverify(store, c.id)) for c in got.crossings] if args.verify else []
    finally:
        store.close()
    if not sess.data:
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
    print(
        f"priced models, USD per million tokens (shipped table checked {checked()}; "
        "'config' = from your config file)"
    )
    width = max(len(m) for m in table.prices)
    print(
        f"  {'model':<{width}}  {'input':>7}  {'output':>7}  {'cache rd':>8}  "
        f"{'cache wr':>8}  as of"
    )
    for model in sorted(table.prices):
        p = table.prices[model]
        print(
            f"  {model:<{width}}  {usd(p.input):>7}  {usd(p.output):>7}  "
            f"{usd(p.cache_read):>8}  {usd(p.cache_write):>8}  {p.as_of}"
        )
        if p.long_prompt is not None:
            above, lp = p.long_prompt
            print(
                f"  {'':<{width}}  {usd(lp.input):>7}  {usd(lp.output):>7}  "
                f"{usd(lp.cache_read):>8}  {usd(lp.cache_write):>8}  "
                f"(prompts over {above:,} tokens)"
            )
    print('default tiers (set others under "<provider>": {"models": {...}} in the config)')
    for provider, tiers in DEFAULT_TIERS.items():
        mine = section(dict(cfg), provider).get("models") or {}
        for tier, model in tiers.items():
            used = mine.get(str(tier), model) if isinstance(mine, dict) else model
            note = "" if used == model else f"  (config; default {model})"
            priced = "" if table.get(used) is not None else "  UNPRICED: --tokens only"
            print(f"  {provider:<9}  {tier!s:<6}  {used}{note}{priced}")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    """Each statement opens the store read-only and lets it go (mole_dag/store/console.py says
    why this and not a database shell). A failed statement is one line; at the prompt the next
    one is read, otherwise the exit status is 2."""
    from mole_dag.store.console import QueryError, as_csv, as_table, run, statements, where

    target = default_store_path()

    def one(sql: str) -> bool:
        try:
            got = run(target, sql, on_wait=lambda m: print(f"mole: {m}", file=sys.stderr))
        except QueryError as exc:
            print(f"mole sql: {escape_controls(str(exc))}", file=sys.stderr)
            return False
        print(escape_controls(as_csv(got) if args.csv else as_table(got)))
        return True

    if args.query is not None:
        return 0 if one(args.query) else EXIT_USAGE
    if not sys.stdin.isatty():  # a script: `mole sql < queries.sql`
        ok = True
        for stmt in statements(iter(sys.stdin)):
            ok = one(stmt) and ok
        return 0 if ok else EXIT_USAGE
    print(
        f"mole sql on {where(target)}, read-only; end a statement with ';', Ctrl-D to leave",
        file=sys.stderr,
    )

    def prompt() -> Any:
        while True:
            try:
                yield input("mole> ")
            except EOFError:
                print(file=sys.stderr)
                return

    for stmt in statements(prompt()):
        one(stmt)
    return 0
