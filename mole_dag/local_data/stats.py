"""Pairwise tests between groups, with Holm's step-down correction for the family.

The tests run inside the boundary, on row values that never leave: only the statistic, the raw
and corrected p-values and an effect size do. scipy does the tests; Holm is a few lines here
because scipy ships only false-discovery-rate control (Benjamini-Hochberg), which answers a
different question."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy.stats (~1 s at import) load when a test runs: importing the pipeline must not
# pay for them when the session has no local data (issue 12).


def _scipy_stats():  # noqa: ANN202 - the scipy.stats module
    from scipy import stats

    return stats


ALPHA = 0.05
# Significant figures kept for figures that leave. Enough for a reader; few enough that
# re-running the query reproduces the envelope byte for byte despite floating-point summation
# order.
SIG_FIGS = 6
P_SIG_FIGS = 4


def sig(x: float | None, figures: int = SIG_FIGS) -> float | None:
    if x is None:
        return None
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return None
    return float(f"{x:.{figures}g}")


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order: sort ascending, multiply the i-th smallest
    (0-based) by m - i, carry the running maximum forward, cap at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class PairTest:
    a: object
    b: object
    test: str
    statistic: float
    p: float
    n_a: int
    n_b: int
    effect_name: str
    effect: float | None


def welch(label_a: object, a: np.ndarray, label_b: object, b: np.ndarray) -> PairTest:
    import numpy as np

    """Welch's t-test (unequal variances); effect: Cohen's d with the pooled SD."""
    res = _scipy_stats().ttest_ind(a, b, equal_var=False)
    na, nb = len(a), len(b)
    pooled = math.sqrt(
        ((na - 1) * np.var(a, ddof=1) + (nb - 1) * np.var(b, ddof=1)) / (na + nb - 2)
    )
    d = (float(np.mean(a)) - float(np.mean(b))) / pooled if pooled > 0 else None
    return PairTest(
        label_a, label_b, "welch_t", float(res.statistic), float(res.pvalue), na, nb, "cohens_d", d
    )


def mann_whitney(label_a: object, a: np.ndarray, label_b: object, b: np.ndarray) -> PairTest:
    """Mann-Whitney U (two-sided); effect: rank-biserial correlation, positive when `a` tends
    to be larger."""
    res = _scipy_stats().mannwhitneyu(a, b, alternative="two-sided")
    na, nb = len(a), len(b)
    r = 2.0 * float(res.statistic) / (na * nb) - 1.0
    return PairTest(
        label_a,
        label_b,
        "mann_whitney_u",
        float(res.statistic),
        float(res.pvalue),
        na,
        nb,
        "rank_biserial",
        r,
    )


def fisher(
    label_a: object, a_yes: int, a_no: int, label_b: object, b_yes: int, b_no: int
) -> PairTest:
    """Fisher's exact test on the 2x2 table; effect: difference in proportions (a - b)."""
    res = _scipy_stats().fisher_exact([[a_yes, a_no], [b_yes, b_no]])
    na, nb = a_yes + a_no, b_yes + b_no
    diff = a_yes / na - b_yes / nb
    odds = float(res.statistic)
    return PairTest(
        label_a,
        label_b,
        "fisher_exact",
        odds if math.isfinite(odds) else -1.0,
        float(res.pvalue),
        na,
        nb,
        "risk_difference",
        diff,
    )


def correlations(x: np.ndarray, y: np.ndarray) -> list[PairTest]:
    """Pearson's r and Spearman's rho for one pair of columns; the effect is the coefficient."""
    n = len(x)
    out = []
    pr = _scipy_stats().pearsonr(x, y)
    out.append(
        PairTest(
            "x",
            "y",
            "pearson_r",
            float(pr.statistic),
            float(pr.pvalue),
            n,
            n,
            "r",
            float(pr.statistic),
        )
    )
    sr = _scipy_stats().spearmanr(x, y)
    out.append(
        PairTest(
            "x",
            "y",
            "spearman_rho",
            float(sr.statistic),
            float(sr.pvalue),
            n,
            n,
            "rho",
            float(sr.statistic),
        )
    )
    return out


def family(tests: list[PairTest], *, labelled: bool = True) -> dict[str, object]:
    """The tests as they leave: raw and Holm-corrected p-values side by side."""
    adjusted = holm([t.p for t in tests])
    results = []
    for t, p_holm in zip(tests, adjusted, strict=True):
        row: dict[str, object] = {
            "test": t.test,
            "statistic": sig(t.statistic),
            "p": sig(t.p, P_SIG_FIGS),
            "p_holm": sig(p_holm, P_SIG_FIGS),
            "n_a": t.n_a,
            "n_b": t.n_b,
            "effect": {"name": t.effect_name, "value": sig(t.effect, 4)},
            "significant": bool(p_holm < ALPHA),
        }
        if labelled:
            row = {"a": t.a, "b": t.b, **row}
        results.append(row)
    return {"correction": "holm", "alpha": ALPHA, "m": len(tests), "results": results}
