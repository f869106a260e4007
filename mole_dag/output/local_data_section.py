"""The report's "Local data" section: every gated finding as a table, its Holm-corrected tests
beside it, and what was refused. Built from the crossings table only, so the report shows no more
than what left the boundary."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from mole_dag.local_data.statements import _shares, label, num, pval
from mole_dag.sanitize import one_line
from mole_dag.store import Store, q
from mole_dag.store.records import CrossingRow, LocalDatasetRow, RefusalRow

_TEST_TITLES = {
    "welch_t": "Welch t-tests",
    "mann_whitney_u": "Mann-Whitney U tests",
    "fisher_exact": "Fisher exact tests",
    "pearson_r": "correlation tests",
    "spearman_rho": "correlation tests",
}


def _cell(value: Any) -> str:
    return label(value).replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _rows_table(env: dict[str, Any]) -> list[str]:
    # Imported here: the connector brings sqlglot, and every report imports this module
    # whether or not its session has local data (issue 12).
    from mole_dag.local_data.connector import FLOOR

    keys, values = env.get("keys", []), env.get("values", [])
    body = []
    for r in env["rows"]:
        label_cells = (
            [_cell(k) for k in r["keys"]]
            if not r.get("other")
            else [f"other (unnamed, groups under {FLOOR})"] + [""] * (len(keys) - 1)
        )
        body.append([*label_cells, num(r["n"]), *(num(v) for v in r["values"])])
    out = _table([*(_cell(k) for k in keys), "rows", *(_cell(v) for v in values)], body)
    if env.get("suppressed"):
        out.append("")
        out.append(f"A remainder of groups still under {FLOOR} rows after folding was suppressed.")
    more = int(env.get("also_suppressed") or 0)
    if more:
        out.append("")
        out.append(
            f"{more} further group{'s were' if more > 1 else ' was'} suppressed so that "
            f"no figure over fewer than {FLOOR} rows can be recovered from this table "
            "and the totals the data's profile publishes."
        )
    return out


def _tests_table(env: dict[str, Any]) -> list[str]:
    tests = env.get("tests")
    if not tests:
        return []
    results = tests["results"]
    title = _TEST_TITLES.get(results[0]["test"], "tests") if results else "tests"
    out = ["", f"{tests['m']} {title}, Holm-corrected (α = {tests['alpha']}):", ""]
    labelled = bool(results) and "a" in results[0]
    header = (["a", "b"] if labelled else ["test"]) + ["statistic", "p", "p (Holm)", "effect", "n"]
    body = []
    for t in results:
        eff = t["effect"]
        first = [_cell(t["a"]), _cell(t["b"])] if labelled else [t["test"]]
        body.append(
            [
                *first,
                num(t["statistic"]),
                pval(t["p"]).lstrip("= "),
                pval(t["p_holm"]).lstrip("= ") + (" *" if t["significant"] else ""),
                f"{eff['name']} {num(eff['value'])}",
                f"{num(t['n_a'])} / {num(t['n_b'])}",
            ]
        )
    return out + _table(header, body) + ["", "\\* significant after Holm correction."]


def local_data_section(store: Store, session_id: str) -> list[str]:
    """Markdown lines, or [] when the session has no data attached."""
    ds = store.one(LocalDatasetRow, q("local_dataset_get"), {"session_id": session_id})
    if ds is None:
        return []
    from mole_dag.local_data.connector import FLOOR

    crossings = [
        c
        for c in store.many(CrossingRow, q("local_crossings_list"), {"session_id": session_id})
        if c.kind != "profile"
    ]
    refusals = store.many(RefusalRow, q("local_refusals_list"), {"session_id": session_id})
    out = ["## Local data", ""]
    out.append(
        f"`{one_line(ds.name)}`: {num(ds.row_count)} rows, {ds.columns} columns "
        f"({ds.withheld} withheld). Only aggregates over at least {FLOOR} rows left "
        f"the data; smaller groups were folded into an unnamed other group or "
        f"suppressed. `mole crossings {session_id}` lists exactly what left."
    )
    out.append("")
    for c in crossings:
        env = json.loads(c.envelope)
        req = env.get("request", {})
        cols = ", ".join(f"{k} = {_cell(v)}" for k, v in (req.get("columns") or {}).items())
        what = c.template or "statement"
        out += [f"### {what}" + (f" ({cols})" if cols else ""), ""]
        if c.sql:
            out += [f"`{one_line(c.sql)}`", ""]
        out += _rows_table(env)
        if c.template == "proportion_by_group":
            shares = _shares(env)
            if shares:
                out += [
                    "",
                    f"Share of {_cell(env.get('level'))}: "
                    + ", ".join(
                        f"{_cell(g)} {100 * s:.1f}%"
                        for g, (s, _) in sorted(shares.items(), key=lambda kv: -kv[1][0])
                    ),
                ]
        out += _tests_table(env)
        out.append("")
    if refusals:
        by_reason = Counter(f"{r.stage}: {r.reason}" for r in refusals)
        out.append(
            "Refused requests: "
            + ", ".join(f"{k} ×{n}" for k, n in sorted(by_reason.items()))
            + "."
        )
        out.append("")
    return out
