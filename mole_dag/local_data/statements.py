"""Sentences from envelopes: what a local finding says, in words a reader and the verifier can use.

Every number and label in a sentence comes from the envelope that crossed the boundary, so a
statement never says more than what left. The sentences are the text of the finding's source and
each claim quotes one of them verbatim, so the quote check holds for local findings as it does for
pages."""

from __future__ import annotations

from typing import Any

from mole_dag.core import MAX_CLAIM_CHARS
from mole_dag.local_data.connector import FLOOR
from mole_dag.sanitize import one_line

# How many significant pairwise differences become claims of their own (the rest stay in the
# report's table). A guess, flagged as one: enough for the strongest contrasts.
MAX_PAIR_CLAIMS = 6
# Groups named in a headline before "and N more". Keeps a claim under MAX_CLAIM_CHARS.
MAX_HEADLINE_GROUPS = 8

_TEST_NAMES = {
    "welch_t": "Welch t-test",
    "mann_whitney_u": "Mann-Whitney U test",
    "fisher_exact": "Fisher exact test",
    "pearson_r": "Pearson",
    "spearman_rho": "Spearman",
}
_EFFECT_NAMES = {
    "cohens_d": "Cohen's d",
    "rank_biserial": "rank-biserial r",
    "risk_difference": "difference",
    "r": "r",
    "rho": "rho",
}


def label(value: Any) -> str:
    """A group label for prose: one line, and brackets turned into parentheses so a label such
    as "[2]" can never read as a citation."""
    if value is None:
        return "(missing)"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = one_line(str(value)) or "(blank)"
    return text.replace("[", "(").replace("]", ")")


def num(x: Any) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return label(x)
    if isinstance(x, int):
        return f"{x:,}"
    x = float(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.3g}"


def pval(p: Any) -> str:
    if p is None:
        return "n/a"
    return "< 0.0001" if float(p) < 0.0001 else f"= {float(p):.2g}"


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _named(env: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in env["rows"] if not r.get("other")]


def _other(env: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in env["rows"] if r.get("other")), None)


def _tail(env: dict[str, Any]) -> str:
    parts = []
    other = _other(env)
    if other is not None:
        parts.append(
            f"{num(other['n'])} rows in groups under {FLOOR} are counted together as an "
            "unnamed other"
        )
    more = int(env.get("also_suppressed") or 0)
    if env.get("suppressed"):
        parts.append(f"a remainder under {FLOOR} rows was suppressed")
    if more:
        parts.append(
            f"{more} further group{'s were' if more > 1 else ' was'} suppressed so "
            f"that no figure over fewer than {FLOOR} rows can be recovered from other "
            "figures"
        )
    return ("; " + "; ".join(parts)) if parts else ""


def _verdicts(significant: int, m: int, test: str) -> str:
    if not m:
        return "; no two named groups could be compared"
    return f"; {significant} of {m} pairwise {test} differ at Holm-corrected p < 0.05"


def _listing(items: list[str]) -> str:
    if len(items) > MAX_HEADLINE_GROUPS:
        more = len(items) - MAX_HEADLINE_GROUPS
        items = [*items[:MAX_HEADLINE_GROUPS], f"and {more} more"]
    return ", ".join(items)


def _fit(text: str) -> str:
    return text if len(text) <= MAX_CLAIM_CHARS else text[: MAX_CLAIM_CHARS - 1] + "…"


def _value(row: dict[str, Any], env: dict[str, Any], name: str) -> Any:
    return row["values"][env["values"].index(name)]


def _shares(env: dict[str, Any]) -> dict[Any, tuple[float, int]]:
    """proportion_by_group: share of the counted level per group whose two cells both left."""
    level = env.get("level")
    cells: dict[Any, dict[Any, int]] = {}
    for r in _named(env):
        g, lv = r["keys"]
        cells.setdefault(g, {})[lv] = r["n"]
    out = {}
    for g, c in cells.items():
        if len(c) == 2 and level in c:
            total = sum(c.values())
            out[g] = (c[level] / total, total)
    return out


def statements(env: dict[str, Any], file: str) -> list[str]:
    """Headline first, then one sentence per significant pairwise difference."""
    req = env.get("request", {})
    template = req.get("template")
    cols = {k: label(v) for k, v in (req.get("columns") or {}).items()}
    src = f"In {label(file)}"
    lines: list[str] = []
    tests = (env.get("tests") or {}).get("results", [])
    m = (env.get("tests") or {}).get("m", 0)
    significant = sorted(
        (t for t in tests if t.get("significant")),
        key=lambda t: (t["p_holm"], -abs(t["effect"]["value"] or 0)),
    )

    if template == "count_by_group":
        total = sum(r["n"] for r in env["rows"])
        items = [
            f"{label(r['keys'][0])} {num(r['n'])} ({pct(r['n'] / total)})"
            for r in sorted(_named(env), key=lambda r: -r["n"])
        ]
        lines.append(
            f"{src}, {cols['group']} splits {num(total)} rows into groups of at least "
            f"{FLOOR}: {_listing(items)}{_tail(env)}."
        )
    elif template in {"mean_by_group", "median_by_group"}:
        stat = "mean" if template == "mean_by_group" else "median"
        rows = sorted(_named(env), key=lambda r: -(_value(r, env, stat) or 0))
        items = [
            f"{label(r['keys'][0])} {num(_value(r, env, stat))} (n = {num(r['n'])})" for r in rows
        ]
        test = "Welch t-tests" if stat == "mean" else "Mann-Whitney U tests"
        lines.append(
            f"{src}, the {stat} of {cols['value']} by {cols['group']} is "
            f"{_listing(items)}{_tail(env)}{_verdicts(len(significant), m, test)}."
        )
        by_label = {r["keys"][0]: r for r in rows}
        for t in significant[:MAX_PAIR_CLAIMS]:
            a, b = by_label[t["a"]], by_label[t["b"]]
            va, vb = _value(a, env, stat), _value(b, env, stat)
            hi, lo, vh, vl, nh, nl = (
                (t["a"], t["b"], va, vb, a["n"], b["n"])
                if va >= vb
                else (t["b"], t["a"], vb, va, b["n"], a["n"])
            )
            eff = t["effect"]
            size = num(abs(eff["value"])) if eff["value"] is not None else "n/a"
            lines.append(
                f"{src}, the {stat} of {cols['value']} is higher for {cols['group']} "
                f"{label(hi)} than for {label(lo)} ({num(vh)} vs {num(vl)}; "
                f"{_TEST_NAMES[t['test']]}, Holm-corrected p {pval(t['p_holm'])}, "
                f"{_EFFECT_NAMES[eff['name']]} = {size}, "
                f"n = {num(nh)} and {num(nl)})."
            )
    elif template == "proportion_by_group":
        shares = _shares(env)
        level = label(env.get("level"))
        ordered = sorted(shares.items(), key=lambda kv: -kv[1][0])
        items = [f"{label(g)} {pct(s)} (n = {num(n)})" for g, (s, n) in ordered]
        lines.append(
            f"{src}, the share of {cols['outcome']} = {level} by {cols['group']} is "
            f"{_listing(items) or 'not reportable (cells under the floor)'}"
            f"{_tail(env)}{_verdicts(len(significant), m, 'Fisher exact tests')}."
        )
        for t in significant[:MAX_PAIR_CLAIMS]:
            sa, na = shares[t["a"]]
            sb, nb = shares[t["b"]]
            hi, lo, sh, sl, nh, nl = (
                (t["a"], t["b"], sa, sb, na, nb) if sa >= sb else (t["b"], t["a"], sb, sa, nb, na)
            )
            lines.append(
                f"{src}, {cols['outcome']} = {level} is more common for {cols['group']} "
                f"{label(hi)} than for {label(lo)} ({pct(sh)} vs {pct(sl)}; Fisher exact test, "
                f"Holm-corrected p {pval(t['p_holm'])}, difference {100 * (sh - sl):.1f} "
                f"points, n = {num(nh)} and {num(nl)})."
            )
    elif template == "correlation":
        row = env["rows"][0]
        by = {t["test"]: t for t in tests}
        r = by.get("pearson_r", {}).get("statistic")
        rho = by.get("spearman_rho", {}).get("statistic")
        direction = "positively" if (r or 0) > 0 else "negatively"
        ps = sorted({pval(t["p_holm"]) for t in tests})
        lines.append(
            f"{src}, {cols['x']} and {cols['y']} are {direction} correlated (Pearson "
            f"r = {num(r)}, Spearman rho = {num(rho)}, n = {num(row['n'])}; "
            f"Holm-corrected p {' and '.join(ps) or 'n/a'})."
        )
    elif template == "distribution":
        items = [
            f"{label(str(r['keys'][0]).split(': ', 1)[-1])}: {num(r['n'])} rows"
            for r in _named(env)
        ]
        lines.append(
            f"{src}, {cols['value']} falls into quantile buckets as follows: "
            f"{'; '.join(items)}{_tail(env)}."
        )
    return [_fit(line) for line in lines]
