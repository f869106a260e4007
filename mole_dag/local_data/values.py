"""How a value from the data is written when it leaves the boundary: as a JSON value (rounded,
ISO dates), in one canonical JSON text, and by that text's digest.

Its own module because every stage of the boundary writes values (the row sets' group labels,
the gate's figures, the hypotheses' levels, the exfil check's keys, the crossings' records), and
a formatter kept in one of them made the others import it back (issue 34)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from decimal import Decimal
from typing import Any

from mole_dag.local_data import stats


def plain(value: Any) -> Any:
    """A value as it may appear in JSON: Decimal -> float, dates -> ISO text, floats rounded to
    stats.SIG_FIGS significant figures, NaN -> null."""
    import numpy as np  # here, not at the top: only local data needs it (issue 12)

    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, (float, Decimal, np.floating)):
        return stats.sig(float(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    return str(value)


def canonical_json(obj: Any) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
