"""A deterministic survey CSV shaped like the 1996 American National Election Study extract
(944 respondents; popul, TVnews, selfLR, ClinLR, DoleLR, PID, age, educ, income, vote,
logpopul), for the attacks of issue 22 on the local-data gate.

Planted, so the attacks of the issue replay exactly: one respondent (the target) is the only one
with age 35, income 3 and educ 2; age 20 has 6 respondents, age 22 has 9, age 35 has 32 (the
target among them). Everything else is drawn from a seeded generator, so the file is the same on
every machine."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

ROWS = 944
COLUMNS = [
    "popul",
    "TVnews",
    "selfLR",
    "ClinLR",
    "DoleLR",
    "PID",
    "age",
    "educ",
    "income",
    "vote",
    "logpopul",
]
# The one respondent the attacks of issue 22 single out.
TARGET = {
    "popul": 4321,
    "TVnews": 6,
    "selfLR": 2,
    "ClinLR": 6,
    "DoleLR": 3,
    "PID": 5,
    "age": 35,
    "educ": 2,
    "income": 3,
    "vote": 1,
}
TARGET_WHERE = "(age = 35 AND income = 3 AND educ = 2)"
FIXED_AGES = {20: 6, 22: 9, 35: 32}


def _respondent(rng: random.Random, age: int) -> dict[str, Any]:
    while True:
        educ = rng.choices(range(1, 8), weights=[4, 10, 25, 20, 10, 20, 11])[0]
        income = min(24, max(1, int(rng.gauss(14 + educ, 5))))
        if not (age == 35 and income == 3 and educ == 2):
            break
    pid = rng.randint(0, 6)
    self_lr = min(7, max(1, round(rng.gauss(2 + pid * 0.6, 1.2))))
    return {
        "popul": rng.choice([0, 1, 3, 12, 40, 190, 800, 2700, 7300]) + rng.randint(0, 9),
        "TVnews": rng.randint(0, 7),
        "selfLR": self_lr,
        "ClinLR": min(7, max(1, round(rng.gauss(3, 1.3)))),
        "DoleLR": min(7, max(1, round(rng.gauss(5.5, 1.1)))),
        "PID": pid,
        "age": age,
        "educ": educ,
        "income": income,
        "vote": int(pid + rng.random() * 3 > 4),
    }


def anes_rows(seed: int = 96) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ages: list[int] = []
    for age, n in FIXED_AGES.items():
        ages += [age] * (n - (1 if age == 35 else 0))
    free = [a for a in range(19, 92) if a not in FIXED_AGES]
    while len(ages) < ROWS - 1:
        ages.append(rng.choice(free))
    rng.shuffle(ages)
    rows = [_respondent(rng, a) for a in ages]
    rows.insert(ROWS // 3, dict(TARGET))
    for r in rows:
        r["logpopul"] = round(math.log(r["popul"] + 0.1), 6)
    return rows


def write_anes(path: Path, seed: int = 96) -> Path:
    lines = [",".join(COLUMNS)]
    lines += [",".join(str(r[c]) for c in COLUMNS) for r in anes_rows(seed)]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


@pytest.fixture
def anes_csv(tmp_path: Path) -> Path:
    return write_anes(tmp_path / "anes96.csv")
