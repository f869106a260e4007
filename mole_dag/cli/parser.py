"""The `mole` command line's arguments (argparse): every command, its flags and their help."""

from __future__ import annotations

import argparse
from typing import NoReturn

from mole_dag.cli.common import EXIT_USAGE
from mole_dag.core import MAX_QUESTION_CHARS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mole-dag")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _budget(p: argparse.ArgumentParser, *, per_run: bool = False) -> None:
    """--usd and --tokens, exactly one required (mole_dag.launch.check_budget): a session's
    ceiling (`research`, `rerun`), or each run's (`watch`)."""
    if per_run:
        group = p.add_argument_group("budget of each run (exactly one is required)")
        group.add_argument("--usd", metavar="AMOUNT", help="ceiling per run in US dollars")
        group.add_argument("--tokens", metavar="N", help="ceiling per run in model tokens")
        return
    group = p.add_argument_group("budget (exactly one is required; there is no default)")
    group.add_argument("--usd", metavar="AMOUNT", help="ceiling in US dollars, e.g. 0.50")
    group.add_argument("--tokens", metavar="N", help="ceiling in model tokens")


def _output(p: argparse.ArgumentParser) -> None:
    """What a command that drives a session prints at the end (`research`, `resume`, `rerun`)."""
    p.add_argument("--quiet", action="store_true", help="print only the report path and session")
    p.add_argument(
        "--no-report-print",
        action="store_true",
        help="do not print the report itself, only where it was written",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mole", description="Deep research with a budget the database enforces.")
    p.add_argument("--version", action="version", version=f"mole {_version()}")
    p.add_argument(
        "--db",
        help="the store: a DuckDB file or a postgresql:// URL (default: $MOLE_DB, else "
        "mole.duckdb in the data folder: .mole/ in a checkout, ~/.local/share/mole installed)",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("research", help="research a question within a hard budget")
    r.add_argument(
        "question",
        help=f"the question, in quotes: at most {MAX_QUESTION_CHARS:,} characters (a guess at "
        "what a planner can use); terminal control sequences in it are removed",
    )
    _budget(r)
    r.add_argument(
        "--corpus",
        metavar="DIR",
        help="folder of .pdf/.html/.md/.txt documents for the local search provider "
        "(default: the bundled demo corpus)",
    )
    r.add_argument(
        "--data",
        metavar="PATH",
        help="a CSV file or a folder of CSVs to analyse through the aggregation "
        "gate (only aggregates over at least 5 rows leave it)",
    )
    # Model providers.
    r.add_argument(
        "--provider",
        default=None,
        help="anthropic, openai (any OpenAI-compatible endpoint), cassette (replay a "
        "recording) or extractive (no model); default: MOLE_PROVIDER, else "
        '"provider" in the config file, else extractive',
    )
    r.add_argument(
        "--cassette",
        metavar="FILE",
        help="the recording --provider cassette replays (or MOLE_CASSETTE)",
    )
    r.add_argument(
        "--record", metavar="FILE", help="record this session's model calls to a new cassette FILE"
    )
    r.add_argument(
        "--session-id",
        metavar="ID",
        help="name the session (default: a fresh id); a cassette replays under the "
        "id it was recorded with",
    )
    # Search providers and fetching; each also settable in the config file.
    r.add_argument(
        "--search",
        metavar="NAME",
        action="append",
        help="search provider, repeatable: local, searxng, brave, tavily, arxiv, "
        "openalex, crossref, pubmed (default: config `search`, else local)",
    )
    r.add_argument("--searxng-url", metavar="URL", help="the SearXNG instance to query")
    r.add_argument(
        "--allow-host",
        metavar="HOST",
        action="append",
        help="let the fetcher reach this host although it is private or local "
        "(your own service); repeatable",
    )
    r.add_argument(
        "--parallel",
        metavar="N",
        help="model calls in flight at once within a stage (default: MOLE_PARALLEL, else "
        '"parallel" in the config file, else 8; 1 makes them one at a time); a provider that '
        "answers 429 or 529 lowers it for the session",
    )
    _output(r)

    rs = sub.add_parser("resume", help="continue an interrupted session within its budget")
    rs.add_argument("session")
    rs.add_argument(
        "--parallel",
        metavar="N",
        help="model calls in flight at once within a stage (as for research)",
    )
    _output(rs)

    rr = sub.add_parser(
        "rerun",
        help="research a finished session's question again, linked to it: unchanged sources "
        "are carried, and the report opens with what changed",
    )
    rr.add_argument("session")
    _budget(rr)
    rr.add_argument("--parallel", metavar="N", help="model calls in flight at once (as research)")
    _output(rr)
    df = sub.add_parser("diff", help="what changed between two sessions of one question")
    df.add_argument("old")
    df.add_argument("new")
    df.add_argument("--json", action="store_true", help="machine-readable output")

    w = sub.add_parser(
        "watch",
        help="re-run a finished session's question on a schedule (the Dagster schedule "
        "watched_questions), each run within its own budget; or list / remove watches",
    )
    w.add_argument("session", nargs="?", help="the session whose question to watch")
    w.add_argument(
        "--every", metavar="WHEN", help="daily, weekly, or a cron string (UTC), e.g. '0 6 * * 1'"
    )
    _budget(w, per_run=True)
    w.add_argument(
        "--notify",
        metavar="CMD",
        help="a command run with the diff's JSON on standard input when something material "
        "changed, and only then (split like a shell command, run without a shell)",
    )
    w.add_argument("--list", action="store_true", help="the watched questions, last change")
    w.add_argument("--remove", metavar="WATCH", help="stop watching (its spend stays queryable)")

    m = sub.add_parser(
        "materialize",
        help="materialise a session's Dagster assets (as `dagster asset "
        "materialize`), refusing an unknown session in one line",
    )
    m.add_argument("session")
    m.add_argument(
        "--select",
        default="group:research",
        help="Dagster asset selection, comma-separated (default: group:research, "
        "one round and a report)",
    )

    sub.add_parser("sessions", help="list sessions")
    s = sub.add_parser("show", help="status, spend, counts and report of a session")
    s.add_argument("session")
    s.add_argument(
        "--html",
        nargs="?",
        const="",
        metavar="PATH",
        help="also write the report as HTML (default: next to the Markdown file)",
    )
    t = sub.add_parser("trace", help="clusters, edges, scores, follow-ups and grounding")
    t.add_argument("session")
    e = sub.add_parser("eval", help="the scorecard of a session")
    e.add_argument("session")
    e.add_argument(
        "--pairs", metavar="FILE", help="labelled claim pairs (JSON) for contradiction precision"
    )
    e.add_argument("--json", action="store_true", help="machine-readable output")
    x = sub.add_parser(
        "crossings", help="exactly what left a session's local data, and what was refused"
    )
    x.add_argument("session")
    x.add_argument(
        "--verify",
        action="store_true",
        help="re-run every crossing against the data and compare envelope hashes",
    )
    sub.add_parser(
        "models",
        help="the priced models (USD per million tokens, as of when) and the default tiers",
    )
    sq = sub.add_parser(
        "sql",
        help="query the store read-only (tables and views): one statement, a script on "
        "stdin, or a prompt",
    )
    sq.add_argument("query", nargs="?", help='one statement, e.g. "FROM spend_by_role_stage"')
    sq.add_argument("--csv", action="store_true", help="print CSV (every row) instead of a table")
    return p
