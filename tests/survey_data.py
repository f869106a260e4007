"""A deterministic, real-size survey CSV for the local-data tests and benchmark.

Tens of thousands of rows with planted effects (income by region and plan, renewal by plan), a
free-text column, identifiers (id, email, phone), a date, and small groups: three regions with
1, 2 and 1 rows (4 together: still under the floor, so their "other" is suppressed) and two plans
with 3 and 4 rows (7 together: folded into "other"). Every row-level value a leak could carry has
a marker the tests search for."""

from __future__ import annotations

import csv
import datetime as dt
import random
from pathlib import Path

ROWS = 40_000
BIG_REGIONS = {
    "north": 0.22,
    "south": 0.2,
    "east": 0.18,
    "west": 0.16,
    "central": 0.14,
    "coast": 0.10,
}
REGION_EFFECT = {
    "north": 6000.0,
    "south": -4000.0,
    "east": 2500.0,
    "west": 0.0,
    "central": 1000.0,
    "coast": -1500.0,
}
RARE_REGIONS = ["Isle of Rum", "Far Skerry", "Far Skerry", "Lone Atoll"]
BIG_PLANS = {"basic": 0.5, "plus": 0.32, "pro": 0.18}
PLAN_EFFECT = {"basic": 0.0, "plus": 5000.0, "pro": 12000.0, "legacy": 0.0, "trial": 0.0}
RENEW_RATE = {"basic": 0.55, "plus": 0.68, "pro": 0.81, "legacy": 0.5, "trial": 0.5}
RARE_PLANS = ["legacy"] * 3 + ["trial"] * 4
# The one income a single-row leak would reveal (the first rare region's row).
RARE_INCOME = 123456.78
_WORDS = [
    "service",
    "slow",
    "support",
    "friendly",
    "billing",
    "confusing",
    "app",
    "crashes",
    "sometimes",
    "great",
    "value",
    "would",
    "recommend",
    "price",
    "too",
    "high",
    "onboarding",
    "smooth",
    "delivery",
    "late",
    "quality",
    "fine",
]


def note_marker(i: int) -> str:
    return f"NOTE{i:05d}X"


def email_of(i: int) -> str:
    return f"respondent{i:05d}@mail-example.org"


def phone_of(i: int) -> str:
    return f"+44 20 7946 {i:05d}"


def write_survey(path: Path, rows: int = ROWS, seed: int = 7) -> Path:
    rng = random.Random(seed)
    regions = rng.choices(
        list(BIG_REGIONS),
        weights=list(BIG_REGIONS.values()),
        k=rows - len(RARE_REGIONS) - len(RARE_PLANS),
    )
    plans = rng.choices(list(BIG_PLANS), weights=list(BIG_PLANS.values()), k=len(regions))
    # Rare regions get a big plan, rare plans a big region, so each small group is small in
    # exactly one column.
    regions += RARE_REGIONS + rng.choices(list(BIG_REGIONS), k=len(RARE_PLANS))
    plans += rng.choices(list(BIG_PLANS), k=len(RARE_REGIONS)) + RARE_PLANS
    order = list(range(rows))
    rng.shuffle(order)
    start = dt.date(2021, 1, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "respondent_id",
                "email",
                "phone",
                "region",
                "plan",
                "age",
                "income",
                "satisfaction",
                "renewed",
                "signup_date",
                "notes",
            ]
        )
        for n, j in enumerate(order):
            i = n + 1
            region, plan = regions[j], plans[j]
            age = rng.randint(18, 90)
            income = (
                42000
                + REGION_EFFECT.get(region, 0.0)
                + PLAN_EFFECT[plan]
                + 150 * (age - 40)
                + rng.gauss(0, 9000)
            )
            if region == RARE_REGIONS[0]:
                income = RARE_INCOME
            satisfaction = min(5, max(1, round(rng.gauss(3.4 + (plan == "pro") * 0.5, 1.0))))
            renewed = "yes" if rng.random() < RENEW_RATE[plan] else "no"
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14)))
            note = f"{note_marker(i)} {words}, said {region} customer"
            w.writerow(
                [
                    i,
                    email_of(i),
                    phone_of(i),
                    region,
                    plan,
                    age,
                    f"{income:.2f}",
                    satisfaction,
                    renewed,
                    (start + dt.timedelta(days=j % 900)).isoformat(),
                    note,
                ]
            )
    return path


def row_level_markers(rows: int = ROWS) -> list[str]:
    """Strings that must never appear in anything that leaves: a sample of notes, emails and
    phones, every rare label, and the rare row's income."""
    sample = list(range(1, rows + 1, max(1, rows // 200)))
    out = [note_marker(i) for i in sample] + [email_of(i) for i in sample]
    out += [phone_of(i) for i in sample]
    out += sorted(set(RARE_REGIONS)) + ["legacy", "trial", f"{RARE_INCOME}", "123456.8"]
    return out


# Fixtures, imported by the test modules that need them (kept out of the shared conftest).
try:
    import pytest
except ImportError:  # the benchmark imports this module without pytest installed
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def survey_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_survey(tmp_path_factory.mktemp("survey") / "survey.csv")


def no_fold(guarded, result):  # noqa: ANN001, ANN201
    """A broken gate for falsification tests: every group named, whatever its size (stands in
    for gate.fold_rows)."""
    nk, nv = len(guarded.keys), len(guarded.values)
    rows = [
        {
            "keys": [r[f"k{i}"] for i in range(nk)],
            "n": int(r["__mole_n"]),
            "values": [r[f"v{i}"] for i in range(nv)],
        }
        for r in result
    ]
    return rows, False, min(r["n"] for r in rows)
