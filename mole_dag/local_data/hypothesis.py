"""Hypothesis templates: the only questions a mind may ask of attached data.

A mind (a model, or the model-free chooser) sees the profile view and answers with a template
name and a column NAME per slot. Each name is looked up in the profile; the SQL is built by sqlglot
from the profile's own column object, so text a model wrote never reaches a statement. A name that
is not a column, a withheld column, or a column without the slot's role is refused.

Every rendered statement then goes through the guard like any other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from mole_dag.local_data.connector import FLOOR, TABLE, ColumnProfile, Dataset, ident
from mole_dag.local_data.gate import TestSpec
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.values import plain
from mole_dag.skills.view import BINARY, GROUP, MEASURE, HypothesisChoice, TemplateInfo

MIN_BUCKETS, MAX_BUCKETS, DEFAULT_BUCKETS = 2, 10, 5


@dataclass(frozen=True)
class Rendered:
    template: str
    columns: dict[str, str]  # slot -> profile column name
    sql: str
    tests: TestSpec | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _c(col: ColumnProfile) -> exp.Column:
    return exp.column(col.name, quoted=True)


def _not_null(*cols: ColumnProfile) -> exp.Expr:
    return exp.and_(*(exp.Not(this=exp.Is(this=_c(c), expression=exp.Null())) for c in cols))


def _sql(projections: list[exp.Expr], where: exp.Expr, group: list[exp.Expr] | None = None) -> str:
    q = exp.select(*projections).from_(TABLE).where(where)
    if group:
        q = q.group_by(*group)
    return q.sql(dialect="duckdb")


def _count_by_group(ds: Dataset, c: dict[str, ColumnProfile], _: int | None) -> Rendered:
    g = c["group"]
    return Rendered("count_by_group", {"group": g.name}, _sql([_c(g)], _not_null(g), [_c(g)]))


def _mean_by_group(ds: Dataset, c: dict[str, ColumnProfile], _: int | None) -> Rendered:
    g, v = c["group"], c["value"]
    sql = _sql(
        [
            _c(g),
            exp.alias_(exp.Avg(this=_c(v)), "mean"),
            exp.alias_(exp.StddevSamp(this=_c(v)), "sd"),
        ],
        _not_null(g, v),
        [_c(g)],
    )
    return Rendered(
        "mean_by_group", {"group": g.name, "value": v.name}, sql, TestSpec("welch", (v.name,))
    )


def _median_by_group(ds: Dataset, c: dict[str, ColumnProfile], _: int | None) -> Rendered:
    g, v = c["group"], c["value"]
    sql = _sql([_c(g), exp.alias_(exp.Median(this=_c(v)), "median")], _not_null(g, v), [_c(g)])
    return Rendered(
        "median_by_group",
        {"group": g.name, "value": v.name},
        sql,
        TestSpec("mann_whitney", (v.name,)),
    )


def _proportion_by_group(ds: Dataset, c: dict[str, ColumnProfile], _: int | None) -> Rendered:
    # Counted per (group, outcome) cell, so the floor applies to each cell: a share computed
    # from a group of 500 with one "yes" in it would say something about one row.
    g, o = c["group"], c["outcome"]
    sql = _sql([_c(g), _c(o)], _not_null(g, o), [_c(g), _c(o)])
    counted = plain(o.levels[1])
    return Rendered(
        "proportion_by_group",
        {"group": g.name, "outcome": o.name},
        sql,
        TestSpec("fisher", (o.name,), o.levels),
        {"level": counted},
    )


def _correlation(ds: Dataset, c: dict[str, ColumnProfile], _: int | None) -> Rendered:
    x, y = c["x"], c["y"]
    sql = _sql([exp.alias_(exp.Corr(this=_c(x), expression=_c(y)), "pearson_r")], _not_null(x, y))
    return Rendered(
        "correlation", {"x": x.name, "y": y.name}, sql, TestSpec("correlation", (x.name, y.name))
    )


def _nice(x: float) -> float:
    return float(f"{x:.2g}")


def _fmt(x: float) -> str:
    return f"{x:g}"


def _distribution(ds: Dataset, c: dict[str, ColumnProfile], buckets: int | None) -> Rendered:
    """Buckets at rounded quantiles, open at both ends: equal-width buckets would publish the
    minimum and maximum, which are one row's value each."""
    v = c["value"]
    k = buckets or DEFAULT_BUCKETS
    if v.non_null < k * FLOOR * 2:
        raise Refused(
            Stage.HYPOTHESIS,
            Reason.BAD_ARGUMENTS,
            f"{k} buckets need at least {k * FLOOR * 2} values; {v.name!r} has fewer",
        )
    qs = [i / k for i in range(1, k)]
    # Imported here while the package moves of issue 13 rewrite this module's imports.
    from mole_dag.store.records import scalar

    got = scalar(
        ds.con, list, f"SELECT quantile_cont({ident(v.name)}, $qs) FROM {TABLE}", {"qs": qs}
    )
    edges = sorted({_nice(float(e)) for e in (got or []) if e is not None})
    if not edges:
        raise Refused(
            Stage.HYPOTHESIS,
            Reason.WRONG_COLUMN_ROLE,
            f"{v.name!r} has too few distinct values to bucket",
        )
    width = len(str(len(edges) + 1))
    ifs = []
    lower: float | None = None
    for i, e in enumerate(edges):
        label = (
            f"{i + 1:0{width}d}: below {_fmt(e)}"
            if lower is None
            else f"{i + 1:0{width}d}: {_fmt(lower)} to below {_fmt(e)}"
        )
        ifs.append(
            exp.If(
                this=exp.LT(this=_c(v), expression=exp.Literal.number(e)),
                true=exp.Literal.string(label),
            )
        )
        lower = e
    last = exp.Literal.string(f"{len(edges) + 1:0{width}d}: {_fmt(edges[-1])} and above")
    bucket = exp.Case(ifs=ifs, default=last)
    sql = _sql([exp.alias_(bucket, "bucket")], _not_null(v), [bucket.copy()])
    return Rendered("distribution", {"value": v.name}, sql, None, {"edges": edges})


@dataclass(frozen=True)
class Template:
    info: TemplateInfo
    render: Callable[[Dataset, dict[str, ColumnProfile], int | None], Rendered]
    distinct_columns: bool = True


TEMPLATES: dict[str, Template] = {
    t.info.name: t
    for t in [
        Template(
            TemplateInfo("count_by_group", (("group", GROUP),), "rows per level of a category"),
            _count_by_group,
        ),
        Template(
            TemplateInfo(
                "mean_by_group",
                (("group", GROUP), ("value", MEASURE)),
                "mean and SD of a number per level of a category; pairwise "
                "Welch t-tests, Holm-corrected",
            ),
            _mean_by_group,
        ),
        Template(
            TemplateInfo(
                "median_by_group",
                (("group", GROUP), ("value", MEASURE)),
                "median of a number per level of a category; pairwise "
                "Mann-Whitney U tests, Holm-corrected",
            ),
            _median_by_group,
        ),
        Template(
            TemplateInfo(
                "proportion_by_group",
                (("group", GROUP), ("outcome", BINARY)),
                "share of one outcome level per level of a category; pairwise "
                "Fisher exact tests, Holm-corrected",
            ),
            _proportion_by_group,
        ),
        Template(
            TemplateInfo(
                "correlation",
                (("x", MEASURE), ("y", MEASURE)),
                "Pearson and Spearman correlation of two numbers, Holm-corrected",
            ),
            _correlation,
        ),
        Template(
            TemplateInfo(
                "distribution",
                (("value", MEASURE),),
                f"rows per quantile bucket of a number ({MIN_BUCKETS}-"
                f"{MAX_BUCKETS} buckets, open-ended at both extremes)",
            ),
            _distribution,
        ),
    ]
}
CATALOGUE: tuple[TemplateInfo, ...] = tuple(t.info for t in TEMPLATES.values())


def _show(text: object) -> str:
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= 60 else flat[:59] + "…")


def resolve(
    choice: HypothesisChoice, dataset: Dataset
) -> tuple[Template, dict[str, ColumnProfile]]:
    """Look the choice up: the template by name, every column by name in the profile."""
    template = TEMPLATES.get(choice.template) if isinstance(choice.template, str) else None
    if template is None:
        raise Refused(
            Stage.HYPOTHESIS,
            Reason.UNKNOWN_TEMPLATE,
            f"no template {_show(choice.template)}; the templates are {', '.join(TEMPLATES)}",
        )
    slots = dict(template.info.slots)
    given = choice.columns if isinstance(choice.columns, dict) else {}
    if set(given) != set(slots):
        raise Refused(
            Stage.HYPOTHESIS,
            Reason.BAD_ARGUMENTS,
            f"{template.info.name} takes columns for {sorted(slots)}, got "
            f"{sorted(_show(k) for k in given)}",
        )
    if choice.buckets is not None and (
        template.info.name != "distribution"
        or isinstance(choice.buckets, bool)
        or not isinstance(choice.buckets, int)
        or not MIN_BUCKETS <= choice.buckets <= MAX_BUCKETS
    ):
        raise Refused(
            Stage.HYPOTHESIS,
            Reason.BAD_ARGUMENTS,
            f"buckets must be a whole number from {MIN_BUCKETS} to {MAX_BUCKETS}, "
            "and only for distribution",
        )
    resolved: dict[str, ColumnProfile] = {}
    for slot, role in template.info.slots:
        name = given[slot]
        col = dataset.column(name) if isinstance(name, str) else None
        if col is None:
            raise Refused(
                Stage.HYPOTHESIS,
                Reason.UNKNOWN_COLUMN,
                f"no column {_show(name)} in {dataset.name}",
            )
        if col.withheld:
            raise Refused(
                Stage.HYPOTHESIS,
                Reason.WITHHELD_COLUMN,
                f"column {col.name!r} is withheld ({col.withheld})",
            )
        if role not in col.roles:
            raise Refused(
                Stage.HYPOTHESIS,
                Reason.WRONG_COLUMN_ROLE,
                f"column {col.name!r} cannot be the {slot} of {template.info.name}: "
                f"it is not a {role} column (roles: {', '.join(col.roles) or 'none'})",
            )
        resolved[slot] = col
    if template.distinct_columns and len({c.name for c in resolved.values()}) != len(resolved):
        raise Refused(
            Stage.HYPOTHESIS,
            Reason.BAD_ARGUMENTS,
            f"{template.info.name} needs different columns in its slots",
        )
    return template, resolved


def render(choice: HypothesisChoice, dataset: Dataset) -> Rendered:
    template, cols = resolve(choice, dataset)
    return template.render(dataset, cols, choice.buckets)
